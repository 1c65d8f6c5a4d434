import Logging
import NotifyRoute

/// Deliveries a network sink failed with a retryable error (a 5xx, no connection, no answer
/// in time), tried again by the daemon with exponential backoff and full jitter, as
/// Prometheus' notifier and AWS's backoff advice do, until the sink accepts, answers with
/// a permanent error, or the entry is older than ``Policy/maximumAge``.
///
/// At most ``Policy/capacity`` deliveries wait at once; one more is dropped at once. Every
/// drop is logged with its reason and counted (``counts``, shown by `notify-route status`):
/// nothing disappears silently. A one-shot `send` has no queue: its report says
/// `retryable` and its failover gets the event.
public actor RetryQueue {
    public struct Policy: Sendable {
        /// The first retry waits up to this long; each next one twice as long, up to ``maximumDelay``.
        public var initialDelay: Duration
        public var maximumDelay: Duration
        /// A delivery is dropped once its next attempt would come later than this after its first failure.
        public var maximumAge: Duration
        /// How many deliveries may wait at once.
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
    }

    /// Per sink: deliveries retried to success, and dropped.
    public struct Counts: Codable, Hashable, Sendable {
        public var recovered = 0, dropped = 0
    }

    /// The sink kinds whose failures are retried: those whose failure is about the path to
    /// a server, not about a moment on this desktop that a late banner would miss.
    public static let retriedKinds: Set<String> = ["alertmanager", "webhook"]

    /// Whether `outcome` is a failure this queue retries.
    public static func isRetried(_ outcome: SinkOutcome) -> Bool {
        guard retriedKinds.contains(outcome.kind), case .failed(let error) = outcome.status else { return false }
        return error.isRetryable
    }

    public let policy: Policy
    public private(set) var counts: [String: Counts] = [:]
    /// Deliveries waiting for their next attempt now.
    public private(set) var waiting = 0
    private let logger = Logger(label: "notify-route.retry")

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Queues every retryable failure of a network sink in `report`, to be retried through
    /// `router`'s sink of that name.
    public func schedule(_ report: DeliveryReport, router: NotificationRouter) {
        for outcome in report.outcomes where Self.isRetried(outcome) {
            guard case .failed(let error) = outcome.status, let sink = router.sink(named: outcome.sink) else { continue }
            guard waiting < policy.capacity else {
                drop(outcome.sink, "the retry queue is full (\(policy.capacity) waiting); last error: \(error.message)", title: report.event.title)
                continue
            }
            waiting += 1
            let deadline = Self.deadline(of: outcome.sink, in: router.configuration)
            let event = report.event
            Task { await self.retry(event, to: sink, named: outcome.sink, deadline: deadline, lastError: error) }
        }
    }

    private func retry(
        _ event: ResolvedEvent, to sink: any NotificationSink, named name: String, deadline: Duration, lastError: SinkError
    ) async {
        defer { waiting -= 1 }
        let firstFailure = ContinuousClock.now
        var lastError = lastError
        var attempt = 0
        while true {
            let delay = Self.delay(attempt: attempt, policy: policy)
            guard ContinuousClock.now + delay - firstFailure <= policy.maximumAge else {
                drop(name, "still failing after \(attempt + 1) attempts within \(DurationParser.format(policy.maximumAge)): \(lastError.message)",
                     title: event.title)
                return
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                drop(name, "the daemon stopped before retry \(attempt + 1): \(lastError.message)", title: event.title)
                return
            }
            attempt += 1
            do {
                // Only network sinks are queued: they keep the delivery's deadline themselves.
                _ = try await sink.deliver(SinkDelivery(event: event, sinkName: name, deadline: .now + deadline))
                counts[name, default: Counts()].recovered += 1
                logger.info("retry delivered", metadata: ["sink": "\(name)", "title": "\(event.title)", "attempt": "\(attempt)"])
                return
            } catch let error as SinkError where error.isRetryable {
                lastError = error
                logger.debug("retry failed", metadata: ["sink": "\(name)", "attempt": "\(attempt)", "error": "\(error.message)"])
            } catch {
                drop(name, "a permanent failure at retry \(attempt): \(error)", title: event.title)
                return
            }
        }
    }

    private func drop(_ sink: String, _ reason: String, title: String) {
        counts[sink, default: Counts()].dropped += 1
        logger.error("dropped a delivery", metadata: ["sink": "\(sink)", "title": "\(title)", "reason": "\(reason)"])
    }

    /// Full jitter: uniformly between half and all of `initialDelay · 2^attempt`, capped,
    /// so that many daemons that failed together do not retry together.
    static func delay(attempt: Int, policy: Policy) -> Duration {
        var ceiling = policy.initialDelay
        for _ in 0..<min(attempt, 30) where ceiling < policy.maximumDelay { ceiling *= 2 }
        ceiling = min(ceiling, policy.maximumDelay)
        return ceiling * Double.random(in: 0.5...1.0)
    }

    static func deadline(of sink: String, in configuration: RouterConfiguration) -> Duration {
        configuration.sinks.first { $0.name == sink }?.deadline ?? configuration.defaults.deadline ?? .seconds(5)
    }
}
