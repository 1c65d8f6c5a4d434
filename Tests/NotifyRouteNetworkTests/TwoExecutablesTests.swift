import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route` links no network code and runs `notify-route-network`, from its own
/// directory, for a command whose config declares a network sink (and for `serve`).
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
        try FileManager.default.copyItem(at: lean, to: copy)
        return copy
    }

    @Test func withoutTheNetworkExecutableANetworkConfigSaysWhichFileIsMissing() throws {
        let binary = try Self.alone()
        let host = try NotifyRouteHost(sinks: "  am: { kind: alertmanager, url: \"http://127.0.0.1:9\" }", routes: "fallback: [am]")
        let missing = binary.deletingLastPathComponent().appendingPathComponent("notify-route-network").path
        for arguments in [["send", "--config", host.config.path, "Disk full"], ["config", "check", "--config", host.config.path],
                          ["serve", "--config", host.config.path]] {
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
}
