#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import ServiceLifecycle

/// The daemon's clock for escalations and snoozes (``NotificationRouter/deliverDueTimers()``),
/// and its ear for what users do with the notifications it showed: every router it has run
/// (the current one and those a reload replaced, whose notifications may still be on
/// screen) is listened to, and each action or dismissal acknowledges what it concerns
/// (``NotificationRouter/acknowledge(_:)``).
///
/// The timers live in the state store, so a daemon started after another stopped sends
/// what that one armed, on its first round.
public struct EscalationTimer: Service {
    let router: HeldSummaryTimer.CurrentRouter
    let wakeup: HeldSummaryTimer.Wakeup
    let delivered: @Sendable (DeliveryReport) async -> Void
    let logger: Logger
    /// How often the state is looked at for timers another process (a local `send`) armed.
    var idleCheck: Duration = .seconds(1)

    public init(router: @escaping HeldSummaryTimer.CurrentRouter, wakeup: HeldSummaryTimer.Wakeup = .init(), logger: Logger,
                delivered: @escaping @Sendable (DeliveryReport) async -> Void = { _ in }) {
        self.router = router
        self.wakeup = wakeup
        self.logger = logger
        self.delivered = delivered
    }

    public func run() async throws {
        await wakeup.running {
            await withDiscardingTaskGroup { group in
                await rounds(listening: &group)
                group.cancelAll()
            }
        }
    }

    private func rounds(listening group: inout DiscardingTaskGroup) async {
        var listened: Set<ObjectIdentifier> = []
        while !wakeup.isStopped {
            let current = await router()
            if listened.insert(ObjectIdentifier(current)).inserted {
                group.addTask { await listen(to: current) }
            }
            let due = await current.deliverDueTimers()
            for report in due.reports {
                logger.info("escalation or snooze sent", metadata: [
                    "route": "\(report.matchedRoutes.first ?? "")", "title": "\(report.event.title)",
                    "status": "\(report.outcomes.map { "\($0.sink)=\($0.status.name)" }.joined(separator: " "))"])
                await delivered(report)
            }
            let wait = due.nextDue.map { HeldSummaryTimer.duration(until: $0) } ?? idleCheck
            await wakeup.wait(upTo: min(wait, idleCheck))
        }
    }

    private func listen(to router: NotificationRouter) async {
        for await interaction in router.interactions() {
            if case .shown = interaction.interaction { continue }
            let done = await router.acknowledge(interaction)
            for line in done {
                logger.info("\(line)", metadata: ["sink": "\(interaction.sink)", "handle": "\(interaction.handle.value)"])
            }
            if !done.isEmpty { wakeup.poke() }
        }
    }
}
