import Dispatch
import Synchronization

/// The state transactions of many events kept in one commit, for a command that routes a
/// stream of them (`notify-route ingest`): a store that can (``SQLiteStateStore``) opens
/// one transaction at the first event of a batch and commits it at most ``maximumAge``
/// later, instead of one commit, with its locks and log append, per transaction.
///
/// What a batch promises: an action given to ``publish(_:)`` (printing an event's
/// report) runs only once everything its event changed is committed. A crash or a kill
/// loses at most the batch under way, whose reports were never printed. Meanwhile the
/// store's write lock is held for at most ``maximumAge`` (and the transaction under way):
/// other processes' transactions wait that long, within their busy timeout.
///
/// A store joins the batch it is given (``RouterStateStore/withState(discardingChanges:in:_:)``,
/// which ``NotificationRouter/send(_:only:in:)`` passes down the pipeline with the event); a
/// store that cannot batch (``InMemoryStateStore``) ignores it, and publications run at the
/// next commit.
///
/// ```swift
/// let batch = StateBatch()
/// for event in events {
///     let report = try await router.send(event, in: batch)
///     batch.publish { print(report) }
/// }
/// batch.commit()
/// ```
public final class StateBatch: Sendable {
    /// How long a batch stays open before it is committed, whatever else happens.
    public let maximumAge: Duration

    private struct Round {
        var members: [any StateBatchMember] = []
        var publications: [Publication] = []
        /// Whether this round's commit at ``maximumAge`` is set.
        var armed = false
        /// Counts rounds, so that a timer set for a round already committed does nothing.
        var number: UInt64 = 0
        /// What ``publishShared(_:run:)`` made for this round.
        var shared: (any AnyObject & Sendable)?
    }

    /// A closure in a struct: stored bare in an array (a generic container), each is wrapped
    /// in a reabstraction thunk, allocated when stored and again when taken out to run.
    private struct Publication {
        let run: @Sendable () -> Void
    }

    /// What the open round holds; taken whole by a commit.
    private let round = Mutex(Round())
    /// One commit at a time, so that publications run in the order they were made.
    private let committing = Mutex(())
    private let failureNotice: @Sendable (String) -> Void
    /// Whether a commit whose member waits for another batch's write returns at once,
    /// its publications run once that write ends (``init(maximumAge:deferring:failureNotice:)``).
    private let deferring: Bool
    /// Commits whose publications wait, in order; one is finished at a time.
    private let waiting = Mutex(Waiting())

    private struct Waiting {
        var commits: [(members: [Member], publications: [Publication])] = []
        var finishing = false
    }

    /// A member that has not finished its part, and what it waits for before it is asked again.
    private struct Member {
        let member: any StateBatchMember
        let wait: DispatchGroup
    }

    /// - Parameters:
    ///   - deferring: a commit that finds a member waiting for another batch's write (a
    ///     daemon's history lines in another batch's insert) returns at once, and its
    ///     publications run on another thread once that write ends, still in order; without
    ///     it the commit waits. A daemon's batches defer: a pool thread asleep in a commit
    ///     routed nothing, and the loaded daemon's CPUs went idle meanwhile.
    ///   - failureNotice: told when a commit fails (the events were delivered, what the
    ///     state should remember of them is lost).
    public init(maximumAge: Duration = .milliseconds(20), deferring: Bool = false,
                failureNotice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.maximumAge = maximumAge
        self.deferring = deferring
        self.failureNotice = failureNotice
    }

    /// Runs `action` once what was done so far is committed (at the latest ``maximumAge`` from now).
    public func publish(_ action: @escaping @Sendable () -> Void) {
        round.withLock { round in
            round.publications.append(Publication(run: action))
            arm(&round)
        }
    }

    /// One object for everyone who publishes in the round under way: made by `make` for the
    /// first, with `run` given it as its publication; the others get the same one. A loaded
    /// daemon routes a hundred requests a round, and a signal each would be an object, a
    /// closure, and the connection's lock taken again for every answer.
    public func publishShared<Shared: AnyObject & Sendable>(_ make: () -> Shared, run: @escaping @Sendable (Shared) -> Void) -> Shared {
        round.withLock { round in
            // Compared by type, not cast: a dynamic cast an event was a fifth of this function.
            if let shared = round.shared, ObjectIdentifier(type(of: shared)) == ObjectIdentifier(Shared.self) {
                return unsafeDowncast(shared, to: Shared.self)
            }
            let shared = make()
            round.shared = shared
            round.publications.append(Publication { run(shared) })
            arm(&round)
            return shared
        }
    }

    /// Commits what every store holds for this batch, then runs the publications made
    /// before the call, in order (for a `deferring` batch, perhaps after it returns). A
    /// commit that fails is told to `failureNotice`; the publications still run (the
    /// events were delivered).
    public func commit() {
        committing.withLock { _ in
            let taken = round.withLock { round in
                defer { round = Round(number: round.number &+ 1) }
                return round
            }
            var unfinished: [Member] = []
            for member in taken.members {
                guard var wait = commit(member) else { continue }
                guard deferring else {
                    // Asked again once what it waits for has ended, until it has finished.
                    while true {
                        wait.wait()
                        guard let next = commit(member) else { break }
                        wait = next
                    }
                    continue
                }
                unfinished.append(Member(member: member, wait: wait))
            }
            let (now, start) = waiting.withLock { waiting -> (Bool, Bool) in
                // After the publications of earlier commits that still wait.
                guard !unfinished.isEmpty || waiting.finishing else { return (true, false) }
                waiting.commits.append((unfinished, taken.publications))
                defer { waiting.finishing = true }
                return (false, !waiting.finishing)
            }
            if now {
                for publication in taken.publications { publication.run() }
            } else if start {
                finishWaiting()
            }
        }
    }

    /// `member`'s commit of this batch; what to wait for before asking it again, if anything.
    private func commit(_ member: any StateBatchMember) -> DispatchGroup? {
        do { return try member.commitBatch(of: ObjectIdentifier(self)) } catch {
            failureNotice("\(error)")
            return nil
        }
    }

    /// Runs the publications of the waiting commits, in order, each once its members have
    /// finished: at once for those that have, on a thread of the pool for the others, once
    /// what they wait for has ended. Called by whoever set ``Waiting/finishing``, which it
    /// keeps until no commit waits.
    private func finishWaiting() {
        while true {
            let (publications, wait) = waiting.withLock { waiting -> ([Publication]?, DispatchGroup?) in
                guard let first = waiting.commits.first else {
                    waiting.finishing = false
                    return (nil, nil)
                }
                if let member = first.members.first { return (nil, member.wait) }
                waiting.commits.removeFirst()
                return (first.publications, nil)
            }
            if let publications {
                for publication in publications { publication.run() }
                continue
            }
            guard let wait else { return }
            wait.notify(queue: .global()) { [self] in
                let member = waiting.withLock { $0.commits[0].members.removeFirst() }
                if let again = commit(member.member) {
                    waiting.withLock { $0.commits[0].members.insert(Member(member: member.member, wait: again), at: 0) }
                }
                finishWaiting()
            }
            return
        }
    }

    /// Whether publications wait for an earlier commit (for tests).
    var isFinishing: Bool { waiting.withLock(\.finishing) }

    /// A store opened a transaction for this batch: it is committed with the round.
    func join(_ member: any StateBatchMember) {
        round.withLock { round in
            round.members.append(member)
            arm(&round)
        }
    }

    /// Sets the round's timer if it has none. Under the round's lock, so that a commit
    /// that takes the round also takes its timer.
    ///
    /// The instant is on a grid of half ``maximumAge``, and a commit does not unset it:
    /// rounds that follow one another then share the timer thread's next wake-up, where a
    /// timer set and unset per round woke that thread (asleep with nothing to do) on every
    /// send's path.
    private func arm(_ round: inout Round) {
        guard !round.armed else { return }
        round.armed = true
        let number = round.number
        // The timer keeps the batch: what is published after its last holder let go (a
        // request that ends just after the one that committed) is committed by it. Its
        // thread must return at once, and the commit blocks on the disk: a queue's thread, not
        // the concurrency pool's, runs it.
        DeadlineTimer.shared.schedule(at: Self.slot(within: maximumAge)) { [self] in
            guard self.round.withLock({ $0.number == number && $0.armed }) else { return }
            DispatchQueue.global().async { self.commit() }
        }
    }

    /// The latest point of the grid of `age / 2` that is at most `age` from now: between
    /// half `age` and `age` from now, and the same for every call within one step.
    static func slot(within age: Duration) -> ContinuousClock.Instant {
        // Nanoseconds in an Int64 hold 292 years; an age beyond a year needs no grid.
        guard age > .nanoseconds(1), age < .seconds(31_536_000) else { return .now + age }
        let step = nanoseconds(age) / 2
        let sinceOrigin = nanoseconds(.now + age - origin)
        return origin + .nanoseconds(sinceOrigin - sinceOrigin % step)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    private static let origin = ContinuousClock.now
}

/// A store whose transactions can join a ``StateBatch``.
protocol StateBatchMember: Sendable {
    /// Commits the transaction this store opened for `batch`, if it still has one; or
    /// returns what another batch's write of `batch`'s part (under way) leaves when it ends:
    /// the store is then asked again.
    func commitBatch(of batch: ObjectIdentifier) throws -> DispatchGroup?
}
