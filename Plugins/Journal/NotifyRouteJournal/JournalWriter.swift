import CSystemdJournal
import Dispatch
import NotifyRoute
import Synchronization

/// The journal sink's writer: a FIFO of records drained by one serial queue, so the
/// blocking `sd_journal_sendv` never runs on Swift's cooperative pool, and records
/// reach journald in the order they were handed over.
///
/// The fast path: when nothing waits in the FIFO and nothing is being written, the record
/// goes out at once on the caller's thread, as one non-blocking datagram
/// (``JournalTransport/send(_:socket:waitingAtMost:)``), waiting at most ``inlineWait`` for
/// room in journald's queue, as a blocking write would while journald is merely busy. When
/// journald's queue stays full (hung or overloaded) or the record needs `sd_journal_sendv`,
/// the record goes to the *head* of the FIFO, ahead of anything handed over meanwhile,
/// and everything below applies. While the caller writes, the writer counts as busy, so
/// no other record overtakes it, and a record never overtakes one that waits in the FIFO.
///
/// A caller waits for its record until a limit it chooses (a little before the router's
/// deadline). If journald has not taken it by then, journald is *stalled*, and:
/// - with a queue (`capacity > 0`, a long-lived process) the record stays in the FIFO
///   and the caller is told it is queued; while journald stays stalled, later callers
///   wait only ``stalledWait`` before they are told the same. At most `capacity` records
///   wait like that; past the bound new records are dropped and counted, and once journald answers again a catalogued
///   record (``JournalCatalog/eventsDropped``) says how many were lost.
/// - without a queue (`capacity == 0`, a one-shot `notify-route send` that exits right
///   after) the record is withdrawn (unless it is already inside `sd_journal_sendv`, in
///   which case it is written if journald recovers) and the caller gets a retryable time-out, so the
///   router can fail over instead of reporting a record that will die with the process.
final class JournalWriter: Sendable {
    enum Outcome: Sendable {
        case written
        case queued(reason: String)
        case failed(SinkError)
    }

    private enum EntryState {
        /// A caller waits for the result.
        case waiting
        /// The caller was told "queued": the record must be written, whatever it takes.
        case queued
        /// The caller was told it timed out, but the record was already in `sd_journal_sendv`.
        case abandoned
    }

    private struct Entry {
        let id: UInt64
        let record: JournalRecord
        var state: EntryState
    }

    private struct State {
        var entries: [Entry] = []
        var waiters: [UInt64: CheckedContinuation<Outcome, Never>] = [:]
        var inFlight: UInt64?
        var inFlightSince: ContinuousClock.Instant?
        var draining = false
        /// Set when a caller's wait ran out; cleared by the next record journald takes.
        var stalledSince: ContinuousClock.Instant?
        var nextID: UInt64 = 0
        var queuedCount = 0
        var written = 0
        var dropped = 0
        /// Drops not yet mentioned in a receipt's notes.
        var droppedUnreported = 0
        /// Drops not yet recorded in the journal itself.
        var droppedUnlogged = 0
        /// Records given up by ``giveUp()`` (callers told "queued", or still waiting).
        var givenUp = 0
        var lastFailure: SinkError?
        var retryDelayMilliseconds = 100
        /// The fast path's socket, connected on first use (-1: none yet). Used only by the
        /// caller that holds `draining` for a write of its own.
        var socket: Int32 = -1
    }

    let capacity: Int
    let transport: JournalTransport
    private let queue: DispatchQueue
    private let dropRecord: @Sendable (_ dropped: Int) -> JournalRecord
    private let state = Mutex(State())

    init(
        label: String, capacity: Int, transport: JournalTransport,
        dropRecord: @escaping @Sendable (_ dropped: Int) -> JournalRecord
    ) {
        self.capacity = capacity
        self.transport = transport
        self.queue = DispatchQueue(label: "notify-route.journal.\(label)")
        self.dropRecord = dropRecord
    }

    deinit {
        let socket = state.withLock { $0.socket }
        if socket >= 0 { notify_route_journal_close(socket) }
    }

    // MARK: Submitting

    /// The longest a write on the caller's thread waits for room in journald's queue.
    /// journald merely busy frees a slot within microseconds; past this, the record is queued.
    static let inlineWait = Duration.milliseconds(5)

    /// Hands `record` to the writer and waits until it is written, fails, or `limit` passes.
    /// Never waits past `limit` (see the type's documentation for the fast path).
    func submit(_ record: JournalRecord, waitUntil limit: ContinuousClock.Instant) async -> Outcome {
        // The fast path, when nothing is ahead of this record.
        var ahead = false
        var socket: Int32 = -1
        if let claim = claimInline() {
            socket = claim.socket
            let wait = claim.stalled ? .zero : min(Self.inlineWait, max(.zero, limit - .now))
            switch transport.send(record, socket: &socket, waitingAtMost: wait) {
            case .written:
                releaseInline(socket: socket, failure: nil)
                return .written
            case .failed(let error):
                releaseInline(socket: socket, failure: error)
                return .failed(error)
            case .deferred:
                // Still holding the writer: the record goes to the head of the queue.
                ahead = true
            }
        } else if let absent = transport.socketPresent() {
            // Checked before queueing, so an absent journald is reported at once and nothing waits for it.
            return .failed(absent)
        }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let notReading = !ahead && journaldNotReading()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let (kick, stalled, refusal) = state.withLock { state -> (Bool, Bool, Outcome?) in
                    let entry = Entry(id: id, record: record, state: .waiting)
                    if notReading, let since = state.stalledSince, state.inFlight != nil, state.queuedCount >= capacity {
                        // journald is not reading and no room is left to promise: answer now, not
                        // after another wait each, until it reads again.
                        return (false, true, .failed(capacity > 0 ? drop(&state) : notQueuedError(stalledFor: .now - since)))
                    }
                    state.waiters[id] = continuation
                    if ahead {
                        // This caller held the writer (`draining`): it starts the drain itself.
                        state.socket = socket
                        state.entries.insert(entry, at: 0)
                        return (true, state.stalledSince != nil, nil)
                    }
                    state.entries.append(entry)
                    return (startDraining(&state), state.stalledSince != nil, nil)
                }
                if let refusal {
                    continuation.resume(returning: refusal)
                    return
                }
                if kick { queue.async { self.drain() } }
                // journald is known not to answer: wait only briefly (it may just have come back)
                // instead of spending the caller's whole deadline again.
                let end = stalled ? min(limit, .now + Self.stalledWait) : limit
                // A no-op when the record was answered first; it only takes the lock.
                DeadlineTimer.shared.schedule(at: end) { self.expire(id) }
            }
        } onCancel: {
            expire(id)
        }
    }

    /// journald is stalled with no room left in our queue, and its own queue stays full for
    /// ``inlineWait``: it does not read. Once it reads again its queue has room at once (or the
    /// write stuck in `sd_journal_sendv` returns and the stall is over), and records wait as usual.
    private func journaldNotReading() -> Bool {
        let stuck = state.withLock { state -> Int32? in
            guard state.stalledSince != nil, state.inFlight != nil, state.queuedCount >= capacity else { return nil }
            return state.socket
        }
        guard let socket = stuck else { return false }
        let milliseconds = Int32(DurationParser.milliseconds(Self.inlineWait))
        return socket < 0 || notify_route_journal_writable(socket, milliseconds) != 1
    }

    /// The caller's wait is over and its record is not written yet.
    private func expire(_ id: UInt64) {
        let resumption = state.withLock { state -> (CheckedContinuation<Outcome, Never>, Outcome)? in
            guard let continuation = state.waiters.removeValue(forKey: id),
                  let index = state.entries.firstIndex(where: { $0.id == id })
            else { return nil }
            // Stalled only if a write is blocked in sd_journal_sendv (since it began): a caller
            // whose deadline was simply too short says nothing about journald.
            if state.stalledSince == nil, let blocked = state.inFlightSince { state.stalledSince = blocked }
            let since = state.stalledSince ?? .now
            let inFlight = state.inFlight == id
            if capacity > 0 {
                // A record already inside sd_journal_sendv cannot be taken back: it counts as queued even past the bound.
                if state.queuedCount < capacity || inFlight {
                    state.entries[index].state = .queued
                    state.queuedCount += 1
                    return (continuation, .queued(reason: queuedReason(state, stalledFor: .now - since)))
                }
                state.entries.remove(at: index)
                return (continuation, .failed(drop(&state)))
            }
            if inFlight {
                state.entries[index].state = .abandoned
            } else {
                state.entries.remove(at: index)
            }
            return (continuation, .failed(notQueuedError(stalledFor: .now - since)))
        }
        if let (continuation, outcome) = resumption { continuation.resume(returning: outcome) }
    }

    /// How long a caller waits when journald is already known not to answer.
    static let stalledWait = Duration.milliseconds(50)

    /// Takes the writer for a write on the caller's thread when no record is waiting or being
    /// written (and no drop report is due: the drain writes those). `nil`: take the queue.
    private func claimInline() -> (socket: Int32, stalled: Bool)? {
        state.withLock { state in
            guard state.entries.isEmpty, !state.draining, state.droppedUnlogged == 0 else { return nil }
            state.draining = true
            return (state.socket, state.stalledSince != nil)
        }
    }

    /// Gives the writer back after a write on the caller's thread that was not deferred;
    /// starts the drain when records were handed over meanwhile.
    private func releaseInline(socket: Int32, failure: SinkError?) {
        let kick = state.withLock { state -> Bool in
            state.socket = socket
            if let failure {
                state.lastFailure = failure
            } else {
                state.written += 1
                state.stalledSince = nil
                state.lastFailure = nil
                state.retryDelayMilliseconds = 100
            }
            if state.entries.isEmpty {
                state.draining = false
                return false
            }
            return true
        }
        if kick { queue.async { self.drain() } }
    }

    private func startDraining(_ state: inout State) -> Bool {
        guard !state.draining else { return false }
        state.draining = true
        return true
    }

    private func drop(_ state: inout State) -> SinkError {
        state.dropped += 1
        state.droppedUnreported += 1
        state.droppedUnlogged += 1
        let stalled = state.stalledSince.map { " for \(Self.format(.now - $0))" } ?? ""
        return SinkError(
            .failed,
            "the journal queue is full: \(state.queuedCount) records wait for journald, which has not answered\(stalled); "
                + "this event was dropped (\(state.dropped) dropped so far; queue_size \(capacity))",
            isRetryable: true)
    }

    private func queuedReason(_ state: State, stalledFor stalled: Duration) -> String {
        let cause = state.lastFailure.map { "the last write failed: \($0.message)" } ?? "hung or overloaded"
        return "journald has not taken a record for \(Self.format(stalled)) (\(cause)); this one waits in the journal queue "
            + "(\(state.queuedCount) of \(capacity)) and is written in order when journald answers"
    }

    private func notQueuedError(stalledFor stalled: Duration) -> SinkError {
        SinkError(
            .timedOut,
            "journald has not taken a record for \(Self.format(stalled)) (hung or overloaded); not queued: this sink's "
                + "queue_size is 0, as fits a process that exits after sending",
            isRetryable: true)
    }

    // MARK: Draining (on `queue` only)

    private enum Step {
        case next
        case retry(afterMilliseconds: Int)
    }

    private func drain() {
        while true {
            let head = state.withLock { state -> (UInt64, JournalRecord)? in
                guard let first = state.entries.first else {
                    state.draining = false
                    return nil
                }
                state.inFlight = first.id
                state.inFlightSince = .now
                return (first.id, first.record)
            }
            guard let (id, record) = head else { return }
            let failure = transport.write(record)
            var resumption: (CheckedContinuation<Outcome, Never>, Outcome)?
            var dropReport: Int?
            let step = state.withLock { state -> Step in
                state.inFlight = nil
                state.inFlightSince = nil
                guard let index = state.entries.firstIndex(where: { $0.id == id }) else { return .next }
                let entry = state.entries[index]
                let continuation = state.waiters.removeValue(forKey: id)
                if let failure {
                    if entry.state == .queued && failure.isRetryable {
                        // Its caller was promised a write: keep it at the head and try again later, in order.
                        state.lastFailure = failure
                        let delay = state.retryDelayMilliseconds
                        state.retryDelayMilliseconds = min(delay * 2, 2_000)
                        return .retry(afterMilliseconds: delay)
                    }
                    state.entries.remove(at: index)
                    if entry.state == .queued {
                        state.queuedCount -= 1
                        state.dropped += 1
                        state.droppedUnreported += 1
                        state.droppedUnlogged += 1
                    }
                    state.lastFailure = failure
                    if let continuation { resumption = (continuation, .failed(failure)) }
                    return .next
                }
                state.entries.remove(at: index)
                if entry.state == .queued { state.queuedCount -= 1 }
                state.written += 1
                state.stalledSince = nil
                state.lastFailure = nil
                state.retryDelayMilliseconds = 100
                if state.droppedUnlogged > 0 {
                    dropReport = state.droppedUnlogged
                    state.droppedUnlogged = 0
                }
                if let continuation { resumption = (continuation, .written) }
                return .next
            }
            if let (continuation, outcome) = resumption { continuation.resume(returning: outcome) }
            if let dropped = dropReport, transport.write(dropRecord(dropped)) != nil {
                state.withLock { $0.droppedUnlogged += dropped }
            }
            if case .retry(let delay) = step {
                // Drained on the queue, never on the timer's thread: a write may block.
                DeadlineTimer.shared.schedule(at: .now + .milliseconds(delay)) { self.queue.async { self.drain() } }
                return
            }
        }
    }

    // MARK: Reading

    /// Counters since the writer was made.
    var statistics: JournalSink.Statistics {
        state.withLock { state in
            JournalSink.Statistics(
                written: state.written, waiting: state.entries.count { $0.state != .abandoned }, queued: state.queuedCount,
                dropped: state.dropped, givenUp: state.givenUp,
                stalledFor: state.stalledSince.map { .now - $0 }, lastFailure: state.lastFailure?.message)
        }
    }

    /// Drops since the last call, for a receipt's notes.
    func takeUnreportedDrops() -> Int {
        state.withLock { state in
            defer { state.droppedUnreported = 0 }
            return state.droppedUnreported
        }
    }

    /// A record handed over is neither written nor given up: ``flush(within:)`` would wait.
    var hasWaitingRecords: Bool {
        state.withLock { state in !state.entries.allSatisfy { $0.state == .abandoned } }
    }

    /// Waits until every record handed over is written or given up, or `timeout` passes.
    /// A record already reported as timed out (abandoned in `sd_journal_sendv`) is not waited for.
    func flush(within timeout: Duration) async -> Bool {
        let end = ContinuousClock.now + timeout
        while state.withLock({ state in state.entries.allSatisfy { $0.state == .abandoned } }) == false {
            guard ContinuousClock.now < end, !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Gives up every record still waiting for journald: removed from the FIFO (one inside
    /// `sd_journal_sendv` cannot be taken back: it is left to finish, and counted all the
    /// same), counted as dropped and as given up, its caller (if one still waits) told it
    /// failed. For a process about to exit, after ``flush(within:)`` ran out.
    ///
    /// - Returns: how many records were given up.
    func giveUp() -> Int {
        let (count, resumptions) = state.withLock { state -> (Int, [CheckedContinuation<Outcome, Never>]) in
            var count = 0
            var resumptions: [CheckedContinuation<Outcome, Never>] = []
            state.entries = state.entries.compactMap { entry in
                guard entry.state != .abandoned else { return entry }
                count += 1
                if entry.state == .queued { state.queuedCount -= 1 }
                if let continuation = state.waiters.removeValue(forKey: entry.id) { resumptions.append(continuation) }
                guard state.inFlight == entry.id else { return nil }
                var left = entry
                left.state = .abandoned
                return left
            }
            state.dropped += count
            state.droppedUnreported += count
            state.droppedUnlogged += count
            state.givenUp += count
            return (count, resumptions)
        }
        let failure = SinkError(.failed, "given up: the journal sink was finished before journald took this record", isRetryable: true)
        for continuation in resumptions { continuation.resume(returning: .failed(failure)) }
        return count
    }

    static func format(_ duration: Duration) -> String {
        let milliseconds = DurationParser.milliseconds(duration)
        if milliseconds < 1_000 { return "\(milliseconds)ms" }
        let tenths = milliseconds / 100
        return "\(tenths / 10).\(tenths % 10)s"
    }
}
