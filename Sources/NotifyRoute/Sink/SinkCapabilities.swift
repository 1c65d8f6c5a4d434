/// What a sink can do. The router reads it to decide what to ask: it only asks a
/// sink to replace or update when ``canReplace`` is true, caps text at the lengths,
/// and says in the report when actions had to be dropped.
public struct SinkCapabilities: Hashable, Sendable {
    /// Can update an earlier notification in place (same handle).
    public var canReplace: Bool
    /// Can close an earlier notification.
    public var canClose: Bool
    /// Can show action buttons and report which was chosen.
    public var supportsActions: Bool
    /// Interprets markup in the body. The router passes text as it is; a sink that
    /// interprets markup escapes the body itself (as the desktop sink does).
    public var supportsMarkup: Bool
    /// Reports dismissals and actions through ``NotificationSink/interactions()``.
    public var reportsInteractions: Bool
    /// Titles longer than this are cut with a marker; `nil` for no limit.
    public var maxTitleLength: Int?
    /// Bodies longer than this are cut with a marker; `nil` for no limit.
    public var maxBodyLength: Int?
    /// ``NotificationSink/deliver(_:)`` never keeps its caller past
    /// ``SinkDelivery/deadline``, by its own construction: it answers at once (an
    /// in-memory sink, a counter), or does only non-blocking I/O on the caller's thread
    /// and enforces the deadline itself for anything that may block (the journal sink:
    /// one non-blocking datagram, else its own queue answered before the deadline). The
    /// router then calls it directly, without the task and timer that otherwise enforce
    /// the deadline, and does not cancel it. Never declare it for a sink whose
    /// `deliver` can block: a D-Bus call, a blocking write, a child process.
    public var deliversInline: Bool
    /// The sink takes an event only when every other sink it was routed to (failover sinks
    /// included) failed or was unavailable; otherwise its outcome is suppressed as
    /// ``SuppressionReason/lastResort(tookIt:)``. The terminal sink's `unattended: last-resort`
    /// says so when its output is not a terminal, so that cron does not mail, nor the journal
    /// keep twice, a line another sink delivered. Read once, when the router is made.
    public var lastResort: Bool
    /// A delivery that failed in a way that may pass (``SinkError/isRetryable``) is still
    /// worth making later: it goes to a server, a log or a program, not to a screen whose
    /// moment passes. `serve` retries such failures within the sink's `retry_*` options
    /// (``SinkRetry/keys``, which the plugin declares), calling ``NotificationSink/deliver(_:)``
    /// itself: such a sink must keep ``SinkDelivery/deadline`` on its own, as the network,
    /// journal and exec sinks do. Read once, when the router is made.
    public var worthRetrying: Bool
    /// Only the process that asked for the delivery can show what this sink makes: a
    /// terminal line on the asker's stderr, when the daemon routes another process's event.
    /// Such a sink is then unavailable in the router with the reason, its outcome says so
    /// (``SinkOutcome/drawnByCaller``, `caller_draws` in JSON), and the asking process
    /// draws it (``NotificationRouter/draw(_:on:)``) without routing the event again.
    public var drawnByCaller: Bool

    public init(
        canReplace: Bool = false, canClose: Bool = false, supportsActions: Bool = false,
        supportsMarkup: Bool = false, reportsInteractions: Bool = false,
        maxTitleLength: Int? = nil, maxBodyLength: Int? = nil, deliversInline: Bool = false, lastResort: Bool = false,
        worthRetrying: Bool = false, drawnByCaller: Bool = false
    ) {
        self.drawnByCaller = drawnByCaller
        self.deliversInline = deliversInline
        self.lastResort = lastResort
        self.worthRetrying = worthRetrying
        self.canReplace = canReplace
        self.canClose = canClose
        self.supportsActions = supportsActions
        self.supportsMarkup = supportsMarkup
        self.reportsInteractions = reportsInteractions
        self.maxTitleLength = maxTitleLength
        self.maxBodyLength = maxBodyLength
    }
}

/// Whether a sink can deliver now, with the reason when it cannot
/// ("no session bus", "no notification daemon", "journald socket absent", "not a terminal").
public enum SinkAvailability: Hashable, Sendable {
    case available
    case unavailable(reason: String)

    public var isAvailable: Bool {
        if case .available = self { return true }
        return false
    }
}

/// Why a sink could not deliver.
///
/// As in Alertmanager's `Notify() (retry bool, err error)`, the sink says whether an
/// error is worth retrying; network sinks and queues rely on it.
public struct SinkError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, Codable {
        /// The sink cannot work here right now (no bus, no daemon, no socket, no terminal).
        case unavailable
        /// It tried and failed.
        case failed
        /// It did not answer before the deadline.
        case timedOut = "timed-out"
        /// It cannot do what was asked (close on a sink that cannot close).
        case unsupported
    }

    public var kind: Kind
    public var message: String
    public var isRetryable: Bool

    public init(_ kind: Kind, _ message: String, isRetryable: Bool = false) {
        self.kind = kind
        self.message = message
        self.isRetryable = isRetryable
    }

    public var description: String { message }
}
