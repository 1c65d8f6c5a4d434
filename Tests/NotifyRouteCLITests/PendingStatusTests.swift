import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route status` lists what waits for the daemon's clock: open groups, escalations
/// and snoozes, with when each is next due, and the inhibitions in effect; and what is
/// acknowledged or closed leaves the list.
@Suite(
    "status of groups and escalations", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct PendingStatusTests {
    static let config = """
        sinks:
          desktop: { kind: desktop, deadline: 2s }
          pager:   { kind: desktop, deadline: 2s, hints: { desktop-entry: pager } }
        routes:
          - match: { source: backup }
            to: [desktop]
            group: { by: [source], wait: 10m, interval: 10m }
          - match: { source: disk }
            to: [desktop]
            escalate: { after: 10m, to: [pager], repeat: 30m }
        """

    /// The status's times: ISO 8601, with or without fractional seconds.
    static func date(_ value: Any?) -> Date? {
        guard let text = value as? String else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    @Test func statusListsOpenGroupsAndWaitingEscalations() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try DaemonClockTests.config(Self.config), environment: bus.environment)
        defer { daemon.stop() }
        for index in 1...3 {
            let sent = try DaemonClockTests.send(["-s", "backup", "-l", "error", "copy \(index) failed"], daemon, bus: bus)
            #expect(sent.status == 0 && sent.standardOutput.contains("\"reason\":\"grouped\""), "\(sent.standardOutput) \(sent.standardError)")
        }
        let sentAt = Date()
        let disk = try DaemonClockTests.send(["-s", "disk", "-A", "fix=Fix it", "-r", "disk-full", "Disk full"], daemon, bus: bus)
        #expect(disk.status == 0, "\(disk.standardError)")

        let text = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment)
        #expect(text.status == 0, "\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n").map(String.init)
        let group = try #require(lines.firstIndex(of: "open groups:"), "\(text.standardOutput)")
        #expect(lines[group + 1].hasPrefix("  backup on desktop via route 1: 3 events, 3 not shown yet, next at "), "\(lines[group + 1])")
        let timers = try #require(lines.firstIndex(of: "escalations and snoozes:"), "\(text.standardOutput)")
        #expect(lines[timers + 1].hasPrefix("  Disk full (replace key disk-full) via route 2: escalates to pager at "), "\(lines[timers + 1])")

        let json = try ProcessRunner.notifyRoute(["status", "--json"], environment: daemon.environment)
        let status = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect(status["groups_open"] as? Int == 1 && status["timers_waiting"] as? Int == 1, "\(json.standardOutput)")
        let timer = try #require((status["timers"] as? [[String: Any]])?.first)
        let due = try #require(Self.date(timer["due"]), "\(timer)")
        #expect(abs(due.timeIntervalSince(sentAt) - 600) < 5, "due 10 minutes after the send: \(timer)")
        let groupDue = try #require(Self.date((status["groups"] as? [[String: Any]])?.first?["due"]))
        #expect(groupDue.timeIntervalSince(sentAt) > 590, "the group waits 10 minutes: \(groupDue)")

        // Acknowledged: the escalation leaves the list; the group stays.
        let ack = try ProcessRunner.notifyRoute(["ack", "-r", "disk-full"], environment: daemon.environment.merging(bus.environment) { $1 })
        #expect(ack.status == 0, "\(ack.standardError)")
        let after = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment).standardOutput
        #expect(!after.contains("escalations and snoozes:") && after.contains("open groups:"), "\(after)")
    }

    @Test func statusListsActiveInhibitionsUntilTheSourceIsClosed() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let daemon = try DaemonProcess.start(config: try DaemonClockTests.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop] } ]
            inhibit:
              - source: { level: critical, source: "db*" }
                target: { level: "<=warning" }
                equal: [source]
                for: 30m
            """), environment: bus.environment)
        defer { daemon.stop() }
        let before = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment).standardOutput
        #expect(!before.contains("inhibitions:"), "\(before)")

        let sentAt = Date()
        let source = try DaemonClockTests.send(["-s", "db1", "-l", "critical", "-r", "db1-down", "Database down"], daemon, bus: bus)
        #expect(source.status == 0, "\(source.standardError)")
        let held = try DaemonClockTests.send(["-s", "db1", "-l", "warning", "Slow queries"], daemon, bus: bus)
        #expect(held.standardOutput.contains("\"reason\":\"inhibited\""), "\(held.standardOutput)")

        let text = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment).standardOutput
        let lines = text.split(separator: "\n").map(String.init)
        let heading = try #require(lines.firstIndex(of: "inhibitions:"), "\(text)")
        let line = lines[heading + 1]
        #expect(line.hasPrefix("  rule 1 holds back level<=warning with source=db1 until "), "\(line)")
        #expect(line.hasSuffix(" (or close -r db1-down)"), "\(line)")
        let json = try ProcessRunner.notifyRoute(["status", "--json"], environment: daemon.environment)
        let status = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let inhibition = try #require((status["inhibitions"] as? [[String: Any]])?.first, "\(json.standardOutput)")
        let until = try #require(Self.date(inhibition["until"]))
        #expect(abs(until.timeIntervalSince(sentAt) - 1800) < 5, "30 minutes from the source event: \(inhibition)")

        let close = try ProcessRunner.notifyRoute(["close", "-r", "db1-down"], environment: daemon.environment.merging(bus.environment) { $1 })
        #expect(close.status == 0, "\(close.standardError)")
        let after = try ProcessRunner.notifyRoute(["status"], environment: daemon.environment).standardOutput
        #expect(!after.contains("inhibitions:"), "closed: \(after)")
    }
}
