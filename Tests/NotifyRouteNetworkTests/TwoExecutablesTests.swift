import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route` links no network code and runs `notify-route-network`, from its own
/// directory, for a `send` whose event can reach a network sink, for the other commands
/// whose config declares one, and for `serve`.
@Suite(.serialized)
struct TwoExecutablesTests {
    static var lean: URL { TestEnvironment.notifyRouteBinary }
    static var network: URL { lean.deletingLastPathComponent().appendingPathComponent("notify-route-network") }

    /// Module names stay in the binary (type metadata) even when it is stripped.
    static func links(_ binary: URL, _ module: String) throws -> Bool {
        try Data(contentsOf: binary, options: .alwaysMapped).range(of: Data(module.utf8)) != nil
    }

    @Test(arguments: ["AsyncHTTPClient", "CNIOBoringSSL", "NIOHTTP1"])
    func onlyTheNetworkExecutableLinksTheNetworkCode(module: String) throws {
        #expect(try !Self.links(Self.lean, module), "notify-route links \(module)")
        #expect(try Self.links(Self.network, module), "notify-route-network lacks \(module): the check above would prove nothing")
    }

    /// `notify-route` alone in a directory: what it does without `notify-route-network`.
    static func alone() throws -> URL {
        let directory = try TestEnvironment.temporaryDirectory("notify-route-alone")
        let copy = directory.appendingPathComponent("notify-route")
        // Copied by cp, not by this process: a process another test forks meanwhile would
        // inherit the copy's open descriptor, and running the copy would fail (ETXTBSY).
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/bin/cp"), [lean.path, copy.path])
        guard result.status == 0 else { throw FixtureError(description: "cp: \(result.standardError)") }
        return copy
    }

    @Test func withoutTheNetworkExecutableANetworkConfigSaysWhichFileIsMissing() throws {
        let binary = try Self.alone()
        let host = try NotifyRouteHost(sinks: "  am: { kind: alertmanager, url: \"http://127.0.0.1:9\" }", routes: "fallback: [am]")
        let missing = binary.deletingLastPathComponent().appendingPathComponent("notify-route-network").path
        for arguments in [["send", "--config", host.config.path, "Disk full"], ["config", "check", "--config", host.config.path],
                          ["close", "--config", host.config.path, "-r", "disk"], ["serve", "--config", host.config.path]] {
            let result = try ProcessRunner.run(binary, arguments, environment: host.environment)
            #expect(result.status == 69, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("needs the network sinks (alertmanager, webhook), which are in \(missing)"),
                    "\(arguments): \(result.standardError)")
            #expect(result.standardOutput.isEmpty)
        }
    }

    /// What needs no network sink runs in `notify-route` itself: it never looks for the other file.
    @Test func withoutTheNetworkExecutableEverythingElseStillWorks() throws {
        let binary = try Self.alone()
        let host = try NotifyRouteHost(sinks: "  log: { kind: journal }", routes: "fallback: [log]")
        let check = try ProcessRunner.run(binary, ["config", "check", "--config", host.config.path], environment: host.environment)
        #expect(check.status == 0, "\(check.standardError)")
        let dryRun = try ProcessRunner.run(binary, ["send", "--dry-run", "--config", host.config.path, "Disk full"], environment: host.environment)
        #expect(dryRun.status == 0, "\(dryRun.standardError)")
        // The network sinks' options are known without their code: the reference lists them.
        let reference = try ProcessRunner.run(binary, ["config", "reference"], environment: host.environment)
        #expect(reference.status == 0)
        for key in ["resolve_after", "token_file", "retry_backoff_max"] {
            #expect(reference.standardOutput.contains("`\(key)`"), "\(key)")
        }
        #expect(reference.standardOutput == (try ProcessRunner.run(Self.network, ["config", "reference"])).standardOutput)
    }

    /// A bad network option is reported as the network executable reports it, through `notify-route`.
    @Test func aBadNetworkOptionIsAConfigErrorAtItsPlace() throws {
        let host = try NotifyRouteHost(sinks: "  am:\n    kind: alertmanager\n    url: ftp://example", routes: "fallback: [am]")
        let result = try host.run(["send", "Disk full"])
        #expect(result.status == 78)
        #expect(result.standardError.contains("\(host.config.path):4:5: sink \"am\": \"ftp://example\" is not an http:// or https:// URL"),
                "\(result.standardError)")
    }

    /// Through `notify-route` with the whole command line, environment and standard input
    /// handed on: the body read from stdin (`-`) arrives in the alert.
    @Test(.enabled(if: alertmanagerTestsEnabled, "needs prometheus-alertmanager"))
    func aSendToAlertmanagerKeepsItsStandardInput() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try NotifyRouteHost(
            sinks: "  am: { kind: alertmanager, url: \"\(cluster.peers[0].url)\", instance: host-a }", routes: "fallback: [am]")
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", host.config.path, "-r", "stdin-body", "Disk full", "-"], environment: host.environment,
            input: "97% of / used\n")
        #expect(result.status == 0, "\(result.standardError)")
        let alert = try #require(try cluster.alerts().first { ($0["labels"] as? [String: String])?["replace_key"] == "stdin-body" })
        #expect((alert["annotations"] as? [String: String])?["description"]?.hasPrefix("97% of / used") == true, "\(alert)")
    }

    /// A config that declares an Alertmanager sink but sends info to the terminal only, and
    /// the environment of a history of its own: a pause or a silence another test stores in the
    /// shared one may release held events, which the network executable then routes.
    static func terminalForInfo(alertmanager url: String) throws -> (host: NotifyRouteHost, environment: [String: String]) {
        let host = try NotifyRouteHost(
            sinks: "  tty: { kind: terminal, output: stdout }\n  am: { kind: alertmanager, url: \"\(url)\", instance: host-a }",
            routes: "routes:\n  - match: { level: info }\n    to: [tty]\n  - match: { level: warning }\n    to: [tty]\n    failover: [am]\nfallback: [am]")
        let state = host.directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)
        return (host, host.environment.merging(["XDG_STATE_HOME": state.path]) { $1 })
    }

    /// `send` decides per event: without `notify-route-network` beside it, `notify-route`
    /// still routes an event that reaches only the terminal (so it never tried the exec), and
    /// says which file is missing for one that can reach Alertmanager: routed there, as a
    /// failover, or with `--sink`.
    @Test func aSendThatReachesNoNetworkSinkIsRoutedByNotifyRouteItself() throws {
        let binary = try Self.alone()
        let (host, environment) = try Self.terminalForInfo(alertmanager: "http://127.0.0.1:9")
        let missing = binary.deletingLastPathComponent().appendingPathComponent("notify-route-network").path
        let config = ["--config", host.config.path]
        for arguments in [["-l", "info", "Backup done"], ["--json", "-l", "info", "Backup done"], ["--dry-run", "-l", "info", "Backup done"]] {
            let result = try ProcessRunner.run(binary, ["send"] + config + arguments, environment: environment)
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            #expect(result.standardOutput.contains("Backup done"), "\(arguments): \(result.standardOutput)")
            #expect(!result.standardError.contains("network"), "\(arguments): \(result.standardError)")
        }
        // The body read from standard input is the event's, in this process too.
        let piped = try ProcessRunner.run(binary, ["send"] + config + ["-l", "info", "Backup done", "-"], environment: environment,
                                          input: "412 files\n")
        #expect(piped.status == 0, "\(piped.standardError)")
        #expect(piped.standardOutput.contains("412 files"), "\(piped.standardOutput)")
        for arguments in [["-l", "error", "Disk full"], ["-l", "warning", "Disk filling"], ["--sink", "am", "-l", "info", "Backup done"],
                          ["--dry-run", "-l", "error", "Disk full"]] {
            let result = try ProcessRunner.run(binary, ["send"] + config + arguments, environment: environment)
            #expect(result.status == 69, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("needs the network sinks (alertmanager, webhook), which are in \(missing)"),
                    "\(arguments): \(result.standardError)")
            #expect(result.standardOutput.isEmpty, "\(arguments): \(result.standardOutput)")
        }
        // notify-send's options decide the same way: low is info, critical goes to the fallback.
        let low = try ProcessRunner.run(binary, ["notify-send", "--config", host.config.path, "-u", "low", "Backup done"],
                                        environment: environment)
        #expect(low.status == 0, "\(low.standardError)")
        #expect(low.standardOutput.contains("Backup done"), "\(low.standardOutput)")
        let critical = try ProcessRunner.run(binary, ["notify-send", "--config", host.config.path, "-u", "critical", "Disk full"],
                                             environment: environment)
        #expect(critical.status == 69, "\(critical.standardError)")
        #expect(critical.standardError.contains("which are in \(missing)"), "\(critical.standardError)")
    }

    /// A stored pause may release what it held through any route when it ends: while one
    /// is stored, an info event is handed on too (here, without the network executable, 69).
    @Test func aStoredPauseHandsEvenATerminalEventOn() throws {
        let binary = try Self.alone()
        let (host, environment) = try Self.terminalForInfo(alertmanager: "http://127.0.0.1:9")
        let send = ["send", "--config", host.config.path, "-l", "info", "Backup done"]
        #expect(try ProcessRunner.run(binary, send, environment: environment).status == 0)
        // `pause` loads no config: `notify-route` runs it alone.
        let pause = try ProcessRunner.run(binary, ["pause", "--for", "1h"], environment: environment)
        #expect(pause.status == 0, "\(pause.standardError)")
        let paused = try ProcessRunner.run(binary, send, environment: environment)
        #expect(paused.status == 69, "\(paused.standardError)")
        #expect(paused.standardError.contains("needs the network sinks"), "\(paused.standardError)")
    }

    /// What the state's set-up says before the event decides (here: an unsafe runtime
    /// directory) is said once, whichever executable routes the event.
    @Test func aStateNoticeIsSaidOnceWhicheverExecutableRoutes() throws {
        var (host, environment) = try Self.terminalForInfo(alertmanager: "http://127.0.0.1:9")
        let open = host.directory.appendingPathComponent("open-runtime")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        chmod(open.path, 0o777)
        environment["XDG_RUNTIME_DIR"] = open.path
        for level in ["info", "error"] {
            let result = try ProcessRunner.notifyRoute(["send", "--config", host.config.path, "-l", level, "Disk full"], environment: environment)
            #expect(result.standardError.components(separatedBy: "is not safe for the state").count == 2, "\(level): \(result.standardError)")
        }
    }

    /// The network sinks' options are checked in `notify-route` too: a bad one is the same
    /// config error (78, at its place) whichever executable would have routed the event.
    @Test func aBadNetworkOptionIsAConfigErrorEvenForATerminalEvent() throws {
        let binary = try Self.alone()
        for (sink, message) in [
            ("  am:\n    kind: alertmanager\n    url: ftp://example", ":5:5: sink \"am\": \"ftp://example\" is not an http:// or https:// URL"),
            ("  am:\n    kind: alertmanager\n    url: http://127.0.0.1:9\n    labels: { team-name: ops }", "is not a label name Alertmanager accepts"),
            ("  hook:\n    kind: webhook\n    url: http://127.0.0.1:9\n    retry_backoff: 0s", "retry_backoff must be longer than 0s"),
        ] {
            let host = try NotifyRouteHost(sinks: "  tty: { kind: terminal, output: stdout }\n" + sink, routes: "fallback: [tty]")
            let result = try ProcessRunner.run(binary, ["send", "--config", host.config.path, "Backup done"], environment: host.environment)
            #expect(result.status == 78, "\(result.standardError)")
            #expect(result.standardError.contains(message), "\(result.standardError)")
            #expect(result.standardOutput.isEmpty)
        }
    }

    /// Beside `notify-route-network`, the same config: the info event stays on the terminal
    /// (and out of Alertmanager), the error event reaches a real Alertmanager with the body
    /// `notify-route` read from standard input before it decided.
    @Test(.enabled(if: alertmanagerTestsEnabled, "needs prometheus-alertmanager"))
    func anErrorEventStillReachesAlertmanagerWithItsStandardInput() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let (host, environment) = try Self.terminalForInfo(alertmanager: cluster.peers[0].url)
        let info = try ProcessRunner.notifyRoute(["send", "--config", host.config.path, "-l", "info", "-r", "info-event", "Backup done"],
                                                 environment: environment)
        #expect(info.status == 0, "\(info.standardError)")
        #expect(info.standardOutput.contains("Backup done"))
        let error = try ProcessRunner.notifyRoute(
            ["send", "--config", host.config.path, "--json", "-l", "error", "-r", "error-event", "Disk full", "-"],
            environment: environment, input: "97% of / used\n")
        #expect(error.status == 0, "\(error.standardError)")
        #expect(decodeObject(error.standardOutput).sink("am")?["status"] as? String == "delivered", "\(error.standardOutput)")
        let alerts = try cluster.alerts()
        let alert = try #require(alerts.first { ($0["labels"] as? [String: String])?["replace_key"] == "error-event" })
        #expect((alert["labels"] as? [String: String])?["severity"] == "error")
        #expect((alert["annotations"] as? [String: String])?["description"]?.hasPrefix("97% of / used") == true, "\(alert)")
        #expect(!alerts.contains { ($0["labels"] as? [String: String])?["replace_key"] == "info-event" })
    }
}
