import Logging
import Synchronization

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
    let countUpdates: CountUpdateCoalescer
    /// What the router goes on doing after a send returned (count updates): run it, or run
    /// the router in a `NotificationRouterService`, for that work to happen on time.
    public let runtime = RouterRuntime()
    /// Where failed deliveries are recorded (``recordFailures(with:)``).
    let failureLog = Mutex<SinkFailureLog?>(nil)
    /// The history, silences and pause, when the router keeps them.
    public let memory: RouterMemory?
    /// Where the shared state lives (`nil`: in this process only), for `status` to say.
    public var stateDirectory: String? { store.stateDirectory }
    /// The stages of `send`, and the same with the deliver stage of `--dry-run` and `explain`.
    let pipeline: Pipeline<SinkDeliverStage>, planning: Pipeline<PlanStage>
    /// Set by the process whose clock sends what waits for a time (``keepTime()``).
    let timeKept = Atomic<Bool>(false)

    /// Makes every sink of `configuration` with its plugin from `registry`.
    public convenience init(
        configuration: RouterConfiguration, registry: SinkRegistry,
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router"), countUpdateInterval: Duration = .seconds(1),
        memory: RouterMemory? = nil
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
                      countUpdateInterval: countUpdateInterval, memory: memory)
    }

    /// Uses the sinks given, by instance name. Names the config routes to but does not
    /// declare are accepted here (kind `custom`), so a router can be built entirely in code.
    ///
    /// `countUpdateInterval` is the least time between two count updates of one
    /// notification when duplicates keep coming (see ``SuppressionReason/duplicate(count:window:updatedInPlace:)``).
    /// `memory` records every routed event and applies silences and the pause (``RouterMemory``).
    public init(
        configuration: RouterConfiguration, sinks: [String: any NotificationSink],
        store: any RouterStateStore = InMemoryStateStore(), clock: any RouterClock = SystemClock(),
        logger: Logger = Logger(label: "notify-route.router"), countUpdateInterval: Duration = .seconds(1),
        memory: RouterMemory? = nil
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
        let countUpdates = CountUpdateCoalescer(minimumInterval: countUpdateInterval)
        self.countUpdates = countUpdates
        self.memory = memory
        pipeline = Pipeline(configuration, instances: instances, countUpdates: countUpdates, memory: memory)
        planning = pipeline.delivering(with: PlanStage())
    }

    /// The sink made for an instance name.
    public func sink(named name: String) -> (any NotificationSink)? { instances[name]?.sink }

    /// Whether a retryable failure of the sink `name` is worth retrying later
    /// (``SinkCapabilities/worthRetrying``).
    public func retriesFailures(ofSink name: String) -> Bool { instances[name]?.worthRetrying ?? false }

    /// Sends one event through the whole pipeline and reports what every sink did.
    ///
    /// - Parameters:
    ///   - event: what to send; values left `nil` are filled by the cascade.
    ///   - sinkNames: deliver to these sinks only, bypassing rules' routes
    ///     (rules still apply). Unknown names are reported as unavailable.
    /// - Throws: ``EventError`` when the event itself is unusable (an empty title).
    @discardableResult
    public func send(_ event: NotificationEvent, only sinkNames: [String]? = nil) async throws(EventError) -> DeliveryReport {
        try await run(pipeline.route(event, only: sinkNames), through: pipeline)
    }

    /// ``send(_:only:)`` as part of `batch`: the event's state changes and its history line
    /// are committed with the batch's (``StateBatch``), for a caller that routes a stream of
    /// events (`ingest`, the daemon) and publishes each report once it is committed.
    @discardableResult
    public func send(_ event: NotificationEvent, only sinkNames: [String]? = nil, in batch: StateBatch?) async throws(EventError) -> DeliveryReport {
        try await run(pipeline.route(event, only: sinkNames, batch: batch), through: pipeline)
    }

    /// ``send(_:only:in:)`` with the silences and pause that ``releaseEndedPauseReadingControls()``
    /// read for this event (`nil`: read them here).
    package nonisolated(nonsending) func send(
        _ event: NotificationEvent, only sinkNames: [String]?, controls: Controls?, in batch: StateBatch? = nil
    ) async throws(EventError) -> DeliveryReport {
        try await run(pipeline.route(event, only: sinkNames, batch: batch), through: pipeline, controls: controls)
    }

    /// The share of an event that another process routed (the daemon, for its client) which
    /// only this process can show (``SinkCapabilities/drawnByCaller``): delivered to
    /// `sinkNames` after the rules and routes, with no policy stage, no failover and nothing
    /// recorded, since the process that routed it did all three.
    package func draw(_ event: NotificationEvent, on sinkNames: [String]) async throws(EventError) -> DeliveryReport {
        try await draw(pipeline.route(event, only: sinkNames), through: pipeline)
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

    /// Closes what earlier events with this replace key showed, on every sink that can.
    public func close(replaceKey: String) async -> DeliveryReport {
        var report = DeliveryReport(event: ResolvedEvent(title: "close \(replaceKey)", replaceKey: replaceKey))
        if let stopped = try? acknowledge(replaceKey: replaceKey), stopped > 0 { report.notes.append("its escalation stopped") }
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
