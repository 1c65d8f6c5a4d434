#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Escalations and snoozes: armed after an event's deliveries, acknowledged by what users
/// do with the notifications (or `close`, `ack`), and sent when due by a process that owns
/// the clock (`notify-route serve`'s ``deliverDueTimers()``).
extension NotificationRouter {
    /// What ``deliverDueTimers()`` did: a report per escalation or snooze sent, and when the
    /// next timer is due (`nil`: none is pending).
    public struct DueTimers: Sendable {
        public var reports: [DeliveryReport]
        public var nextDue: Date?
    }

    /// How many due timers one round sends; the rest follow in the next round at once.
    static let dueTimersPerRound = 256
    /// How long a notification's snooze action is listened for.
    static let snoozableFor: TimeInterval = 86_400

    /// After the deliver stage: notes what the escalate and snooze stages decided, and (when
    /// keeping state) arms the escalation of the event per route, watching every notification
    /// delivered for it, and makes each notification with the snooze action snoozable.
    func armTimers(_ wave: inout Wave, _ event: borrowing RoutedEvent, keepingState: Bool) {
        var timers: [String: PendingTimer] = [:]
        var order: [String] = []
        var input: String?
        // Only the flows that arm something are copied out of the wave (most arm nothing).
        for position in wave.flows.indices where Self.armsTimer(wave.flows[position]) {
            let flow = wave.flows[position]
            let delivered = flow.answer.receipt?.handle.map { PendingTimer.watch(sink: flow.target.sinkName, handle: $0) }
            if let due = flow.decision.escalatesAt, let escalation = flow.target.route?.escalation {
                let verb = keepingState ? "escalates" : "would escalate"
                wave.outcomes[flow.index].notes.append(
                    "\(verb) to \(escalation.sinks.joined(separator: ", ")) at \(HistoryTime.format(due)) unless acknowledged "
                    + "(an action, a dismissal, `close` or `ack`); needs `notify-route serve`")
                guard keepingState else { continue }
                let id = "escalate\u{1E}" + flow.target.label + "\u{1E}" + (flow.event.replaceKey ?? flow.event.dedupKey)
                if timers[id] == nil {
                    input = input ?? IngestInput.json(event.explicit)
                    timers[id] = PendingTimer(id: id, kind: .escalate, route: flow.target.label, replaceKey: flow.event.replaceKey, due: due,
                                              sinks: escalation.sinks, event: input ?? "{}", since: clock.now())
                    order.append(id)
                }
                if let delivered { timers[id]?.watches.append(delivered) }
            }
            if flow.event.actions.contains(where: { $0.id == Snooze.actionID }) {
                wave.outcomes[flow.index].notes.append("with the action \"\(flow.target.route?.snooze?.label ?? "Snooze")\"")
                guard keepingState, let delivered else { continue }
                let id = "snoozable\u{1E}" + delivered
                input = input ?? IngestInput.json(event.explicit)
                timers[id] = PendingTimer(id: id, kind: .snoozable, route: flow.target.label, replaceKey: flow.event.replaceKey,
                                          due: clock.now().addingTimeInterval(Self.snoozableFor), sinks: [flow.target.sinkName],
                                          event: input ?? "{}", since: clock.now(), watches: [delivered])
                order.append(id)
            }
        }
        guard !timers.isEmpty else { return }
        do {
            try withTimers { table in
                for id in order { if let timer = timers[id] { try table.store(timer) } }
            }
        } catch {
            for flow in wave.flows where flow.decision.escalatesAt != nil {
                wave.outcomes[flow.index].notes.append("escalation not armed: state unavailable (\(error))")
            }
        }
    }

    /// Whether an unsuppressed flow has an escalation or carries the snooze action: the flows
    /// ``armTimers(_:_:keepingState:)`` notes and arms.
    private static func armsTimer(_ flow: borrowing SinkFlow) -> Bool {
        flow.decision.suppressed == nil
            && (flow.decision.escalatesAt != nil || flow.event.actions.contains { $0.id == Snooze.actionID })
    }

    /// Acknowledges what a user did with a notification: an action or a dismissal stops its
    /// escalation; the snooze action closes it and shows it again after the route's snooze.
    /// An expiry acknowledges nothing (nobody saw it go). Returns what it did, for the log.
    @discardableResult
    public func acknowledge(_ interaction: RoutedInteraction) async -> [String] {
        let watch = PendingTimer.watch(sink: interaction.sink, handle: interaction.handle)
        var done: [String] = []
        var closing = false
        do {
            try withTimers { table in
                let timers = try table.watching(watch)
                for timer in timers {
                    switch (timer.kind, interaction.interaction) {
                    case (.snoozable, .actionInvoked(Snooze.actionID)):
                        var snoozed = timer
                        let duration = route(labelled: timer.route)?.snooze?.duration ?? .seconds(3600)
                        snoozed.id = "snooze\u{1E}" + watch
                        snoozed.kind = .snooze
                        snoozed.due = clock.now().addingTimeInterval(duration.seconds)
                        snoozed.watches = []
                        try table.remove(id: timer.id)
                        try table.store(snoozed)
                        closing = true
                        done.append("snoozed until \(HistoryTime.format(snoozed.due))")
                    case (.escalate, .actionInvoked), (.escalate, .dismissed(.dismissed)), (.escalate, .dismissed(.closed)):
                        try table.remove(id: timer.id)
                        done.append("escalation of \(timer.route) acknowledged")
                    case (.snoozable, .dismissed):
                        try table.remove(id: timer.id)
                    default: break
                    }
                }
            }
        } catch {
            logger.warning("interaction not acknowledged: state unavailable", metadata: ["error": "\(error)"])
        }
        if closing, let instance = instances[interaction.sink], instance.sink.capabilities.canClose {
            let request = SinkCloseRequest(sinkName: interaction.sink, handle: interaction.handle, replaceKey: interaction.replaceKey ?? "",
                                           deadline: .now + instance.deadline)
            _ = try? await instance.sink.close(request)
        }
        return done
    }

    /// `notify-route ack` and `close`: stops the escalations of the events with `replaceKey`;
    /// returns how many there were.
    @discardableResult
    public func acknowledge(replaceKey: String) throws -> Int {
        try withTimers { table in
            let timers = try table.escalations(replaceKey: replaceKey)
            for timer in timers { try table.remove(id: timer.id) }
            return timers.count
        }
    }

    /// How many escalations and snoozes are pending (for `status` and tests).
    public func pendingTimers() throws -> Int {
        try withTimers { try $0.count() }
    }

    /// Sends the escalations and snoozes that are due: an escalation to its `to` sinks (and
    /// again after `repeat`), a snooze to the sink it was snoozed on, its title marked
    /// `(snoozed)`; both go through the policy stages, the sinks and the history.
    public func deliverDueTimers() async -> DueTimers {
        var result = DueTimers(reports: [], nextDue: nil)
        let now = clock.now()
        let due: [PendingTimer]
        do {
            due = try withTimers { try $0.due(by: now, limit: Self.dueTimersPerRound) }
        } catch {
            logger.warning("escalations: state unavailable", metadata: ["error": "\(error)"])
            result.nextDue = now.addingTimeInterval(5)
            return result
        }
        // Sent side by side, a few at a time: a thousand falling due at once each wait only
        // for their own sinks, not for every delivery before them.
        let sent = await withTaskGroup(of: (settled: Settled, report: DeliveryReport?).self) { group in
            var results: [(settled: Settled, report: DeliveryReport?)] = []
            for (position, timer) in due.enumerated() {
                if position >= Self.dueTimersInFlight, let result = await group.next() { results.append(result) }
                group.addTask { await self.fire(timer, now: now) }
            }
            for await result in group { results.append(result) }
            return results
        }
        result.reports = sent.compactMap(\.report)
        do {
            result.nextDue = try withTimers { table in
                for (settled, _) in sent {
                    switch settled {
                    case .remove(let id): try table.remove(id: id)
                    // Not one acknowledged while it was being sent.
                    case .reschedule(let timer): if try table.exists(id: timer.id) { try table.store(timer) }
                    }
                }
                return try table.nextDue()
            }
        } catch {
            logger.warning("escalations: state unavailable", metadata: ["error": "\(error)"])
            result.nextDue = now.addingTimeInterval(5)
        }
        return result
    }

    /// What a fired timer leaves in the table.
    enum Settled: Sendable {
        case remove(String)
        case reschedule(PendingTimer)
    }

    /// How many due timers are sent at once.
    static let dueTimersInFlight = 32

    /// Sends one due timer; what to do with it afterwards.
    private func fire(_ timer: PendingTimer, now: Date) async -> (settled: Settled, report: DeliveryReport?) {
        switch timer.kind {
        case .snoozable:
            return (.remove(timer.id), nil)
        case .escalate:
            guard let route = route(labelled: timer.route), let escalation = route.escalation,
                  var event = try? NotificationEvent.decode(jsonLine: timer.event) else {
                logger.notice("escalation dropped: its route has no escalate any more", metadata: ["route": "\(timer.route)"])
                return (.remove(timer.id), nil)
            }
            if let level = escalation.level { event.level = level }
            let count = timer.sent + 1
            let note = "escalated (\(count)×): nobody acknowledged it within \(DurationParser.format(escalation.after))"
                + (count > 1 ? " and \(count - 1) repeat(s)" : "")
            let label = timer.route + " escalate"
            let report = await resend(event, label: label, note: note, targets: escalation.sinks.map {
                RouteTarget(sinkName: $0, label: label, route: nil, instance: instances[$0])
            })
            guard let every = escalation.repeatEvery else { return (.remove(timer.id), report) }
            var next = timer
            next.sent = count
            // Acting on the escalation's own notification acknowledges it too.
            for outcome in report?.outcomes ?? [] where outcome.status.isSuccess {
                if let handle = outcome.handle, !next.watches.contains(PendingTimer.watch(sink: outcome.sink, handle: handle)) {
                    next.watches.append(PendingTimer.watch(sink: outcome.sink, handle: handle))
                }
            }
            next.due = max(timer.due.addingTimeInterval(every.seconds), now)
            return (.reschedule(next), report)
        case .snooze:
            guard var event = try? NotificationEvent.decode(jsonLine: timer.event) else { return (.remove(timer.id), nil) }
            if !event.title.hasSuffix(Snooze.marker) { event.title += Snooze.marker }
            return (.remove(timer.id), await reshow(event, on: timer.sinks, label: timer.route))
        }
    }

    /// The route a timer's label names in the current config.
    func route(labelled label: String) -> Route? {
        configuration.routes.indices.first { RouteTarget.label("route", $0, configuration.routes[$0].name) == label }
            .map { configuration.routes[$0] }
    }

    /// The event through the event stages, then one wave to `targets`, recorded in the history.
    private func resend(_ event: NotificationEvent, label: String, note: String, targets: [RouteTarget]) async -> DeliveryReport? {
        var routing = RoutedEvent(event, only: nil, tracing: false)
        do throws(EventError) { try pipeline.route(&routing) } catch { return nil }
        let routed = routing
        let resolved = pipeline.fanOut.resolve(routed)
        var outcomes = await wave(targets, routed, resolved, failoverFor: [:], through: pipeline)
        for index in outcomes.indices { outcomes[index].notes.append(note) }
        let report = DeliveryReport(event: resolved, matchedRules: routed.matchedRules, matchedRoutes: [label], outcomes: outcomes,
                                    notes: routed.notes + [note])
        pipeline.record.remember(routed, report, now: clock.now())
        return report
    }

    /// The event through its routes again, delivered only to `sinks` (where it was snoozed).
    private func reshow(_ event: NotificationEvent, on sinks: [String], label: String) async -> DeliveryReport? {
        var routing = RoutedEvent(event, only: nil, tracing: false)
        do throws(EventError) { try pipeline.route(&routing) } catch { return nil }
        routing.targets.removeAll { !sinks.contains($0.sinkName) }
        if routing.targets.isEmpty {
            routing.targets = sinks.map { RouteTarget(sinkName: $0, label: label, route: route(labelled: label), instance: instances[$0]) }
        }
        let routed = routing
        let resolved = pipeline.fanOut.resolve(routed)
        let outcomes = await wave(routed.targets, routed, resolved, failoverFor: [:], through: pipeline)
        let report = DeliveryReport(event: resolved, matchedRules: routed.matchedRules, matchedRoutes: routed.matchedRoutes,
                                    outcomes: outcomes, notes: routed.notes + ["shown again after a snooze"])
        pipeline.record.remember(routed, report, now: clock.now())
        return report
    }
}
