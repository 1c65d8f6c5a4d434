import Logging
import NotifyRoute
import Synchronization

/// Connects swift-log to a `NotificationRouter`: makes the log handlers, buffers what
/// they hand over, and sends it from one task, ``run()``, so that logging never waits
/// for a sink.
///
/// Make the router first, then the bridge, then bootstrap logging, and run the bridge
/// for as long as the service runs (as a swift-service-lifecycle `Service`, or in a task
/// of your own):
///
/// ```swift
/// let router = try NotificationRouter(configuration: config, registry: registry)
/// let bridge = NotificationLogBridge(router: router)
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([
///         StreamLogHandler.standardOutput(label: label),
///         bridge.handler(label: label, minimumLevel: .error),
///     ])
/// }
/// let drain = Task { await bridge.run() }
/// Logger(label: "db.pool").error("connection lost", metadata: ["host": "db1"])
/// // ... at shutdown:
/// bridge.shutdown()
/// await drain.value  // what was buffered has been sent
/// ```
///
/// As a `Service`:
///
/// ```swift
/// struct LogBridgeService: Service {
///     let bridge: NotificationLogBridge
///     func run() async {
///         await withGracefulShutdownHandler { await bridge.run() } onGracefulShutdown: { bridge.shutdown() }
///     }
/// }
/// ```
///
/// The buffer holds at most ``capacity`` records waiting or being sent; past that,
/// records are dropped and counted (``Statistics/dropped``), and the bridge logs how
/// many once it has caught up. Records from loggers whose label starts with one of
/// ``ignoredLabelPrefixes`` (the router's own, `notify-route.*`) and records logged
/// while the bridge itself delivers are never sent: a failing sink must not report its
/// failure to itself, forever.
public final class NotificationLogBridge: Sendable {
    /// What the bridge has done so far.
    public struct Statistics: Hashable, Sendable {
        /// Records taken into the buffer.
        public var accepted = 0
        /// Events sent through the router (whatever the sinks then did).
        public var sent = 0
        /// Sent events that no sink delivered (all failed or were unavailable).
        public var undelivered = 0
        /// Events the router refused (an `EventError`).
        public var rejected = 0
        /// Records dropped: the buffer was full, or the bridge had stopped.
        public var dropped = 0
        /// Records waiting or being sent now.
        public var pending = 0

        public init() {}
    }

    public let router: NotificationRouter
    /// How many records may wait or be in flight at once.
    public let capacity: Int
    /// Loggers whose label starts with one of these get a handler that sends nothing.
    public let ignoredLabelPrefixes: [String]
    /// Tags every event from the bridge carries, so rules and routes can single them out.
    public let tags: Set<String>
    private let customize: (@Sendable (inout NotificationEvent) -> Void)?
    private let logger: Logger?
    private let state = Mutex(State())

    private struct State {
        var buffer: [LogRecord] = []
        var inFlight = 0
        var waiter: CheckedContinuation<Void, Never>?
        var running = false
        /// Set by ``shutdown()`` or when ``run()`` is cancelled: nothing more is accepted.
        var closed = false
        var statistics = Statistics()
        /// Drops not yet logged by the drain.
        var unreportedDrops = 0

        mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
            defer { waiter = nil }
            return waiter
        }
    }

    /// True on the bridge's delivery task, so a sink's own logging there is not re-sent.
    @TaskLocal static var isDelivering = false

    /// - Parameters:
    ///   - router: where the events go; its own loggers should not be bridged (see `ignoredLabelPrefixes`).
    ///   - capacity: records that may wait at once before new ones are dropped.
    ///   - ignoredLabelPrefixes: logger labels never sent (the router's own diagnostics).
    ///   - tags: added to every event, `log` by default.
    ///   - logger: for the bridge's own notes (dropped records); by default a logger
    ///     labelled `notify-route.log-bridge`, made when ``run()`` starts (after bootstrap).
    ///   - customize: adjusts each event before it is sent (a timeout, a replace key).
    public init(
        router: NotificationRouter, capacity: Int = 256, ignoredLabelPrefixes: [String] = ["notify-route"],
        tags: Set<String> = ["log"], logger: Logger? = nil,
        customize: (@Sendable (inout NotificationEvent) -> Void)? = nil
    ) {
        precondition(capacity > 0, "a NotificationLogBridge needs room for at least one record")
        self.router = router
        self.capacity = capacity
        self.ignoredLabelPrefixes = ignoredLabelPrefixes
        self.tags = tags
        self.logger = logger
        self.customize = customize
    }

    /// A log handler for one logger label that sends records at or above `minimumLevel`.
    ///
    /// ```swift
    /// let logger = Logger(label: "backup") { bridge.handler(label: $0, minimumLevel: .warning) }
    /// ```
    public func handler(
        label: String, minimumLevel: Logger.Level = .error,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) -> NotificationLogHandler {
        let ignored = ignoredLabelPrefixes.contains { label.hasPrefix($0) }
        return NotificationLogHandler(
            label: label, minimumLevel: minimumLevel, metadataProvider: metadataProvider, bridge: self, forwards: !ignored)
    }

    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.pending = state.buffer.count + state.inFlight
            return statistics
        }
    }

    /// Sends buffered records, one at a time and in order, until ``shutdown()`` has been
    /// called and the buffer is empty, or until the calling task is cancelled. Call it once.
    ///
    /// After cancellation what was still waiting is counted as dropped, and so is every
    /// later record: a cancelled drain must not leave records to pile up unseen.
    public func run() async {
        let claimed = state.withLock { state in
            defer { state.running = true }
            return !state.running
        }
        precondition(claimed, "NotificationLogBridge.run() is already running")
        defer { state.withLock { $0.running = false } }
        let logger = self.logger ?? Logger(label: "notify-route.log-bridge")
        while let batch = await nextBatch() {
            for (index, record) in batch.enumerated() {
                if Task.isCancelled {
                    close(droppingInFlight: batch.count - index)
                    return
                }
                await deliver(record)
            }
            let drops = state.withLock { state in
                defer { state.unreportedDrops = 0 }
                return state.unreportedDrops
            }
            if drops > 0 {
                logger.warning("log records not sent as notifications: the bridge's buffer was full",
                               metadata: ["dropped": "\(drops)", "capacity": "\(capacity)"])
            }
        }
    }

    /// Stops taking records; ``run()`` sends what is buffered, then returns.
    public func shutdown() {
        let waiter = state.withLock { state in
            state.closed = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Called on the logging caller's thread: a short lock, never a wait.
    func enqueue(_ record: LogRecord) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed, state.buffer.count + state.inFlight < capacity else {
                state.statistics.dropped += 1
                state.unreportedDrops += 1
                return nil
            }
            state.buffer.append(record)
            state.statistics.accepted += 1
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// The records buffered now, taken all at once; `nil` when the drain should stop.
    private func nextBatch() async -> [LogRecord]? {
        while true {
            if Task.isCancelled {
                close(droppingInFlight: 0)
                return nil
            }
            let batch = state.withLock { state -> [LogRecord]? in
                if state.buffer.isEmpty { return state.closed ? nil : [] }
                defer { state.buffer = [] }
                state.inFlight += state.buffer.count
                return state.buffer
            }
            guard let batch else { return nil }
            if !batch.isEmpty { return batch }
            await waitForRecords()
        }
    }

    private func waitForRecords() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Task.isCancelled is set before the cancellation handler runs, so checking it
                // under the lock closes the race with a handler that found no waiter yet.
                let now = state.withLock { state in
                    guard state.buffer.isEmpty, !state.closed, !Task.isCancelled else { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.takeWaiter() }?.resume()
        }
    }

    private func deliver(_ record: LogRecord) async {
        var event = record.notificationEvent(tags: tags)
        customize?(&event)
        let outcome: DeliveryReport.Summary?
        do {
            outcome = try await Self.$isDelivering.withValue(true) { try await router.send(event) }.summary
        } catch {
            outcome = nil
        }
        state.withLock { state in
            state.inFlight -= 1
            switch outcome {
            case nil: state.statistics.rejected += 1
            case .failed?, .noSinkAvailable?:
                state.statistics.sent += 1
                state.statistics.undelivered += 1
            case .delivered?, .suppressed?, .planned?: state.statistics.sent += 1
            }
        }
    }

    private func close(droppingInFlight abandoned: Int) {
        state.withLock { state in
            state.closed = true
            let dropped = abandoned + state.buffer.count
            state.statistics.dropped += dropped
            state.inFlight -= abandoned
            state.buffer = []
        }
    }
}
