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

    struct SinkInstance: Sendable {
        var declaration: SinkDeclaration
        var sink: any NotificationSink
        var deadline: Duration
    }

    /// Makes every sink of `configuration` with its plugin from `registry`.
    public convenience init(
        configuration: RouterConfiguration, registry: SinkRegistry,
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router")
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
        try self.init(configuration: configuration, sinks: sinks, store: store, clock: clock, logger: logger)
    }

    /// Uses the sinks given, by instance name. Names the config routes to but does not
    /// declare are accepted here (kind `custom`), so a router can be built entirely in code.
    public init(
        configuration: RouterConfiguration, sinks: [String: any NotificationSink],
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router")
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
    }

    /// The sink made for an instance name.
    public func sink(named name: String) -> (any NotificationSink)? { instances[name]?.sink }

    /// Sends one event through the whole pipeline and reports what every sink did.
    ///
    /// - Parameter sinkNames: deliver to these sinks only, bypassing rules' routes
    ///   (rules still apply). Unknown names are reported as unavailable.
    /// - Throws: ``EventError`` when the event itself is unusable (an empty title).
    @discardableResult
    public func send(_ event: NotificationEvent, only sinkNames: [String]? = nil) async throws(EventError) -> DeliveryReport {
        let event = try EventNormalizer.normalize(event)
        let plan = plan(event, only: sinkNames)
        var report = DeliveryReport(
            event: resolve(plan, route: nil, declaration: nil), matchedRules: plan.matchedRules,
            matchedRoutes: plan.matchedRoutes, droppedBy: plan.droppedBy, notes: plan.notes)
        guard plan.droppedBy == nil else { return report }

        // Wave 1: every target at once. Wave 2: failover sinks of the routes whose sinks failed.
        report.outcomes = await deliver(plan.targets, plan: plan, failoverFor: [:])
        var failover: [String: [String]] = [:]  // failover sink -> the sinks it stands in for
        var order: [String] = []
        for (target, outcome) in zip(plan.targets, report.outcomes) {
            guard let route = target.route, !route.failover.isEmpty else { continue }
            switch outcome.status {
            case .failed, .unavailable: break
            default: continue
            }
            for name in route.failover where !plan.targets.contains(where: { $0.sinkName == name }) {
                if failover[name] == nil { order.append(name) }
                failover[name, default: []].append(target.sinkName)
            }
        }
        if !order.isEmpty {
            let targets = order.map { name in
                RoutingPlan.Target(
                    sinkName: name, label: plan.targets.first { failover[name]!.contains($0.sinkName) }!.label,
                    route: plan.targets.first { failover[name]!.contains($0.sinkName) }!.route)
            }
            report.outcomes += await deliver(targets, plan: plan, failoverFor: failover)
        }
        for outcome in report.outcomes {
            switch outcome.status {
            case .failed(let error):
                logger.warning("sink failed", metadata: ["sink": "\(outcome.sink)", "error": "\(error.message)"])
            case .unavailable(let reason):
                logger.debug("sink unavailable", metadata: ["sink": "\(outcome.sink)", "reason": "\(reason)"])
            default: break
            }
        }
        return report
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

    private func deliver(
        _ targets: [RoutingPlan.Target], plan: RoutingPlan, failoverFor: [String: [String]]
    ) async -> [SinkOutcome] {
        if targets.count == 1 {
            return [await deliver(targets[0], plan: plan, failoverFor: failoverFor[targets[0].sinkName])]
        }
        return await withTaskGroup(of: (Int, SinkOutcome).self) { group in
            for (index, target) in targets.enumerated() {
                group.addTask { (index, await self.deliver(target, plan: plan, failoverFor: failoverFor[target.sinkName])) }
            }
            var outcomes = [SinkOutcome?](repeating: nil, count: targets.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }
    }

    /// Step 4 and 5 for one sink: policy (min level, dedup, replace), then delivery
    /// under the sink's deadline, then what the state must remember.
    private func deliver(_ target: RoutingPlan.Target, plan: RoutingPlan, failoverFor: [String]?) async -> SinkOutcome {
        let started = ContinuousClock.now
        let failoverLabel = failoverFor?.joined(separator: ", ")
        guard let instance = instances[target.sinkName] else {
            return SinkOutcome(
                sink: target.sinkName, kind: "?", status: .unavailable(reason: "no sink named \"\(target.sinkName)\" in the config"),
                route: target.label, failoverFor: failoverLabel)
        }
        var outcome = SinkOutcome(sink: target.sinkName, kind: instance.declaration.kind, status: .delivered,
                                  route: target.label, failoverFor: failoverLabel)
        let event = fitted(resolve(plan, route: target.route, declaration: instance.declaration), to: instance.sink.capabilities, notes: &outcome.notes)

        if let minimum = instance.declaration.minimumLevel, event.level < minimum {
            outcome.status = .suppressed(.belowMinimumLevel(minimum))
            return outcome
        }

        let decision: PolicyDecision
        do {
            decision = try store.withState { state in
                PolicyDecision.decide(for: event, sink: target.sinkName, window: target.route?.dedupWindow,
                                      capabilities: instance.sink.capabilities, now: clock.now(), state: &state,
                                      maxEntries: configuration.state.maxEntries)
            }
        } catch {
            // A state store that cannot be read must not stop delivery: deliver as new and say so.
            outcome.notes.append("state unavailable (\(error)); dedup and replace skipped")
            decision = PolicyDecision(intent: .show, count: 1, suppressed: nil, createdWindow: false)
        }

        if let suppressed = decision.suppressed, case .duplicate(let count, let window, _) = suppressed,
           case .updateDuplicateCount = decision.intent {
            // Update the earlier notification to show the count; still a suppression.
            let result = await attempt(instance, SinkDelivery(event: event, sinkName: target.sinkName, intent: decision.intent,
                                                               deadline: .now.advanced(by: instance.deadline), duplicateCount: count))
            if case .failure(let error) = result { outcome.notes.append("count update failed: \(error.message)") }
            outcome.status = .suppressed(.duplicate(count: count, window: window, updatedInPlace: (try? result.get()) != nil))
            outcome.duration = ContinuousClock.now - started
            return outcome
        } else if let suppressed = decision.suppressed {
            outcome.status = .suppressed(suppressed)
            return outcome
        }

        let delivery = SinkDelivery(event: event, sinkName: target.sinkName, intent: decision.intent,
                                    deadline: .now.advanced(by: instance.deadline), duplicateCount: decision.count)
        let result = await attempt(instance, delivery)
        outcome.duration = ContinuousClock.now - started
        switch result {
        case .success(let receipt):
            outcome.handle = receipt.handle
            outcome.notes += receipt.notes
            switch (receipt.disposition, decision.intent) {
            case (.queued(let reason), _): outcome.status = .queued(reason: reason)
            case (.delivered, .replace(let previous)): outcome.status = .replaced(previous: previous)
            case (.delivered, _): outcome.status = .delivered
            }
            let handle = receipt.handle
            _ = try? store.withState { state in
                PolicyDecision.commit(event: event, sink: target.sinkName, handle: handle, now: clock.now(), state: &state)
            }
        case .failure(let error):
            outcome.status = error.kind == .unavailable ? .unavailable(reason: error.message) : .failed(error)
            if decision.createdWindow {
                // A failed delivery must not make the next attempt look like a duplicate.
                _ = try? store.withState { state in
                    state.dedup.removeValue(forKey: RouterState.key(sink: target.sinkName, event.dedupKey))
                }
            }
        }
        return outcome
    }

    func attempt(_ instance: SinkInstance, _ delivery: SinkDelivery) async -> Result<SinkReceipt, SinkError> {
        let sink = instance.sink
        switch await Deadline.run(within: instance.deadline, { try await sink.deliver(delivery) }) {
        case .finished(.success(let receipt)): return .success(receipt)
        case .finished(.failure(let error as SinkError)): return .failure(error)
        case .finished(.failure(let error)): return .failure(SinkError(.failed, "\(error)"))
        case .timedOut:
            return .failure(SinkError(.timedOut, "no answer within \(DurationParser.format(instance.deadline)) (the sink's deadline)", isRetryable: true))
        }
    }

    /// Caps title and body at the sink's limits, with a marker, and drops actions it cannot show.
    func fitted(_ event: ResolvedEvent, to capabilities: SinkCapabilities, notes: inout [String]) -> ResolvedEvent {
        var event = event
        event.title = TextSanitizer.truncate(event.title, to: capabilities.maxTitleLength)
        if let body = event.body { event.body = TextSanitizer.truncate(body, to: capabilities.maxBodyLength) }
        if !event.actions.isEmpty && !capabilities.supportsActions {
            notes.append("actions dropped: this sink cannot show them")
            event.actions = []
        }
        return event
    }

    /// Closes what earlier events with this replace key showed, on every sink that can.
    public func close(replaceKey: String) async -> DeliveryReport {
        var report = DeliveryReport(event: ResolvedEvent(title: "close \(replaceKey)", replaceKey: replaceKey))
        for name in configuration.sinks.map(\.name) {
            guard let instance = instances[name] else { continue }
            let key = RouterState.key(sink: name, replaceKey)
            guard let record = (try? store.withState { $0.handles[key] }) ?? nil else { continue }
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
                _ = try? store.withState { $0.handles.removeValue(forKey: key) }
            case .finished(.failure(let error as SinkError)):
                outcome.status = error.kind == .unavailable ? .unavailable(reason: error.message) : .failed(error)
            case .finished(.failure(let error)):
                outcome.status = .failed(SinkError(.failed, "\(error)"))
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
    public func finish(within limit: Duration) async {
        let sinks = instances.values.map(\.sink)
        _ = await Deadline.run(within: limit) {
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
