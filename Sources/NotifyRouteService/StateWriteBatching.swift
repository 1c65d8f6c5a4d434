import NotifyRoute
import Synchronization

/// Group commit for the daemon's requests: while several are routed at once, their state
/// transactions share one commit (a ``StateBatch``), made when the last of them ends (or
/// at ``maximumAge``); a request alone commits as it ends. Each answer waits for the
/// commit of what its event changed, so an answered event's dedup window, handle or held
/// count is in the state store that a local `send` reads if the daemon is then killed.
final class StateWriteBatching: Sendable {
    private struct Round {
        var batch: StateBatch?
        var active = 0
    }
    private let round = Mutex(Round())
    let maximumAge: Duration

    init(maximumAge: Duration = .milliseconds(10)) {
        self.maximumAge = maximumAge
    }

    /// Runs `body` in the batch under way (or a new one), and returns once what it
    /// changed is committed.
    func run<Result: Sendable>(_ body: () async -> Result) async -> Result {
        let batch = round.withLock { round in
            round.active += 1
            if let batch = round.batch { return batch }
            let batch = StateBatch(maximumAge: maximumAge)
            round.batch = batch
            return batch
        }
        let result = await StateBatch.$current.withValue(batch) { await body() }
        let last = round.withLock { round in
            round.active -= 1
            guard round.active == 0 else { return false }
            round.batch = nil
            return true
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            batch.publish { continuation.resume() }
            if last { batch.commit() }
        }
        return result
    }
}
