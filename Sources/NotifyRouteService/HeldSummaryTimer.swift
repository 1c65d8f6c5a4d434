#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import ServiceLifecycle
import Synchronization

/// The daemon's clock: sends the summary of what a rate limit or quiet hours held when the
/// period or the window ends (``NotificationRouter/deliverDueSummaries()``), instead of
/// with the next event. Sleeps until the earliest due time the state reports; woken early
/// when an event is held first in a period or window, and on reload.
///
/// What is held lives in the state store, so a daemon started after another was killed
/// sends what that one held, on its first round.
public struct HeldSummaryTimer: Service {
    /// The router of the moment (a reload swaps it).
    public typealias CurrentRouter = @Sendable () async -> NotificationRouter

    let router: CurrentRouter
    let wakeup: Wakeup
    let delivered: @Sendable (DeliveryReport) async -> Void
    let logger: Logger
    /// How long a summary its sink refused waits before it is tried again.
    var retryDelay: Duration = .seconds(5)
    /// With nothing held but a route that may hold, how often the state is looked at for
    /// what another process (a local `send`, a library user's `send`) held meanwhile.
    var idleCheck: Duration = .seconds(1)

    public init(router: @escaping CurrentRouter, wakeup: Wakeup, logger: Logger,
                delivered: @escaping @Sendable (DeliveryReport) async -> Void = { _ in }) {
        self.router = router
        self.wakeup = wakeup
        self.logger = logger
        self.delivered = delivered
    }

    public func run() async throws {
        await wakeup.running { await rounds() }
    }

    private func rounds() async {
        while !wakeup.isStopped {
            let due = await router().deliverDue()
            var failed = false
            for report in due.reports {
                if report.summary == .delivered {
                    logger.info("held summary sent", metadata: ["route": "\(report.matchedRoutes.first ?? "")",
                                                                "sink": "\(report.outcomes.first?.sink ?? "")"])
                } else {
                    failed = true
                    logger.warning("held summary not delivered; it stays held", metadata: [
                        "sink": "\(report.outcomes.first?.sink ?? "")", "status": "\(report.outcomes.first?.status.name ?? "")"])
                }
                await delivered(report)
            }
            var wait = due.nextDue.map { Self.duration(until: $0) }
            if due.watches { wait = min(wait ?? idleCheck, idleCheck) }
            if failed { wait = max(wait ?? retryDelay, retryDelay) }
            await wakeup.wait(upTo: wait)
        }
    }

    static func duration(until date: Date) -> Duration {
        let seconds = max(0, date.timeIntervalSinceNow)
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// One sleeper's alarm (declared beside ``RouterHost``, which pokes it).
    public typealias Wakeup = TimerWakeup
}

extension TimerWakeup {
    /// Runs a timer's loop, `body`, until the service group shuts down gracefully or is
    /// cancelled; either stops this wakeup. What is still pending stays in the state
    /// store for the next daemon or `send`.
    package func running(_ body: () async -> Void) async {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await body()
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }
}
