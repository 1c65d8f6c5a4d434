import NotifyRoute
import Synchronization

/// Desktop notifications through libnotify, over the session bus, to whatever
/// notification daemon runs there (GNOME Shell, KDE Plasma, dunst, mako, ...).
///
/// - Mapping: the level's urgency, the timeout as `expire_timeout` (`never` is 0,
///   `default` the server's default, a duration in milliseconds), app name, icon (a
///   theme name or a path), category, extra hints from the config, summary and body.
///   The body is escaped (`&`, `<`, `>`) when the daemon advertises `body-markup` or
///   `body-hyperlinks`, and so is the summary for dunst, which reads markup in it too.
/// - Replace: the handle is the server's notification id as a decimal string; a
///   replace or a duplicate-count update re-shows under that id (`replaces_id`), so it
///   works even for a notification another process showed.
/// - Close: `CloseNotification` with the handle's id.
/// - Interactions: actions and dismissals arrive on ``interactions()`` (and the
///   callback given to ``init(configuration:onInteraction:)``), from a GLib main loop
///   on a thread of the plugin's own.
/// - Failures: the daemon is probed (`GetServerInformation`, `GetCapabilities`) with a
///   short timeout before the first notification; no session bus, no daemon and a
///   hung daemon are reported within that timeout, never after libnotify's 25 s.
///   The answer is stored in the state directory for the next process, which skips
///   the probe while the same daemon instance owns the name (a failed or hung
///   `Notify` drops it). No libnotify: the sink is unavailable, with the reason.
/// - Cost: making a sink loads nothing; libnotify is loaded (`dlopen`), the GLib
///   thread started and the bus connected when a sink first needs the daemon.
///
/// libnotify talks to the process's session bus (`DBUS_SESSION_BUS_ADDRESS`, read
/// when the first sink connects); every desktop sink in a process shares it.
///
/// ```swift
/// let desktop = DesktopSink(configuration: .init(hints: ["transient": .boolean(true)])) { interaction in
///     print(interaction.handle, interaction.interaction)
/// }
/// let router = try NotificationRouter(configuration: config, sinks: ["desktop": desktop])
/// ```
///
/// In a config file:
///
/// ```yaml
/// sinks:
///   desktop: { kind: desktop, deadline: 1s, hints: { transient: "true", desktop-entry: backup } }
/// ```
public final class DesktopSink: NotificationSink {
    /// How long the router waits for a desktop sink whose config sets no `deadline`: a
    /// desktop notification that takes longer than a second is not coming (a daemon
    /// answers `Notify` in milliseconds), and a caller should hear so.
    public static let defaultDeadline: Duration = .seconds(1)

    /// The `desktop` kind for a ``SinkRegistry``.
    public static let plugin = SinkPlugin(
        kind: "desktop",
        summary: "desktop notifications through libnotify on the session bus (urgency, timeout, replace, close, actions)",
        options: [
            .option("hints", .stringMap, example: "{ transient: \"true\", desktop-entry: backup }",
                    "extra hints for every notification (`category` here is a default the event's overrides)"),
            .option("probe_timeout", .duration, default: .value(DurationParser.format(Configuration().probeTimeout)), example: "250ms",
                    "how long a probe of the daemon may take before it counts as hung (at most 5s)"),
        ],
        defaultDeadline: defaultDeadline
    ) { options in
        try DesktopSink(options: options)
    }

    /// What a desktop sink is configured with.
    public struct Configuration: Hashable, Sendable {
        /// Extra hints for every notification (`desktop-entry`, `transient`, `sound-name`, ...).
        /// A `category` here is a default that the event's own category overrides.
        public var hints: [String: DesktopHint]
        /// How long each probe call may take before the daemon counts as hung.
        public var probeTimeout: Duration

        public init(hints: [String: DesktopHint] = [:], probeTimeout: Duration = .milliseconds(500)) {
            self.hints = hints
            self.probeTimeout = probeTimeout
        }
    }

    public let configuration: Configuration
    private let probe: ServerProbeCache
    private let hub: InteractionHub

    /// Before showing, ask the daemon again if it has been silent this long (a cheap
    /// guard against a daemon that hung since the last notification).
    static let recheckAfter: Duration = .seconds(5)

    /// - Parameter onInteraction: called for every action and dismissal, on the
    ///   plugin's GLib thread, before ``interactions()`` streams get it: return quickly.
    public init(configuration: Configuration = Configuration(), onInteraction: (@Sendable (SinkInteraction) -> Void)? = nil) {
        self.configuration = configuration
        self.probe = ServerProbeCache(timeout: configuration.probeTimeout)
        self.hub = InteractionHub(callback: onInteraction)
    }

    /// Reads `hints` and `probe_timeout` from a config entry.
    public convenience init(options: SinkOptions) throws(ConfigError) {
        var configuration = Configuration()
        for (name, text) in try options.stringMap("hints") ?? [:] {
            switch DesktopHint.parse(name: name, text: text) {
            case .success(let hint): configuration.hints[name] = hint
            case .failure(let error): throw options.error(error.message, at: "hints")
            }
        }
        if let timeout = try options.duration("probe_timeout") {
            guard timeout > .zero, timeout <= .seconds(5) else {
                throw options.error("probe_timeout must be between 1ms and 5s (a short one keeps a hung daemon from holding up delivery)", at: "probe_timeout")
            }
            configuration.probeTimeout = timeout
        }
        self.init(configuration: configuration)
    }

    /// Replace, close and interactions always; actions and markup as the daemon said to
    /// the last probe. Reading this probes nothing (no libnotify, no thread): until a
    /// delivery or ``availability()`` has probed, actions are let through and
    /// ``deliver(_:)`` drops them itself.
    ///
    /// `deliversInline`: ``deliver(_:)`` keeps the delivery's deadline itself. Every call
    /// that may block (libnotify, D-Bus) runs on the plugin's GLib thread, and the caller
    /// waits for it only until the deadline (``DeadlineTimer``). So the router calls it
    /// directly, without a task in the cooperative pool and a Dispatch timer: a `send`
    /// to the desktop starts only the GLib thread, GLib's `gmain` and `gdbus`, and the
    /// deadline timer.
    public var capabilities: SinkCapabilities {
        let server = probe.cachedServer
        return SinkCapabilities(
            canReplace: true, canClose: true,
            supportsActions: server.map { $0.capabilities.contains("actions") } ?? true,
            supportsMarkup: server.map { DesktopNotificationRequest.readsMarkup($0.capabilities) } ?? false,
            reportsInteractions: true, deliversInline: true)
    }

    /// Available when a daemon answers on the session bus; the reason otherwise.
    public func availability() async -> SinkAvailability {
        if let missing = SessionBusConnection.missing() { return .unavailable(reason: missing.message) }
        return switch await probe.server() {
        case .success: .available
        case .failure(let error): .unavailable(reason: error.message)
        }
    }

    /// Shows, replaces or updates the notification, and answers by `delivery.deadline`
    /// whatever the daemon does (see ``capabilities``).
    ///
    /// One hand-over to the GLib thread and one back: when the probe is still running,
    /// its answer arrives on the GLib thread, and `Notify` is queued from there, instead
    /// of the caller being woken for the answer only to queue `Notify` on the GLib thread
    /// again (on a loaded 2-core machine each wake-up of a sleeping thread can take a
    /// tenth of a millisecond or more).
    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let started = ContinuousClock.now
        if let missing = SessionBusConnection.missing() { throw missing }
        try refuseWhileStuck()
        let probe = probe, hub = hub, hints = configuration.hints
        let stage = DeliveryStage()
        // A daemon the bus is starting is waited for until then, leaving a moment to show.
        let startDeadline = delivery.deadline - .milliseconds(50)
        let answer: Result<(handle: SinkHandle, notes: [String]), SinkError> = await DeadlineTimer.shared.first(
            by: delivery.deadline,
            // Made only at the deadline: the router's words for a sink that does not answer in time.
            orElse: .failure(stage.timedOut(after: Self.formatted(delivery.deadline - started)))
        ) { answer in
            let show: @Sendable (ServerProbeCache.Outcome) -> Void = { outcome in
                let server: NotificationServer
                switch outcome {
                case .success(let known): server = known
                case .failure(let error): return answer(.failure(error))
                }
                let thread: GLibLoopThread
                do throws(SinkError) { thread = try GLibLoopThread.start() } catch { return answer(.failure(error)) }
                // An answer stored by another process is trusted until this Notify: should the
                // daemon have hung since, forget it within the probe timeout, even if libnotify
                // blocks and the process ends at the deadline first.
                let watchdog = probe.isUnconfirmed ? DeadlineTimer.shared.schedule(at: .now + probe.timeout) { probe.forget() } : nil
                stage.mark(.showQueued)
                thread.submit {
                    defer { watchdog.map(DeadlineTimer.shared.cancel) }
                    let daemon = Self.currentDaemon(for: delivery.intent, probe: probe)
                    let (request, notes) = DesktopNotificationRequest.make(
                        for: delivery, serverCapabilities: server.capabilities, serverName: server.name,
                        configuredHints: hints, daemon: daemon)
                    let token = daemon?.token ?? ""
                    do throws(SinkError) {
                        let id = try LibNotifyPresenter.show(request, hub: hub, daemon: token)
                        answer(.success((DesktopHandle(id: id, daemon: token).sinkHandle, notes)))
                        LibNotifyPresenter.shown(id, hub: hub, daemon: token)
                    } catch {
                        answer(.failure(error))
                    }
                }
            }
            probe.server(freshWithin: Self.recheckAfter) { outcome in
                // The bus is starting the daemon: wait for it while the deadline allows,
                // so the first notification is shown rather than lost to a slow start.
                if case .failure(let error) = outcome, probe.shouldWaitForStart(after: error), .now < startDeadline {
                    stage.mark(.waitingForStart)
                    probe.server(freshWithin: Self.recheckAfter, startDeadline: startDeadline, reply: show)
                } else {
                    show(outcome)
                }
            }
        }
        switch answer {
        case .success(let shown):
            probe.recordContact()
            return SinkReceipt(handle: shown.handle, notes: shown.notes)
        case .failure(let error):
            // A Notify that failed or did not answer: the daemon is asked again next time.
            if stage.current == .showQueued { probe.forget() }
            throw error
        }
    }

    /// Who owns the daemon's name, for the handle of what is shown now. A replace asks
    /// the bus afresh (one round trip to the bus, not the daemon): its stored id may be
    /// from a daemon that has restarted since, whose ids now name other applications'
    /// notifications. A daemon found to have changed is probed again next time. On the GLib thread.
    private static func currentDaemon(for intent: SinkDelivery.Intent, probe: ServerProbeCache) -> DaemonIdentity? {
        let known = probe.identity
        if case .show = intent, let known { return known }
        let current = NotificationServerProbe.identity(timeout: probe.timeout)
        if current != known { probe.forget() }
        return current
    }

    /// Closes the notification the handle names, if the daemon that showed it still owns
    /// the name; otherwise that notification went with its daemon, and the id may now be
    /// another application's: nothing is closed.
    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        guard let handle = DesktopHandle(request.handle) else {
            throw SinkError(.failed, "handle \"\(request.handle.value)\" is not a desktop notification id")
        }
        try refuseWhileStuck()
        _ = try await probe.server(freshWithin: Self.recheckAfter).get()
        let timeout = min(configuration.probeTimeout, max(.milliseconds(1), request.deadline - .now))
        let closed = try await GLibLoopThread.start().perform { () throws(SinkError) -> Bool in
            guard handle.isFrom(NotificationServerProbe.identity(timeout: timeout)) else { return false }
            try NotificationServerProbe.closeNotification(id: handle.id, timeout: timeout)
            return true
        }
        return SinkReceipt(handle: request.handle, notes: closed ? [] : [
            "nothing closed: the notification daemon that showed it no longer owns the name (it or the bus restarted)",
        ])
    }

    /// A delivery's allowance as the config writes it, to the millisecond.
    private static func formatted(_ allowance: Duration) -> String {
        DurationParser.format(.milliseconds((allowance / .milliseconds(1)).rounded()))
    }

    /// The daemon shows and expires what it was given: nothing of a delivery is left for
    /// ``finish()`` (the protocol's no-op) to wait for.
    public var hasPendingWork: Bool { false }

    /// Every action and dismissal from now on, and the recent ones before it.
    public func interactions() -> AsyncStream<SinkInteraction>? {
        hub.stream()
    }

    /// A libnotify call still waiting on the daemon (a 25 s `show` after the daemon
    /// hung) would hold every later call behind it: fail at once instead of queueing.
    private func refuseWhileStuck() throws(SinkError) {
        if let busy = GLibLoopThread.busyFor, busy > configuration.probeTimeout + .milliseconds(250) {
            if NotificationServerProbe.isWaitingForStart {
                throw SinkError(.unavailable, "the notification daemon is not up yet: \(NotificationServerProbe.pendingStart) "
                    + "(an earlier delivery has been waiting for it for \(DurationParser.format(busy)))", isRetryable: true)
            }
            throw SinkError(
                .timedOut,
                "the notification daemon has not answered an earlier request for \(DurationParser.format(busy)); it may be hung",
                isRetryable: true)
        }
    }
}

/// How far one ``DesktopSink/deliver(_:)`` got, for the message its deadline gives.
private final class DeliveryStage: Sendable {
    enum Stage: UInt8, AtomicRepresentable { case probing, waitingForStart, showQueued }
    private let stage = Atomic<Stage>(.probing)
    var current: Stage { stage.load(ordering: .acquiring) }
    func mark(_ new: Stage) { stage.store(new, ordering: .releasing) }

    /// What the deadline says, `allowance` after the delivery began.
    func timedOut(after allowance: String) -> SinkError {
        switch current {
        case .probing:
            ServerProbeCache.notProbedInTime
        case .waitingForStart:
            SinkError(.unavailable, "the notification daemon could not be started within \(allowance) (the sink's deadline): "
                + "\(NotificationServerProbe.pendingStart) (the start timed out)", isRetryable: true)
        case .showQueued:
            SinkError(.timedOut, "the notification daemon did not answer Notify within \(allowance) (the sink's deadline); it may be hung",
                      isRetryable: true)
        }
    }
}
