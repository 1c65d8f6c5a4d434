#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute

/// Deliveries a sink failed with a retryable error (a 5xx, no connection, no answer in
/// time, journald not there) when the sink is ``SinkCapabilities/worthRetrying``, tried again by the daemon with exponential backoff and jitter, as
/// Prometheus' notifier and AWS's backoff advice do, until the sink accepts, answers with
/// a permanent error, or the entry is older than ``Policy/maximumAge``.
///
/// Each sink has its own bounds: the ``Policy`` given here, with what its config entry sets
/// (`retry_queue`, `retry_max_age`, `retry_backoff`, `retry_backoff_max`, declared and checked
/// by the network plugins). At most ``Policy/capacity`` deliveries of a sink wait at once;
/// one more is dropped at once. Every drop is logged with its reason and counted
/// (``counts``, shown by `notify-route status`): nothing disappears silently. A one-shot
/// `send` has no queue: its report says `retryable` and its failover gets the event.
public actor RetryQueue {
    public struct Policy: Hashable, Sendable {
        /// The first retry waits up to this long; each next one twice as long, up to ``maximumDelay``.
        public var initialDelay: Duration
        public var maximumDelay: Duration
        /// A delivery is dropped once its next attempt would come later than this after its first failure.
        public var maximumAge: Duration
        /// How many deliveries of one sink may wait at once.
        public var capacity: Int

        public init(
            initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(60), maximumAge: Duration = .seconds(3600),
            capacity: Int = 1000
        ) {
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.maximumAge = maximumAge
            self.capacity = capacity
        }

        /// This policy with what `declaration`'s retry keys set. The plugin checked them when
        /// the config loaded, so a value that does not read here cannot occur; it keeps the default.
        public func overridden(by declaration: SinkDeclaration) -> Policy {
            let options = declaration.options
            var policy = self
            if let capacity = try? options.int("retry_queue", in: 0...1_000_000) { policy.capacity = capacity }
            if let age = try? options.duration("retry_max_age") { policy.maximumAge = age }
            if let delay = try? options.duration("retry_backoff") { policy.initialDelay = delay }
            if let delay = try? options.duration("retry_backoff_max") { policy.maximumDelay = delay }
            policy.maximumDelay = max(policy.maximumDelay, policy.initialDelay)
            return policy
        }
    }

    /// Per sink: deliveries retried to success, dropped, and waiting for their next attempt
    /// now, with the reason of the latest drop.
    public struct Counts: Codable, Hashable, Sendable {
        public var recovered = 0, dropped = 0, waiting = 0
        public var lastDropped: String?

        public init(recovered: Int = 0, dropped: Int = 0, waiting: Int = 0, lastDropped: String? = nil) {
            self.recovered = recovered
            self.dropped = dropped
            self.waiting = waiting
            self.lastDropped = lastDropped
        }

        enum CodingKeys: String, CodingKey {
            case recovered, dropped, waiting
            case lastDropped = "last_dropped"
        }
    }

    /// Whether `outcome` is a failure this queue retries: a retryable one, of a sink whose
    /// deliveries are worth making late (``SinkCapabilities/worthRetrying``).
    public static func isRetried(_ outcome: SinkOutcome, by router: NotificationRouter) -> Bool {
        guard case .failed(let error) = outcome.status, error.isRetryable else { return false }
        return router.retriesFailures(ofSink: outcome.sink)
    }

    /// The bounds of a sink whose config entry sets none.
    public let policy: Policy
    public private(set) var counts: [String: Counts] = [:]
    /// Deliveries of every sink waiting for their next attempt now.
    public var waiting: Int { counts.values.reduce(0) { $0 + $1.waiting } }
    /// Where each waiting delivery is kept across a stop (`nil`: in memory only).
    public nonisolated let outbox: Outbox?
    private let logger = Logger(label: "notify-route.retry")
    /// Where each retry's loop runs, as a child task of whoever runs it.
    public nonisolated let runtime: RouterRuntime

    public init(policy: Policy = Policy(), outbox: Outbox? = nil, runtime: RouterRuntime = RouterRuntime()) {
        self.policy = policy
        self.outbox = outbox
        self.runtime = runtime
    }

    /// Queues every retried failure (``isRetried(_:by:)``) in `report`, to be retried through
    /// `router`'s sink of that name, within that sink's bounds. `kept` holds the outbox rows
    /// of those outcomes, by their index in the report.
    public func schedule(_ report: DeliveryReport, router: NotificationRouter, kept: [Int: Int64] = [:]) {
        for (index, outcome) in report.outcomes.enumerated() where Self.isRetried(outcome, by: router) {
            guard case .failed(let error) = outcome.status, let sink = router.sink(named: outcome.sink),
                  let declaration = router.configuration.sinks.first(where: { $0.name == outcome.sink })
            else {
                if let id = kept[index] { outbox?.remove(id) }
                continue
            }
            let policy = policy.overridden(by: declaration)
            guard counts[outcome.sink, default: Counts()].waiting < policy.capacity else {
                let full = policy.capacity == 0 ? "retry_queue is 0" : "the retry queue is full (\(policy.capacity) waiting)"
                drop(outcome.sink, "\(full); last error: \(error.message)", title: report.event.title, row: kept[index])
                continue
            }
            counts[outcome.sink, default: Counts()].waiting += 1
            let deadline = declaration.deadline ?? router.configuration.defaults.deadline ?? .seconds(5)
            let event = report.event
            runtime.start {
                await self.retry(event, to: sink, named: outcome.sink, policy: policy, deadline: deadline, lastError: error,
                                 firstFailure: .now, row: kept[index])
            }
        }
    }

    /// Retries a delivery a stopped daemon left in the outbox (row `row`, accepted at
    /// `accepted`) that failed again now, within its sink's bounds, its age counted from
    /// when it was first accepted.
    public func resume(
        _ event: ResolvedEvent, sink name: String, router: NotificationRouter, accepted: Date, lastError: SinkError, row: Int64
    ) {
        guard let sink = router.sink(named: name), let declaration = router.configuration.sinks.first(where: { $0.name == name }) else {
            drop(name, "its sink is no longer in the config", title: event.title, row: row)
            return
        }
        let policy = policy.overridden(by: declaration)
        counts[name, default: Counts()].waiting += 1
        let deadline = declaration.deadline ?? router.configuration.defaults.deadline ?? .seconds(5)
        let age = Duration.seconds(max(0, Date().timeIntervalSince(accepted)))
        runtime.start {
            await self.retry(event, to: sink, named: name, policy: policy, deadline: deadline, lastError: lastError,
                             firstFailure: .now - age, row: row)
        }
    }

    private func retry(
        _ event: ResolvedEvent, to sink: any NotificationSink, named name: String, policy: Policy, deadline: Duration,
        lastError: SinkError, firstFailure: ContinuousClock.Instant, row: Int64?
    ) async {
        defer { counts[name, default: Counts()].waiting -= 1 }
        var lastError = lastError
        var attempt = 0
        while true {
            let delay = Self.delay(attempt: attempt, policy: policy)
            guard ContinuousClock.now + delay - firstFailure <= policy.maximumAge else {
                drop(name, "still failing after \(attempt + 1) attempts within \(DurationParser.format(policy.maximumAge)): \(lastError.message)",
                     title: event.title, row: row)
                return
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                // Its outbox row stays: the next serve tries it again.
                logger.notice("retry stopped with the daemon", metadata: ["sink": "\(name)", "title": "\(event.title)", "kept": "\(row != nil)"])
                return
            }
            attempt += 1
            do {
                // Without the router: a sink worth retrying keeps the delivery's deadline itself.
                let receipt = try await sink.deliver(SinkDelivery(event: event, sinkName: name, deadline: .now + deadline))
                counts[name, default: Counts()].recovered += 1
                logger.info("retry delivered", metadata: ["sink": "\(name)", "title": "\(event.title)", "attempt": "\(attempt)"])
                if let row {
                    if case .queued = receipt.disposition, sink.queuedCount != nil { outbox?.queued(row, sink: name) } else { outbox?.remove(row) }
                }
                return
            } catch let error as SinkError where error.isRetryable {
                lastError = error
                logger.debug("retry failed", metadata: ["sink": "\(name)", "attempt": "\(attempt)", "error": "\(error.message)"])
            } catch {
                drop(name, "a permanent failure at retry \(attempt): \(error)", title: event.title, row: row)
                return
            }
        }
    }

    /// Gives up a delivery: counted, logged with its reason, and gone from the outbox.
    public func drop(_ sink: String, _ reason: String, title: String, row: Int64?) {
        counts[sink, default: Counts()].dropped += 1
        counts[sink, default: Counts()].lastDropped = reason
        logger.error("dropped a delivery", metadata: ["sink": "\(sink)", "title": "\(title)", "reason": "\(reason)"])
        if let row { outbox?.remove(row) }
    }

    /// Jitter: uniformly between half and all of `initialDelay · 2^attempt`, capped,
    /// so that many daemons that failed together do not retry together.
    static func delay(attempt: Int, policy: Policy) -> Duration {
        var ceiling = policy.initialDelay
        for _ in 0..<min(attempt, 30) where ceiling < policy.maximumDelay { ceiling *= 2 }
        ceiling = min(ceiling, policy.maximumDelay)
        return ceiling * Double.random(in: 0.5...1.0)
    }
}
