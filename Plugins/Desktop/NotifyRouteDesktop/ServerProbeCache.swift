import NotifyRoute
import Synchronization

/// One sink's knowledge of the notification daemon: probed once, shared by every
/// caller that asks while a probe runs, and kept.
///
/// The first probe of a process takes the answer an earlier process stored for the
/// same daemon instance (``StoredServerInformation``), when there is one, and asks the
/// daemon only otherwise; every probe that asks the daemon stores its answer.
///
/// A success is kept for the sink's life (capabilities do not change under a running
/// daemon); a failure only for ``failureLifetime``, so a long-running router notices a
/// daemon that starts later. Before showing, ``server(freshWithin:)`` asks again when
/// the daemon has not been heard from for a while, so a daemon that hung since is
/// reported within the probe timeout instead of libnotify's 25 s.
final class ServerProbeCache: Sendable {
    typealias Outcome = Result<NotificationServer, SinkError>

    private struct State {
        var outcome: Outcome?
        var lastContact: ContinuousClock.Instant?
        var failedAt: ContinuousClock.Instant?
        var waiters: [@Sendable (Outcome) -> Void]?  // non-nil while a probe runs
        /// The outcome was read from ``StoredServerInformation``, not heard from the daemon.
        var fromStore = false
        /// Who owned the daemon's name at the last successful probe.
        var identity: DaemonIdentity?
        /// When a probe first saw the bus still starting the daemon past its budget.
        var startPendingSince: ContinuousClock.Instant?
    }

    static let failureLifetime: Duration = .seconds(2)
    /// How long after a start first timed out deliveries still wait for it (up to their
    /// deadlines); later, and for every caller without a deadline, a start still pending
    /// is reported at once instead of costing the probe budget again.
    static let startPatience: Duration = .seconds(10)
    /// How long a start seen pending is remembered: probes then only ask whether the
    /// daemon is up. Past it the bus is asked to start the daemon again (D-Bus gives up on
    /// a start after its own `service_start_timeout`, 25 s by default).
    static let startMemory: Duration = .seconds(120)
    /// How long a start the bus reported failed is reported again, by this process and the
    /// next ones, before the bus is asked to start the daemon again: a daemon that dies at
    /// start costs one wait, not one per send, and a fixed one is used within this.
    static let startFailureMemory: Duration = .seconds(30)
    let timeout: Duration
    private let state = Mutex(State())

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// The server found by the last probe, if it succeeded.
    var cachedServer: NotificationServer? {
        state.withLock { state in
            if case .success(let server) = state.outcome { return server }
            return nil
        }
    }

    /// The daemon, probing when nothing usable is known.
    ///
    /// - Parameter freshWithin: probe again if the last contact is older than this
    ///   (`nil`: any success will do).
    func server(freshWithin: Duration? = nil) async -> Outcome {
        await withCheckedContinuation { continuation in
            server(freshWithin: freshWithin) { continuation.resume(returning: $0) }
        }
    }

    /// The daemon instance the last successful probe found.
    var identity: DaemonIdentity? {
        state.withLock { $0.identity }
    }

    /// Whether a caller with a deadline should wait for the start the bus has under way:
    /// the last probe saw it pending, not so long ago that it looks stuck.
    func shouldWaitForStart(after error: SinkError) -> Bool {
        guard NotificationServerProbe.isStartPending(error) else { return false }
        return state.withLock { state in
            state.startPendingSince.map { ContinuousClock.now - $0 < Self.startPatience } ?? false
        }
    }

    /// What ``DesktopSink/deliver(_:)`` says when its deadline comes before the probe's answer.
    static let notProbedInTime = SinkError(
        .timedOut, "the notification daemon was not probed before the sink's deadline; it may be hung", isRetryable: true)

    /// ``server(freshWithin:)`` answering through `reply`: at once, on the caller's thread,
    /// when the answer is known; otherwise as soon as the probe ends, on the thread that
    /// ran it: the GLib thread (unless libnotify could not be loaded), so `reply` can queue
    /// the next GLib job from there without a hand-over to another thread and back.
    /// `reply` must not block.
    ///
    /// - Parameter startDeadline: a caller that can wait for a daemon the bus is starting
    ///   (a delivery, until its deadline); the probe then waits for the start past its budget.
    func server(freshWithin: Duration?, startDeadline: ContinuousClock.Instant? = nil, reply: @escaping @Sendable (Outcome) -> Void) {
        enum Step { case answer(Outcome), wait, probe }
        let step = state.withLock { state -> Step in
            let now = ContinuousClock.now
            switch state.outcome {
            case .success(let server)?:
                if let freshWithin, let last = state.lastContact, now - last > freshWithin { break }
                // The bus went away since: ask again, on a new connection.
                if SessionBusConnection.isClosed { break }
                return .answer(.success(server))
            case .failure(let error)?:
                let waitsForStart = startDeadline != nil && NotificationServerProbe.isStartPending(error)
                    && state.startPendingSince.map { now - $0 < Self.startPatience } ?? false
                if !waitsForStart, let failedAt = state.failedAt, now - failedAt < Self.failureLifetime { return .answer(.failure(error)) }
            case nil:
                break
            }
            // The first caller starts the probe; later ones wait for the same one.
            if state.waiters != nil {
                state.waiters!.append(reply)
                return .wait
            }
            state.waiters = [reply]
            return .probe
        }
        switch step {
        case .answer(let outcome): reply(outcome)
        case .wait: break
        case .probe: runProbe(startDeadline: startDeadline)
        }
    }

    /// The daemon just answered (a `Notify` went through).
    func recordContact() {
        state.withLock { state in
            state.lastContact = .now
            state.fromStore = false
        }
    }

    /// Whether the answer in hand came from another process (``StoredServerInformation``)
    /// and no `Notify` has gone through since: the daemon has not been heard from here.
    var isUnconfirmed: Bool {
        state.withLock { $0.fromStore }
    }

    /// A `Notify` failed or did not answer in time: drop what is known, here and in the
    /// state directory, so the next caller (or process) probes the daemon again.
    func forget() {
        state.withLock { state in
            if case .success = state.outcome { state.outcome = nil }
            state.fromStore = false
        }
        StoredServerInformation.remove()
    }

    /// Queues the probe on the GLib thread (loading libnotify and starting it, the first time).
    private func runProbe(startDeadline: ContinuousClock.Instant? = nil) {
        let timeout = timeout
        // Another process's answer will do only for the first probe of this sink; a
        // recheck is there to hear from the daemon itself.
        let firstProbe = state.withLock { $0.outcome == nil }
        let job: @Sendable () -> Void = { [self] in
            let identity = NotificationServerProbe.identity(timeout: timeout)
            if firstProbe, let identity, let stored = StoredServerInformation.read(for: identity) {
                finish(.success(stored), fromStore: true, identity: identity)
                return
            }
            // Nobody owns the name: an earlier process may have seen the bus start the daemon.
            let guid = identity == nil ? NotificationServerProbe.busGUID() : nil
            if let guid, let failed = StoredServerInformation.failedStart(busGUID: guid), failed.age < Self.startFailureMemory {
                finish(.failure(Self.remembered(failed.reason, age: failed.age)), fromStore: false, identity: nil)
                return
            }
            if firstProbe, let guid, let age = StoredServerInformation.pendingStartAge(busGUID: guid) {
                state.withLock { $0.startPendingSince = .now - age }
            }
            let startPending = state.withLock { state in
                state.startPendingSince.map { ContinuousClock.now - $0 < Self.startMemory } ?? false
            }
            let outcome: Outcome
            var owner = identity
            do throws(SinkError) {
                let server = try NotificationServerProbe.probe(timeout: timeout, startDeadline: startDeadline, startPending: startPending)
                // A daemon the bus has just started has an owner only now.
                owner = identity ?? NotificationServerProbe.identity(timeout: timeout)
                if let owner { StoredServerInformation.write(server, for: owner) }
                outcome = .success(server)
            } catch {
                // A daemon that owns the name but does not answer: no one should trust its old answer.
                if identity != nil { StoredServerInformation.remove() }
                // The next process then asks only whether the daemon is up, not waits again.
                if let guid, NotificationServerProbe.isStartPending(error) { StoredServerInformation.recordPendingStart(busGUID: guid) }
                if let guid, NotificationServerProbe.isStartFailure(error) {
                    StoredServerInformation.recordFailedStart(busGUID: guid, reason: error.message)
                }
                outcome = .failure(error)
            }
            finish(outcome, fromStore: false, identity: owner)
        }
        do throws(SinkError) {
            try GLibLoopThread.start().submit(job)
        } catch {
            finish(.failure(error), fromStore: false, identity: nil)
        }
    }

    /// A failed start recorded `age` ago, reported with when the bus is asked again.
    static func remembered(_ reason: String, age: Duration) -> SinkError {
        SinkError(.unavailable, "\(reason), \(DurationParser.format(seconds(age))) ago; the bus is not asked to start it again for \(DurationParser.format(seconds(startFailureMemory - age)))",
                  isRetryable: true)
    }

    /// Whole seconds, at least one: what a user reads of an age.
    private static func seconds(_ duration: Duration) -> Duration {
        .seconds(max(1, duration.components.seconds))
    }

    private func finish(_ outcome: Outcome, fromStore: Bool, identity: DaemonIdentity?) {
        let waiters = state.withLock { state in
            let now = ContinuousClock.now
            switch outcome {
            case .success:
                state.outcome = outcome
                state.lastContact = now
                state.identity = identity
                state.startPendingSince = nil
            case .failure(let error):
                // A daemon that answered before and fails now: forget its capabilities too.
                state.outcome = outcome
                state.failedAt = now
                state.identity = nil
                if NotificationServerProbe.isStartPending(error) {
                    // A start remembered longer than that was asked for again: a new attempt.
                    if state.startPendingSince.map({ now - $0 >= Self.startMemory }) ?? true { state.startPendingSince = now }
                } else {
                    state.startPendingSince = nil
                }
            }
            state.fromStore = fromStore
            let waiters = state.waiters ?? []
            state.waiters = nil
            return waiters
        }
        for waiter in waiters { waiter(outcome) }
    }
}
