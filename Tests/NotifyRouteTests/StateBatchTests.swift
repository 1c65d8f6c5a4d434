import Dispatch
import Foundation
@testable import NotifyRoute
import Synchronization
import Testing

/// A batch's publications run once its members have committed: a member whose part is in
/// another batch's write under way hands back what that write leaves when it ends.
@Suite struct StateBatchTests {
    /// A member whose first commit of a batch waits for `write`, and whose second finishes.
    final class WaitingMember: StateBatchMember {
        let write = DispatchGroup()
        private let asked = Mutex(0)
        var commits: Int { asked.withLock { $0 } }

        init() { write.enter() }

        func commitBatch(of batch: ObjectIdentifier) throws -> DispatchGroup? {
            asked.withLock { asked in
                asked += 1
                return asked == 1 ? write : nil
            }
        }
    }

    @Test func aDeferringCommitReturnsAtOnceAndPublishesInOrderOnceTheWriteEnds() {
        let batch = StateBatch(maximumAge: .seconds(600), deferring: true)
        let member = WaitingMember()
        let published = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        batch.join(member)
        batch.publish { published.withLock { $0.append("first") } }
        batch.commit()
        #expect(published.withLock { $0 }.isEmpty, "published before the member's write ended")
        // A later round with nothing to wait for still publishes after the first.
        batch.publish { published.withLock { $0.append("second") } }
        batch.commit()
        batch.publish {
            published.withLock { $0.append("third") }
            done.signal()
        }
        batch.commit()
        #expect(published.withLock { $0 }.isEmpty, "a later round published before the waiting one")
        member.write.leave()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(published.withLock { $0 } == ["first", "second", "third"])
        #expect(member.commits == 2, "the member was not asked again once the write ended")
        // The thread that ran "third" lets go of the waiting commits just after.
        let deadline = ContinuousClock.now + .seconds(10)
        while batch.isFinishing && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(!batch.isFinishing)
        // Nothing waits any more: published within the commit.
        batch.publish { published.withLock { $0.append("fourth") } }
        batch.commit()
        #expect(published.withLock { $0.last } == "fourth")
    }

    final class Signal: Sendable {
        let count = Mutex(0)
    }

    @Test func aRoundsPublishersShareOneObjectAndItsPublicationRunsOnce() {
        let batch = StateBatch(maximumAge: .seconds(600))
        let first = batch.publishShared(Signal.init) { signal in signal.count.withLock { $0 += 1 } }
        let second = batch.publishShared(Signal.init) { signal in signal.count.withLock { $0 += 1 } }
        #expect(first === second)
        #expect(first.count.withLock { $0 } == 0, "published before the commit")
        batch.commit()
        #expect(first.count.withLock { $0 } == 1)
        // The next round has its own.
        let third = batch.publishShared(Signal.init) { signal in signal.count.withLock { $0 += 1 } }
        #expect(third !== first)
        batch.commit()
        #expect(third.count.withLock { $0 } == 1)
        #expect(first.count.withLock { $0 } == 1)
    }

    @Test func aCommitThatDoesNotDeferWaitsForTheWrite() {
        let batch = StateBatch(maximumAge: .seconds(600))
        let member = WaitingMember()
        let published = Mutex(false)
        batch.join(member)
        batch.publish { published.withLock { $0 = true } }
        let ended = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
            ended.withLock { $0 = true }
            member.write.leave()
        }
        batch.commit()
        #expect(ended.withLock { $0 }, "the commit returned before the member's write ended")
        #expect(published.withLock { $0 })
        #expect(member.commits == 2)
    }
}
