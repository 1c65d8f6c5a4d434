/// Holds events below the pause's level while `notify-route pause` is in effect (dunst's
/// pause levels); the record step keeps them for the summary delivered on resume.
struct PauseStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let pause = context.controls.pause, pause.holds(delivery.event.level, at: context.now) else { return }
        delivery.decision = PolicyDecision(suppressed: .paused(below: pause.below))
    }
}
