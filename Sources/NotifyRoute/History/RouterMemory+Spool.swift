import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension RouterMemory {
    // MARK: Spooling (the daemon)

    /// Whether records go to the spool, and its descriptor kept open between appends.
    struct Spooling {
        var enabled = false
        var file: Int32 = -1
        /// Records appended since the last ``RouterMemory/foldSpooledRecords()``.
        var pending = false
        /// The spool's size after this connection's last append since then (``spooledBytes``).
        var size = 0
        /// Told when `pending` becomes true.
        var signal: AsyncStream<Void>.Continuation?
        /// Lines of records routed in a ``StateBatch``, written in one `write` when a batch
        /// commits, before its answers are published.
        var buffer: [UInt8] = []
        /// The time of each of the batch's lines.
        var times: [Double] = []
        /// The batches told to commit `buffer` (joined since it was last written).
        var joined: [ObjectIdentifier] = []
        /// The batches whose lines another batch's insert took and has not committed yet,
        /// each with what that insert leaves once it has committed or put the lines back.
        var inserting: [(batch: ObjectIdentifier, done: DispatchGroup)] = []
        /// What the insert under way (``RouterMemory/insertBuffer()``) leaves when it ends.
        var underway: DispatchGroup?
        /// When the last insert of a batch's lines began.
        var lastInsert = ContinuousClock.now - .seconds(60)
        /// The buffers of an insert that ended after lines came in the ones it left: the
        /// next insert leaves them, with their capacity, and the lines under way do not grow
        /// a buffer from nothing (a copy at each doubling).
        var spare: (buffer: [UInt8], times: [Double]) = ([], [])

        mutating func emptyBuffer() {
            let keep = buffer.capacity <= RouterMemory.spoolBufferKept
            buffer.removeAll(keepingCapacity: keep)
            times.removeAll(keepingCapacity: keep)
            joined.removeAll(keepingCapacity: true)
        }
    }

    /// The capacity of the batch's buffer kept between batches (a batch of a few hundred records).
    static let spoolBufferKept = 256 << 10

    /// From this many records, a batch's commit inserts its lines into history.db itself,
    /// in one transaction, where spooling them would have a fold read them back, check each
    /// line and find its fields before inserting them. Fewer (a send alone) are spooled:
    /// one `write` on the answer's path, not a transaction.
    static let insertedLines = 16

    /// Within this long of the last insert, a batch of fewer than ``insertedLines`` is
    /// inserted too: under load the next insert would fold its spooled lines at once, and a
    /// fold (the spool moved aside, mapped, read back, removed) cost more than the insert.
    static let insertedWhileLoaded = Duration.milliseconds(50)

    /// Past this size, the record that finds the spool so large folds it at once (the
    /// daemon's timer folds it well before, but may be late under load).
    static let spoolFoldBytes = 4 << 20

    /// From now on, records this connection keeps (neither held nor dropped by a rule) are
    /// appended to the ``HistorySpool``, one `write` each, as one-shot sends append theirs,
    /// and folded into history.db in batches: by ``foldSpooledRecords()`` (the daemon's timer
    /// and shutdown), by whoever reads the history (opening history.db folds it first), or at
    /// once past ``spoolFoldBytes``. A record is in the page cache before `record` returns,
    /// so a daemon killed after answering loses none. For a connection kept open only.
    ///
    /// Returns what tells, once per batch, that records wait to be folded (`nil` when this
    /// connection is not kept open): the caller waits a moment, to gather more, then calls
    /// ``foldSpooledRecords()``. An idle daemon is not woken.
    package func spoolRecords() -> AsyncStream<Void>? {
        guard keepsOpen else { return nil }
        let (stream, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let previous = spooling.withLock { state in
            state.enabled = true
            spoolingEnabled.store(true, ordering: .releasing)
            defer { state.signal = signal }
            return state.signal
        }
        previous?.finish()
        if spooling.withLock(\.pending) { signal.yield() }
        return stream
    }

    /// Folds what this connection spooled since the last fold (and whatever else is in the
    /// spool); nothing when it spooled nothing.
    package func foldSpooledRecords() {
        _ = flushSpool()
        guard spooling.withLock({ state in
            defer { (state.pending, state.size) = (false, 0) }
            return state.pending
        }) else { return }
        do { try withConnection { _ in } } catch { notice("history: \(error); the spool is folded later") }
    }

    /// The spool's size after this connection's last append, 0 once folded: a daemon folds
    /// sooner when many records wait.
    package var spooledBytes: Int { spooling.withLock(\.size) }

    /// Appends `line` (a record's, at `time`) to the spool through the descriptor kept open;
    /// the spool's size after it, or `nil` when not spooling or the append failed (the caller
    /// records the row itself).
    /// In a `batch` (a daemon's `send`), the line waits in a buffer that the batch's
    /// commit writes, with the lines of the other events routed meanwhile, before any of
    /// their answers is published: the spool's size is then 0.
    func spoolKeptOpen(line: UnsafeBufferPointer<UInt8>, time: Double, batch: StateBatch? = nil) -> Int? {
        var join = false
        let size = spooling.withLock { state -> Int? in
            guard state.enabled else { return nil }
            if let batch {
                state.buffer.append(contentsOf: line)
                state.times.append(time)
                if !state.joined.contains(ObjectIdentifier(batch)) {
                    state.joined.append(ObjectIdentifier(batch))
                    join = true
                }
                return 0
            }
            // After what waits in the buffer: the spool keeps the order of the records.
            let buffered = state.buffer
            guard let size = write(&state, buffered + Array(line)) else { return nil }
            state.emptyBuffer()
            return size
        }
        if join, let batch { batch.join(self) }
        return size
    }

    /// Writes `lines` to the spool in one append (under the spooling lock); the spool's
    /// size after it, or `nil` when the append failed.
    func write(_ state: inout Spooling, _ lines: [UInt8]) -> Int? {
        var size: Int?
        // Twice at most: a fold moves the spool aside, and the next append opens the new one.
        for _ in 0..<2 where size == nil {
            if state.file < 0 { state.file = spool.openForAppending() }
            guard state.file >= 0 else { return nil }
            switch spool.append(line: lines, to: state.file, keptOpen: true) {
            case .written(let after):
                size = after
                state.size = after
            case .moved:
                Glibc.close(state.file)
                state.file = -1
            case .refused:
                // Perhaps replaced by something not ours: opened again for the next record.
                Glibc.close(state.file)
                state.file = -1
                return nil
            }
        }
        guard let size else { return nil }
        if !state.pending {
            state.pending = true
            state.signal?.yield()
        }
        return size
    }

    /// Appends what the buffer holds to the spool (left in the buffer if the append fails).
    func spoolBuffered() {
        spooling.withLock { state in
            guard !state.buffer.isEmpty, write(&state, state.buffer) != nil else { return }
            state.emptyBuffer()
        }
    }

    /// Writes the lines the buffer holds (``spoolKeptOpen(line:time:batch:)``): into history.db when there
    /// are ``insertedLines`` or more and it is free, else to the spool; what can be written
    /// to neither is recorded in history.db directly. Folds at once past ``spoolFoldBytes``.
    ///
    /// For a batch's commit, returns what to wait for before `batch`'s lines are committed
    /// (the caller then asks again): another batch's insert that took them, or one under
    /// way while this batch wants to insert, which it does next. Spooled meanwhile, its
    /// lines would have the next insert fold them back (read, each line checked, its fields
    /// found), which cost a loaded daemon more than the inserts themselves.
    func flushSpool(for batch: ObjectIdentifier? = nil) -> DispatchGroup? {
        if let batch {
            let (buffered, inserting) = spooling.withLock { state in
                (state.joined.contains(batch), state.inserting.first { $0.batch == batch }?.done)
            }
            // Its lines are in another batch's insert under way, or already committed.
            guard buffered else { return inserting }
        }
        if spooling.withLock({ state in
            state.times.count >= Self.insertedLines
                || (!state.times.isEmpty && ContinuousClock.now - state.lastInsert < Self.insertedWhileLoaded)
        }) {
            if insertBuffer() { return batch.flatMap(insertHolding) }
            if batch != nil, let underway = spooling.withLock({ $0.underway }) { return underway }
        }
        var failed = Spooling()
        let size = spooling.withLock { state -> Int? in
            guard !state.buffer.isEmpty else {
                state.joined.removeAll(keepingCapacity: true)
                return nil
            }
            let size = write(&state, state.buffer)
            if size == nil { (failed.buffer, failed.times) = (state.buffer, state.times) }
            state.emptyBuffer()
            return size
        }
        if let size, size >= Self.spoolFoldBytes { foldSpooledRecords() }
        if !failed.times.isEmpty {
            do {
                try withConnection { connection in try insert(failed.buffer, times: failed.times, into: connection) }
            } catch {
                notice("history: \(error); \(failed.times.count) events are not in the history")
            }
        }
        return batch.flatMap(insertHolding)
    }

    /// How many records wait in the batches' buffer (for tests).
    var bufferedRecords: Int { spooling.withLock { $0.times.count } }

    /// What the insert under way that holds lines of `batch` leaves when it ends: another
    /// batch's commit took them from the buffer, and `batch`'s answers wait for that insert's
    /// commit. (Waited for on the connection's lock, which the insert holds, this would spin
    /// the kernel's priority-inheriting mutex for the insert's length.)
    func insertHolding(_ batch: ObjectIdentifier) -> DispatchGroup? {
        spooling.withLock { $0.inserting.first { $0.batch == batch }?.done }
    }

    /// Lines of this connection's buffer (`times` theirs) into history.db in one
    /// transaction, the oldest dropped past the bounds the last was recorded with.
    func insert(_ buffer: [UInt8], times: [Double], into connection: Connection) throws(SQLiteDatabase.Failure) {
        guard !times.isEmpty else { return }
        try buffer.withUnsafeBufferPointer { bytes throws(SQLiteDatabase.Failure) in
            let lines = HistorySpool.Buffered(bytes, times: times)
            try connection.write { _ throws(SQLiteDatabase.Failure) in
                try connection.insert(lines, lines: 0..<lines.count)
                try connection.evict(lines.bounds(ofLine: lines.count - 1))
                if !marker.exists { try connection.markControls(marker) }
            }
        }
    }

    /// The buffer's lines into history.db in one transaction, after the spool's (folded
    /// first: the history keeps the order of the records). Waits for no other writer, no
    /// lock of the spool's and no other batch's insert: then, or on any failure, returns
    /// false with the buffer as it was, for ``flushSpool()`` to spool.
    func insertBuffer() -> Bool {
        // Left once the connection is free again, for the batches that wait to insert next.
        let done = DispatchGroup()
        done.enter()
        defer {
            spooling.withLock { state in if state.underway === done { state.underway = nil } }
            done.leave()
        }
        do {
            return try withConnectionIfFree(folding: false) { connection in
                connection.database.setBusyTimeout(0)
                defer { connection.database.setBusyTimeout(busyTimeoutMilliseconds) }
                if spool.mayHoldLines {
                    try fold(into: connection, within: .zero)
                    // Its lock was not had, or lines came since: they go first, and these after them.
                    guard !spool.mayHoldLines else { return false }
                }
                // Taken under the connection's lock, which every insert takes: batches that commit
                // at once insert in the order they take their lines.
                var taken = Spooling()
                spooling.withLock { state in
                    swap(&taken.buffer, &state.buffer)
                    swap(&taken.times, &state.times)
                    swap(&state.buffer, &state.spare.buffer)
                    swap(&state.times, &state.spare.times)
                    // Their commits wait for this insert's (insertHolding), not only this batch's.
                    state.inserting += state.joined.map { ($0, done) }
                    swap(&taken.joined, &state.joined)
                    state.underway = done
                    state.lastInsert = .now
                }
                guard !taken.times.isEmpty else {
                    spooling.withLock { state in state.inserting.removeAll { taken.joined.contains($0.batch) } }
                    return true
                }
                do {
                    try insert(taken.buffer, times: taken.times, into: connection)
                } catch {
                    // Back in front of what was buffered since, for the spool.
                    spooling.withLock { state in
                        taken.buffer += state.buffer
                        taken.times += state.times
                        swap(&taken.buffer, &state.buffer)
                        swap(&taken.times, &state.times)
                        state.inserting.removeAll { taken.joined.contains($0.batch) }
                        state.joined += taken.joined.filter { !state.joined.contains($0) }
                    }
                    throw error
                }
                // Its capacity kept for the next batch, unless a long stall made it large.
                spooling.withLock { state in
                    state.inserting.removeAll { taken.joined.contains($0.batch) }
                    guard taken.buffer.capacity <= Self.spoolBufferKept else { return }
                    taken.emptyBuffer()
                    if state.buffer.isEmpty {
                        swap(&taken.buffer, &state.buffer)
                        swap(&taken.times, &state.times)
                    } else {
                        state.spare = (taken.buffer, taken.times)
                    }
                }
                return true
            } ?? false
        } catch {
            return false
        }
    }
}

/// A daemon's records routed in a batch are written to the spool when it commits.
extension RouterMemory: StateBatchMember {
    func commitBatch(of batch: ObjectIdentifier) throws -> DispatchGroup? { flushSpool(for: batch) }
}
