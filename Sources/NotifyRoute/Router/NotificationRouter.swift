import Logging

/// The router: normalises events, applies rules, picks routes, and fans events out to
/// sinks with per-sink dedup, replace and deadlines, answering with a ``DeliveryReport``.
///
/// Build one from a config and a registry of plugin kinds:
///
/// ```swift
/// let registry = try SinkRegistry([TerminalSink.plugin])
/// let config = try RouterConfiguration.load(yaml: text, file: "config.yaml", registry: registry)
/// let router = try NotificationRouter(configuration: config, registry: registry)
/// let report = try await router.send(NotificationEvent(title: "Backup done", level: .success))
/// ```
///
/// or from sink values you made yourself, with ``init(configuration:sinks:store:clock:logger:)``.
/// A router is `Sendable`: share one across tasks and send from any of them.
public final class NotificationRouter: Sendable {
    public let configuration: RouterConfiguration
    let instances: [String: SinkInstance]
    let store: any RouterStateStore
    let clock: any RouterClock
    let logger: Logger
    /// Labels and targets of the config, made once (see ``RoutingPlan/Tables``).
    let tables: RoutingPlan.Tables
    let countUpdates: CountUpdateCoalescer

    /// A class: every delivery refers to its sink's instance, none copies a declaration.
    final class SinkInstance: Sendable {
        let declaration: SinkDeclaration
        let sink: any NotificationSink
        let deadline: Duration
        /// What every delivery reads of the declaration, taken out once.
        let kind: String
        let minimumLevel: Level?
        let timeout: NotificationTimeout?, app: String?, icon: String?

        init(declaration: SinkDeclaration, sink: any NotificationSink, deadline: Duration) {
            self.declaration = declaration
            self.sink = sink
            self.deadline = deadline
            kind = declaration.kind
            minimumLevel = declaration.minimumLevel
            timeout = declaration.timeout
            app = declaration.app
            icon = declaration.icon
        }
    }

    /// Makes every sink of `configuration` with its plugin from `registry`.
    public convenience init(
        configuration: RouterConfiguration, registry: SinkRegistry,
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router"), countUpdateInterval: Duration = .seconds(1)
    ) throws(ConfigError) {
        var sinks: [String: any NotificationSink] = [:]
        for declaration in configuration.sinks {
            guard let plugin = registry.plugin(forKind: declaration.kind) else {
                throw ConfigError(
                    Suggestions.unknown("sink kind", declaration.kind, in: "sink \"\(declaration.name)\"", expected: registry.kinds),
                    at: declaration.location)
            }
            do {
                sinks[declaration.name] = try plugin.makeSink(declaration.options)
            } catch let error as ConfigError {
                throw error
            } catch {
                throw ConfigError("sink \"\(declaration.name)\": \(error)", at: declaration.location)
            }
        }
        try self.init(configuration: configuration, sinks: sinks, store: store, clock: clock, logger: logger,
                      countUpdateInterval: countUpdateInterval)
    }

    /// Uses the sinks given, by instance name. Names the config routes to but does not
    /// declare are accepted here (kind `custom`), so a router can be built entirely in code.
    ///
    /// `countUpdateInterval` is the least time between two count updates of one
    /// notification when duplicates keep coming (see ``SuppressionReason/duplicate(count:window:updatedInPlace:)``).
    public init(
        configuration: RouterConfiguration, sinks: [String: any NotificationSink],
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router"), countUpdateInterval: Duration = .seconds(1)
    ) throws(ConfigError) {
        var configuration = configuration
        for name in sinks.keys.sorted() where configuration.sink(named: name) == nil {
            configuration.sinks.append(SinkDeclaration(name: name, kind: "custom"))
        }
        let referenced = configuration.routes.flatMap { $0.sinks + $0.failover } + configuration.fallback
        for name in referenced where sinks[name] == nil {
            throw ConfigError("no sink named \"\(name)\" was given to the router; known sinks: \(sinks.keys.sorted().joined(separator: ", "))", at: nil)
        }
        var instances: [String: SinkInstance] = [:]
        for declaration in configuration.sinks {
            guard let sink = sinks[declaration.name] else {
                throw ConfigError("sink \"\(declaration.name)\" is declared but no sink was made for it", at: declaration.location)
            }
            instances[declaration.name] = SinkInstance(
                declaration: declaration, sink: sink,
                deadline: declaration.deadline ?? configuration.defaults.deadline ?? EventDefaults.builtInDeadline)
        }
        self.configuration = configuration
        self.instances = instances
        self.store = store
        self.clock = clock
        self.logger = logger
        self.tables = RoutingPlan.Tables(configuration, instances: instances)
        self.countUpdates = CountUpdateCoalescer(minimumInterval: countUpdateInterval)
    }

    /// The sink made for an instance name.
    public func sink(named name: String) -> (any NotificationSink)? { instances[name]?.sink }

    /// Sends one event through the whole pipeline and reports what every sink did.
    ///
    /// - Parameters:
    ///   - event: what to send; values left `nil` are filled by the cascade.
    ///   - sinkNames: deliver to these sinks only, bypassing rules' routes
    ///     (rules still apply). Unknown names are reported as unavailable.
    /// - Throws: ``EventError`` when the event itself is unusable (an empty title).
    @discardableResult
    public func send(_ event: NotificationEvent, only sinkNames: [String]? = nil) async throws(EventError) -> DeliveryReport {
        let event = try EventNormalizer.normalize(event)
        let plan = plan(event, only: sinkNames)
        let resolved = resolve(plan, route: nil, declaration: nil)
        guard plan.droppedBy == nil else {
            return DeliveryReport(event: resolved, matchedRules: plan.matchedRules, matchedRoutes: plan.matchedRoutes,
                                  droppedBy: plan.droppedBy, notes: plan.notes)
        }

        // Wave 1: every target at once. Wave 2: failover sinks of the routes whose sinks failed.
        // The report is built once, at the end: built first and filled in across the
        // awaits, it was copied whole several times per event.
        let explicit = plan.explicitLayer
        // A wave runs in synchronous stages; only deliveries that a sink cannot answer
        // inline (``NotificationSink/deliverInline(_:)``) take the async step.
        var wave = startWave(plan.targets, explicit: explicit, resolved: resolved, failoverFor: [:])
        if wave.resumeAt != nil { await completeWave(&wave) }
        var outcomes = settleWave(&wave)
        var failover: [String: [String]] = [:]  // failover sink -> the sinks it stands in for
        var targets: [RoutingPlan.Target] = []  // in order, each under the route of the first sink it stands in for
        // By index, and the route's failover list before anything else: zipping copied
        // every outcome, and `guard let route` copied the whole route, for every target.
        for position in plan.targets.indices {
            let target = plan.targets[position]
            guard !target.failover.isEmpty else { continue }
            switch outcomes[position].status {
            case .failed, .unavailable: break
            default: continue
            }
            for name in target.failover where !plan.targets.contains(where: { $0.sinkName == name }) {
                if failover[name] == nil {
                    targets.append(RoutingPlan.Target(sinkName: name, label: target.label, route: target.route, instance: instances[name]))
                }
                failover[name, default: []].append(target.sinkName)
            }
        }
        if !targets.isEmpty {
            var second = startWave(targets, explicit: explicit, resolved: resolved, failoverFor: failover)
            if second.resumeAt != nil { await completeWave(&second) }
            outcomes += settleWave(&second)
        }
        for position in outcomes.indices {
            switch outcomes[position].status {
            case .failed(let error):
                logger.warning("sink failed", metadata: ["sink": "\(outcomes[position].sink)", "error": "\(error.message)"])
            case .unavailable(let reason):
                logger.debug("sink unavailable", metadata: ["sink": "\(outcomes[position].sink)", "reason": "\(reason)"])
            default: break
            }
        }
        return DeliveryReport(event: resolved, matchedRules: plan.matchedRules, matchedRoutes: plan.matchedRoutes,
                              outcomes: outcomes, notes: plan.notes)
    }

    /// Sends an event built from a title and a closure that sets what differs, recording
    /// the caller's position for the journal.
    ///
    /// ```swift
    /// try await router.send("Connected") { $0.level = .success; $0.timeout = .after(.seconds(2)) }
    /// ```
    @discardableResult
    public func send(
        _ title: String, body: String? = nil, file: String = #fileID, line: Int = #line, function: String = #function,
        configure: (inout NotificationEvent) -> Void = { _ in }
    ) async throws(EventError) -> DeliveryReport {
        var event = NotificationEvent(title: title, body: body, callSite: CallSite(file: file, line: line, function: function))
        configure(&event)
        return try await send(event)
    }

    /// What a sink answered (a receipt or an error; neither when it was not asked) and
    /// how long it took. Two optionals rather than an optional `Result`: every copy,
    /// store and destruction of that multi-payload enum went through the runtime's value
    /// witnesses (about 250 instructions each, several per delivery).
    struct Answer {
        var receipt: SinkReceipt?
        var error: SinkError?
        var duration: Duration

        init(_ result: Result<SinkReceipt, SinkError>?, _ duration: Duration) {
            switch result {
            case .success(let receipt)?: self.receipt = receipt
            case .failure(let error)?: self.error = error
            case nil: break
            }
            self.duration = duration
        }

        init(receipt: SinkReceipt? = nil, error: SinkError? = nil, duration: Duration) {
            self.receipt = receipt
            self.error = error
            self.duration = duration
        }

        /// Whether the sink has answered (through `deliverInline`, when the wave started).
        var isGiven: Bool { receipt != nil || error != nil }
    }

    /// One pending delivery of a wave with what was decided for it and what its sink
    /// answered: one array for the three (they were three arrays per wave, each
    /// allocated, and destroyed element by element through the runtime).
    struct Slot {
        let item: PendingDelivery
        var decision = PolicyDecision(intent: .show, count: 1, suppressed: nil, createdWindow: false)
        /// `decision.sendsSomething`, noted when the decision is made: the loops that ask
        /// it read a Bool instead of copying the decision's enums out.
        var sends = true
        var answer = Answer(duration: .zero)

        init(_ item: PendingDelivery) { self.item = item }
    }

    /// One wave of deliveries (the routed sinks, or the failover sinks), between its stages.
    struct Wave {
        var outcomes: [SinkOutcome]
        var slots: [Slot]
        /// The first position in ``slots`` whose delivery is still to be made by
        /// ``NotificationRouter/completeWave(_:)`` (later ones may have answered already);
        /// `nil` when none is.
        var resumeAt: Int?
        /// Deliveries to be made all at once, each under its own deadline (some sink does
        /// not deliver inline), rather than one after the other.
        var concurrent = false
    }

    /// One wave of deliveries (the routed sinks, or the failover sinks): policy for all
    /// of them in one state transaction, deliveries, then one transaction for what the
    /// state must remember (``settleWave(_:)``). One transaction each way keeps a
    /// file-backed store to two locked read-writes per wave, and makes the decisions of
    /// one event atomic. `resolved` is the event as the cascade resolved it without route
    /// and sink layers.
    ///
    /// Synchronous: sinks that deliver inline are asked here, one after the other, through
    /// ``NotificationSink/deliverInline(_:)``; deliveries that need the async step (a sink
    /// that answers `nil`, a summary to send first) are left to ``completeWave(_:)``, which
    /// makes them one after the other once the others have answered. An event whose sinks all
    /// answer inline makes no async call: each cost a task-allocated frame and an executor
    /// check, more than such a delivery.
    private func startWave(
        _ targets: [RoutingPlan.Target], explicit: RoutingPlan.ExplicitLayer, resolved: ResolvedEvent, failoverFor: [String: [String]]
    ) -> Wave {
        var wave = prepareWave(targets, explicit: explicit, resolved: resolved, failoverFor: failoverFor)
        decideWave(&wave)
        // By index, here and below: iterating the slots copies every delivery (and its
        // event) once per loop.
        for position in wave.slots.indices where wave.slots[position].sends && !wave.slots[position].item.capabilities.deliversInline {
            // Step 5 for sinks that may block: each under its own deadline, all at once.
            wave.concurrent = true
            wave.resumeAt = 0
            return wave
        }
        // A delivery that needs the async step is left for `completeWave`, and the others
        // are still asked here: a sink that waits for its answer (the desktop sink waits for
        // the daemon, up to its deadline) must not hold up those that answer at once.
        for position in wave.slots.indices where wave.slots[position].sends {
            let item = wave.slots[position].item
            guard wave.slots[position].decision.summary == nil else {
                if wave.resumeAt == nil { wave.resumeAt = position }
                continue
            }
            let started = ContinuousClock.now
            let delivery = SinkDelivery(
                event: item.event, sinkName: item.target.sinkName, intent: wave.slots[position].decision.intent,
                deadline: started.advanced(by: item.instance.deadline), duplicateCount: wave.slots[position].decision.count)
            do {
                guard let receipt = try item.instance.sink.deliverInline(delivery) else {
                    if wave.resumeAt == nil { wave.resumeAt = position }
                    continue
                }
                // Field by field: a whole Answer assigned was made, copied in and destroyed.
                wave.slots[position].answer.receipt = receipt
            } catch {
                wave.slots[position].answer.error = SinkError(wrapping: error)
            }
            wave.slots[position].answer.duration = ContinuousClock.now - started
        }
        return wave
    }

    /// Step 5 for what ``startWave(_:explicit:resolved:failoverFor:)`` left: deliveries
    /// each under its own deadline, all at once; or, when every sink delivers inline, the
    /// rest of them one after the other, called directly (no child task, no deadline task
    /// and timer: see `attempt`).
    // `nonisolated(nonsending)`: runs on its caller's executor (send's), without the
    // executor check an async function's entry makes otherwise.
    private nonisolated(nonsending) func completeWave(_ wave: inout Wave) async {
        guard let resumeAt = wave.resumeAt else { return }
        wave.resumeAt = nil
        if wave.concurrent {
            let slots = wave.slots
            let answers = await withTaskGroup(of: (Int, Result<SinkReceipt, SinkError>?, Duration).self) { group in
                for position in slots.indices where slots[position].sends {
                    let item = slots[position].item, decision = slots[position].decision
                    group.addTask {
                        let (_, result, duration) = await self.deliverOne(item, decision)
                        return (position, result, duration)
                    }
                }
                var answers: [(Int, Answer)] = []
                for await (position, result, duration) in group { answers.append((position, Answer(result, duration))) }
                return answers
            }
            for (position, answer) in answers { wave.slots[position].answer = answer }
            return
        }
        for position in resumeAt..<wave.slots.count where wave.slots[position].sends && !wave.slots[position].answer.isGiven {
            let item = wave.slots[position].item, decision = wave.slots[position].decision
            guard decision.summary == nil else {
                let (_, result, duration) = await deliverOne(item, decision)
                wave.slots[position].answer = Answer(result, duration)
                continue
            }
            // `deliverOne` and `attempt` written out: two async calls (a frame and an
            // executor check each) per sink for what is one call to the sink.
            let started = ContinuousClock.now
            let delivery = SinkDelivery(
                event: item.event, sinkName: item.target.sinkName, intent: decision.intent,
                deadline: started.advanced(by: item.instance.deadline), duplicateCount: decision.count)
            do {
                let receipt = try await item.instance.sink.deliver(delivery)
                wave.slots[position].answer = Answer(receipt: receipt, duration: ContinuousClock.now - started)
            } catch {
                wave.slots[position].answer = Answer(error: SinkError(wrapping: error), duration: ContinuousClock.now - started)
            }
        }
    }

    /// Steps 1 to 3 for each target of a wave: its outcome so far, and, unless it is
    /// already settled (no such sink, below its minimum level), its pending delivery.
    private func prepareWave(
        _ targets: [RoutingPlan.Target], explicit: RoutingPlan.ExplicitLayer, resolved: ResolvedEvent, failoverFor: [String: [String]]
    ) -> Wave {
        var wave = Wave(outcomes: [], slots: [])
        wave.outcomes.reserveCapacity(targets.count)
        wave.slots.reserveCapacity(targets.count)
        // The event's keys, hashed once for every sink of the wave (see RouterState.Key).
        let dedupKey = resolved.dedupKey, replaceKey = resolved.replaceKey
        let dedupKeyHash = dedupKey.hashValue, replaceKeyHash = replaceKey?.hashValue ?? 0
        for (index, target) in targets.enumerated() {
            let failoverLabel = failoverFor.isEmpty ? nil : failoverFor[target.sinkName]?.joined(separator: ", ")
            guard let instance = target.instance ?? instances[target.sinkName] else {
                wave.outcomes.append(SinkOutcome(
                    sink: target.sinkName, kind: "?", status: .unavailable(reason: "no sink named \"\(target.sinkName)\" in the config"),
                    route: target.label, failoverFor: failoverLabel))
                continue
            }
            let capabilities = instance.sink.capabilities
            // One copy of the event per sink (one retain: see ResolvedEvent), changed in place.
            var event = resolved
            var notes: [String] = []
            layer(&event, explicit: explicit, target: target, instance: instance)
            fit(&event, to: capabilities, notes: &notes)
            // The outcome is made in the call that stores it: made as a `var` and then
            // appended, it was copied twice.
            if let minimum = instance.minimumLevel, event.level < minimum {
                wave.outcomes.append(SinkOutcome(
                    sink: target.sinkName, kind: instance.kind, status: .suppressed(.belowMinimumLevel(minimum)),
                    route: target.label, failoverFor: failoverLabel, notes: notes))
                continue
            }
            wave.outcomes.append(SinkOutcome(sink: target.sinkName, kind: instance.kind, status: .delivered,
                                             route: target.label, failoverFor: failoverLabel, notes: notes))
            let stateKey: RouterState.Key, handleKey: RouterState.Key?
            if target.sinkNameIsPlain && event.dedupKey == dedupKey && event.replaceKey == replaceKey {
                stateKey = RouterState.Key(plainSink: target.sinkName, sinkHash: target.sinkNameHash, key: dedupKey, keyHash: dedupKeyHash)
                handleKey = replaceKey.map {
                    RouterState.Key(plainSink: target.sinkName, sinkHash: target.sinkNameHash, key: $0, keyHash: replaceKeyHash)
                }
            } else {
                stateKey = RouterState.Key(sink: target.sinkName, key: event.dedupKey)
                handleKey = event.replaceKey.map { RouterState.Key(sink: target.sinkName, key: $0) }
            }
            wave.slots.append(Slot(PendingDelivery(
                index: index, target: target, instance: instance, capabilities: capabilities, stateKey: stateKey,
                handleKey: handleKey, event: event)))
        }
        return wave
    }

    /// Step 4: policy, decided against the remembered state in one transaction, into
    /// each slot's decision.
    private func decideWave(_ wave: inout Wave) {
        let now = clock.now()
        let maxEntries = configuration.state.maxEntries
        let inhibitRules = configuration.inhibitRules
        var flushes: [CountUpdateCoalescer.Flush] = []
        do {
            flushes = try store.withState { state in
                var flushes: [CountUpdateCoalescer.Flush] = []
                for position in wave.slots.indices {
                    let item = wave.slots[position].item
                    var decision: PolicyDecision
                    if inhibitRules.isEmpty && !item.target.holdsEvents && !state.holdsQuietEvents {
                        // Nothing to inhibit, hold or release: dedup and replace are the whole policy.
                        decision = PolicyDecision.decideDedupAndReplace(
                            for: item.event, sink: item.target.sinkName, window: item.target.dedupWindow,
                            capabilities: item.capabilities, now: now, state: state, maxEntries: maxEntries,
                            dedupStateKey: item.stateKey, handleStateKey: item.handleKey,
                            windowSeconds: item.target.dedupWindowSeconds)
                    } else {
                        decision = PolicyDecision.decide(
                            for: item.event, sink: item.target.sinkName, route: item.target.route, routeKey: item.target.label,
                            inhibitRules: inhibitRules, capabilities: item.capabilities, now: now, state: state,
                            maxEntries: maxEntries, dedupStateKey: item.stateKey, handleStateKey: item.handleKey)
                    }
                    if item.capabilities.canReplace {
                        // Inside the transaction: a duplicate and its original's commit cannot pass each other.
                        if let flush = coalesce(&decision, item, now: now) { flushes.append(flush) }
                    }
                    wave.slots[position].sends = decision.sendsSomething
                    wave.slots[position].decision = consume decision
                }
                return flushes
            }
        } catch {
            // State that cannot be read must not stop delivery: deliver as new and say so.
            for position in wave.slots.indices {
                wave.outcomes[wave.slots[position].item.index].notes.append("state unavailable (\(error)); dedup and replace skipped")
                wave.slots[position].decision = PolicyDecision(intent: .show, count: 1, suppressed: nil, createdWindow: false)
                wave.slots[position].sends = true
            }
        }
        for flush in flushes { schedule(flush) }
    }

    /// What the state must remember (handles of what was shown; windows of failures
    /// undone) and what the outcomes say, once the wave's deliveries have returned.
    private func settleWave(_ wave: inout Wave) -> [SinkOutcome] {
        let inhibitRules = configuration.inhibitRules
        let maxEntries = configuration.state.maxEntries
        var committing = false, firstCommit: Int?
        var rollbacks: [RouterState.Key] = []
        var finishedUpdates: [RouterState.Key] = []
        for position in wave.slots.indices {
            let index = wave.slots[position].item.index
            wave.outcomes[index].duration = wave.slots[position].answer.duration
            if let summary = wave.slots[position].decision.summary {
                wave.outcomes[index].notes.append("delivered first: a summary of \(summary.held) events held \(summary.why)")
            }
            if let suppressed = wave.slots[position].decision.suppressed {
                // A duplicate: suppressed, with the earlier notification's count updated where the sink can.
                if case .duplicate(let count, let window, _) = suppressed {
                    var updated = false
                    if case .updateDuplicateCount = wave.slots[position].decision.intent { finishedUpdates.append(wave.slots[position].item.stateKey) }
                    if let error = wave.slots[position].answer.error {
                        wave.outcomes[index].notes.append("count update failed: \(error.message)")
                    }
                    if wave.slots[position].answer.receipt != nil { updated = true }
                    if wave.slots[position].decision.coalesced {
                        wave.outcomes[index].notes.append("count update coalesced: the notification will show the latest count")
                    }
                    wave.outcomes[index].status = .suppressed(.duplicate(count: count, window: window, updatedInPlace: updated))
                } else {
                    wave.outcomes[index].status = .suppressed(suppressed)
                }
                // Not committed: the commit below looks only at answers to deliveries that were not suppressed.
                wave.slots[position].answer.receipt = nil
            } else if let receipt = wave.slots[position].answer.receipt {
                wave.outcomes[index].handle = receipt.handle
                if !receipt.notes.isEmpty { wave.outcomes[index].notes += receipt.notes }
                switch (receipt.disposition, wave.slots[position].decision.intent) {
                case (.queued(let reason), _): wave.outcomes[index].status = .queued(reason: reason)
                case (.delivered, .replace(let previous)): wave.outcomes[index].status = .replaced(previous: previous)
                case (.delivered, _): wave.outcomes[index].status = .delivered
                }
                if firstCommit == nil { firstCommit = position }
                if receipt.handle != nil { committing = true }
            } else if let error = wave.slots[position].answer.error {
                wave.outcomes[index].status = SinkOutcome.Status(failure: error)
                // A failed delivery must not make the next attempt look like a duplicate.
                if wave.slots[position].decision.createdWindow { rollbacks.append(wave.slots[position].item.stateKey) }
            }
        }
        let inhibits = !inhibitRules.isEmpty && firstCommit != nil
        if committing || !rollbacks.isEmpty || inhibits {
            let committed = clock.now()
            _ = try? store.withState { state in
                // The deliveries that were not suppressed and answered with a receipt, in order.
                for position in wave.slots.indices {
                    guard let receipt = wave.slots[position].answer.receipt else { continue }
                    let item = wave.slots[position].item
                    PolicyDecision.commit(event: item.event, sink: item.target.sinkName, handle: receipt.handle, now: committed,
                                          state: state, dedupStateKey: item.stateKey, handleStateKey: item.handleKey)
                }
                if inhibits, let first = firstCommit {
                    PolicyDecision.recordInhibitor(wave.slots[first].item.event, rules: inhibitRules, now: committed, state: state)
                }
                for key in rollbacks { state.removeDedup(forKey: key) }
                state.evictHandles(maxEntries: maxEntries)
            }
        }
        if !countUpdates.isEmpty { settleCountUpdates(wave.slots, finishedUpdates) }
        return wave.outcomes
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

    /// A class: the wave's loops, the state transaction and `deliverOne` pass one
    /// reference around instead of copying the event, key and capabilities each time
    /// (four copies of a dozen reference-counted fields per delivery as a struct).
    final class PendingDelivery: Sendable {
        let index: Int
        let target: RoutingPlan.Target
        let instance: SinkInstance
        /// Read once per delivery: a sink may compute them (the desktop sink does).
        let capabilities: SinkCapabilities
        let event: ResolvedEvent
        /// The sink's name and the dedup key: the state's key, made (and hashed) once per delivery.
        let stateKey: RouterState.Key
        /// The sink's name and the replace key, if any: the key of the handle map, made
        /// once per delivery (the decision and the commit both read it).
        let handleKey: RouterState.Key?

        init(index: Int, target: RoutingPlan.Target, instance: SinkInstance, capabilities: SinkCapabilities,
             stateKey: RouterState.Key, handleKey: RouterState.Key?, event: consuming ResolvedEvent) {
            self.handleKey = handleKey
            self.index = index
            self.target = target
            self.instance = instance
            self.capabilities = capabilities
            self.event = event
            self.stateKey = stateKey
        }
    }

    /// One sink's delivery (after a summary of what a policy held back, if any).
    private func deliverOne(_ item: PendingDelivery, _ decision: PolicyDecision) async -> (Int, Result<SinkReceipt, SinkError>?, Duration) {
        let started = ContinuousClock.now
        if let summary = decision.summary {
            // What a rate limit or quiet hours held back goes out first, as one notification.
            let digest = SinkDelivery(event: Self.summaryEvent(summary, like: item.event), sinkName: item.target.sinkName,
                                      deadline: started.advanced(by: item.instance.deadline))
            _ = await attempt(item.instance, digest, inline: item.capabilities.deliversInline)
        }
        let delivery = SinkDelivery(event: item.event, sinkName: item.target.sinkName, intent: decision.intent,
                                    deadline: started.advanced(by: item.instance.deadline), duplicateCount: decision.count)
        return (item.index, await attempt(item.instance, delivery, inline: item.capabilities.deliversInline), ContinuousClock.now - started)
    }

    /// `inline`: the sink's ``SinkCapabilities/deliversInline`` when the caller has read them.
    func attempt(_ instance: SinkInstance, _ delivery: SinkDelivery, inline: Bool? = nil) async -> Result<SinkReceipt, SinkError> {
        let sink = instance.sink
        if inline ?? sink.capabilities.deliversInline {
            // Answers at once by its own word: the deadline machinery would cost more than the delivery.
            do { return .success(try await sink.deliver(delivery)) } catch { return .failure(SinkError(wrapping: error)) }
        }
        switch await Deadline.run(within: instance.deadline, { try await sink.deliver(delivery) }) {
        case .finished(.success(let receipt)): return .success(receipt)
        case .finished(.failure(let error)): return .failure(SinkError(wrapping: error))
        case .timedOut:
            return .failure(SinkError(.timedOut, "no answer within \(DurationParser.format(instance.deadline)) (the sink's deadline)", isRetryable: true))
        }
    }

    /// Caps title and body at the sink's limits, with a marker, and drops actions it cannot show.
    func fitted(_ event: ResolvedEvent, to capabilities: SinkCapabilities, notes: inout [String]) -> ResolvedEvent {
        var event = event
        fit(&event, to: capabilities, notes: &notes)
        return event
    }

    /// ``fitted(_:to:notes:)`` in place.
    func fit(_ event: inout ResolvedEvent, to capabilities: SinkCapabilities, notes: inout [String]) {
        if capabilities.maxTitleLength == nil && capabilities.maxBodyLength == nil
            && (event.actions.isEmpty || capabilities.supportsActions) {
            return
        }
        event.title = TextSanitizer.truncate(event.title, to: capabilities.maxTitleLength)
        if let body = event.body { event.body = TextSanitizer.truncate(body, to: capabilities.maxBodyLength) }
        if !event.actions.isEmpty && !capabilities.supportsActions {
            notes.append("actions dropped: this sink cannot show them")
            event.actions = []
        }
    }

    /// Closes what earlier events with this replace key showed, on every sink that can.
    public func close(replaceKey: String) async -> DeliveryReport {
        var report = DeliveryReport(event: ResolvedEvent(title: "close \(replaceKey)", replaceKey: replaceKey))
        for name in configuration.sinks.map(\.name) {
            guard let instance = instances[name] else { continue }
            let key = RouterState.Key(sink: name, key: replaceKey)
            guard let record = (try? store.withState { $0.handle(forKey: key) }) ?? nil else { continue }
            var outcome = SinkOutcome(sink: name, kind: instance.declaration.kind, status: .delivered, handle: record.handle, route: "close")
            guard instance.sink.capabilities.canClose else {
                outcome.status = .failed(SinkError(.unsupported, "this sink cannot close notifications"))
                report.outcomes.append(outcome)
                continue
            }
            let request = SinkCloseRequest(sinkName: name, handle: record.handle, replaceKey: replaceKey,
                                           deadline: .now.advanced(by: instance.deadline))
            let sink = instance.sink
            switch await Deadline.run(within: instance.deadline, { try await sink.close(request) }) {
            case .finished(.success):
                _ = try? store.withState { state in
                    state.removeHandle(forKey: key)
                    // A closed source event no longer inhibits anything.
                    state.removeInhibitors(replaceKey: replaceKey)
                }
            case .finished(.failure(let error)):
                outcome.status = SinkOutcome.Status(failure: SinkError(wrapping: error))
            case .timedOut:
                outcome.status = .failed(SinkError(.timedOut, "no answer within \(DurationParser.format(instance.deadline))"))
            }
            report.outcomes.append(outcome)
        }
        if report.outcomes.isEmpty {
            report.notes.append("no notification is known for replace key \"\(replaceKey)\"")
        }
        return report
    }

    /// Lets every sink finish what it shows or queued (see ``NotificationSink/finish()``),
    /// waiting at most `limit` in all; the CLI calls it before exiting.
    /// Count updates still pending (duplicates coalesced during a burst) go out first,
    /// so the notification ends showing the final count.
    ///
    /// Sinks with nothing pending (``NotificationSink/hasPendingWork``) are skipped; when
    /// no sink and no count update is pending it returns at once, with no task and no timer:
    /// a CLI call that sent one event to the journal starts no thread to end.
    public func finish(within limit: Duration) async {
        guard !countUpdates.isEmpty || instances.values.contains(where: { $0.sink.hasPendingWork }) else { return }
        _ = await Deadline.run(within: limit) {
            await self.flushCountUpdates()
            // Asked after the flush: a count update may have just shown something.
            let sinks = self.instances.values.map(\.sink).filter(\.hasPendingWork)
            await withTaskGroup(of: Void.self) { group in
                for sink in sinks { group.addTask { await sink.finish() } }
            }
        }
    }

    /// Waits for the first interaction (an action, a dismissal) with what `report`
    /// delivered, on sinks that report interactions; `nil` when none can.
    public func firstInteraction(with report: DeliveryReport) async -> (sink: String, interaction: NotificationInteraction)? {
        let watched: [(String, SinkHandle, AsyncStream<SinkInteraction>)] = report.outcomes.compactMap { outcome in
            guard outcome.status.isSuccess, let handle = outcome.handle, let instance = instances[outcome.sink],
                  instance.sink.capabilities.reportsInteractions, let stream = instance.sink.interactions()
            else { return nil }
            return (outcome.sink, handle, stream)
        }
        guard !watched.isEmpty else { return nil }
        return await withTaskGroup(of: (String, NotificationInteraction)?.self) { group in
            for (sink, handle, stream) in watched {
                group.addTask {
                    for await item in stream where item.handle == handle {
                        if case .shown = item.interaction { continue }
                        return (sink, item.interaction)
                    }
                    return nil
                }
            }
            defer { group.cancelAll() }
            for await result in group {
                if let result { return result }
            }
            return nil
        }
    }
}

extension SinkError {
    /// What a sink threw, as a ``SinkError``: anything else is a plain failure.
    init(wrapping error: any Error) {
        self = (error as? SinkError) ?? SinkError(.failed, "\(error)")
    }
}

extension SinkOutcome.Status {
    /// A sink's error as it shows in the report: unavailable, or failed with the error.
    init(failure error: SinkError) {
        self = error.kind == .unavailable ? .unavailable(reason: error.message) : .failed(error)
    }
}
