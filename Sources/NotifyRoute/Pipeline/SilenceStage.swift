/// Suppresses, on every sink, an event that an active silence matches (Alertmanager's
/// silences, `notify-route silence add`), with the reason `silenced` and the silence's id.
struct SilenceStage: PolicyStage {
    /// None for a router without a history (a library router, a replay).
    let memory: RouterMemory?

    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let silences = memory?.controls().silences, !silences.isEmpty else { return }
        let subject = MatchSubject(delivery.event)
        for silence in silences where silence.isActive(at: context.now) && silence.matcher.matches(subject) {
            delivery.decision = PolicyDecision(suppressed: .silenced(id: silence.id))
            return
        }
    }
}
