#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

/// What a process that owns the clock delivers when it falls due: one list of timed jobs
/// that the daemon's timer runs in turn, each saying when it is next due. A new timed policy
/// adds its `deliverDue…()` here.
extension NotificationRouter {
    /// Everything due now: held summaries, groups, then what a pause that has ended held;
    /// the earliest next due time of all.
    public func deliverDue() async -> DueSummaries {
        keepTime()
        var result = await deliverDueSummaries()
        result.merge(await deliverDueGroups())
        result.merge(await deliverDuePause())
        return result
    }

    /// Called by the process whose clock delivers what is due (``deliverDue()``): from then
    /// on grouped events wait for it instead of being delivered at once.
    public func keepTime() {
        timeKept.store(true, ordering: .relaxed)
    }

    var keepsTime: Bool { timeKept.load(ordering: .relaxed) }

    /// Sends or updates the notification of each group whose `wait` or `interval` has ended,
    /// and closes the groups that stayed quiet for an `interval`. A group whose route is gone
    /// from the config (a reload) still goes to its sink, once.
    public func deliverDueGroups() async -> DueSummaries {
        let now = clock.now()
        var sending: [(key: String, record: RouterState.GroupRecord)] = []
        var result = DueSummaries(reports: [], nextDue: nil, watches: configuration.routes.contains { $0.group != nil })
        do {
            try store.withState { state in
                for (key, record) in state.groups(dueBy: now) {
                    guard record.pending > 0 else {
                        state.storeGroup(nil, forKey: key)  // quiet for an interval: closed
                        continue
                    }
                    var next = record
                    if let quiet = groupTarget(record).quietHours, quiet.activeWindow(at: now) != nil, record.highest < quiet.breakthrough {
                        // Held like any event of the route: looked at again when the next
                        // minute starts, as quiet windows move by whole minutes.
                        next.due = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60 + 60)
                        state.storeGroup(next, forKey: key)
                        continue
                    }
                    next.pending = 0
                    next.due = now.addingTimeInterval(record.interval)
                    state.storeGroup(next, forKey: key)
                    sending.append((key, record))
                }
                result.nextDue = state.nextGroupDue()
            }
        } catch {
            logger.warning("groups: state unavailable", metadata: ["error": "\(error)"])
            result.nextDue = now.addingTimeInterval(5)
            return result
        }
        // All at once, each under its sink's deadline: a thousand groups due together go
        // out in about one delivery's time, not one after the other.
        let sent = await withTaskGroup(of: SentGroup?.self) { tasks in
            for (key, record) in sending { tasks.addTask { await self.deliverGroup(record, key: key) } }
            var sent: [SentGroup] = []
            for await group in tasks { if let group { sent.append(group) } }
            return sent
        }
        guard !sent.isEmpty else { return result }
        do {
            try store.withState { state in
                for group in sent {
                    guard var current = state.group(forKey: group.key) else { continue }
                    if let handle = group.handle { current.handle = handle }
                    // Not shown: what it carried is due again at the next interval.
                    if group.failed { current.pending += group.pending }
                    state.storeGroup(current, forKey: group.key)
                }
            }
        } catch {
            logger.warning("groups: state unavailable", metadata: ["error": "\(error)"])
        }
        let sentAt = clock.now()
        for group in sent {
            pipeline.record.remember(group.routed, group.report, now: sentAt)
            result.reports.append(group.report)
        }
        return result
    }

    /// What ``deliverGroup(_:key:)`` did, for the state and the history.
    private struct SentGroup: Sendable {
        var key: String
        var routed: RoutedEvent
        var report: DeliveryReport
        var handle: SinkHandle?
        var failed: Bool
        var pending: Int
    }

    /// One group's notification: shown the first time, replaced after.
    private func deliverGroup(_ record: RouterState.GroupRecord, key: String) async -> SentGroup? {
        let target = groupTarget(record)
        var event = NotificationEvent(title: record.title, body: record.body, level: record.highest)
        event.source = record.name
        var routing = RoutedEvent(event, only: nil, tracing: false)
        // What the cascade resolves from: the members' highest level, not the default of an
        // event that skipped the rules stage.
        routing.subject = pipeline.fanOut.cascade.subject(event, rules: routing.ruleLayer)
        let routed = routing
        let resolved = pipeline.fanOut.resolve(routed)
        let wave = pipeline.fanOut.run([target], routed, resolved: resolved, failoverFor: [:])
        guard var flow = wave.flows.first else {
            logger.warning("group not sent: no such sink", metadata: ["group": "\(record.name)", "sink": "\(record.sink)"])
            return nil
        }
        if let handle = record.handle, flow.capabilities.canReplace { flow.decision.intent = .replace(handle) }
        flow.answer = await SinkDeliverStage.deliver(flow)
        var outcome = wave.outcomes[flow.index]
        outcome.duration = flow.answer.duration
        outcome.handle = flow.answer.receipt?.handle
        if let error = flow.answer.error {
            outcome.status = SinkOutcome.Status(failure: error)
            outcome.notes.append("group \"\(record.name)\" not sent; tried again in an interval")
        } else {
            outcome.status = if case .replace(let previous) = flow.decision.intent { .replaced(previous: previous) } else { .delivered }
            outcome.notes.append("group \"\(record.name)\": \(record.count) events, \(record.pending) new")
        }
        let report = DeliveryReport(event: flow.event, matchedRoutes: [record.route], outcomes: [outcome])
        return SentGroup(key: key, routed: routed, report: report, handle: flow.answer.receipt?.handle,
                         failed: flow.answer.error != nil, pending: record.pending)
    }

    /// The route and sink a group was opened for, in the config of the moment.
    private func groupTarget(_ record: RouterState.GroupRecord) -> RouteTarget {
        for index in configuration.routes.indices {
            let route = configuration.routes[index]
            if RouteTarget.label("route", index, route.name) == record.route {
                return RouteTarget(sinkName: record.sink, label: record.route, route: route, instance: instances[record.sink])
            }
        }
        return RouteTarget(sinkName: record.sink, label: record.route, route: nil, instance: instances[record.sink])
    }
}

extension NotificationRouter.DueSummaries {
    /// Adds what another timed job did: its reports, and its next due time if earlier.
    public mutating func merge(_ other: Self) {
        reports += other.reports
        if let due = other.nextDue { nextDue = min(nextDue ?? due, due) }
        watches = watches || other.watches
    }
}
