#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// What happened to one event: for each sink, delivered, replaced, queued, suppressed
/// (and why), failed (and the error) or unavailable (and why).
///
/// ```swift
/// let report = try await router.send(NotificationEvent(title: "Disk 90% full", level: .warning))
/// for outcome in report.outcomes { print(outcome.sink, outcome.status) }
/// report.summary  // .delivered
/// ```
public struct DeliveryReport: Sendable {
    /// The event as the cascade resolved it before any sink layer.
    public var event: ResolvedEvent
    /// Rules that matched, in order (`rule 2 "tag backups"`).
    public var matchedRules: [String]
    /// Routes that delivered (`route 1`, or `fallback`).
    public var matchedRoutes: [String]
    /// Set when a rule dropped the event.
    public var droppedBy: String?
    public var outcomes: [SinkOutcome]
    /// Anything about the event as a whole (no route matched and no fallback, ...).
    public var notes: [String]

    public init(
        event: ResolvedEvent, matchedRules: [String] = [], matchedRoutes: [String] = [], droppedBy: String? = nil,
        outcomes: [SinkOutcome] = [], notes: [String] = []
    ) {
        self.event = event
        self.matchedRules = matchedRules
        self.matchedRoutes = matchedRoutes
        self.droppedBy = droppedBy
        self.outcomes = outcomes
        self.notes = notes
    }

    /// The overall verdict, from which the CLI's exit code follows.
    public enum Summary: String, Sendable, Hashable {
        /// At least one sink delivered, replaced or queued it.
        case delivered
        /// Nothing was shown, on purpose: a duplicate, a rule's drop, a minimum level.
        case suppressed
        /// Every sink was unavailable.
        case noSinkAvailable = "no-sink-available"
        /// Sinks were tried and none delivered.
        case failed
        /// `--dry-run`/`explain`: nothing was sent; at least one sink would deliver it.
        case planned
    }

    public var summary: Summary {
        if droppedBy != nil { return .suppressed }
        if outcomes.contains(where: \.status.isSuccess) { return .delivered }
        if outcomes.contains(where: { if case .planned = $0.status { true } else { false } }) { return .planned }
        if outcomes.contains(where: { if case .suppressed = $0.status { true } else { false } }) { return .suppressed }
        if !outcomes.isEmpty, outcomes.allSatisfy({ if case .unavailable = $0.status { true } else { false } }) {
            return .noSinkAvailable
        }
        return .failed
    }
}

/// One sink's part in a report.
public struct SinkOutcome: Sendable {
    public enum Status: Sendable {
        case delivered
        /// The notification shown earlier under this handle was replaced.
        case replaced(previous: SinkHandle)
        case queued(reason: String)
        case suppressed(SuppressionReason)
        case failed(SinkError)
        case unavailable(reason: String)
        /// `--dry-run`/`explain`: what would be done, nothing was sent.
        case planned(SinkDelivery.Intent)

        public var isSuccess: Bool {
            switch self {
            case .delivered, .replaced, .queued: true
            default: false
            }
        }

        /// A stable word for JSON and scripts.
        public var name: String {
            switch self {
            case .delivered: "delivered"
            case .replaced: "replaced"
            case .queued: "queued"
            case .suppressed: "suppressed"
            case .failed: "failed"
            case .unavailable: "unavailable"
            case .planned: "planned"
            }
        }
    }

    /// Instance name from the config.
    public var sink: String
    public var kind: String
    public var status: Status
    /// The sink's handle for what it showed, if it gave one.
    public var handle: SinkHandle?
    /// The route that sent it there (`route 2`, `fallback`, `--sink`).
    public var route: String
    /// Set when this sink got the event because another one failed.
    public var failoverFor: String?
    public var notes: [String]
    public var duration: Duration
    /// The sink's ``SinkCapabilities/drawnByCaller``: only the process that asked can show it.
    public var drawnByCaller: Bool

    public init(
        sink: String, kind: String, status: Status, handle: SinkHandle? = nil, route: String,
        failoverFor: String? = nil, notes: [String] = [], duration: Duration = .zero, drawnByCaller: Bool = false
    ) {
        self.drawnByCaller = drawnByCaller
        self.sink = sink
        self.kind = kind
        self.status = status
        self.handle = handle
        self.route = route
        self.failoverFor = failoverFor
        self.notes = notes
        self.duration = duration
    }
}

/// Why an event was not shown on a sink, on purpose.
public enum SuppressionReason: Hashable, Sendable, CustomStringConvertible {
    /// Seen before inside the dedup window; `count` includes this one. `updatedInPlace`
    /// is true when the sink updated the earlier notification to show the count.
    ///
    /// Count updates are coalesced per sink and dedup key: while the first delivery has
    /// not returned its handle, while an update is in flight, or within the router's
    /// `countUpdateInterval` (1 s by default) of the last update, a duplicate is counted
    /// here with `updatedInPlace` false and the note "count update coalesced"; one later
    /// update carries the latest count, and ``NotificationRouter/finish(within:)`` sends
    /// the last one, so the notification ends showing the full count.
    case duplicate(count: Int, window: Duration, updatedInPlace: Bool)
    /// Below the sink's `min_level`.
    case belowMinimumLevel(Level)
    /// Over the route's rate limit; `held` events are waiting to be summarised.
    case rateLimited(max: Int, per: Duration, held: Int)
    /// Inside the route's quiet hours and below its breakthrough level.
    case quietHours(window: String, held: Int)
    /// An active event of an inhibition rule suppresses this one.
    case inhibited(by: String)
    /// A silence (`notify-route silence add`) matches it; its id.
    case silenced(id: String)
    /// `notify-route pause` holds events below this level until `resume`.
    case paused(below: Level)
    /// A last-resort sink (``SinkCapabilities/lastResort``) stood by: these sinks took the event.
    case lastResort(tookIt: String)
    /// Joined the open group `group` of its route (``GroupPolicy``), now `count` events,
    /// whose notification `notify-route serve` sends or updates at `due`.
    case grouped(group: String, count: Int, due: Date)

    public var description: String {
        switch self {
        case .duplicate(let count, let window, let updated):
            "duplicate (\(count) in \(DurationParser.format(window)))" + (updated ? ", count updated in place" : "")
        case .belowMinimumLevel(let level): "below the sink's min_level \(level.rawValue)"
        case .rateLimited(let max, let per, let held):
            "rate limit \(max) per \(DurationParser.format(per)) reached (\(held) held for a summary)"
        case .quietHours(let window, let held): "quiet hours \(window) (\(held) held for a summary)"
        case .inhibited(let rule): "inhibited by \(rule)"
        case .silenced(let id): "silenced by \(id)"
        case .paused(let level): "paused below \(level.rawValue) (held until resume)"
        case .lastResort(let sinks): "last resort, and \(sinks) took it"
        case .grouped(let group, let count, let due):
            "grouped into \"\(group)\" (\(count) \(count == 1 ? "event" : "events")), sent or updated at \(HistoryTime.format(due))"
        }
    }

    public var code: String {
        switch self {
        case .duplicate: "duplicate"
        case .belowMinimumLevel: "below-min-level"
        case .rateLimited: "rate-limited"
        case .quietHours: "quiet-hours"
        case .inhibited: "inhibited"
        case .silenced: "silenced"
        case .paused: "paused"
        case .lastResort: "last-resort"
        case .grouped: "grouped"
        }
    }
}

extension SinkOutcome.Status: CustomStringConvertible {
    public var description: String {
        switch self {
        case .delivered: "delivered"
        case .replaced(let previous): "replaced \(previous)"
        case .queued(let reason): "queued: \(reason)"
        case .suppressed(let reason): "suppressed: \(reason)"
        case .failed(let error): "failed: \(error.kind == .timedOut ? "timed out: " : "")\(error.message)"
        case .unavailable(let reason): "unavailable: \(reason)"
        case .planned(let intent):
            switch intent {
            case .show: "would show"
            case .replace(let handle): "would replace \(handle)"
            case .updateDuplicateCount(let handle, let count): "would update \(handle) to count \(count)"
            }
        }
    }
}
