import NotifyRoute
import Synchronization

/// Group commit for the daemon's requests: while several are routed at once, or more are
/// queued behind the one that ends, their state transactions share one commit (a
/// ``StateBatch``), made when the last of them ends with none queued (or at
/// ``maximumAge``); a request alone commits as it ends. Each answer waits for the
/// commit of what its event changed, so an answered event's dedup window, handle or held
/// count is in the state store that a local `send` reads if the daemon is then killed.
package final class StateWriteBatching: Sendable {
    private struct Round {
        var batch: StateBatch?
        var active = 0
    }
    private let round = Mutex(Round())
    package let maximumAge: Duration

    package init(maximumAge: Duration = .milliseconds(10)) {
        self.maximumAge = maximumAge
    }

    /// Runs `body` with the batch under way (or a new one), which it passes to what it
    /// routes, and returns once what it changed is committed.
    package func run<Result: Sendable>(_ body: (StateBatch) async -> Result) async -> Result {
        let (result, committed) = await route(body)
        await committed.wait()
        return result
    }

    /// Runs `body` with the batch under way (or a new one) and returns at once, with what
    /// tells when its changes are committed: a connection routes its next request
    /// meanwhile, and its requests then share commits too.
    ///
    /// - Parameter queued: more requests wait behind this one, and will be routed next:
    ///   ending last, it leaves the batch open for them (its timer still commits it within
    ///   ``maximumAge``), so that a loaded daemon commits per batch of a few milliseconds,
    ///   not per handful of events.
    package nonisolated(nonsending) func route<Result: Sendable>(
        queued: Bool = false, _ body: nonisolated(nonsending) (StateBatch) async -> Result
    ) async -> (Result, Committed) {
        let batch = round.withLock { round in
            round.active += 1
            if let batch = round.batch { return batch }
            let batch = StateBatch(maximumAge: maximumAge, deferring: true)
            round.batch = batch
            return batch
        }
        let result = await body(batch)
        let last = round.withLock { round in
            round.active -= 1
            guard round.active == 0, !queued else { return false }
            round.batch = nil
            return true
        }
        // Shared by the requests that end in the same round: they are committed together.
        let committed = batch.publishShared(Committed.init) { $0.signal() }
        if last { batch.commit() }
        return (result, committed)
    }
}

/// Signalled once: the commit of a request's state changes, shared by the requests that
/// end in the same round of their batch.
package final class Committed: Sendable {
    private struct State {
        var done = false
        /// The requests that wait (``wait()``): those of a round that share this commit.
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The first apart: most commits have one (a connection's), and an array is allocated only for more.
        var first: Action?
        var more: [Action] = []
    }
    /// A closure in a struct: stored bare in an array or an optional (generic containers),
    /// each is wrapped in a reabstraction thunk, allocated when stored and when taken out.
    private struct Action {
        let run: @Sendable () -> Void
    }
    private let state = Mutex(State())

    package func signal() {
        let (waiters, first, more) = state.withLock { state in
            state.done = true
            defer {
                state.waiters = []
                state.first = nil
                state.more = []
            }
            return (state.waiters, state.first, state.more)
        }
        for waiter in waiters { waiter.resume() }
        first?.run()
        for action in more { action.run() }
    }

    /// Runs `action` once signalled, on the signalling thread (it must not block), and
    /// returns true; returns false, without running it, when already signalled. Nothing
    /// waits for it, so no task is resumed to run it.
    package func whenDone(_ action: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if !state.done {
                if state.first == nil { state.first = Action(run: action) } else { state.more.append(Action(run: action)) }
            }
            return !state.done
        }
    }

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}
