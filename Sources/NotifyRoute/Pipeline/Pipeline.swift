#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The stages every event goes through, in order (DESIGN.md section 10):
///
///     normalise → rules → routes → fan-out → policy (per sink) → deliver → record
///
/// `send`, `--dry-run` and `explain` run the same list; the last two swap only the
/// deliver stage (``PlanStage``) for one that says what would happen. A new policy is a
/// new ``PolicyStage`` and one line in ``PolicyChain/decide(_:_:)``, not a branch inside
/// the router.
///
/// The stages are held and called by their concrete types (generic over the deliver
/// stage), not as `any` stages in arrays: every event calls them, and an existential
/// call is an indirect call on a copied box that the compiler cannot inline.
struct Pipeline<Deliver: DeliverStage>: Sendable {
    let rules: RulesStage
    let routes: RoutesStage
    /// Gives each target its own copy of the event, and settles the sinks it cannot reach.
    let fanOut: FanOutStage
    let policy: PolicyChain
    let deliver: Deliver
    let record: RecordStage

    /// The event stages for `event`: what the router's ``NotificationRouter/run(_:through:)``
    /// delivers. `only`: `--sink`; `tracing`: `explain`'s account of every rule and route;
    /// `batch`: the state batch the event joins.
    func route(_ event: NotificationEvent, only sinkNames: [String]?, tracing: Bool = false,
               batch: StateBatch? = nil) throws(EventError) -> RoutedEvent {
        var routed = RoutedEvent(event, only: sinkNames, tracing: tracing, batch: batch)
        try route(&routed)
        return routed
    }

    /// Run once per event, in order: what the event is and where it goes.
    func route(_ event: inout RoutedEvent) throws(EventError) {
        try NormaliseStage().run(&event)
        try rules.run(&event)
        try routes.run(&event)
    }

    /// The same list with another deliver stage.
    func delivering<Other>(with deliver: Other) -> Pipeline<Other> {
        Pipeline<Other>(rules: rules, routes: routes, fanOut: fanOut, policy: policy, deliver: deliver, record: record)
    }
}

extension Pipeline<SinkDeliverStage> {
    init(_ configuration: RouterConfiguration, instances: [String: SinkInstance], countUpdates: CountUpdateCoalescer,
         memory: RouterMemory? = nil) {
        let cascade = Cascade(configuration)
        self.init(
            rules: RulesStage(configuration, cascade: cascade), routes: RoutesStage(configuration, instances: instances),
            fanOut: FanOutStage(cascade: cascade), policy: PolicyChain(inhibit: InhibitStage(configuration.inhibitRules), memory: memory),
            deliver: SinkDeliverStage(),
            record: RecordStage(inhibitRules: configuration.inhibitRules, maxEntries: configuration.state.maxEntries,
                                countUpdates: countUpdates, memory: memory, history: configuration.history))
    }
}

/// The per-sink policy stages, in order. Run inside one state transaction per wave; the
/// first stage that suppresses the delivery ends the chain for that sink.
struct PolicyChain: Sendable {
    /// The stage that holds configuration; the others are made where they run (empty values).
    let inhibit: InhibitStage
    /// Where the silences and the pause are read, once per wave; none for a router
    /// without a history (a library router, a replay).
    let memory: RouterMemory?

    func decide(_ flow: inout SinkFlow, _ context: PolicyContext) {
        guard flow.passes(inhibit, context),
              flow.passes(SilenceStage(), context),
              flow.passes(PauseStage(), context),
              flow.passes(QuietHoursStage(), context),
              flow.passes(DedupStage(), context),
              flow.passes(GroupStage(), context),
              flow.passes(RateLimitStage(), context),
              flow.passes(QuietHoursSummaryStage(), context),
              flow.passes(ReplaceStage(), context),
              flow.passes(SnoozeStage(), context),
              flow.passes(EscalateStage(), context)
        else { return }
    }

    /// Whether a stage would read or change the state for `flow`. A wave in which no flow
    /// needs it opens no state transaction, so a `send` on a route without policies does
    /// not open the database. A stage that reads the state adds its condition here.
    /// Events that quiet hours held are summarised by the next wave that opens the state,
    /// so a route whose quiet hours were removed from the config since gets its summary
    /// with the next event that has a policy.
    /// The silences and the pause for a wave's ``PolicyContext``. When there are any, the
    /// chain runs for them even in a wave that needs no state.
    func controls(at now: Date) -> Controls {
        memory?.controls(at: now) ?? .none
    }

    func needsState(_ flow: borrowing SinkFlow) -> Bool {
        !inhibit.rules.isEmpty || flow.target.hasQuietHours || flow.target.dedupWindow != nil
            || flow.target.rateLimit != nil || flow.target.group != nil || (flow.capabilities.canReplace && flow.handleKey != nil)
            || flow.target.route?.escalation != nil || flow.target.route?.snooze != nil
    }
}

extension SinkFlow {
    /// Runs one policy stage; false when it suppressed the delivery.
    @inline(__always)
    mutating func passes(_ stage: some PolicyStage, _ context: PolicyContext) -> Bool {
        stage.decide(&self, context)
        return decision.suppressed == nil
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
