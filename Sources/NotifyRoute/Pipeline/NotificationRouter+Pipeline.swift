/// Runs a routed event through the rest of a ``Pipeline``: a wave of the per-sink stages
/// for the routed sinks and one for the failover sinks of those that failed or were
/// unavailable.
extension NotificationRouter {
    // `nonisolated(nonsending)` here and on `wave`: they run on `send`'s executor, without
    // the executor switch an async function's entry makes otherwise.
    /// `routed` is what the event stages (``Pipeline/route(_:only:tracing:)``) made of the
    /// event; the caller keeps it (`explain` reads its traces), and the waves borrow it.
    /// `controls`, when given, are the silences and pause read for this event already.
    nonisolated(nonsending) func run<Deliver>(_ routed: RoutedEvent, through pipeline: Pipeline<Deliver>, controls: Controls? = nil) async -> DeliveryReport {
        let resolved = pipeline.fanOut.resolve(routed)
        guard routed.droppedBy == nil else {
            let report = DeliveryReport(event: resolved, matchedRules: routed.matchedRules, matchedRoutes: routed.matchedRoutes,
                                        droppedBy: routed.droppedBy, notes: routed.notes)
            if pipeline.deliver.keepsState { pipeline.record.remember(routed, report, now: clock.now()) }
            return report
        }
        // Last-resort sinks (``SinkCapabilities/lastResort``) wait for the others' outcomes.
        var targets = routed.targets, lastResort: [RouteTarget] = []
        if targets.contains(where: { $0.instance?.lastResort == true }) {
            lastResort = targets.filter { $0.instance?.lastResort == true }
            targets.removeAll { $0.instance?.lastResort == true }
        }
        var outcomes = await wave(targets, routed, resolved, failoverFor: [:], through: pipeline, controls: controls)
        var failoverFor: [String: [String]] = [:]
        var failover: [RouteTarget] = []  // each under the route of the first sink it stands in for
        // By position, the failover list first: zipping copied every outcome out.
        for position in targets.indices {
            let target = targets[position]
            guard !target.failover.isEmpty, let route = target.route else { continue }
            switch outcomes[position].status {
            case .failed, .unavailable: break
            default: continue
            }
            for name in route.failover where !routed.targets.contains(where: { $0.sinkName == name }) {
                if failoverFor[name] == nil { failover.append(RouteTarget(sinkName: name, label: target.label, route: route, instance: instances[name])) }
                failoverFor[name, default: []].append(target.sinkName)
            }
        }
        if !failover.isEmpty {
            outcomes += await wave(failover, routed, resolved, failoverFor: failoverFor, through: pipeline)
        }
        if !lastResort.isEmpty {
            outcomes += await standBy(lastResort, after: outcomes, routed, resolved, through: pipeline)
        }
        let report = DeliveryReport(event: resolved, matchedRules: routed.matchedRules, matchedRoutes: routed.matchedRoutes,
                                    outcomes: outcomes, notes: routed.notes)
        if pipeline.deliver.keepsState {
            pipeline.record.remember(routed, report, now: clock.now())
            if outcomes.contains(where: { if case .failed = $0.status { true } else { false } }) {
                await noteFailures(report)
            }
        }
        return report
    }

    /// ``draw(_:on:)``: fan-out and deliver, without the policy stages or the record.
    func draw<Deliver>(_ routed: RoutedEvent, through pipeline: Pipeline<Deliver>) async -> DeliveryReport {
        let resolved = pipeline.fanOut.resolve(routed)
        var outcomes: [SinkOutcome] = []
        if routed.droppedBy == nil {
            var wave = pipeline.fanOut.run(routed.targets, routed, resolved: resolved, failoverFor: [:])
            if !wave.flows.isEmpty { await pipeline.deliver.deliver(&wave) }
            _ = pipeline.record.record(&wave, store: store, batch: nil, clock: clock, logger: logger, planning: true)
            outcomes = wave.outcomes
        }
        return DeliveryReport(event: resolved, matchedRules: routed.matchedRules, matchedRoutes: routed.matchedRoutes,
                              droppedBy: routed.droppedBy, outcomes: outcomes, notes: routed.notes)
    }

    /// The last-resort sinks' part: a wave of their own when no other sink took the event
    /// (each failed, was unavailable or declined it by its `min_level`, or there was none);
    /// otherwise each stands by, suppressed, naming who took it. A duplicate, a rate limit or
    /// quiet hours on another sink count as taken: that sink has the event in hand. A pause
    /// does not: it holds the event from everyone, so the last resort faces it too.
    private nonisolated(nonsending) func standBy<Deliver>(_ targets: [RouteTarget], after outcomes: [SinkOutcome], _ event: RoutedEvent,
                         _ resolved: ResolvedEvent, through pipeline: Pipeline<Deliver>) async -> [SinkOutcome] {
        let took = outcomes.filter {
            switch $0.status {
            case .failed, .unavailable, .suppressed(.belowMinimumLevel), .suppressed(.paused): false
            default: true
            }
        }
        guard !took.isEmpty else { return await wave(targets, event, resolved, failoverFor: [:], through: pipeline) }
        let names = took.map(\.sink).joined(separator: ", ")
        return targets.map { target in
            SinkOutcome(sink: target.sinkName, kind: target.instance?.declaration.kind ?? "?",
                        status: .suppressed(.lastResort(tookIt: names)), route: target.label)
        }
    }

    /// Fan-out, the policy stages (in one state transaction when any needs the state), deliver, record.
    nonisolated(nonsending) func wave<Deliver>(_ targets: [RouteTarget], _ event: RoutedEvent, _ resolved: ResolvedEvent, failoverFor: [String: [String]],
                      through pipeline: Pipeline<Deliver>, controls: Controls? = nil) async -> [SinkOutcome] {
        var wave = pipeline.fanOut.run(targets, event, resolved: resolved, failoverFor: failoverFor)
        if !wave.flows.isEmpty {
            decide(&wave, by: pipeline.policy, read: controls, keepingState: pipeline.deliver.keepsState, in: event.batch)
            await pipeline.deliver.deliver(&wave)
        }
        return settle(&wave, event, through: pipeline)
    }

    // `decide` and `settle` stay out of line: inlined into `wave`, an async function, every
    // `Date` they hold (a type of another module, of unknown size) was allocated on the
    // task's allocator for every wave.

    /// Before the deliver stage: the policy stages, when a stage needs the state or there
    /// are silences or a pause, and the count updates they coalesced.
    @inline(never)
    private func decide(_ wave: inout Wave, by policy: PolicyChain, read: Controls?, keepingState keepsState: Bool, in batch: StateBatch?) {
        let controls = read ?? policy.controls(at: clock.now())
        if !controls.isEmpty || wave.flows.contains(where: { policy.needsState($0) }) {
            decide(&wave, by: policy, controls: controls, keepingState: keepsState, in: batch)
        }
        for position in wave.flows.indices { if let flush = wave.flows[position].flush { schedule(flush) } }
    }

    /// After the deliver stage: what a failed summary held goes back, the timers are armed,
    /// and the record stage settles the outcomes.
    @inline(never)
    private func settle<Deliver>(_ wave: inout Wave, _ event: RoutedEvent, through pipeline: Pipeline<Deliver>) -> [SinkOutcome] {
        let keepsState = pipeline.deliver.keepsState
        if !wave.flows.isEmpty {
            if keepsState { restoreUndeliveredSummaries(wave.flows) }
            armTimers(&wave, event, keepingState: keepsState)
        }
        for flush in pipeline.record.record(&wave, store: store, batch: event.batch, clock: clock, logger: logger, planning: !keepsState) {
            schedule(flush)
        }
        return wave.outcomes
    }

    /// The policy stages for every flow of the wave, in one state transaction.
    private func decide(_ wave: inout Wave, by policy: PolicyChain, controls: Controls, keepingState keepsState: Bool, in batch: StateBatch?) {
        do {
            try store.withState(discardingChanges: !keepsState, in: batch) { state in
                let context = PolicyContext(now: clock.now(), state: state, maxEntries: configuration.state.maxEntries,
                                            countUpdates: keepsState ? countUpdates : nil, keepsTime: keepsTime || !keepsState,
                                            controls: controls)
                for position in wave.flows.indices { policy.decide(&wave.flows[position], context) }
            }
        } catch {
            // State that cannot be read must not stop delivery: deliver as new and say so.
            for position in wave.flows.indices {
                if keepsState {
                    wave.outcomes[wave.flows[position].index].notes.append("state unavailable (\(error)); dedup and replace skipped")
                }
                wave.flows[position].decision = PolicyDecision()
                wave.flows[position].flush = nil
            }
        }
    }
}
