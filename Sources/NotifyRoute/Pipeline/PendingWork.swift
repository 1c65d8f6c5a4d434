#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What waits in the state for a time: open groups, escalations and snoozes, earliest
/// first, for `notify-route status`.
public struct PendingWork: Hashable, Sendable {
    public struct Group: Hashable, Sendable {
        public var route: String
        public var sink: String
        /// The `by` values: `backup`.
        public var name: String
        public var count: Int
        /// Events not yet shown in its notification.
        public var pending: Int
        public var due: Date
    }

    public struct Timer: Hashable, Sendable {
        /// `escalate` or `snooze`.
        public var kind: String
        public var route: String
        public var sinks: [String]
        public var replaceKey: String?
        public var title: String
        public var due: Date
        /// How many times it has escalated already.
        public var sent: Int
    }

    /// At most the limit asked for, earliest first.
    public var groups: [Group] = []
    public var timers: [Timer] = []
    /// How many there are in all.
    public var groupCount = 0
    public var timerCount = 0
}

extension NotificationRouter {
    /// The open groups and the escalations and snoozes waiting, at most `limit` of each.
    /// Notifications kept only for their snooze action are not listed: nothing is due for them.
    public func pendingWork(limit: Int = 20) throws -> PendingWork {
        var work = PendingWork()
        try store.withState { state in
            let groups = state.groups(dueBy: .distantFuture)
            work.groupCount = groups.count
            work.groups = groups.prefix(limit).map { _, record in
                PendingWork.Group(route: record.route, sink: record.sink, name: record.name, count: record.count,
                                  pending: record.pending, due: record.due)
            }
        }
        guard hasTimers else { return work }
        let timers = try withTimers { table in try table.due(by: .distantFuture, limit: Int.max) }.filter { $0.kind != .snoozable }
        work.timerCount = timers.count
        work.timers = timers.prefix(limit).map { timer in
            PendingWork.Timer(kind: timer.kind.rawValue, route: timer.route, sinks: timer.sinks, replaceKey: timer.replaceKey,
                              title: (try? NotificationEvent.decode(jsonLine: timer.event))?.title ?? "?", due: timer.due, sent: timer.sent)
        }
        return work
    }

    /// The state as the store holds it now (dedup windows, held events, inhibitions), for
    /// `status`; `nil` for a store that cannot list it.
    public func stateSnapshot() -> RouterState? { store.stateSnapshot() }

    /// Whether this store keeps escalations and snoozes at all.
    private var hasTimers: Bool { store is any PendingTimerStore }
}
