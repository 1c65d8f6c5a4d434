import NotifyRoute
@testable import NotifyRouteDaemon
import Synchronization
import Testing

/// How the daemon's group commit decides when a batch ends: with the last request routed
/// at once, unless more wait behind it; and at its age, whatever waits.
struct StateWriteBatchingTests {
    /// A request that ends with more queued behind it leaves the batch open: its commit
    /// (and so its answer) waits for the request after it, which ends with none queued.
    @Test func aRequestWithMoreQueuedWaitsForTheNextOnesCommit() async {
        let writes = StateWriteBatching(maximumAge: .seconds(600))
        let (first, firstCommitted) = await writes.route(queued: true) { _ in 1 }
        #expect(first == 1)
        #expect(!isDone(firstCommitted), "committed while more requests were queued")
        let (second, secondCommitted) = await writes.route(queued: false) { _ in 2 }
        #expect(second == 2)
        #expect(isDone(firstCommitted) && isDone(secondCommitted), "the last request with none queued did not commit")

        // Without a queue, each request commits as it ends.
        let (_, alone) = await writes.route { _ in () }
        #expect(isDone(alone))
    }

    /// A batch left open because more were queued is still committed at its age, even if
    /// the requests said to follow never come (the next line was not a `send`).
    @Test func anOpenBatchIsCommittedAtItsAge() async throws {
        let age = Duration.milliseconds(80)
        let writes = StateWriteBatching(maximumAge: age)
        let start = ContinuousClock.now
        let (_, committed) = await writes.route(queued: true) { _ in () }
        #expect(!isDone(committed))
        let waited = Task { await committed.wait() }
        // Far past the age, so a slow machine does not fail it; the commit is due within `age`.
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            committed.signal()
        }
        await waited.value
        timeout.cancel()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= age / 2, "committed after \(elapsed), before half the age")
        #expect(elapsed < .seconds(5), "not committed at its age: \(elapsed)")
    }

    /// Requests that end in the same round share its commit, and every one of them that
    /// waits for it (`--wait` sends of one connection) is resumed.
    @Test func theRequestsOfARoundShareOneCommitAndAllItsWaitersResume() async {
        let writes = StateWriteBatching(maximumAge: .seconds(600))
        let (_, first) = await writes.route(queued: true) { _ in () }
        let (_, second) = await writes.route(queued: true) { _ in () }
        #expect(first === second)
        let resumed = Resumed()
        for _ in 0..<3 {
            Task {
                await first.wait()
                resumed.count.withLock { $0 += 1 }
            }
        }
        // Time for the three to wait before the commit (a waiter after it returns at once).
        try? await Task.sleep(for: .milliseconds(200))
        let (_, last) = await writes.route(queued: false) { _ in () }
        #expect(last === first)
        let deadline = ContinuousClock.now + .seconds(10)
        while resumed.count.withLock({ $0 }) < 3 && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(resumed.count.withLock { $0 } == 3, "a waiter of the shared commit was not resumed")
        #expect(isDone(first))
        // The next round commits on its own.
        let (_, next) = await writes.route { _ in () }
        #expect(next !== first && isDone(next))
    }

    /// A request is given the batch it joins, and requests routed in a row while more are
    /// queued share one.
    @Test func requestsRoutedInARowShareTheBatchTheyAreGiven() async {
        let writes = StateWriteBatching(maximumAge: .seconds(600))
        let (first, committed) = await writes.route(queued: true) { $0 }
        let (second, _) = await writes.route(queued: false) { $0 }
        #expect(second === first, "a request queued behind joined another batch")
        #expect(isDone(committed))
        let (third, _) = await writes.route { $0 }
        #expect(third !== first, "a request after the batch ended joined it")
    }

    private final class Resumed: Sendable {
        let count = Mutex(0)
    }

    /// True once signalled: `whenDone` registers (and returns true) only while not yet.
    private func isDone(_ committed: Committed) -> Bool {
        !committed.whenDone {}
    }
}
