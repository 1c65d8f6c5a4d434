import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route serve` under faults, each checked for time, exit codes and that no event
/// went unreported: a restart, SIGTERM with events in flight, and 64 clients at once on
/// the desktop sink against a real session bus and python-dbusmock.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct DaemonFaultTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    /// `count` sends from `clients` processes at once, each client's sends one after the other.
    /// `count` sends from each of `clients` at once; with `untilExists`, each goes on past
    /// `count` until that file exists, then sends three more (so that some are sent after
    /// whatever `duringSends` did, however fast the daemon routed the first ones).
    static func sends(
        clients: Int, each count: Int, environment: [String: String], run: String, untilExists gate: String? = nil,
        duringSends: () async throws -> Void = {}
    ) async throws -> [ProcessResult] {
        try await withThrowingTaskGroup(of: [ProcessResult].self) { group in
            for client in 0..<clients {
                group.addTask {
                    try await PrivateJournal.offPool {
                        var results: [ProcessResult] = []
                        var afterGate = 0
                        while results.count < count || (gate != nil && afterGate < 3 && results.count < 400) {
                            if let gate, FileManager.default.fileExists(atPath: gate) { afterGate += 1 }
                            let number = results.count
                            results.append(try ProcessRunner.notifyRoute(
                                ["send", "--json", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "SEQ=\(client)-\(number)", "event \(client)-\(number)"],
                                environment: environment))
                        }
                        return results
                    }
                }
            }
            try await duringSends()
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// Returns once the daemon has delivered `count` events to its sink `sink` (by its
    /// `status`), so that a fault comes in the middle of the work however slow the machine is.
    static func waitUntilDelivered(_ count: Int, by daemon: DaemonProcess, sink: String = "journal") async throws {
        for _ in 0..<1000 {
            let status = try await DaemonTests.run(["status", "--json"], daemon)
            let counts = (try? DaemonTests.json(status.standardOutput)["sinks"] as? [String: Any])?[sink] as? [String: Any]
            if (counts?["delivered"] as? Int ?? 0) >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aRestartedDaemonIsUsedAgainEvenByARunThatSpansTheRestart() async throws {
        try await PrivateJournal.withAccess {
            let config = try DaemonTests.config()
            let first = try DaemonProcess.start(config: config)
            defer { first.stop() }
            let run = PrivateJournal.newRunID()
            let environment = first.environment
            // A command that outlives the first daemon (it ends once the second one listens):
            // its event goes to the second.
            let go = first.directory.appendingPathComponent("go").path, started = first.directory.appendingPathComponent("started").path
            async let spanning = PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["run", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=run", "--", "sh", "-c", "touch \(started); while [ ! -e \(go) ]; do sleep 0.02; done"],
                    environment: environment)
            }
            // run connects before it starts the command.
            for _ in 0..<1000 where !FileManager.default.fileExists(atPath: started) { try await Task.sleep(for: .milliseconds(10)) }
            first.signal(SIGTERM)
            let exit = try #require(first.waitForExit(timeLimit: .seconds(5)), "\(first.log)")
            #expect(exit.status == 0)
            let second = try DaemonProcess.start(config: config, socket: first.socketPath)
            defer { second.stop() }
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let sent = try await DaemonTests.run(["send", "--json", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=send", "after"], first)
            #expect(sent.status == 0, "\(sent.standardError)")
            #expect(try DaemonTests.json(sent.standardOutput)["via"] as? String == "daemon")
            let command = try await spanning
            #expect(command.status == 0, "\(command.standardError)")


            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            #expect(entries.count == 2)
            #expect(entries.allSatisfy { $0["_PID"] == String(second.pid) }, "both by the restarted daemon: \(entries.map { $0["_PID"] ?? "?" })")
        }
    }

    @Test func sigtermWithEventsInFlightReportsEveryOneAndExitsZero() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DaemonProcess.start(config: try DaemonTests.config())
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let clients = 16, each = 15
            var stopped: (status: Int32, after: Duration)?
            // The clients go on sending until the daemon is gone, so that the last ones are routed here.
            let gone = daemon.directory.appendingPathComponent("gone").path
            let results = try await Self.sends(clients: clients, each: each, environment: daemon.environment, run: run, untilExists: gone) {
                try await Self.waitUntilDelivered(20, by: daemon)
                daemon.signal(SIGTERM)
                stopped = daemon.waitForExit(timeLimit: .seconds(5))
                _ = FileManager.default.createFile(atPath: gone, contents: nil)
            }
            let exit = try #require(stopped, "serve did not exit within 5 s of SIGTERM: \(daemon.log)")
            #expect(exit.status == 0, "\(daemon.log)")
            // The longest sink deadline is 500 ms; drain gets at most 2 s.
            #expect(exit.after < .seconds(2), "\(exit.after)")
            #expect(results.count >= clients * each)
            var vias: [String: Int] = [:]
            for result in results {
                #expect(result.status == 0, "\(result.standardError)")
                let report = try DaemonTests.json(result.standardOutput)
                #expect(report["summary"] as? String == "delivered")
                vias[report["via"] as? String ?? "?", default: 0] += 1
                #expect(result.duration < .seconds(3), "a client waited \(result.duration)")
            }
            #expect(vias["daemon", default: 0] > 0 && vias["local", default: 0] > 0, "\(vias)")
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: results.count, timeout: .seconds(10))
            #expect(Set(entries.compactMap { $0["SEQ"] }).count == results.count, "every event written once it was reported")
        }
    }

    /// A connection's first request is routed on the daemon's event loop; a sink that waits
    /// (on a hung notification daemon) must not hold up the loop, and so every other client,
    /// meanwhile.
    @Test(.enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
    func aSendWaitingOnAHungDesktopHoldsUpNoOtherClient() async throws {
        try await PrivateJournal.withAccess {
            let bus = try DBusMockDaemon.start()
            defer { bus.shutdown() }
            let directory = try TestEnvironment.temporaryDirectory("daemon-hung-desktop")
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = directory.appendingPathComponent("config.yaml")
            try """
                sinks:
                  desktop: { kind: desktop, deadline: 2s }
                  journal: { kind: journal, deadline: 500ms, identifier: daemon-hung-desktop }
                fallback: [journal]
                """.write(to: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
            defer { daemon.stop() }
            let environment = daemon.environment.merging(bus.environment) { _, new in new }
            let run = PrivateJournal.newRunID()
            bus.freezeDaemon()
            async let stuck = PrivateJournal.offPool {
                let result = try ProcessRunner.notifyRoute(["send", "--json", "--sink", "desktop", "to a hung desktop"], environment: environment)
                return (result, ContinuousClock.now)
            }
            // The stuck send is in the daemon's hands: its sink waits on the bus.
            try await Task.sleep(for: .milliseconds(300))
            let other = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["send", "--json", "--sink", "journal", "-f", "\(PrivateJournal.runField)=\(run)", "meanwhile"], environment: environment)
            }
            let otherEnded = ContinuousClock.now
            let (waited, stuckEnded) = try await stuck
            #expect(other.status == 0, "\(other.standardError)")
            #expect(try DaemonTests.json(other.standardOutput)["via"] as? String == "daemon")
            #expect(other.duration < .milliseconds(700), "a send beside a stuck one took \(other.duration)")
            #expect(otherEnded < stuckEnded, "the other send was answered while the stuck one waited")
            let stuckReport = try DaemonTests.json(waited.standardOutput)
            #expect(stuckReport["via"] as? String == "daemon", "\(waited.standardError)")
            #expect(stuckReport["summary"] as? String != "delivered", "\(waited.standardOutput)")
            #expect(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 1).count == 1)
            print("a send beside one stuck on a hung desktop: \(other.duration); the stuck one: \(waited.duration)")
        }
    }

    @Test(.enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
    func sixtyFourClientsAtOnceOnTheDesktopSink() async throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let directory = try TestEnvironment.temporaryDirectory("daemon-desktop")
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("config.yaml")
        try "sinks:\n  desktop: { kind: desktop, deadline: 1s }\nfallback: [desktop]\n".write(to: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let environment = daemon.environment.merging(bus.environment) { _, new in new }
        let clients = 64
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for client in 0..<clients {
                group.addTask {
                    try await PrivateJournal.offPool {
                        try ProcessRunner.notifyRoute(["send", "--json", "client \(client)"], environment: environment)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - started
        for result in results {
            #expect(result.status == 0, "\(result.standardError)")
            let report = try DaemonTests.json(result.standardOutput)
            #expect(report["via"] as? String == "daemon", "\(result.standardError)")
            #expect(report["summary"] as? String == "delivered")
        }
        let shown = try bus.notifyCalls().map(\.summary)
        #expect(shown.count == clients)
        #expect(Set(shown) == Set((0..<clients).map { "client \($0)" }))
        #expect(daemon.exitStatus() == nil)
        print("64 clients at once through the daemon to dbusmock: \(elapsed), slowest client \(results.map(\.duration).max() ?? .zero)")
    }
}
