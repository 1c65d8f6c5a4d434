import Foundation
import NotifyRouteTestSupport
import Testing

/// A route's `group`: events sharing the `by` values become one notification, sent when
/// `wait` ends and updated in place, by the daemon's clock, on the real bus with dbusmock.
@Suite(
    "grouping", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct GroupingTests {
    static func config(_ yaml: String) throws -> URL {
        let url = try TestEnvironment.temporaryDirectory("group-config").appendingPathComponent("config.yaml")
        try yaml.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    static let groupingConfig = """
        sinks: { desktop: { kind: desktop, deadline: 2s } }
        routes: [ { to: [desktop], group: { by: [source], wait: 1s, interval: 2s } } ]
        """

    static func lines(_ count: Int, source: String, from first: Int = 1) -> String {
        (first..<(first + count)).map { "{\"title\": \"copy \($0) failed\", \"source\": \"\(source)\", \"level\": \"error\"}\n" }.joined()
    }

    /// Polls the mock until `done` holds for its calls, or `limit` passes.
    static func waitForCalls(_ bus: DBusMockDaemon, within limit: Duration,
                             until done: ([DBusMockDaemon.NotifyCall]) -> Bool) throws -> [DBusMockDaemon.NotifyCall] {
        let deadline = ContinuousClock.now + limit
        var calls = try bus.notifyCalls()
        while !done(calls) && ContinuousClock.now < deadline {
            usleep(20_000)
            calls = try bus.notifyCalls()
        }
        return calls
    }

    @Test func fiftyDistinctFailuresInTwoSecondsAreOneNotificationAndAFewUpdates() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(Self.groupingConfig), environment: bus.environment)
        defer { daemon.stop() }
        let environment = daemon.environment.merging(bus.environment) { $1 }

        let started = ContinuousClock.now
        // Two batches a second apart: the first inside `wait`, the second inside the first interval.
        let first = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: environment, input: Self.lines(25, source: "backup"))
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput.contains("\"via\":\"daemon\""), "\(first.standardOutput)")
        #expect(first.standardOutput.contains("\"reason\":\"grouped\""), "\(first.standardOutput)")
        let pause = Duration.seconds(1) - (ContinuousClock.now - started)
        if pause > .zero { usleep(UInt32(pause.components.attoseconds / 1_000_000_000_000)) }
        let second = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: environment,
                                                   input: Self.lines(25, source: "backup", from: 26))
        #expect(second.status == 0, "\(second.standardError)")
        #expect(ContinuousClock.now - started < .seconds(2.5), "the 50 events took \(ContinuousClock.now - started)")

        let calls = try Self.waitForCalls(bus, within: .seconds(10)) { $0.last?.summary == "backup: 50 failures" }
        #expect(calls.last?.summary == "backup: 50 failures", "\(calls.map(\.summary)) \(daemon.log)")
        // Let a late extra update show itself before counting.
        usleep(2_500_000)
        let all = try bus.notifyCalls()
        #expect(all.count >= 1 && all.count <= 4, "one notification plus at most 3 updates: \(all.map(\.summary))")
        #expect(all.first?.replacesID == 0)
        #expect(all.dropFirst().allSatisfy { $0.replacesID != 0 }, "updates replace: \(all.map(\.replacesID))")
        let last = try #require(all.last)
        #expect(last.summary == "backup: 50 failures")
        // Newest first, capped, with the rest counted.
        let body = last.body.split(separator: "\n").map(String.init)
        #expect(body.first == "copy 50 failed", "\(body)")
        #expect(body.count == 11 && body.last == "… and 40 more", "\(body)")
    }

    /// A group speaks with its highest member's level: three critical events give a critical
    /// notification (urgency 2, shown until dismissed), not one at the default level.
    @Test func threeCriticalEventsGiveACriticalGroupNotification() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(Self.groupingConfig), environment: bus.environment)
        defer { daemon.stop() }
        let environment = daemon.environment.merging(bus.environment) { $1 }
        let input = (1...3).map { "{\"title\": \"array \($0) degraded\", \"source\": \"raid\", \"level\": \"critical\"}\n" }.joined()
        let sent = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: environment, input: input)
        #expect(sent.status == 0, "\(sent.standardError)")
        let calls = try Self.waitForCalls(bus, within: .seconds(10)) { $0.last?.summary == "raid: 3 failures" }
        let shown = try #require(calls.last, "\(daemon.log)")
        #expect(shown.summary == "raid: 3 failures")
        #expect(shown.hints["urgency"]?.text == "2", "\(shown.hints)")
        #expect(shown.expireTimeout == 0, "critical stays until dismissed: \(shown.expireTimeout)")
    }

    @Test func aOneShotSendDeliversAtOnceAndSaysGroupingNeedsServe() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config(Self.groupingConfig)
        let runtime = try TestEnvironment.temporaryDirectory("group-local")
        let result = try ProcessRunner.notifyRoute(
            ["send", "--json", "--config", config.path, "-s", "backup", "-l", "error", "copy failed"],
            environment: bus.environment.merging(["XDG_RUNTIME_DIR": runtime.path, "XDG_STATE_HOME": runtime.path]) { $1 })
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("\"via\":\"local\""), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("grouping needs `notify-route serve`"), "\(result.standardOutput)")
        #expect(try bus.notifyCalls().map(\.summary) == ["copy failed"])
    }

    @Test func explainSaysWhichGroupAnEventJoinsAndWhen() throws {
        let config = try Self.config(Self.groupingConfig)
        let runtime = try TestEnvironment.temporaryDirectory("group-explain")
        let result = try ProcessRunner.notifyRoute(
            ["explain", "--config", config.path, "-s", "backup", "-l", "error", "copy failed"],
            environment: ["XDG_RUNTIME_DIR": runtime.path, "XDG_STATE_HOME": runtime.path, "NO_COLOR": "1"])
        #expect(result.standardOutput.contains("grouped into \"backup\" (1 event), sent or updated at 20"), "\(result.standardOutput) \(result.standardError)")
    }

    /// An open group lives in the state: a daemon killed before `wait` ends leaves it to the next.
    @Test func anOpenGroupSurvivesADaemonRestartAndAReload() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], group: { by: [source], wait: 2s, interval: 2s } } ]
            """)
        let first = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { first.stop() }
        let sent = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: first.environment.merging(bus.environment) { $1 },
                                                 input: Self.lines(3, source: "backup"))
        #expect(sent.standardOutput.contains("\"reason\":\"grouped\""), "\(sent.standardOutput)")
        let opened = Date()
        first.signal(SIGKILL)
        #expect(first.waitForExit() != nil)
        #expect(try bus.notifyCalls().isEmpty)

        let second = try DaemonProcess.start(config: config, environment: bus.environment, runtime: first.runtimeDirectory)
        defer { second.stop() }
        let reload = try ProcessRunner.notifyRoute(["reload"], environment: second.environment)
        #expect(reload.status == 0, "\(reload.standardError)")
        let calls = try Self.waitForCalls(bus, within: .seconds(6)) { !$0.isEmpty }
        #expect(calls.map(\.summary) == ["backup: 3 failures"], "\(second.log)")
        let late = Date().timeIntervalSince(opened) - 2
        #expect(late <= 1.5, "sent \(late) s after its wait ended")
    }

    /// Quiet hours that began while a group was open hold its notification like any event
    /// of the route, until a minute in which they are over.
    @Test func quietHoursHoldAGroupThatOpenedBeforeThem() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let open = "sinks: { desktop: { kind: desktop, deadline: 2s } }\nroutes: [ { to: [desktop], group: { by: [source], wait: 2s, interval: 2s } } ]\n"
        let config = try Self.config(open)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let sent = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: daemon.environment.merging(bus.environment) { $1 },
                                                 input: Self.lines(3, source: "backup"))
        #expect(sent.standardOutput.contains("\"reason\":\"grouped\""), "\(sent.standardOutput)")
        // Quiet from five minutes ago to five minutes on, for errors too.
        let format = DateFormatter()
        format.dateFormat = "HH:mm"
        format.timeZone = TimeZone(identifier: "UTC")
        let window = format.string(from: Date(timeIntervalSinceNow: -300)) + "-" + format.string(from: Date(timeIntervalSinceNow: 300))
        try open.replacingOccurrences(of: "interval: 2s }", with: "interval: 2s }, quiet: { hours: [\"\(window)\"], timezone: UTC, breakthrough: critical }")
            .write(to: config, atomically: true, encoding: .utf8)
        let reload = try ProcessRunner.notifyRoute(["reload"], environment: daemon.environment)
        #expect(reload.status == 0, "\(reload.standardError)")

        usleep(3_500_000)
        let calls = try bus.notifyCalls()
        #expect(calls.isEmpty, "sent in quiet hours: \(calls.map(\.summary))")
        let status = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment).standardOutput
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("  backup on desktop via route 1: 3 events, 3 not shown yet, next at ") },
                                "\(status)")
        #expect(line.hasSuffix(":00.000Z"), "looked at again when a minute starts: \(line)")
    }

    /// A thousand groups open at once all go out within a second of their due time.
    @Test func aThousandOpenGroupsAreSentWithinASecondOfTheirDueTime() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 5s } }
            routes: [ { to: [desktop], group: { by: [source], wait: 3s, interval: 1m } } ]
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let input = (1...1000).map { "{\"title\": \"failed\", \"source\": \"job\($0)\", \"level\": \"error\"}\n" }.joined()
        let before = Date()
        let ingest = try ProcessRunner.notifyRoute(["ingest", "--json"], environment: daemon.environment.merging(bus.environment) { $1 },
                                                   input: input, timeLimit: .seconds(60))
        let after = Date()
        #expect(ingest.status == 0, "\(ingest.standardError)")
        #expect(ingest.standardOutput.components(separatedBy: "\"reason\":\"grouped\"").count - 1 == 1000)
        // Each group is due 3 s after its event, between `before` + 3 s and `after` + 3 s.
        #expect(try Self.notBefore(bus, before.addingTimeInterval(3)), "a group went out before its wait ended")
        let calls = try Self.waitForCalls(bus, within: .seconds(30)) { $0.count >= 1000 }
        let done = Date()
        #expect(calls.count == 1000, "\(calls.count) of 1000 groups sent: \(daemon.log.suffix(2000))")
        #expect(Set(calls.map(\.summary)).count == 1000)
        #expect(calls.allSatisfy { $0.summary.hasSuffix(": 1 failure") })
        #expect(done.timeIntervalSince(after) <= 3 + 1, "the last group went out \(done.timeIntervalSince(after) - 3) s after the last was due")
    }

    /// Whether nothing reached the bus before `date` (polled once, just after it).
    static func notBefore(_ bus: DBusMockDaemon, _ date: Date) throws -> Bool {
        let wait = date.timeIntervalSinceNow - 0.2
        guard wait > 0 else { return true }  // already past: the ingest itself was slow
        usleep(UInt32(wait * 1_000_000))
        return try bus.notifyCalls().isEmpty
    }
}
