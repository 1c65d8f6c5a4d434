/// Suppresses, on every sink, an event that an active silence matches (Alertmanager's
/// silences, `notify-route silence add`), with the reason `silenced` and the silence's id.
struct SilenceStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard !context.controls.silences.isEmpty else { return }
        let subject = MatchSubject(delivery.event)
        for silence in context.controls.silences where silence.isActive(at: context.now) && silence.matcher.matches(subject) {
            delivery.decision = PolicyDecision(suppressed: .silenced(id: silence.id))
            return
        }
    }
}
