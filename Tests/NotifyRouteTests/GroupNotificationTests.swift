import Foundation
import NotifyRoute
import NotifyRouteTesting
import Testing

/// A group's notification, as the daemon's clock sends it: it speaks with its members'
/// highest level, and the style that level cascades to (journal priority, urgency, timeout).
@Suite struct GroupNotificationTests {
    func router(_ sink: RecordingSink, clock: ManualClock) throws -> NotificationRouter {
        let configuration = try RouterConfiguration.load(yaml: """
            sinks: { out: { kind: recording } }
            routes: [ { to: [out], group: { by: [source], wait: 30s, interval: 5m } } ]
            """, file: "groups.yaml", registry: SinkRegistry([SinkPlugin(kind: "recording", summary: "records") { _ in RecordingSink() }]))
        let router = try NotificationRouter(configuration: configuration, sinks: ["out": sink], clock: clock)
        router.keepTime()
        return router
    }

    @Test(arguments: [Level.critical, .error, .warning])
    func aGroupTakesTheHighestLevelOfItsMembers(highest: Level) async throws {
        let sink = RecordingSink(), clock = ManualClock()
        let router = try router(sink, clock: clock)
        for level in [Level.info, highest, .notice] {
            let report = try await router.send(NotificationEvent(title: "disk \(level)", level: level, source: "backup"))
            #expect(report.statusName(of: "out") == "suppressed")
        }
        #expect(sink.deliveries.isEmpty)
        clock.advance(by: .seconds(31))
        let due = await router.deliverDue()
        #expect(due.reports.count == 1)
        let shown = try #require(sink.deliveries.first?.event)
        #expect(shown.level == highest)
        // The level's whole style, not only its name: what the journal, the desktop and the
        // terminal read.
        let expected = LevelStyle.builtIn(for: highest)
        #expect(shown.style.journalPriority == expected.journalPriority)
        #expect(shown.style.urgency == expected.urgency)
        #expect(shown.timeout == expected.timeout)
    }
}
