import Logging
import NotifyRoute
import ServiceLifecycle

/// A router as a swift-service-lifecycle `Service`, for a Swift service that runs it in
/// its own `ServiceGroup`.
///
/// The router answers `send` from any task while the group runs, and the service runs
/// what the router does later, as `serve` does: its runtime (count updates,
/// ``NotificationRouter/runtime``), the summaries of what rate limits and quiet hours held
/// when they end (``HeldSummaryTimer``), and escalations and snoozes (``EscalationTimer``).
/// On graceful shutdown it lets what the sinks still hold (banners that time out, queued
/// journal records, count updates) finish within `drainLimit`, then returns.
///
/// ```swift
/// let router = try NotificationRouter(configuration: config, registry: registry)
/// let group = ServiceGroup(
///     services: [NotificationRouterService(router: router), myHTTPServer],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public struct NotificationRouterService: Service {
    public let router: NotificationRouter
    public var drainLimit: Duration

    public init(router: NotificationRouter, drainLimit: Duration = .seconds(5)) {
        self.router = router
        self.drainLimit = drainLimit
    }

    public func run() async throws {
        let router = router
        let logger = Logger(label: "notify-route.service")
        let summaries = HeldSummaryTimer.Wakeup(), escalations = HeldSummaryTimer.Wakeup()
        let summaryTimer = HeldSummaryTimer(router: { router }, wakeup: summaries, logger: logger)
        let escalationTimer = EscalationTimer(router: { router }, wakeup: escalations, logger: logger)
        await withDiscardingTaskGroup { group in
            group.addTask { await router.runtime.run() }
            group.addTask { try? await summaryTimer.run() }
            group.addTask { try? await escalationTimer.run() }
            // Suspends until the group shuts down gracefully (or the task is cancelled).
            try? await gracefulShutdown()
            summaries.stop()
            escalations.stop()
            await router.finish(within: drainLimit)
            group.cancelAll()
        }
    }
}
