/// An event with a replace key replaces what the sink showed for that key before, on a
/// sink that can.
struct ReplaceStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard delivery.capabilities.canReplace, let key = delivery.handleKey,
              let record = context.state.handle(forKey: key)
        else { return }
        delivery.decision.intent = .replace(record.handle)
    }
}
