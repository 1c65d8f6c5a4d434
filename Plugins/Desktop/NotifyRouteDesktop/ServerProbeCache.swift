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
    }

    static let failureLifetime: Duration = .seconds(2)
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

    /// Starts a probe in the background when nothing is known yet (for the synchronous
    /// ``DesktopSink/capabilities``, which must not wait).
    ///
    /// Loading libnotify (a few milliseconds of `dlopen` and relocation) happens there
    /// too, while the router goes on with its state file, instead of before it. On a
    /// thread of its own, not in a task (the first task of a process starts the
    /// cooperative pool's threads, which a `send` would have no other use for), which
    /// then becomes the GLib thread.
    func startIfNeeded() {
        let start = state.withLock { state -> Bool in
            guard state.outcome == nil, state.waiters == nil else { return false }
            state.waiters = []
            return true
        }
        if start && !DetachedThread.start(name: "notify-route-gl", { self.runProbe(becomingTheGLibThread: true) }) { runProbe() }
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

    /// What ``DesktopSink/deliver(_:)`` says when its deadline comes before the probe's answer.
    static let notProbedInTime = SinkError(
        .timedOut, "the notification daemon was not probed before the sink's deadline; it may be hung", isRetryable: true)

    /// ``server(freshWithin:)`` answering through `reply`: at once, on the caller's thread,
    /// when the answer is known; otherwise as soon as the probe ends, on the thread that
    /// ran it: the GLib thread (unless libnotify could not be loaded), so `reply` can queue
    /// the next GLib job from there without a hand-over to another thread and back.
    /// `reply` must not block.
    func server(freshWithin: Duration?, reply: @escaping @Sendable (Outcome) -> Void) {
        enum Step { case answer(Outcome), wait, probe }
        let step = state.withLock { state -> Step in
            let now = ContinuousClock.now
            switch state.outcome {
            case .success(let server)?:
                if let freshWithin, let last = state.lastContact, now - last > freshWithin { break }
                return .answer(.success(server))
            case .failure(let error)?:
                if let failedAt = state.failedAt, now - failedAt < Self.failureLifetime { return .answer(.failure(error)) }
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
        case .probe: runProbe()
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

    /// Queues the probe on the GLib thread; `becomingTheGLibThread`: the calling thread,
    /// made for this, then runs the GLib loop itself (see ``GLibLoopThread/startHere(with:)``).
    private func runProbe(becomingTheGLibThread: Bool = false) {
        let timeout = timeout
        // Another process's answer will do only for the first probe of this sink; a
        // recheck is there to hear from the daemon itself.
        let firstProbe = state.withLock { $0.outcome == nil }
        let job: @Sendable () -> Void = { [self] in
            let identity = NotificationServerProbe.identity(timeout: timeout)
            if firstProbe, let identity, let stored = StoredServerInformation.read(for: identity) {
                finish(.success(stored), fromStore: true)
                return
            }
            let outcome: Outcome
            do throws(SinkError) {
                let server = try NotificationServerProbe.probe(timeout: timeout)
                // A daemon the bus has just started has an owner only now.
                if let owner = identity ?? NotificationServerProbe.identity(timeout: timeout) {
                    StoredServerInformation.write(server, for: owner)
                }
                outcome = .success(server)
            } catch {
                // A daemon that owns the name but does not answer: no one should trust its old answer.
                if identity != nil { StoredServerInformation.remove() }
                outcome = .failure(error)
            }
            finish(outcome, fromStore: false)
        }
        do throws(SinkError) {
            if becomingTheGLibThread {
                try GLibLoopThread.startHere(with: job)
            } else {
                try GLibLoopThread.start().submit(job)
            }
        } catch {
            finish(.failure(error), fromStore: false)
        }
    }

    private func finish(_ outcome: Outcome, fromStore: Bool) {
        let waiters = state.withLock { state in
            let now = ContinuousClock.now
            switch outcome {
            case .success:
                state.outcome = outcome
                state.lastContact = now
            case .failure:
                // A daemon that answered before and fails now: forget its capabilities too.
                state.outcome = outcome
                state.failedAt = now
            }
            state.fromStore = fromStore
            let waiters = state.waiters ?? []
            state.waiters = nil
            return waiters
        }
        for waiter in waiters { waiter(outcome) }
    }
}
