import Foundation
import NotifyRouteTestSupport
import Testing

/// The built `notify-route` binary against a private session bus and python-dbusmock's
/// notification daemon, one of each per test.
@Suite(
    "notify-route with the desktop sink", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct DesktopCLITests {
    static let desktopOnly = """
        sinks:
          desktop: { kind: desktop, deadline: 1s }
        routes:
          - match: {}
            to: [desktop]
        """

    static let withFailover = """
        sinks:
          desktop: { kind: desktop, deadline: 1s }
          tty: { kind: terminal }
        routes:
          - match: {}
            to: [desktop]
            failover: [tty]
        """

    @Test func sendMapsTheCommandLineToTheNotification() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "-l", "warning", "-t", "2500ms", "-a", "backup", "-i", "drive-harddisk",
             "-c", "device.error", "Disk 90% full", "/home & /var"],
            environment: daemon.environment, timeLimit: .seconds(10))
        #expect(result.status == 0, "\(result.standardError)")
        let call = try #require(try daemon.notifyCalls().first)
        #expect(call.appName == "backup")
        #expect(call.summary == "Disk 90% full")
        #expect(call.body == "/home &amp; /var")
        #expect(call.expireTimeout == 2500)
        #expect(call.hints["urgency"]?.text == "1")
        #expect(call.hints["category"]?.text == "device.error")
        let icons = [call.appIcon, call.hints["image-path"]?.text, call.hints["image_path"]?.text]
        #expect(icons.contains("drive-harddisk"), "icon: \(icons)")
        print("notify-route send against dbusmock: \(DurationParser.milliseconds(result.duration)) ms")
    }

    @Test func replaceDuplicateCountAndCloseAcrossCalls() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(Self.desktopOnly + "\n    dedup: { window: 10m }\n", daemon: daemon)
        defer { session.remove() }
        let run = session.run
        _ = try run(["send", "-r", "backup", "-t", "never", "Backup 10%"])
        _ = try run(["send", "-r", "backup", "-t", "never", "Backup 90%"])
        for _ in 1...3 { _ = try run(["send", "-l", "error", "Disk full"]) }
        _ = try run(["close", "--replace-key", "backup"])

        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.summary) == ["Backup 10%", "Backup 90%", "Disk full", "Disk full (×2)", "Disk full (×3)"])
        #expect(calls.map(\.replacesID) == [0, 1, 0, 2, 2], "updated in place by id, from separate processes")
        #expect(try daemon.closeCalls() == [1])
    }

    @Test func waitPrintsTheInvokedAction() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let running = runInBackground(
            ["send", "--config", config.path, "-A", "ack=Acknowledge", "-A", "retry=Retry", "-t", "never", "--wait", "Deploy?"],
            environment: daemon.environment)
        let id = try await waitForNotify(daemon)
        try daemon.emitActionInvoked(id: id, action: "ack")
        let result = try await running.value
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "ack\n")
        #expect(!result.timedOut)
    }

    @Test("--wait prints the close reason", arguments: [(UInt32(1), "expired"), (2, "dismissed"), (3, "closed")])
    func waitPrintsTheCloseReason(reason: UInt32, printed: String) async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let running = runInBackground(["send", "--config", config.path, "--wait", "Build finished"], environment: daemon.environment)
        let id = try await waitForNotify(daemon)
        try daemon.emitNotificationClosed(id: id, reason: reason)
        let result = try await running.value
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == printed + "\n")
    }

    /// A server that never says the notification went away (dbusmock signals nothing by
    /// itself) does not hold `--wait`: it ends at the timeout and a margin, as expired, with
    /// a daemon and without one.
    @Test(arguments: [false, true])
    func waitEndsAsExpiredWhenTheServerNeverSignals(throughDaemon: Bool) throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        var environment = bus.environment
        var daemon: DaemonProcess?
        if throughDaemon {
            daemon = try DaemonProcess.start(config: config, environment: bus.environment)
            environment.merge(daemon!.environment) { $1 }
        }
        defer { daemon?.stop() }
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "-t", "1s", "--wait", "Quiet server"], environment: environment,
            timeLimit: .seconds(30))
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains(throughDaemon ? "\"via\":\"daemon\"" : "\"via\":\"local\""), "\(result.standardOutput)")
        #expect(result.standardOutput.hasSuffix("\nexpired\n"), "\(result.standardOutput)")
        #expect(result.duration >= .seconds(3) && result.duration < .seconds(8), "the 1 s timeout and its 2 s margin: \(result.duration)")
        #expect(try bus.notifyCalls().count == 1)
    }

    @Test func aHungDaemonFailsOverToTheTerminalWithinASecondAndAHalf() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        daemon.freezeDaemon()
        let config = try writeConfig(Self.withFailover)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "-l", "error", "Disk full"], environment: daemon.environment,
            timeLimit: .seconds(30))
        #expect(result.duration < .milliseconds(1500), "libnotify's 25 s must never reach the caller")
        #expect(result.status == 0, "delivered by the failover sink: \(result.standardError)")
        #expect(result.standardError.contains("Disk full"), "the terminal sink wrote the event")
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        let sinks = report?["sinks"] as? [[String: Any]] ?? []
        let desktop = sinks.first { $0["sink"] as? String == "desktop" }
        let tty = sinks.first { $0["sink"] as? String == "tty" }
        #expect(desktop?["status"] as? String == "failed")
        #expect("\(desktop ?? [:])".contains("may be hung"))
        #expect(tty?["status"] as? String == "delivered")
        #expect(tty?["failover_for"] as? String == "desktop")
        print("notify-route send, hung daemon, failover to tty: \(DurationParser.milliseconds(result.duration)) ms")

        // Without a failover nothing delivered: exit 1.
        let alone = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: alone.deletingLastPathComponent()) }
        let failed = try ProcessRunner.notifyRoute(["send", "--config", alone.path, "Disk full"], environment: daemon.environment)
        #expect(failed.status == 1)
        #expect(failed.duration < .milliseconds(1500))
        #expect(failed.standardError.contains("may be hung"))
    }

    @Test func noDaemonOnTheBusGivesTheReason() throws {
        let bus = try DBusMockDaemon.start(withDaemon: false)
        defer { bus.shutdown() }
        let config = try writeConfig(Self.withFailover)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let sinks = try ProcessRunner.notifyRoute(["sinks", "--config", config.path, "--json"], environment: bus.environment)
        #expect(sinks.status == 0)
        let listing = try JSONSerialization.jsonObject(with: Data(sinks.standardOutput.utf8)) as? [String: Any]
        let rows = listing?["sinks"] as? [[String: Any]] ?? []
        let desktop = rows.first { $0["name"] as? String == "desktop" }
        #expect(desktop?["available"] as? Bool == false)
        #expect((desktop?["reason"] as? String)?.contains("no notification daemon") == true, "\(sinks.standardOutput)")

        let alone = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: alone.deletingLastPathComponent()) }
        let send = try ProcessRunner.notifyRoute(["send", "--config", alone.path, "Hello"], environment: bus.environment)
        #expect(send.status == 69, "no sink available")
        #expect(send.standardError.contains("no notification daemon"))

        let failover = try ProcessRunner.notifyRoute(["send", "--config", config.path, "Hello"], environment: bus.environment)
        #expect(failover.status == 0)
        #expect(failover.standardError.contains("Hello"))
    }

    @Test func theDaemonsAnswerIsStoredAndTheNextProcessSkipsTheProbe() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        let directory = config.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = daemon.environment
        environment["XDG_RUNTIME_DIR"] = directory.path
        func send(_ title: String) throws {
            let result = try ProcessRunner.notifyRoute(["send", "--config", config.path, title], environment: environment, timeLimit: .seconds(10))
            #expect(result.status == 0, "\(result.standardError)")
        }
        func probes(_ calls: [DBusMockDaemon.Call]) -> Int { calls.filter { $0.method == "GetCapabilities" }.count }

        try send("first")
        let stored = directory.appendingPathComponent("notify-route/desktop-server")
        #expect(FileManager.default.fileExists(atPath: stored.path), "the probe's answer is kept beside the state")
        #expect(probes(try daemon.calls()) == 1)
        try send("second")
        try send("third")
        let calls = try daemon.calls().map(\.method)
        #expect(calls.filter { $0 == "GetCapabilities" }.count == 1, "later processes do not probe: \(calls)")
        // libnotify asks GetServerInformation once per process itself (for the spec version).
        #expect(calls.filter { $0 == "GetServerInformation" }.count == 1 + 3, "\(calls)")
        #expect(calls.filter { $0 == "Notify" }.count == 3)
        print("desktop send calls to the daemon, first process then two more: \(calls)")

        // Another daemon instance on the same bus (a new unique name) is probed again.
        let pid = try #require(daemon.daemonPID)
        kill(pid, SIGKILL)
        try waitUntilGone(daemon)
        try daemon.startDaemon(capabilities: "body")
        try send("restarted")
        let afterRestart = try daemon.calls().map(\.method)
        #expect(afterRestart.filter { $0 == "GetCapabilities" }.count == 1, "re-probed: \(afterRestart)")
        try send("again")
        #expect(probes(try daemon.calls()) == 1, "and stored again")
        // What the new daemon said is what is used: no markup escaping without body-markup.
        let body = try ProcessRunner.notifyRoute(["send", "--config", config.path, "t", "a & b"], environment: environment)
        #expect(body.status == 0)
        #expect(try daemon.notifyCalls().last?.body == "a & b")
    }

    @Test func aDaemonThatHangsAfterItsAnswerWasStoredIsProbedAgain() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.withFailover)
        let directory = config.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = daemon.environment
        environment["XDG_RUNTIME_DIR"] = directory.path
        let stored = directory.appendingPathComponent("notify-route/desktop-server")
        let first = try ProcessRunner.notifyRoute(["send", "--config", config.path, "fine"], environment: environment, timeLimit: .seconds(10))
        #expect(first.status == 0)
        #expect(FileManager.default.fileExists(atPath: stored.path))

        let pid = try #require(daemon.daemonPID)
        daemon.freezeDaemon()
        defer { kill(pid, SIGCONT) }
        // The stored answer says the daemon is fine; libnotify blocks on it, the deadline answers.
        let hung = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "stuck"], environment: environment, timeLimit: .seconds(30))
        #expect(hung.duration < .milliseconds(1500))
        #expect(hung.status == 0, "delivered by the failover: \(hung.standardError)")
        #expect(hung.standardOutput.contains("\"failover_for\":\"desktop\""), "\(hung.standardOutput)")
        #expect(!FileManager.default.fileExists(atPath: stored.path), "a Notify that hangs drops the stored answer")

        // So the next process probes, and is told within the probe timeout.
        let next = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "next"], environment: environment, timeLimit: .seconds(30))
        #expect(next.duration < .milliseconds(1500))
        #expect(next.standardOutput.contains("may be hung"), "\(next.standardOutput)")
    }

    @Test func withoutLibnotifyTheDesktopSinkIsUnavailableWithTheReason() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        var environment = daemon.environment
        // The loader's test hook: a library name that does not exist, as on a system without libnotify4.
        environment["NOTIFY_ROUTE_TEST_LIBNOTIFY"] = "libnotify-missing.so.4"
        let send = try ProcessRunner.notifyRoute(["send", "--config", config.path, "Hello"], environment: environment)
        #expect(send.status == 69, "no sink available: \(send.standardError)")
        #expect(send.standardError.contains("libnotify-missing.so.4 could not be loaded"), "\(send.standardError)")
        #expect(send.standardError.contains("install libnotify4"))
        #expect(try daemon.calls().isEmpty, "nothing reached the daemon")

        let sinks = try ProcessRunner.notifyRoute(["sinks", "--config", config.path, "--json"], environment: environment)
        #expect(sinks.standardOutput.contains("could not be loaded"), "\(sinks.standardOutput)")
    }

    @Test func onlyADesktopNotificationLoadsLibnotify() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let config = try writeConfig(Self.withFailover)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        var environment = daemon.environment
        environment["LD_DEBUG"] = "files"  // the dynamic loader names every object it loads
        let version = try ProcessRunner.notifyRoute(["--version"], environment: environment)
        #expect(version.status == 0)
        #expect(!version.standardError.contains("libnotify"), "--version loads no libnotify")
        #expect(!version.standardError.contains("libglib-2.0"), "nor GLib")
        let terminal = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--sink", "tty", "Hi"], environment: environment)
        #expect(terminal.status == 0)
        #expect(!terminal.standardError.contains("libnotify"), "a terminal-only send loads no libnotify")
        let desktop = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--sink", "desktop", "Hi"], environment: environment)
        #expect(desktop.status == 0)
        #expect(desktop.standardError.contains("file=libnotify.so.4"), "loaded when it shows one")
    }

    @Test("a daemon the bus cannot start is named with D-Bus's error, exit 69", arguments: [
        ("exit 1", "org.freedesktop.DBus.Error.Spawn.ChildExited"),
        ("exec sleep 60", "the start timed out"),
    ])
    func aDaemonThatCannotStartIsReportedAsSuch(script: String, reason: String) throws {
        let bus = try DBusMockDaemon.startActivatable(script: script)
        defer { bus.shutdown() }
        let alone = try writeConfig(Self.desktopOnly)
        defer { try? FileManager.default.removeItem(at: alone.deletingLastPathComponent()) }
        let sinks = try ProcessRunner.notifyRoute(["sinks", "--config", alone.path, "--json"], environment: bus.environment)
        #expect(sinks.standardOutput.contains("could not be started"), "\(sinks.standardOutput)")
        #expect(sinks.standardOutput.contains(reason), "\(sinks.standardOutput)")
        #expect(sinks.standardOutput.contains("org.freedesktop.Notifications"))
        #expect(!sinks.standardOutput.contains("may be hung"))
        #expect(sinks.duration < .milliseconds(900), "within the probe budget")

        let send = try ProcessRunner.notifyRoute(["send", "--config", alone.path, "Hello"], environment: bus.environment)
        #expect(send.status == 69, "no sink available: \(send.standardError)")
        #expect(send.standardError.contains("could not be started"), "\(send.standardError)")
        #expect(send.standardError.contains(reason), "\(send.standardError)")
        #expect(!send.standardError.contains("may be hung"))
        #expect(send.duration < .milliseconds(1500))
        print("desktop sink, daemon that cannot start (\(script)): sinks \(DurationParser.milliseconds(sinks.duration)) ms, send \(DurationParser.milliseconds(send.duration)) ms")
    }

    @Test func aStartStillPendingIsNotWaitedForAgainByTheNextProcess() throws {
        let bus = try DBusMockDaemon.startActivatable(script: "exec sleep 60")
        defer { bus.shutdown() }
        let session = try Session(Self.desktopOnly, daemon: bus)
        defer { session.remove() }
        let first = try session.run(["sinks", "--json"])
        #expect(first.standardOutput.contains("the start timed out"), "\(first.standardOutput)")
        let second = try session.run(["sinks", "--json"])
        #expect(second.standardOutput.contains("is not up yet"), "\(second.standardOutput)")
        #expect(second.duration < .milliseconds(300), "asks the bus only: \(DurationParser.milliseconds(second.duration)) ms")
        print("notify-route sinks, a start that timed out: first \(DurationParser.milliseconds(first.duration)) ms, next process \(DurationParser.milliseconds(second.duration)) ms")
    }

    @Test func aDaemonThatDiesAtStartIsStartedOnceNotBySend() throws {
        // Dies after 300 ms, as a daemon with a broken config does: past the probe's first
        // calls, within a delivery's wait for the start.
        let bus = try DBusMockDaemon.startActivatable(script: "sleep 0.3; exit 3")
        defer { bus.shutdown() }
        let session = try Session(Self.desktopOnly, daemon: bus)
        defer { session.remove() }
        var durations: [Int] = []
        for attempt in 1...3 {
            let send = try ProcessRunner.notifyRoute(["send", "--config", session.config.path, "attempt \(attempt)"],
                                                     environment: session.environment, timeLimit: .seconds(10))
            durations.append(DurationParser.milliseconds(send.duration))
            #expect(send.status == 69, "\(send.standardError)")
            #expect(send.standardError.contains("Spawn.ChildExited"), "\(send.standardError)")
            #expect(send.standardError.contains("exited with status 3"), "the daemon's own exit status: \(send.standardError)")
            if attempt > 1 {
                #expect(send.standardError.contains(" ago; the bus is not asked to start it again for "), "\(send.standardError)")
                #expect(send.duration < .milliseconds(250), "no wait for another start: \(durations)")
            }
        }
        let pids = try String(contentsOf: bus.directory.appendingPathComponent("activated.pids"), encoding: .utf8)
        #expect(pids.split(separator: "\n").count == 1, "one start for three sends: \(pids)")
        print("desktop sink, a daemon that dies at start: three sends \(durations) ms")
    }

    @Test func aHungDaemonAnswersWithinTheDesktopDefaultDeadline() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        // No deadline anywhere: the desktop kind's own default applies.
        let config = try writeConfig("sinks: { desktop: { kind: desktop } }\nroutes: [ { to: [desktop] } ]\n")
        let directory = config.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = daemon.environment
        environment["XDG_RUNTIME_DIR"] = directory.path
        let first = try ProcessRunner.notifyRoute(["send", "--config", config.path, "fine"], environment: environment, timeLimit: .seconds(10))
        #expect(first.status == 0, "\(first.standardError)")
        let pid = try #require(daemon.daemonPID)
        daemon.freezeDaemon()
        defer { kill(pid, SIGCONT) }
        // The stored probe answer skips the probe: only the deadline can answer.
        let hung = try ProcessRunner.notifyRoute(["send", "--config", config.path, "stuck"], environment: environment, timeLimit: .seconds(30))
        #expect(hung.duration <= .milliseconds(1200), "\(DurationParser.milliseconds(hung.duration)) ms")
        #expect(hung.status == 1)
        #expect(hung.standardError.contains("did not answer Notify within 1s"), "\(hung.standardError)")
        #expect(hung.standardError.contains("may be hung"))
        print("notify-route send, daemon hung after a send, no deadline in the config: \(DurationParser.milliseconds(hung.duration)) ms")

        let shown = try ProcessRunner.notifyRoute(["config", "show", "--config", config.path], environment: environment)
        #expect(shown.standardOutput.contains("deadline: 1s"), "\(shown.standardOutput)")
    }

    @Test func aRestartedDaemonsIdsAreNeverReplacedOrClosed() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(Self.desktopOnly, daemon: daemon)
        defer { session.remove() }
        let run = session.run
        _ = try run(["send", "-r", "backup", "-t", "never", "Backup 10%"])
        #expect(try daemon.notifyCalls().map(\.replacesID) == [0])

        // The daemon restarts; another application's notification gets the id ours had.
        daemon.stopDaemon()
        try waitUntilGone(daemon)
        try daemon.startDaemon()
        let other = try daemon.notifyAsAnotherApplication(summary: "Someone else's")
        #expect(other == 1)

        let update = try run(["send", "--json", "-r", "backup", "-t", "never", "Backup 90%"])
        #expect(update.standardOutput.contains("no longer owns the name"), "\(update.standardOutput)")
        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.summary) == ["Someone else's", "Backup 90%"])
        #expect(calls.last?.replacesID == 0, "shown anew, not over the other application's notification")
        // The new handle is the new daemon's: replace and close work on it again.
        _ = try run(["send", "-r", "backup", "-t", "never", "Backup 100%"])
        #expect(try daemon.notifyCalls().last?.replacesID == 2)

        daemon.stopDaemon()
        try waitUntilGone(daemon)
        try daemon.startDaemon()
        _ = try daemon.notifyAsAnotherApplication(summary: "Someone else's")
        _ = try daemon.notifyAsAnotherApplication(summary: "And another")
        _ = try run(["close", "--replace-key", "backup"])
        #expect(try daemon.closeCalls() == [], "id 2 is another application's now")
    }

    // MARK: Helpers

    /// A config in a directory of its own, which is also the runtime directory: the state
    /// file (replace key → handle) and the stored probe answer belong to this test alone.
    private struct Session {
        let config: URL
        let environment: [String: String]

        init(_ yaml: String, daemon: DBusMockDaemon) throws {
            let directory = try TestEnvironment.temporaryDirectory("notify-route-desktop")
            config = directory.appendingPathComponent("config.yaml")
            try yaml.write(to: config, atomically: true, encoding: .utf8)
            environment = daemon.environment.merging(["XDG_RUNTIME_DIR": directory.path]) { _, new in new }
        }

        /// Runs `notify-route ARGUMENTS --config CONFIG`, expecting exit 0.
        func run(_ arguments: [String]) throws -> ProcessResult {
            let result = try ProcessRunner.notifyRoute(arguments + ["--config", config.path], environment: environment, timeLimit: .seconds(10))
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            return result
        }

        func remove() { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
    }

    /// Waits until nobody owns the notification name (a killed daemon's name is released by the bus).
    private func waitUntilGone(_ daemon: DBusMockDaemon) throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while ContinuousClock.now < deadline {
            let owner = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/gdbus"), [
                "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.Notifications",
            ], environment: daemon.environment)
            if owner.standardOutput.contains("false") { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw DBusMockDaemon.Failure(message: "the notification daemon's name was not released")
    }

    private func writeConfig(_ yaml: String) throws -> URL {
        let directory = try TestEnvironment.temporaryDirectory("notify-route-desktop")
        let file = directory.appendingPathComponent("config.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Runs the CLI on a thread of its own (ProcessRunner blocks) while the test acts as the user.
    private func runInBackground(_ arguments: [String], environment: [String: String]) -> Task<ProcessResult, any Error> {
        Task {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(with: Result { try ProcessRunner.notifyRoute(arguments, environment: environment, timeLimit: .seconds(15)) })
                }
            }
        }
    }

    /// Waits until the daemon received a `Notify` and returns the id it answered with.
    private func waitForNotify(_ daemon: DBusMockDaemon) async throws -> UInt32 {
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while ContinuousClock.now < deadline {
            if let call = try daemon.notifyCalls().first {
                // dbusmock numbers from 1 and returns replaces_id when it is set.
                return call.replacesID == 0 ? 1 : call.replacesID
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DBusMockDaemon.Failure(message: "no Notify call within 10 s")
    }
}

private enum DurationParser {
    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }
}
