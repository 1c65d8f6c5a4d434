/// Delivers a wave: sinks that answer at once (``SinkCapabilities/deliversInline``)
/// are asked one after the other; when any sink may block, all are asked at once, each
/// under its own deadline, so that a slow sink holds up none of the others.
struct SinkDeliverStage: DeliverStage {
    var keepsState: Bool { true }

    nonisolated(nonsending) func deliver(_ wave: inout Wave) async {
        if !wave.flows.contains(where: { $0.decision.sendsSomething && !$0.capabilities.deliversInline }) {
            for position in wave.flows.indices where wave.flows[position].decision.sendsSomething {
                if wave.flows[position].decision.summary != nil {
                    wave.flows[position].answer = await Self.deliver(wave.flows[position])
                } else {
                    await Self.deliverInline(&wave.flows[position])
                }
            }
            return
        }
        let sending = wave.flows.indices.filter { wave.flows[$0].decision.sendsSomething }
        let flows = wave.flows
        let answers = await withTaskGroup(of: (Int, SinkFlow.Answer).self) { group in
            for position in sending {
                group.addTask { (position, await Self.deliver(flows[position])) }
            }
            var answers: [(Int, SinkFlow.Answer)] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        for (position, answer) in answers { wave.flows[position].answer = answer }
    }

    /// One delivery to a sink that answers at once, without a summary: the sink's
    /// `deliver` called in place, without `attempt` and without copying the flow (each
    /// async call cost a task-allocated frame, each copy of the flow its references).
    private static nonisolated(nonsending) func deliverInline(_ flow: inout SinkFlow) async {
        let started = ContinuousClock.now
        let delivery = SinkDelivery(event: flow.event, sinkName: flow.target.sinkName, intent: flow.decision.intent,
                                    deadline: started.advanced(by: flow.instance.deadline), duplicateCount: flow.decision.count)
        do {
            flow.answer.receipt = try await flow.instance.sink.deliver(delivery)
        } catch {
            flow.answer.error = SinkError(wrapping: error)
        }
        flow.answer.duration = ContinuousClock.now - started
    }

    /// One sink's delivery, after the summary of what a policy held back, if any.
    static func deliver(_ flow: SinkFlow) async -> SinkFlow.Answer {
        let started = ContinuousClock.now
        let deadline = started.advanced(by: flow.instance.deadline)
        let inline = flow.capabilities.deliversInline
        var answer = SinkFlow.Answer()
        if let summary = flow.decision.summary {
            let digest = SinkDelivery(event: summaryEvent(summary, like: flow.event), sinkName: flow.target.sinkName, deadline: deadline)
            if case .failure(let error) = await flow.instance.attempt(digest, inline: inline) { answer.summaryError = error }
        }
        let delivery = SinkDelivery(event: flow.event, sinkName: flow.target.sinkName, intent: flow.decision.intent,
                                    deadline: deadline, duplicateCount: flow.decision.count)
        switch await flow.instance.attempt(delivery, inline: inline) {
        case .success(let receipt): answer.receipt = receipt
        case .failure(let error): answer.error = error
        }
        answer.duration = ContinuousClock.now - started
        return answer
    }

    /// "+37 more from backup": one notification for what a policy held back.
    static func summaryEvent(_ summary: PolicyDecision.HeldSummary, like event: ResolvedEvent) -> ResolvedEvent {
        let sources = summary.sources.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        let names = sources.prefix(3).map(\.key).joined(separator: ", ") + (sources.count > 3 ? ", ..." : "")
        var digest = event
        digest.title = "+\(summary.held) more from \(names)"
        digest.body = "held \(summary.why): " + sources.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        digest.level = summary.highest
        digest.replaceKey = nil
        digest.dedupKey = "summary\u{1F}" + digest.title
        digest.actions = []
        return digest
    }
}
