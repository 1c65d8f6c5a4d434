/// The stages every event goes through, in order (DESIGN.md section 10):
///
///     normalise → rules → routes → fan-out → policy (per sink) → deliver → record
///
/// `send`, `--dry-run` and `explain` run the same list; the last two swap only the
/// deliver stage (``PlanStage``) for one that says what would happen. A new policy is a
/// new ``PolicyStage`` in ``policy``, not a branch inside the router.
struct Pipeline: Sendable {
    /// Run once per event, in order: what the event is and where it goes.
    var event: [any EventStage]
    /// Gives each target its own copy of the event, and settles the sinks it cannot reach.
    var fanOut: FanOutStage
    /// Run per sink, in order, inside one state transaction per wave; the first stage
    /// that suppresses the delivery ends the chain for that sink.
    var policy: [any PolicyStage]
    var deliver: any DeliverStage
    var record: RecordStage

    init(_ configuration: RouterConfiguration, instances: [String: SinkInstance], deliver: any DeliverStage,
         countUpdates: CountUpdateCoalescer, memory: RouterMemory? = nil) {
        let cascade = Cascade(configuration)
        event = [NormaliseStage(), RulesStage(configuration, cascade: cascade),
                 RoutesStage(configuration, instances: instances)]
        fanOut = FanOutStage(cascade: cascade)
        policy = [InhibitStage(configuration.inhibitRules), QuietHoursStage(), DedupStage(), RateLimitStage(),
                  QuietHoursSummaryStage(), ReplaceStage()]
        if let memory { policy.insert(contentsOf: [SilenceStage(memory: memory), PauseStage(memory: memory)] as [any PolicyStage], at: 1) }
        self.deliver = deliver
        record = RecordStage(inhibitRules: configuration.inhibitRules, maxEntries: configuration.state.maxEntries,
                             countUpdates: countUpdates, memory: memory, history: configuration.history)
    }

    /// The same list with another deliver stage.
    func delivering(with deliver: any DeliverStage) -> Pipeline {
        var copy = self
        copy.deliver = deliver
        return copy
    }
}

/// A stage that sees the whole event once (normalise, rules, routes).
protocol EventStage: Sendable {
    func run(_ event: inout RoutedEvent) throws(EventError)
}

/// A per-sink policy: reads and updates the remembered state for one delivery and may
/// suppress it (``PolicyDecision/suppressed``) or change what the sink is asked.
protocol PolicyStage: Sendable {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext)
}

/// Asks the sinks of a wave (or, when planning, says what they would be asked).
protocol DeliverStage: Sendable {
    /// False when planning: the policy stages' changes to the state are discarded and no
    /// count update is coalesced, so that planning changes nothing.
    var keepsState: Bool { get }
    /// Runs on its caller's executor: no executor switch per wave.
    nonisolated(nonsending) func deliver(_ wave: inout Wave) async
}
