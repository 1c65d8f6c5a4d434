/// The deliver stage of `--dry-run` and `explain`: marks every delivery as planned and
/// asks each sink that would be asked whether it is available (a suppressed delivery
/// asks no sink, as in `send`). The policy stages ran against the state without keeping
/// their changes.
struct PlanStage: DeliverStage {
    var keepsState: Bool { false }

    nonisolated(nonsending) func deliver(_ wave: inout Wave) async {
        for position in wave.flows.indices {
            wave.flows[position].answer.planned = true
            guard wave.flows[position].decision.suppressed == nil else { continue }
            let availability = await wave.flows[position].instance.availability(timeoutReason: "availability probe did not answer")
            if case .unavailable(let reason) = availability {
                wave.flows[position].answer.error = SinkError(.unavailable, reason)
            }
        }
    }
}
