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
/// Stores join the batch of the task that calls them (``current``); a store that cannot
/// batch (``InMemoryStateStore``) ignores it, and publications run at the next commit.
///
/// ```swift
/// let batch = StateBatch()
/// await StateBatch.$current.withValue(batch) {
///     for event in events {
///         let report = try await router.send(event)
///         batch.publish { print(report) }
///     }
/// }
/// try batch.commit()
/// ```
public final class StateBatch: Sendable {
    /// The batch that stores called from this task join; `nil`: each transaction commits alone.
    @TaskLocal public static var current: StateBatch?

    /// How long a batch stays open before it is committed, whatever else happens.
    public let maximumAge: Duration

    private struct Round {
        var members: [any StateBatchMember] = []
        var publications: [Publication] = []
        /// Whether this round's commit at ``maximumAge`` is set.
        var armed = false
        /// Counts rounds, so that a timer set for a round already committed does nothing.
        var number: UInt64 = 0
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

    /// - Parameter failureNotice: told when a commit fails (the events were delivered,
    ///   what the state should remember of them is lost).
    public init(maximumAge: Duration = .milliseconds(20), failureNotice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.maximumAge = maximumAge
        self.failureNotice = failureNotice
    }

    /// Runs `action` once what was done so far is committed (at the latest ``maximumAge`` from now).
    public func publish(_ action: @escaping @Sendable () -> Void) {
        round.withLock { round in
            round.publications.append(Publication(run: action))
            arm(&round)
        }
    }

    /// Commits what every store holds for this batch, then runs the publications made
    /// before the call, in order. A commit that fails is told to `failureNotice`; the
    /// publications still run (the events were delivered).
    public func commit() {
        committing.withLock { _ in
            let taken = round.withLock { round in
                defer { round = Round(number: round.number &+ 1) }
                return round
            }
            for member in taken.members {
                do { try member.commitBatch(of: ObjectIdentifier(self)) } catch { failureNotice("\(error)") }
            }
            for publication in taken.publications { publication.run() }
        }
    }

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
    /// send's path (Benchmarks README, tenth pass).
    private func arm(_ round: inout Round) {
        guard !round.armed else { return }
        round.armed = true
        let number = round.number
        // The timer keeps the batch: what is published after its last holder let go (a
        // request that ends just after the one that committed) is committed by it. Its
        // thread must return at once: the commit runs in a task of its own.
        DeadlineTimer.shared.schedule(at: Self.slot(within: maximumAge)) { [self] in
            guard self.round.withLock({ $0.number == number && $0.armed }) else { return }
            Task.detached { self.commit() }
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
    /// Commits the transaction this store opened for `batch`, if it still has one.
    func commitBatch(of batch: ObjectIdentifier) throws
}
