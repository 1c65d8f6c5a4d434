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
    /// Everything due now: held summaries, then groups; the earliest next due time of all.
    public func deliverDue() async -> DueSummaries {
        keepTime()
        var result = await deliverDueSummaries()
        result.merge(await deliverDueGroups())
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
        for (key, record) in sending {
            if let report = await deliverGroup(record, key: key) { result.reports.append(report) }
        }
        return result
    }

    /// One group's notification: shown the first time, replaced after.
    private func deliverGroup(_ record: RouterState.GroupRecord, key: String) async -> DeliveryReport? {
        let target = groupTarget(record)
        var event = NotificationEvent(title: record.title, body: record.body, level: record.highest)
        event.source = record.name
        let routed = RoutedEvent(event, only: nil, tracing: false)
        let resolved = pipeline.fanOut.resolve(routed)
        var wave = pipeline.fanOut.run([target], routed, resolved: resolved, failoverFor: [:])
        guard var flow = wave.flows.first else {
            logger.warning("group not sent: no such sink", metadata: ["group": "\(record.name)", "sink": "\(record.sink)"])
            return nil
        }
        if let handle = record.handle, flow.capabilities.canReplace { flow.decision.intent = .replace(handle) }
        flow.answer = await SinkDeliverStage.deliver(flow)
        wave.flows[0] = flow
        let handle = flow.answer.receipt?.handle
        do {
            try store.withState { state in
                guard var current = state.group(forKey: key) else { return }
                if let handle { current.handle = handle }
                // Not shown: what it carried is due again at the next interval.
                if flow.answer.error != nil { current.pending += record.pending }
                state.storeGroup(current, forKey: key)
            }
        } catch {
            logger.warning("groups: state unavailable", metadata: ["error": "\(error)"])
        }
        var outcome = wave.outcomes[flow.index]
        outcome.duration = flow.answer.duration
        outcome.handle = handle
        if let error = flow.answer.error {
            outcome.status = SinkOutcome.Status(failure: error)
            outcome.notes.append("group \"\(record.name)\" not sent; tried again in an interval")
        } else {
            outcome.status = if case .replace(let previous) = flow.decision.intent { .replaced(previous: previous) } else { .delivered }
            outcome.notes.append("group \"\(record.name)\": \(record.count) events, \(record.pending) new")
        }
        let report = DeliveryReport(event: flow.event, matchedRoutes: [record.route], outcomes: [outcome])
        pipeline.record.remember(routed, report, now: clock.now())
        return report
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
