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
                    continue
                }
                // A sink that answers at once is called here, without `attempt`: the delivery
                // made before the call and the answer stored after it, so that no access to
                // the wave (nor a copy of the flow) is held across the suspension.
                let sink = wave.flows[position].instance.sink
                let started = ContinuousClock.now
                let delivery = Self.delivery(wave.flows[position], startedAt: started)
                do {
                    let receipt = try await sink.deliver(delivery)
                    wave.flows[position].answer.receipt = receipt
                } catch {
                    wave.flows[position].answer.error = SinkError(wrapping: error)
                }
                wave.flows[position].answer.duration = ContinuousClock.now - started
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

    /// What the sink of `flow` is asked, its deadline counted from `started`.
    private static func delivery(_ flow: borrowing SinkFlow, startedAt started: ContinuousClock.Instant) -> SinkDelivery {
        SinkDelivery(event: flow.event, sinkName: flow.target.sinkName, intent: flow.decision.intent,
                     deadline: started.advanced(by: flow.instance.deadline), duplicateCount: flow.decision.count)
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
        let delivery = Self.delivery(flow, startedAt: started)
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
