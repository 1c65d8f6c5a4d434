import Foundation
import NotifyRouteTestSupport
import Testing

/// State shared between separate `notify-route send` calls, seen by the real notification
/// daemon of the desktop tests (a private bus and python-dbusmock per test).
@Suite(
    "shared state against the desktop daemon", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct DesktopStateCLITests {
    func setup(_ yaml: String, daemon: DBusMockDaemon) throws -> (config: String, environment: [String: String], runtime: URL) {
        let runtime = try TestEnvironment.temporaryDirectory()
        let config = runtime.appendingPathComponent("c.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        var environment = daemon.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        return (config.path, environment, runtime)
    }

    @Test func eightProcessesTwoHundredSendsOneNotification() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let (config, environment, runtime) = try setup("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], dedup: { window: 1h } } ]
            """, daemon: daemon)
        let script = """
            for p in 1 2 3 4 5 6 7 8; do
              ( for i in $(seq 200); do "$0" send --config "$1" -k storm -l error "Storm" || echo "send failed: $?" >&2; done ) &
            done
            wait
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, config],
            environment: environment, timeLimit: .seconds(900))
        #expect(!result.timedOut)
        #expect(!result.standardError.contains("send failed"), "\(result.standardError.prefix(2_000))")

        let calls = try daemon.notifyCalls()
        // Exactly one notification was created; every later call updated it in place.
        #expect(calls.filter { $0.replacesID == 0 }.count == 1)
        #expect(calls.first?.summary == "Storm")
        let counts = calls.dropFirst().compactMap { call -> Int? in
            guard let range = call.summary.range(of: "(×") else { return nil }
            return Int(call.summary[range.upperBound...].dropLast())
        }
        #expect(counts.max() == 1_600)
        #expect(Set(calls.dropFirst().map(\.replacesID)) == [calls.first.map { _ in 1 } ?? 0])

        let state = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"),
                                          [runtime.appendingPathComponent("notify-route/state.db").path, "SELECT key, count FROM dedup"])
        #expect(state.standardOutput == "storm|1600\n", "\(state.standardError)")
    }

    @Test func aRateLimitHoldsAcrossCallsAndSummarisesOnce() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        var (config, environment, _) = try setup("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], rate: { max: 2, per: 1m } } ]
            """, daemon: daemon)
        func send(_ title: String, source: String, at seconds: Int) throws -> ProcessResult {
            environment["NOTIFY_ROUTE_TEST_NOW"] = String(1_800_000_000 + seconds)
            return try ProcessRunner.notifyRoute(["send", "--config", config, "--json", "-s", source, title], environment: environment)
        }
        for (index, source) in ["backup", "backup", "backup", "backup", "db"].enumerated() {
            let result = try send("event \(index + 1)", source: source, at: index)
            #expect(result.status == 0)
            #expect(result.standardOutput.contains(index < 2 ? "\"status\":\"delivered\"" : "\"reason\":\"rate-limited\""))
        }
        #expect(try send("after the minute", source: "web", at: 61).standardOutput
            .contains("delivered first: a summary of 3 events held over the rate limit"))
        #expect(try daemon.notifyCalls().map(\.summary) == ["event 1", "event 2", "+3 more from backup, db", "after the minute"])
        #expect(try daemon.notifyCalls()[2].body == "held over the rate limit: backup 2, db 1")
    }

    @Test func quietHoursHoldAndTheMorningSummarises() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        var (config, environment, _) = try setup("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes:
              - to: [desktop]
                quiet: { hours: ["22:00-07:00"], timezone: UTC, breakthrough: critical }
            """, daemon: daemon)
        // 1_800_000_000 is 08:00 UTC; -36_000 s is 22:00 the evening before.
        func send(_ arguments: [String], at seconds: Int) throws -> ProcessResult {
            environment["NOTIFY_ROUTE_TEST_NOW"] = String(1_800_000_000 + seconds)
            return try ProcessRunner.notifyRoute(["send", "--config", config, "--json"] + arguments, environment: environment)
        }
        #expect(try send(["-s", "backup", "-l", "error", "Backup failed"], at: -30_000).standardOutput.contains("\"reason\":\"quiet-hours\""))
        #expect(try send(["-s", "db", "-l", "critical", "Database down"], at: -29_000).standardOutput.contains("\"status\":\"delivered\""))
        #expect(try send(["Good morning"], at: 60).status == 0)
        #expect(try daemon.notifyCalls().map(\.summary) == ["Database down", "+1 more from backup", "Good morning"])
    }
}
