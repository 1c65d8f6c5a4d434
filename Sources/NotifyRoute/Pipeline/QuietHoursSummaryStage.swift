/// Out of quiet hours, the first event that goes out carries the summary of what they
/// held (after the rate limit's, which it joins). Runs after the stages that may
/// suppress the event, so that a summary is never attached to an event not sent.
struct QuietHoursSummaryStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard context.state.holdsQuietEvents,
              !delivery.target.hasQuietHours || delivery.target.quietHours?.activeWindow(at: context.now) == nil,
              let record = context.state.held(.quiet, key: delivery.policyKey)
        else { return }
        context.state.storeHeld(nil, .quiet, key: delivery.policyKey)
        guard record.held > 0 else { return }
        let earlier = delivery.decision.summary
        delivery.decision.summary = PolicyDecision.HeldSummary(
            held: record.held + (earlier?.held ?? 0), sources: record.sources.merging(earlier?.sources ?? [:], uniquingKeysWith: +),
            highest: max(record.highest, earlier?.highest ?? .debug),
            why: earlier == nil ? "during quiet hours" : "during quiet hours and over the rate limit")
    }
}
