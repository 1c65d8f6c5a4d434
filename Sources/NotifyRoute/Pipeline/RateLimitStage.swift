#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// At most `max` events per period per route and sink; the rest are held, and the
/// first event of a later period carries their summary.
struct RateLimitStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let rate = delivery.target.rateLimit else { return }
        let key = delivery.policyKey
        var record = context.state.held(.rate, key: key) ?? RouterState.HeldRecord(periodStart: context.now)
        if context.now.timeIntervalSince(record.periodStart) >= rate.per.seconds {
            // A new period: nothing sent yet in it; what was held waits for its summary.
            record.periodStart = context.now
            record.sent = 0
        }
        if record.sent >= rate.max {
            record.hold(delivery.event)
            context.state.storeHeld(record, .rate, key: key)
            if delivery.decision.createdWindow {
                // Held, not shown: the next identical event must not count as a duplicate of it.
                context.state.removeDedup(forKey: delivery.stateKey)
            }
            delivery.decision = PolicyDecision(suppressed: .rateLimited(max: rate.max, per: rate.per, held: record.held))
            return
        }
        record.sent += 1
        if record.held > 0 && record.sent == 1 {
            delivery.decision.summary = PolicyDecision.HeldSummary(
                held: record.held, sources: record.sources, highest: record.highest, why: "over the rate limit")
            record.held = 0
            record.sources = [:]
            record.highest = .debug
        }
        context.state.storeHeld(record, .rate, key: key)
    }
}
