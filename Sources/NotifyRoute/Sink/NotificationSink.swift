/// A destination for notifications: a terminal, the desktop, the journal, a plugin.
///
/// Like swift-log's `LogHandler`, a sink has one entry point that takes one value,
/// ``SinkDelivery``, so that adding a field to what the router decides never breaks
/// a sink. It answers with a ``SinkReceipt`` or throws a ``SinkError`` that says
/// whether the sink was unavailable or failed, and whether trying again could help.
///
/// Rules for implementers:
/// - Never block a thread of Swift's cooperative pool: blocking C calls (D-Bus,
///   `sd_journal_sendv`, a write to a wedged terminal) run on a thread of the sink's
///   own. The router stops waiting at ``SinkDelivery/deadline`` whatever the sink
///   does, but a blocked pool thread would slow every other sink.
/// - Probe cheaply and cache: ``availability()`` is called by `notify-route sinks`
///   and before deliveries; it must answer within a fraction of the deadline.
/// - Report, never drop: if the event cannot be shown now, throw or return a
///   receipt with ``SinkReceipt/Disposition/queued(_:)``.
///
/// ```swift
/// struct StderrSink: NotificationSink {
///     var capabilities: SinkCapabilities { SinkCapabilities(maxTitleLength: 200) }
///     func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
///         print("[\(delivery.event.level)] \(delivery.event.title)")
///         return SinkReceipt()
///     }
/// }
/// ```
public protocol NotificationSink: Sendable {
    /// What the sink can do; the router adapts what it asks (replace, close, lengths).
    var capabilities: SinkCapabilities { get }

    /// Whether the sink can deliver right now, and why not.
    func availability() async -> SinkAvailability

    /// Shows, replaces or updates one notification.
    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt

    /// Closes a notification shown earlier (`notify-route close --replace-key K`).
    func close(_ request: SinkCloseRequest) async throws -> SinkReceipt

    /// What users did with notifications (actions, dismissals), for sinks that can tell.
    ///
    /// Each call must return a new stream that receives every interaction from then on
    /// (a multicast, as the desktop and terminal sinks do): an `AsyncStream` hands each
    /// element to one consumer only, and the router subscribes once per consumer
    /// (``NotificationRouter/firstInteraction(with:)``, ``NotificationRouter/interactions()``).
    /// End a subscription in the stream's `onTermination`.
    func interactions() -> AsyncStream<SinkInteraction>?

    /// Called before a short-lived process exits: returns when what the sink shows has
    /// ended (a terminal banner's timeout) and what it queued is written. The router
    /// bounds the wait (``NotificationRouter/finish(within:)``); a sink with nothing
    /// pending returns at once.
    func finish() async

    /// Whether ``finish()`` has anything to wait for now: a banner still showing, records
    /// queued, a plugin process running. ``NotificationRouter/finish(within:)`` finishes only
    /// the sinks that say so, and when none does it returns at once, without the task and
    /// the timer that bound the wait: what a process that sent one event usually sees.
    /// It must answer without blocking. The default is `true`: a sink that does not say is
    /// always finished.
    var hasPendingWork: Bool { get }

    /// The deliveries the sink answered `queued` and has not written yet (a journal sink's
    /// records waiting for journald); `nil` (the default) for a sink that keeps no queue.
    var queue: SinkQueue? { get }

    /// Writes what the sink queued, waiting at most `limit` (`.zero`: not at all) and not past
    /// the task's cancellation, then gives up the rest, counted in ``SinkQueue/givenUp``.
    /// Returns how many it gave up: each was answered `queued` and reaches nobody. For a
    /// process about to exit; the default, for a sink with no queue, returns 0 at once.
    func drainQueue(within limit: Duration) async -> Int
}

/// A sink's queue as a process that exits reports it (``NotificationSink/queue``).
public struct SinkQueue: Hashable, Sendable {
    /// How many deliveries may wait at once (0: the sink queues none now).
    public var capacity: Int
    /// Deliveries answered `queued`, not written yet.
    public var queued: Int
    /// Deliveries given up by ``NotificationSink/drainQueue(within:)`` since the sink was made.
    public var givenUp: Int
    /// How long the destination has taken none, while it takes none.
    public var stalledFor: Duration?
    /// Who takes what is queued, as messages name it (`journald`).
    public var destination: String

    public init(capacity: Int, queued: Int, givenUp: Int, stalledFor: Duration? = nil, destination: String) {
        self.capacity = capacity
        self.queued = queued
        self.givenUp = givenUp
        self.stalledFor = stalledFor
        self.destination = destination
    }
}

extension NotificationSink {
    public func availability() async -> SinkAvailability { .available }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        throw SinkError(.unsupported, "this sink cannot close notifications")
    }

    public func interactions() -> AsyncStream<SinkInteraction>? { nil }

    public func finish() async {}

    public var hasPendingWork: Bool { true }

    public var queue: SinkQueue? { nil }

    public func drainQueue(within limit: Duration) async -> Int { 0 }

    /// How many deliveries the sink answered `queued` and has not written yet, for `status`;
    /// `nil` for a sink that keeps no queue.
    public var queuedCount: Int? { queue?.queued }
}

/// Everything the router decided for one sink and one event.
public struct SinkDelivery: Sendable {
    /// What the sink is asked to do.
    public enum Intent: Hashable, Sendable {
        /// Show a new notification.
        case show
        /// Replace the notification with this handle (same replace key as an earlier event).
        case replace(SinkHandle)
        /// A duplicate inside the dedup window: update the notification in place to
        /// show the count (for example "Disk full (×3)"). Only sent to sinks that can replace.
        case updateDuplicateCount(SinkHandle, count: Int)
    }

    public var event: ResolvedEvent
    /// The sink's instance name in the config (`tty`, `desktop`, ...).
    public var sinkName: String
    public var intent: Intent
    /// The router stops waiting at this instant; a sink can give its own I/O less.
    public var deadline: ContinuousClock.Instant
    /// How many times this dedup key has been seen inside the current window, this one included.
    public var duplicateCount: Int

    public init(
        event: ResolvedEvent, sinkName: String, intent: Intent = .show,
        deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(2)), duplicateCount: Int = 1
    ) {
        self.event = event
        self.sinkName = sinkName
        self.intent = intent
        self.deadline = deadline
        self.duplicateCount = duplicateCount
    }
}

/// What a sink did with a delivery.
public struct SinkReceipt: Hashable, Sendable {
    public enum Disposition: Hashable, Sendable {
        /// Shown or written.
        case delivered
        /// Accepted but not yet written (for example journald is not answering); it will be
        /// flushed in order later. The reason says why it waits.
        case queued(String)
    }

    /// The sink's own id for what it showed (a D-Bus notification id, a journal cursor):
    /// the router keeps it per replace key so later events can replace or close it.
    public var handle: SinkHandle?
    public var disposition: Disposition
    /// Anything the user should know (actions dropped because the server lacks them, ...).
    public var notes: [String]

    public init(handle: SinkHandle? = nil, disposition: Disposition = .delivered, notes: [String] = []) {
        self.handle = handle
        self.disposition = disposition
        self.notes = notes
    }
}

/// A sink's identifier for something it showed; opaque to the router, kept in state.
public struct SinkHandle: Hashable, Sendable, Codable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }
    public var description: String { value }
}

/// A request to close what an earlier event showed.
public struct SinkCloseRequest: Hashable, Sendable {
    public var sinkName: String
    public var handle: SinkHandle
    public var replaceKey: String
    public var deadline: ContinuousClock.Instant

    public init(sinkName: String, handle: SinkHandle, replaceKey: String, deadline: ContinuousClock.Instant) {
        self.sinkName = sinkName
        self.handle = handle
        self.replaceKey = replaceKey
        self.deadline = deadline
    }
}

/// What a user did with a notification, as reported by sinks that can tell.
public enum NotificationInteraction: Hashable, Sendable {
    case shown
    case actionInvoked(String)
    case dismissed(DismissReason)
}

/// Why a notification went away (the freedesktop `NotificationClosed` reasons).
public enum DismissReason: String, Hashable, Sendable, Codable {
    case expired, dismissed, closed, undefined
}

/// An interaction with the handle of the notification it concerns.
public struct SinkInteraction: Hashable, Sendable {
    public var handle: SinkHandle
    public var interaction: NotificationInteraction

    public init(handle: SinkHandle, interaction: NotificationInteraction) {
        self.handle = handle
        self.interaction = interaction
    }
}
