import NotifyRoute
import Synchronization

/// One sink's knowledge of the notification daemon: probed once, shared by every
/// caller that asks while a probe runs, and kept.
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
        var waiters: [CheckedContinuation<Outcome, Never>]?  // non-nil while a probe runs
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
    func startIfNeeded() {
        let start = state.withLock { state -> Bool in
            guard state.outcome == nil, state.waiters == nil else { return false }
            state.waiters = []
            return true
        }
        if start { runProbe() }
    }

    /// The daemon, probing when nothing usable is known.
    ///
    /// - Parameter freshWithin: probe again if the last contact is older than this
    ///   (`nil`: any success will do).
    func server(freshWithin: Duration? = nil) async -> Outcome {
        await withCheckedContinuation { continuation in
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
                    state.waiters!.append(continuation)
                    return .wait
                }
                state.waiters = [continuation]
                return .probe
            }
            switch step {
            case .answer(let outcome): continuation.resume(returning: outcome)
            case .wait: break
            case .probe: runProbe()
            }
        }
    }

    /// The daemon just answered (a `Notify` went through).
    func recordContact() {
        state.withLock { $0.lastContact = .now }
    }

    private func runProbe() {
        let timeout = timeout
        GLibLoopThread.shared.submit { [self] in
            let outcome: Outcome
            do throws(SinkError) {
                outcome = .success(try NotificationServerProbe.probe(timeout: timeout))
            } catch {
                outcome = .failure(error)
            }
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
                let waiters = state.waiters ?? []
                state.waiters = nil
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
    }
}
