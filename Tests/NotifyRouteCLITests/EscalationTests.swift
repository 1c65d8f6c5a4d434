import Foundation
import NotifyRouteTestSupport
import Testing

/// Escalation and snooze through `notify-route serve`, on a real bus with dbusmock: the
/// daemon sends what nobody acknowledged to the escalation sink on time, and learns of
/// actions and dismissals from the daemon's signals.
@Suite(
    "escalation and snooze", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct EscalationTests {
    /// Two desktop sinks on the mock, told apart by a hint: `desktop` and the escalation's `pager`.
    static func config(escalate: String = "{ after: 2s, to: [pager] }", extra: String = "") throws -> URL {
        try DaemonClockTests.config("""
            sinks:
              desktop: { kind: desktop, deadline: 2s }
              pager:   { kind: desktop, deadline: 2s, hints: { desktop-entry: pager } }
            routes:
              - to: [desktop]
                escalate: \(escalate)
            \(extra)
            """)
    }

    static func pagerCalls(_ bus: DBusMockDaemon) throws -> [DBusMockDaemon.NotifyCall] {
        try bus.notifyCalls().filter { $0.hints["desktop-entry"]?.text == "pager" }
    }

    /// The notification id the report names for `sink`.
    static func notificationID(_ output: String, sink: String = "desktop") -> UInt32? {
        guard let range = output.range(of: #""handle":"[0-9]+"#, options: .regularExpression) else { return nil }
        return UInt32(output[range].dropFirst(#""handle":""#.count))
    }

    static func waitForPager(_ bus: DBusMockDaemon, count: Int = 1, within limit: Duration) throws -> Date? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try pagerCalls(bus).count >= count { return Date() }
            usleep(20_000)
        }
        return nil
    }

    @Test func withNoActionTheEscalationSinkGetsItOnTime() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(escalate: "{ after: 2s, to: [pager], level: critical }"),
                                             environment: bus.environment)
        defer { daemon.stop() }
        let sent = Date()
        let result = try DaemonClockTests.send(["-A", "fix=Fix it", "-r", "disk", "Disk full"], daemon, bus: bus)
        #expect(result.standardOutput.contains("\"via\":\"daemon\""), "\(result.standardOutput) \(result.standardError)")
        #expect(result.standardOutput.contains("escalates to pager at"), "\(result.standardOutput)")
        let seen = try #require(try Self.waitForPager(bus, within: .seconds(6)), "no escalation: \(daemon.log)")
        let late = seen.timeIntervalSince(sent)
        #expect(late >= 2.0 && late <= 3.0, "escalated \(late) s after the send; due after 2 s")
        let call = try #require(try Self.pagerCalls(bus).first)
        #expect(call.summary == "Disk full")
        #expect(call.hints["urgency"]?.text == "2", "sent at the escalation's level, critical")
        // Once: no repeat configured.
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try Self.pagerCalls(bus).count == 1)

        let history = try ProcessRunner.notifyRoute(["history", "--json"], environment: daemon.environment)
        #expect(history.standardOutput.contains("escalate"), "\(history.standardOutput)")
    }

    @Test func anActionBeforeTheDeadlineMeansNothingEscalates() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(), environment: bus.environment)
        defer { daemon.stop() }
        let result = try DaemonClockTests.send(["-A", "fix=Fix it", "Disk full"], daemon, bus: bus)
        let id = try #require(Self.notificationID(result.standardOutput), "\(result.standardOutput)")
        try bus.emitActionInvoked(id: id, action: "fix")
        #expect(try Self.waitForPager(bus, within: .seconds(4)) == nil, "escalated although acted on: \(daemon.log)")
        #expect(daemon.log.contains("acknowledged"), "\(daemon.log)")
    }

    @Test func aDismissalStopsTheRepeats() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(escalate: "{ after: 1s, to: [pager], repeat: 1s }"),
                                             environment: bus.environment)
        defer { daemon.stop() }
        let result = try DaemonClockTests.send(["-t", "never", "Backup stuck"], daemon, bus: bus)
        let id = try #require(Self.notificationID(result.standardOutput), "\(result.standardOutput)")
        #expect(try Self.waitForPager(bus, count: 2, within: .seconds(5)) != nil, "no repeat: \(daemon.log)")
        try bus.emitNotificationClosed(id: id, reason: 2)
        Thread.sleep(forTimeInterval: 0.5)
        let stopped = try Self.pagerCalls(bus).count
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try Self.pagerCalls(bus).count == stopped, "repeated after the dismissal: \(daemon.log)")
    }

    @Test func ackStopsTheRepeats() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(escalate: "{ after: 1s, to: [pager], repeat: 1s }"),
                                             environment: bus.environment)
        defer { daemon.stop() }
        _ = try DaemonClockTests.send(["-t", "never", "-r", "backup", "Backup stuck"], daemon, bus: bus)
        #expect(try Self.waitForPager(bus, count: 1, within: .seconds(4)) != nil, "no escalation: \(daemon.log)")
        let ack = try ProcessRunner.notifyRoute(["ack", "-r", "backup"], environment: daemon.environment)
        #expect(ack.status == 0, "\(ack.standardError)")
        Thread.sleep(forTimeInterval: 0.3)
        let stopped = try Self.pagerCalls(bus).count
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try Self.pagerCalls(bus).count == stopped, "repeated after ack: \(daemon.log)")
        let again = try ProcessRunner.notifyRoute(["ack", "-r", "backup"], environment: daemon.environment)
        #expect(again.status == 1, "nothing left to acknowledge")
        #expect(again.standardError.contains("no escalation is pending"))
    }

    @Test func anEscalationSurvivesADaemonRestart() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config(escalate: "{ after: 3s, to: [pager] }")
        let first = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { first.stop() }
        let sent = Date()
        _ = try DaemonClockTests.send(["-t", "never", "Backup stuck"], first, bus: bus)
        first.signal(SIGKILL)
        #expect(first.waitForExit() != nil)
        let second = try DaemonProcess.start(config: config, environment: bus.environment, runtime: first.runtimeDirectory)
        defer { second.stop() }
        let seen = try #require(try Self.waitForPager(bus, within: .seconds(7)), "no escalation after the restart: \(second.log)")
        let late = seen.timeIntervalSince(sent)
        #expect(late >= 3.0 && late <= 4.0, "escalated \(late) s after the send; due after 3 s")
    }

    @Test func anEscalationSurvivesAReload() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try Self.config(escalate: "{ after: 3s, to: [pager] }"), environment: bus.environment)
        defer { daemon.stop() }
        let sent = Date()
        _ = try DaemonClockTests.send(["-t", "never", "Backup stuck"], daemon, bus: bus)
        let reload = try ProcessRunner.notifyRoute(["reload"], environment: daemon.environment)
        #expect(reload.status == 0, "\(reload.standardError)")
        let seen = try #require(try Self.waitForPager(bus, within: .seconds(7)), "no escalation after the reload: \(daemon.log)")
        let late = seen.timeIntervalSince(sent)
        #expect(late >= 3.0 && late <= 4.0, "escalated \(late) s after the send; due after 3 s")
    }

    @Test func snoozeClosesTheNotificationAndShowsItAgainMarked() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try DaemonClockTests.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], snooze: { for: 2s, label: "Later" } } ]
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let result = try DaemonClockTests.send(["Standup"], daemon, bus: bus)
        let id = try #require(Self.notificationID(result.standardOutput), "\(result.standardOutput)")
        let shown = try #require(try bus.notifyCalls().first)
        #expect(shown.actions == ["notify-route-snooze", "Later"])
        let snoozed = Date()
        try bus.emitActionInvoked(id: id, action: "notify-route-snooze")
        let deadline = ContinuousClock.now + .seconds(3)
        while try bus.closeCalls().isEmpty, ContinuousClock.now < deadline { usleep(20_000) }
        #expect(try bus.closeCalls() == [id], "the snoozed notification closes: \(daemon.log)")
        let again = try #require(try DaemonClockTests.waitForNotify(bus, startingWith: "Standup (snoozed)", within: .seconds(5)),
                                 "not shown again: \(daemon.log)")
        let late = again.0.timeIntervalSince(snoozed)
        #expect(late >= 2.0 && late <= 3.0, "shown again \(late) s after the snooze; due after 2 s")
        let history = try ProcessRunner.notifyRoute(["history", "--json"], environment: daemon.environment)
        #expect(history.standardOutput.contains("Standup (snoozed)"), "\(history.standardOutput)")
    }
}
