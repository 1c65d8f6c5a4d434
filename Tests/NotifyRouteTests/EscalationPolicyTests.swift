import Foundation
import NotifyRoute
import NotifyRouteTesting
import Testing

/// The escalate and snooze stages with a manual clock: what arms an escalation, what it
/// sends when due, what acknowledges it, and what a dry run says.
struct EscalationPolicyTests {
    static let yaml = """
        sinks: { desk: { kind: recording }, pager: { kind: recording } }
        routes: [ { to: [desk], escalate: { after: 10m, to: [pager], repeat: 30m, level: critical } } ]
        """

    @Test func aStickyEventEscalatesWhenDueAndRepeatsUntilAcknowledged() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("Disk full") { $0.timeout = .never; $0.replaceKey = "disk" }
        #expect(report.outcomes.first?.notes.contains { $0.hasPrefix("escalates to pager at") } == true, "\(report.outcomes)")
        #expect(await fixture.router.deliverDueTimers().reports.isEmpty, "not due yet")

        fixture.clock.advance(by: .seconds(600))
        let due = await fixture.router.deliverDueTimers()
        #expect(due.reports.count == 1)
        #expect(fixture.recorder("pager").deliveries.map(\.event.title) == ["Disk full"])
        #expect(fixture.recorder("pager").deliveries.first?.event.level == .critical)
        #expect(due.reports.first?.notes.contains { $0.hasPrefix("escalated (1×)") } == true)
        #expect(due.nextDue == fixture.clock.now().addingTimeInterval(1800))

        fixture.clock.advance(by: .seconds(1800))
        _ = await fixture.router.deliverDueTimers()
        #expect(fixture.recorder("pager").deliveries.count == 2)

        #expect(try fixture.router.acknowledge(replaceKey: "disk") == 1)
        fixture.clock.advance(by: .seconds(1800))
        #expect(await fixture.router.deliverDueTimers().reports.isEmpty)
        #expect(fixture.recorder("pager").deliveries.count == 2)
        #expect(try fixture.router.pendingTimers() == 0)
    }

    @Test func aTransientEventWithoutActionsDoesNotEscalate() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("Backup done")
        #expect(try fixture.router.pendingTimers() == 0)
        fixture.clock.advance(by: .seconds(3600))
        #expect(await fixture.router.deliverDueTimers().reports.isEmpty)
        #expect(fixture.recorder("pager").deliveries.isEmpty)
    }

    @Test func anActionOnTheNotificationAcknowledgesIt() async throws {
        let configuration = try RouterConfiguration.load(yaml: Self.yaml, file: "escalate.yaml", registry: RouterFixture.registry)
        // A desk that shows actions (the recording kind shows none, and its events carry none).
        let desk = RecordingSink(capabilities: SinkCapabilities(canReplace: true, canClose: true, supportsActions: true, reportsInteractions: true))
        let pager = RecordingSink(), clock = ManualClock()
        let router = try NotificationRouter(configuration: configuration, sinks: ["desk": desk, "pager": pager], clock: clock)
        let report = try await router.send(NotificationEvent(title: "Disk full", actions: [NotificationAction(id: "fix", label: "Fix")]))
        let handle = try #require(report.outcomes.first?.handle)
        // An expiry is no answer: nobody saw it.
        await router.acknowledge(RoutedInteraction(sink: "desk", handle: handle, interaction: .dismissed(.expired)))
        #expect(try router.pendingTimers() == 1)
        let done = await router.acknowledge(RoutedInteraction(sink: "desk", handle: handle, interaction: .actionInvoked("fix")))
        #expect(done.count == 1)
        clock.advance(by: .seconds(600))
        #expect(await router.deliverDueTimers().reports.isEmpty)
        #expect(pager.deliveries.isEmpty)
    }

    @Test func closeStopsTheEscalation() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("Disk full") { $0.timeout = .never; $0.replaceKey = "disk" }
        let closed = await fixture.router.close(replaceKey: "disk")
        #expect(closed.notes.contains("its escalation stopped"))
        #expect(try fixture.router.pendingTimers() == 0)
    }

    @Test func snoozeAddsItsActionOnlyWhereActionsAreShownAndReported() async throws {
        let fixture = try RouterFixture("""
            sinks: { desk: { kind: recording }, plain: { kind: plain } }
            routes: [ { to: [desk, plain], snooze: { for: 15m } } ]
            """)
        try await fixture.send("Standup")
        // The recording sink reports no interactions: nobody would hear the choice.
        #expect(fixture.recorder("desk").deliveries.first?.event.actions == [])
        #expect(fixture.recorder("plain").deliveries.first?.event.actions == [])
    }

    @Test func aDryRunSaysWhenItWouldEscalateAndArmsNothing() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.router.dryRun(NotificationEvent(title: "Disk full", timeout: .never))
        #expect(report.outcomes.first?.notes.contains { $0.hasPrefix("would escalate to pager at") } == true, "\(report.outcomes)")
        #expect(try fixture.router.pendingTimers() == 0)
    }

    @Test func snoozingClosesAndShowsItAgainMarkedAfterTheDuration() async throws {
        let configuration = try RouterConfiguration.load(yaml: """
            sinks: { desk: { kind: custom } }
            routes: [ { to: [desk], snooze: { for: 15m, label: "Later" } } ]
            """, file: "snooze.yaml", registry: SinkRegistry([SinkPlugin(kind: "custom", summary: "") { _ in RecordingSink() }]))
        let desk = RecordingSink(capabilities: SinkCapabilities(canReplace: true, canClose: true, supportsActions: true, reportsInteractions: true))
        let clock = ManualClock()
        let router = try NotificationRouter(configuration: configuration, sinks: ["desk": desk], clock: clock)
        let report = try await router.send(NotificationEvent(title: "Standup"))
        #expect(desk.deliveries.first?.event.actions == [NotificationAction(id: Snooze.actionID, label: "Later")])
        let handle = try #require(report.outcomes.first?.handle)

        let done = await router.acknowledge(RoutedInteraction(sink: "desk", handle: handle, interaction: .actionInvoked(Snooze.actionID)))
        #expect(done.first?.hasPrefix("snoozed until") == true)
        #expect(desk.closes.map(\.handle) == [handle])
        clock.advance(by: .seconds(899))
        #expect(await router.deliverDueTimers().reports.isEmpty)
        clock.advance(by: .seconds(1))
        let due = await router.deliverDueTimers()
        #expect(due.reports.map(\.event.title) == ["Standup (snoozed)"])
        #expect(desk.deliveries.map(\.event.title) == ["Standup", "Standup (snoozed)"])
        // Shown again with the action: it can be snoozed again.
        #expect(desk.deliveries.last?.event.actions.map(\.id) == [Snooze.actionID])
    }
}
