/// During a route's quiet hours, holds what is below the breakthrough level; the
/// first event after them carries a summary (``QuietHoursSummaryStage``).
struct QuietHoursStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard delivery.target.hasQuietHours, let quiet = delivery.target.quietHours, let window = quiet.activeWindow(at: context.now),
              delivery.event.level < quiet.breakthrough
        else { return }
        let key = delivery.policyKey
        var record = context.state.held(.quiet, key: key) ?? RouterState.HeldRecord(periodStart: context.now)
        record.hold(delivery.event)
        context.state.storeHeld(record, .quiet, key: key)
        delivery.decision = PolicyDecision(suppressed: .quietHours(window: window.description, held: record.held))
    }
}
