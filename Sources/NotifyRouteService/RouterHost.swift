#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

/// The daemon's current router, swapped whole on reload between two requests, and the
/// counts `status` shows. Dedup windows, replace handles and held events live in the
/// state store, not in the router, so a reload keeps them.
public actor RouterHost {
    /// Builds a router from the config the daemon was started with, or throws what is
    /// wrong with it (a ``ConfigError`` with file:line:col).
    public typealias Loader = @Sendable () throws -> NotificationRouter

    public private(set) var router: NotificationRouter
    public private(set) var loadedAt: Date
    public private(set) var reloads = 0
    private let load: Loader
    private let startedAt = ContinuousClock.now
    private var counts: [String: SinkCounts] = [:]
    private var inFlight = 0
    /// Network deliveries that failed and may succeed later.
    public let retries: RetryQueue

    /// Per sink, what happened to the events the daemon routed.
    public struct SinkCounts: Codable, Hashable, Sendable {
        public var delivered = 0, replaced = 0, queued = 0, suppressed = 0, failed = 0, unavailable = 0
    }

    public init(load: @escaping Loader, retryPolicy: RetryQueue.Policy = RetryQueue.Policy()) throws {
        self.load = load
        self.retries = RetryQueue(policy: retryPolicy)
        self.router = try load()
        self.loadedAt = Date()
    }

    /// Loads the config again; on an error the old router stays and the error is thrown.
    public func reload() throws -> NotificationRouter {
        let fresh = try load()
        let old = router
        router = fresh
        loadedAt = Date()
        reloads += 1
        // What the old router's sinks still hold (banners, queued records) finishes on its own.
        Task { await old.finish(within: .seconds(5)) }
        return fresh
    }

    /// Twice the longest sink deadline: a failover runs after the first wave's deadline.
    public var answerWithinMS: Int {
        let configuration = router.configuration
        let longest = configuration.sinks.map { $0.deadline ?? configuration.defaults.deadline ?? EventDefaults.builtInDeadline }.max()
        return DurationParser.milliseconds((longest ?? EventDefaults.builtInDeadline) * 2) + 1000
    }

    func begin() -> NotificationRouter {
        inFlight += 1
        return router
    }

    func end(_ report: DeliveryReport?) {
        inFlight -= 1
        guard let report else { return }
        for outcome in report.outcomes {
            var count = counts[outcome.sink] ?? SinkCounts()
            switch outcome.status {
            case .delivered: count.delivered += 1
            case .replaced: count.replaced += 1
            case .queued: count.queued += 1
            case .suppressed: count.suppressed += 1
            case .failed: count.failed += 1
            case .unavailable: count.unavailable += 1
            case .planned: break
            }
            counts[outcome.sink] = count
        }
        if report.outcomes.contains(where: RetryQueue.isRetried) {
            let router = router
            Task { [retries] in await retries.schedule(report, router: router) }
        }
    }

    /// What `notify-route status` prints.
    public struct Status: Codable, Sendable {
        public var pid: Int32
        public var config: String
        public var loadedAt: String
        public var uptimeSeconds: Double
        public var reloads: Int
        public var inFlight: Int
        public var sinks: [String: SinkCounts]
        /// Per network sink: failed deliveries retried to success, and dropped.
        public var retries: [String: RetryQueue.Counts]

        enum CodingKeys: String, CodingKey {
            case pid, config, reloads, sinks, retries
            case loadedAt = "loaded_at", uptimeSeconds = "uptime_seconds", inFlight = "in_flight"
        }
    }

    public func status(pid: Int32) async -> Status {
        let uptime = ContinuousClock.now - startedAt
        var sinks = counts
        for sink in router.configuration.sinks where sinks[sink.name] == nil { sinks[sink.name] = SinkCounts() }
        return Status(
            pid: pid, config: router.configuration.origin, loadedAt: loadedAt.formatted(.iso8601),
            uptimeSeconds: ((Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18) * 1000).rounded() / 1000,
            reloads: reloads, inFlight: inFlight, sinks: sinks, retries: await retries.counts)
    }
}
