import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What must outlive a logout: the history of routed events, silences and the pause, in
/// `history.db` under `$XDG_STATE_HOME/notify-route/` (default `~/.local/state/notify-route/`).
///
/// The same embedded database as the router's state (``SQLiteStateStore``), in a file of
/// its own, opened the same careful way (the directory checked on its descriptor, the
/// file created 0600 by us, a damaged one set aside). WAL mode: concurrent writers queue
/// on SQLite's lock, and a writer killed mid-transaction leaves the last committed
/// history. `synchronous = OFF`: a commit never waits for the disk, so recording costs a
/// `send` no `fsync`; a power cut (not a crash) may damage the file, which is then set
/// aside and started afresh.
///
/// The history is bounded (``HistorySettings``): past `max_events` events or `max_bytes`
/// bytes the oldest are deleted, by primary key. Whoever routes an event records it: a
/// `send` without a daemon, or the daemon.
///
/// Silences and the pause are read once per wave: not at all while ``ControlsMarker`` says
/// there are none, else from a cache that is refreshed only when another connection has
/// committed (`PRAGMA data_version`), so that a silence added by one process holds the
/// events of every other, daemon included.
public final class RouterMemory: Sendable {
    public let directory: String
    public var databasePath: String { directory + "/" + Self.fileName }
    /// How long a transaction waits for another process's to end.
    public let busyTimeout: Duration
    /// False for one-shot commands: the database is closed after each recorded event, so
    /// that SQLite checkpoints its log into the file and the next process does not read
    /// the log whole to rebuild its index.
    public let keepsOpen: Bool
    private let notice: @Sendable (String) -> Void
    private let connection = Mutex<Connection?>(nil)
    private let spooling = Mutex(Spooling())
    /// `spooling`'s `enabled`, read without its lock by every record (set once, never unset).
    private let spoolingEnabled = Atomic(false)
    private let marker: ControlsMarker
    private let spool: HistorySpool

    static let fileName = "history.db"
    static let maximumBytes = 1 << 30

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// - Parameter notice: told what could not be recorded or was set aside, and why.
    public init(directory: String, keepsOpen: Bool = true, busyTimeout: Duration = .seconds(2),
                notice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.directory = directory
        self.keepsOpen = keepsOpen
        self.busyTimeout = busyTimeout
        self.notice = notice
        marker = ControlsMarker(directory: directory)
        spool = HistorySpool(directory: directory)
    }

    /// `$XDG_STATE_HOME/notify-route`, else `$HOME/.local/state/notify-route`: made (0700)
    /// if missing, and checked as the state directory is (``StateDirectory``). `naming`: what
    /// the messages call it (the state directory's fallback is made inside it).
    public static func resolveDirectory(
        environment: [String: String] = ProcessEnvironment.values(["XDG_STATE_HOME", "HOME"]), naming what: String = "history directory"
    ) throws(StateDirectory.Refused) -> String {
        let base: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = state
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.local/state"
        } else {
            throw StateDirectory.Refused(description: "neither XDG_STATE_HOME nor HOME is set: no place for the \(what)")
        }
        // The parents as XDG says (0700 for the state home), ours checked like the runtime state's.
        var prefix = ""
        // By UTF-8 bytes and String's own appends: `"/" + component` on a Substring takes
        // the generic, per-Character path, on every `send`.
        for component in base.utf8.split(separator: UInt8(ascii: "/")) {
            prefix += "/"
            prefix += String(decoding: component, as: UTF8.self)
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw StateDirectory.Refused(description: "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        let path = base + "/notify-route"
        if let unsafe = StateDirectory.unsafeAncestor(of: path) {
            throw StateDirectory.Refused(description: "the \(what) \(path) is not safe: \(unsafe)")
        }
        try StateDirectory.prepare(path)
        return path
    }

    /// Closes the database (checkpointing its log); the next use opens it again.
    public func close() {
        connection.withLock { $0 = nil }
    }

    deinit {
        spooling.withLock { state in
            if !state.buffer.isEmpty { _ = write(&state, state.buffer) }
            if state.file >= 0 { Glibc.close(state.file) }
            state.signal?.finish()
        }
    }

    // MARK: Spooling (the daemon)

    /// Whether records go to the spool, and its descriptor kept open between appends.
    private struct Spooling {
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
    /// In a ``StateBatch`` (a daemon's `send`), the line waits in a buffer that the batch's
    /// commit writes, with the lines of the other events routed meanwhile, before any of
    /// their answers is published: the spool's size is then 0.
    private func spoolKeptOpen(line: UnsafeBufferPointer<UInt8>, time: Double) -> Int? {
        let batch = StateBatch.joined
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
    private func write(_ state: inout Spooling, _ lines: [UInt8]) -> Int? {
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
    private func spoolBuffered() {
        spooling.withLock { state in
            guard !state.buffer.isEmpty, write(&state, state.buffer) != nil else { return }
            state.emptyBuffer()
        }
    }

    /// Writes the lines the buffer holds (``spoolKeptOpen(line:time:)``): into history.db when there
    /// are ``insertedLines`` or more and it is free, else to the spool; what can be written
    /// to neither is recorded in history.db directly. Folds at once past ``spoolFoldBytes``.
    ///
    /// For a batch's commit, returns what to wait for before `batch`'s lines are committed
    /// (the caller then asks again): another batch's insert that took them, or one under
    /// way while this batch wants to insert, which it does next. Spooled meanwhile, its
    /// lines would have the next insert fold them back (read, each line checked, its fields
    /// found), which cost a loaded daemon more than the inserts themselves.
    private func flushSpool(for batch: ObjectIdentifier? = nil) -> DispatchGroup? {
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
    private func insertHolding(_ batch: ObjectIdentifier) -> DispatchGroup? {
        spooling.withLock { $0.inserting.first { $0.batch == batch }?.done }
    }

    /// Lines of this connection's buffer (`times` theirs) into history.db in one
    /// transaction, the oldest dropped past the bounds the last was recorded with.
    private func insert(_ buffer: [UInt8], times: [Double], into connection: Connection) throws(SQLiteDatabase.Failure) {
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
    private func insertBuffer() -> Bool {
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

    // MARK: Recording

    /// Appends the event `report` settled, and the event as given, as one transaction;
    /// drops the oldest past the bounds. Events a pause held are kept for its release.
    /// A failure is told to `notice`: losing a history record never loses the event.
    ///
    /// A one-shot command that found no silence and no pause to read (history.db not
    /// opened) appends the record to the ``HistorySpool`` instead; so does a daemon that
    /// spools its records (``spoolRecords()``).
    func record(_ report: DeliveryReport, input: NotificationEvent, settings: HistorySettings, now: Date, keep: Bool) {
        let held = report.outcomes.contains { if case .suppressed(.paused) = $0.status { true } else { false } }
        guard keep || held else { return }
        let event = report.event
        let tags = KeyBuilder.join(event.tags.sorted(), separator: "\u{1F}")
        let row: HistorySpool.Row
        if keep && !held && spoolingEnabled.load(ordering: .acquiring) {
            // The daemon's line, its record and input written in place; made before the
            // spooling lock, which concurrent records wait for.
            var line = JSONWriter(capacity: 384 + event.title.utf8.count + (event.body?.utf8.count ?? 0))
            HistorySpool.writeLine(
                into: &line, token: HistorySpool.Row.token(), time: now.timeIntervalSince1970, level: event.level.rawValue,
                source: event.source, app: event.app, title: event.title, body: event.body, category: event.category, tags: tags,
                maxEvents: settings.maxEvents, maxBytes: settings.maxBytes,
                record: { writer in HistoryRecord.writeStored(report, time: now, into: &writer) },
                input: { writer in IngestInput.write(input, into: &writer) },
                summary: { writer in HistoryRecord.summarize(report, into: &writer) })
            if let size = line.withBytes({ spoolKeptOpen(line: $0, time: now.timeIntervalSince1970) }) {
                if size >= Self.spoolFoldBytes { foldSpooledRecords() }
                return
            }
            // Not spooled: recorded below, from the line's fields.
            guard let spooled = line.withBytes({ HistorySpool.Row(line: ArraySlice($0.dropLast())) }) else {
                return notice("history: this event is not in the history")
            }
            row = spooled
        } else {
            let record = keep ? HistoryRecord.stored(report, time: now) : nil
            row = HistorySpool.Row(
                token: HistorySpool.Row.token(), time: now.timeIntervalSince1970, level: event.level.rawValue, source: event.source,
                app: event.app, title: event.title, body: event.body, category: event.category, tags: tags,
                record: record?.record ?? "", input: IngestInput.json(input), summary: record?.summary ?? "",
                maxEvents: settings.maxEvents, maxBytes: settings.maxBytes, parts: record?.parts)
        }
        if keep && !held && !keepsOpen && connection.withLock({ $0 == nil }) && marker.rulesOut(at: now),
           let size = spool.append(row) {
            // Past its bound, this send folds the spool (opening history.db does).
            if size >= HistorySpool.foldBytes {
                do { try withConnection { _ in } } catch { notice("history: \(error); the spool is folded later") }
                close()
            }
            return
        }
        // Lines a daemon's batch under way buffered were routed before this event (one a
        // pause holds goes in at once): appended to the spool, which the connection folds first.
        if keepsOpen { spoolBuffered() }
        do {
            try withConnection { connection in
                try connection.write { db throws(SQLiteDatabase.Failure) in
                    if keep {
                        try connection.insert(row)
                        try connection.evict(settings)
                    }
                    // Changes no control: the place to say, once after they change, that none is stored.
                    if !marker.exists { try connection.markControls(marker) }
                    if held {
                        try connection.statement(.insertHeld).bind(
                            .real(now.timeIntervalSince1970), .text(event.level.rawValue), Self.text(event.source), .text(row.input)
                        ).run()
                        // A pause left on for weeks holds at most as many events as the history keeps.
                        try connection.statement(.boundHeld).bind(.integer(settings.maxEvents)).run()
                    }
                }
            }
        } catch {
            notice("history: \(error); this event is not in the history")
        }
        if !keepsOpen { close() }
    }

    fileprivate static func text(_ value: String?) -> SQLiteDatabase.Value { value.map { .text($0) } ?? .null }

    // MARK: Controls

    /// The silences and the pause that may apply at `now`; none when the database cannot
    /// be read (a history that fails must not stop delivery).
    /// Whether a pause may be stored, known without opening history.db: not when the
    /// marker rules controls out, nor before there is a history at all.
    func mayHoldPause(at now: Date) -> Bool {
        guard !marker.rulesOut(at: now) else { return false }
        return access(databasePath, F_OK) == 0 || errno != ENOENT
    }

    func controls(at now: Date) -> Controls {
        if marker.rulesOut(at: now) { return .none }
        do {
            // A spooling daemon's records are ordered by the spool: reading the controls folds nothing.
            return try withConnection(folding: !spooling.withLock(\.enabled)) { connection in try connection.controls() }
        } catch {
            notice("history: \(error); silences and pause not applied")
            return .none
        }
    }

    // MARK: Silences

    /// Adds a silence of `matcher` from `starts` to `ends`; returns it (with its new id).
    public func addSilence(_ matcher: EventMatcher, starts: Date, ends: Date, comment: String?) throws -> Silence {
        let silence = Silence(id: String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16), matcher: matcher,
                              starts: starts, ends: ends, comment: comment, created: starts)
        try withConnection { connection in
            try connection.write { _ throws(SQLiteDatabase.Failure) in
                try marker.remove()
                try connection.statement(.insertSilence).bind(
                    .text(silence.id), .text(MatcherLine.format(matcher)), .real(starts.timeIntervalSince1970),
                    .real(ends.timeIntervalSince1970), Self.text(comment), .real(starts.timeIntervalSince1970)
                ).run()
            }
        }
        return silence
    }

    /// Every silence, active or ended, newest first; those ended more than a day before
    /// `now` are deleted.
    public func silences(now: Date) throws -> [Silence] {
        try withConnection { connection in
            try connection.write { db throws(SQLiteDatabase.Failure) in
                try connection.statement(.deleteOldSilences).bind(.real(now.timeIntervalSince1970 - 86_400)).run()
            }
            return try connection.allSilences()
        }
    }

    /// Ends the silence `id` (an unambiguous prefix will do) at `now`; returns the whole
    /// id, or `nil` when no active silence has it.
    public func expireSilence(_ id: String, now: Date) throws -> String? {
        try withConnection { connection in
            let candidates = try connection.allSilences().filter { $0.id.hasPrefix(id.lowercased()) && $0.isActive(at: now) }
            guard candidates.count == 1, let silence = candidates.first else { return nil }
            try connection.write { _ throws(SQLiteDatabase.Failure) in
                // Removed, not rewritten: the next recorded event says how long the others last.
                try marker.remove()
                try connection.statement(.expireSilence).bind(.real(now.timeIntervalSince1970), .text(silence.id)).run()
            }
            return silence.id
        }
    }

    // MARK: Pause

    /// Holds events below `below` from `now` until `until` (or `resume`). A pause already
    /// in effect is replaced; what it held stays held.
    public func pause(below: Level, until: Date?, now: Date) throws {
        try withConnection { connection in
            try connection.write { _ throws(SQLiteDatabase.Failure) in
                try marker.remove()
                try connection.statement(.setPause).bind(
                    .text(below.rawValue), .real(now.timeIntervalSince1970), until.map { .real($0.timeIntervalSince1970) } ?? .null
                ).run()
            }
        }
    }

    /// The pause as stored (it may have ended by its duration) and how many events it holds.
    public func pauseState() throws -> (pause: Pause?, held: Int) {
        try withConnection { connection in
            (try connection.controls().pause, try connection.database.integer("SELECT count(*) FROM held"))
        }
    }

    /// Ends the pause (when `force`, or when its duration has passed by `now`) and takes
    /// what it held, oldest first, in one transaction: two processes never both release it.
    public func release(force: Bool, now: Date) throws -> [HeldEvent] {
        try withConnection { connection in
            try connection.write { db throws(SQLiteDatabase.Failure) -> [HeldEvent] in
                let pause = try connection.readPause()
                if let pause, !force && pause.isActive(at: now) { return [] }
                if pause != nil { try db.execute("DELETE FROM pause") }
                let statement = try connection.statement(.allHeld).bind()
                var held: [HeldEvent] = []
                while try statement.step() {
                    held.append(HeldEvent(time: Date(timeIntervalSince1970: statement.real(0)),
                                          level: Level(rawValue: statement.text(1) ?? "") ?? .info,
                                          source: statement.text(2), input: statement.text(3) ?? "{}"))
                }
                if !held.isEmpty { try db.execute("DELETE FROM held") }
                return held
            }
        }
    }

    // MARK: Reading the history

    /// The recorded events since `since` that `matcher` matches, oldest first; with
    /// `limit`, the newest `limit` of them.
    public func entries(since: Date?, limit: Int?, matching matcher: EventMatcher = .any) throws -> [HistoryEntry] {
        try withConnection { connection in
            let statement = try connection.statement(.entriesSince).bind(.real(since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude))
            var entries: [HistoryEntry] = []
            defer { statement.finish() }
            while try statement.step() {
                let entry = HistoryEntry(statement)
                guard matcher.isEmpty || matcher.matches(entry.subject) else { continue }
                entries.append(entry)
                if let limit, entries.count >= limit { break }
            }
            return entries.reversed()
        }
    }

    // MARK: The connection

    /// `body` with history.db open (the spool folded first), under the connection's lock.
    func withConnection<Result>(folding: Bool = true, _ body: (Connection) throws -> Result) throws -> Result {
        try connection.withLock { connection in try use(&connection, folding: folding, body) }
    }

    /// ``withConnection(folding:_:)`` when no other thread holds the connection, else `nil`
    /// at once: a daemon's batch does not park a thread of the pool behind another's insert.
    private func withConnectionIfFree<Result>(folding: Bool, _ body: (Connection) throws -> Result) throws -> Result? {
        try connection.withLockIfAvailable { connection in try use(&connection, folding: folding, body) }
    }

    private func use<Result>(_ connection: inout Connection?, folding: Bool, _ body: (Connection) throws -> Result) throws -> sending Result {
        if connection == nil { connection = try open() }
        guard let open = connection else { throw Failure(description: "no history database") }
        do {
            // Whoever opens history.db folds the spool first: its lines are older than what
            // follows. A connection kept open (the daemon) also folds what one-shot sends spooled since.
            if !open.foldedSpool || (keepsOpen && folding) {
                open.foldedSpool = true
                if spool.mayHoldLines { try fold(into: open) }
            }
            return try body(open)
        } catch let failure as SQLiteDatabase.Failure {
            // Busy leaves the connection as it was (its transaction rolled back); anything else opens it afresh.
            if !failure.isBusy { connection = nil }
            if failure.isCorruption {
                let aside = try? StateFiles(directory: directory).setAside(Self.fileName, as: "corrupt")
                throw Failure(description: "\(databasePath): \(failure.description); set aside as \(aside ?? "?")")
            }
            throw Failure(description: "\(databasePath): \(failure.description)")
        }
    }

    /// The spool's lines into history.db, in a transaction that moves the spool aside (under
    /// its lock, taken after the database's) and removes what it moved once it is committed.
    /// What a killed fold left moved aside goes first, in a transaction of its own: the
    /// token it keeps is its last line's.
    private func fold(into connection: Connection, within wait: Duration? = nil) throws(SQLiteDatabase.Failure) {
        let deadline = ContinuousClock.now + (wait ?? busyTimeout)
        for _ in 0..<2 {
            let fold = try connection.write { _ throws(SQLiteDatabase.Failure) -> HistorySpool.Fold? in
                guard let fold = spool.takeForFold(until: deadline, notice: notice) else { return nil }
                try connection.fold(fold)
                // A daemon that spools its records writes no transaction of its own for them: the marker is said here.
                if !marker.exists { try connection.markControls(marker) }
                return fold
            }
            guard let fold else { return }
            fold.clear()
            for dropped in fold.dropped { notice("history: \(dropped)") }
            guard fold.leftOver else { return }
        }
    }

    private var busyTimeoutMilliseconds: Int32 {
        Int32(clamping: busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000)
    }

    private func open() throws -> Connection {
        let files: StateFiles
        do { files = try StateFiles(directory: directory) } catch { throw Failure(description: error.description) }
        let deadline = ContinuousClock.now + busyTimeout
        var setAside = false
        while true {
            do {
                try files.prepareDatabase(Self.fileName, maximumBytes: Self.maximumBytes, notice: notice)
            } catch { throw Failure(description: error.description) }
            do {
                let database = try SQLiteDatabase(path: databasePath, busyTimeout: busyTimeoutMilliseconds)
                database.keepLogFiles()
                // The mode is kept in the file: only a database not yet at this version is switched.
                let current = try database.integer("PRAGMA user_version") == HistorySchema.version
                try database.execute("""
                    \(current ? "" : "PRAGMA journal_mode = WAL;") PRAGMA synchronous = OFF; PRAGMA journal_size_limit = 4194304;
                    PRAGMA max_page_count = \(Self.maximumBytes / 4096);
                    """)
                if !current { try Self.migrate(database) }
                return Connection(database)
            } catch where error.isCorruption {
                guard !setAside else { throw Failure(description: "\(databasePath): still unusable after setting it aside") }
                setAside = true
                let aside: String
                do { aside = try files.setAside(Self.fileName, as: "corrupt") } catch { throw Failure(description: error.description) }
                notice("\(databasePath): \(error.description); set aside as \(aside), starting afresh")
            } catch where error.isBusy && ContinuousClock.now < deadline {
                usleep(2_000)
            } catch {
                throw Failure(description: "\(databasePath): \(error.description)")
            }
        }
    }

    private static func migrate(_ database: SQLiteDatabase) throws(SQLiteDatabase.Failure) {
        try database.execute("BEGIN IMMEDIATE")
        do throws(SQLiteDatabase.Failure) {
            let version = try database.integer("PRAGMA user_version")
            guard version <= HistorySchema.version else {
                throw SQLiteDatabase.Failure(
                    code: SQLITE_ERROR, description: "schema version \(version) was written by a newer notify-route (this one knows \(HistorySchema.version))")
            }
            for migration in HistorySchema.migrations[version...] { try database.execute(migration) }
            try database.execute("PRAGMA user_version = \(HistorySchema.version); COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// The open database, its statements, and the controls last read. Unchecked: used
    /// under the memory's mutex only.
    final class Connection: @unchecked Sendable {
        let database: SQLiteDatabase
        private var statements: [Query: SQLiteDatabase.Statement] = [:]
        private var cached: Controls?
        private var dataVersion = -1
        /// Whether this connection has folded the spool since it was opened.
        var foldedSpool = false

        init(_ database: SQLiteDatabase) { self.database = database }

        enum Query: String {
            case insertEvent = """
                INSERT INTO events(time, level, source, app, title, body, category, tags, record, input, bytes, upto, summary,
                                   timeout, dedup_key, dropped_by)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                        ?11 + coalesce((SELECT upto FROM events ORDER BY id DESC LIMIT 1), 0), ?12, ?13, ?14, ?15)
                """
            // A fold's rows, their `upto` counted by the fold (``insert(_:lines:)``).
            case insertFoldedEvent = """
                INSERT INTO events(time, level, source, app, title, body, category, tags, record, input, bytes, upto, summary,
                                   timeout, dedup_key, dropped_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            case lastUpto = "SELECT upto FROM events ORDER BY id DESC LIMIT 1"
            case insertHeld = "INSERT INTO held(time, level, source, input) VALUES (?, ?, ?, ?)"
            case foldedTokens = "SELECT token FROM folded"
            case clearFolded = "DELETE FROM folded"
            case insertFolded = "INSERT OR IGNORE INTO folded(token) VALUES (?)"
            case boundHeld = "DELETE FROM held WHERE id <= (SELECT max(id) FROM held) - ?"
            case allHeld = "SELECT time, level, source, input FROM held ORDER BY id"
            // Events are only ever deleted oldest first, so their ids are consecutive.
            case counts = """
                SELECT (SELECT max(id) FROM events) - (SELECT min(id) FROM events) + 1,
                       (SELECT upto FROM events ORDER BY id DESC LIMIT 1) - (SELECT upto - bytes FROM events ORDER BY id LIMIT 1)
                """
            // A range of ids (they are consecutive): the rows are deleted as the table's B-tree is
            // walked, with no list of ids built first and looked up one by one.
            case evictOldest = "DELETE FROM events WHERE id < (SELECT min(id) FROM events) + ?"
            case insertSilence = "INSERT INTO silences(id, matchers, starts, ends, comment, created) VALUES (?, ?, ?, ?, ?, ?)"
            case allSilences = "SELECT id, matchers, starts, ends, comment, created FROM silences ORDER BY created DESC"
            case deleteOldSilences = "DELETE FROM silences WHERE ends < ?"
            case expireSilence = "UPDATE silences SET ends = ? WHERE id = ?"
            case readPause = "SELECT below, NULL, since, until FROM pause"
            case setPause = "INSERT OR REPLACE INTO pause(one, below, since, until) VALUES (1, ?, ?, ?)"
            case entriesSince = """
                SELECT time, level, source, app, title, body, category, tags, record, input, summary, timeout, dedup_key, dropped_by
                FROM events WHERE time >= ? ORDER BY id DESC
                """
            // One statement, so one implicit read transaction: silences and pause as of one commit.
            case controls = """
                SELECT 0, id, matchers, starts, ends, comment, created FROM silences
                UNION ALL SELECT 1, below, NULL, since, until, NULL, NULL FROM pause
                ORDER BY 1, 7 DESC
                """
            case controlsStored = "SELECT (SELECT count(*) FROM pause), (SELECT max(ends) FROM silences)"
            case dataVersion = "PRAGMA data_version"
            case begin = "BEGIN IMMEDIATE"
            case commit = "COMMIT"
            case rollback = "ROLLBACK"
        }

        func statement(_ query: Query) throws(SQLiteDatabase.Failure) -> SQLiteDatabase.Statement {
            if let statement = statements[query] { return statement }
            let statement = try database.prepare(query.rawValue)
            statements[query] = statement
            return statement
        }

        /// `body` in one `BEGIN IMMEDIATE` transaction; what this process wrote is read anew.
        func write<Result>(_ body: (SQLiteDatabase) throws(SQLiteDatabase.Failure) -> Result) throws(SQLiteDatabase.Failure) -> Result {
            try statement(.begin).run()
            let result: Result
            do {
                result = try body(database)
                try statement(.commit).run()
            } catch {
                try? statement(.rollback).run()
                throw error
            }
            cached = nil
            return result
        }

        func insert(_ row: HistorySpool.Row) throws(SQLiteDatabase.Failure) {
            try statement(.insertEvent).bind(
                .real(row.time), .text(row.level), RouterMemory.text(row.source), .text(row.app), .text(row.title),
                RouterMemory.text(row.body), RouterMemory.text(row.category), .text(row.tags), .text(row.record),
                .text(row.input), .integer(row.bytes), .text(row.summary), RouterMemory.text(row.parts?.timeout),
                RouterMemory.text(row.parts?.dedupKey), RouterMemory.text(row.parts?.droppedBy)
            ).run()
        }

        /// Inserts the moved spool's rows but those the last fold committed (the same file
        /// again: that fold was killed after its commit, before removing it), then keeps the
        /// last row's token for the next fold, and drops the oldest past the bounds the last
        /// row was recorded with.
        ///
        /// What a fold committed is a prefix of the file the next fold reads (the whole moved
        /// file; a prefix of the spool when an older notify-route emptied it in place), so
        /// the rows up to the last one whose token is kept are skipped: one token is kept,
        /// not one per row (a table of every token, as earlier folds kept, reads the same).
        func fold(_ fold: HistorySpool.Fold) throws(SQLiteDatabase.Failure) {
            var committed: [[UInt8]] = []
            let tokens = try statement(.foldedTokens).bind()
            while try tokens.step() { if let token = tokens.text(0) { committed.append(Array(token.utf8)) } }
            let many = committed.count > 8 ? Set(committed) : nil
            var skipped = 0
            if !committed.isEmpty {
                for line in stride(from: fold.count - 1, through: 0, by: -1) {
                    guard let token = fold.field(line, 1) else { continue }
                    if many?.contains(Array(token)) ?? committed.contains(where: { $0.elementsEqual(token) }) {
                        skipped = line + 1
                        break
                    }
                }
            }
            try insert(fold, lines: skipped..<max(skipped, fold.count))
            try statement(.clearFolded).bind().run()
            if fold.count > 0 {
                let last = fold.count - 1
                try statement(.insertFolded).bind(.text(fold.text(last, 1) ?? "")).run()
                try evict(fold.bounds(ofLine: last))
            }
        }

        /// How many rows one statement of a fold inserts: a statement's run (its reset, its
        /// cursors, its halt) costs about as much as binding and inserting a row. Fewer rows
        /// take statements of ``fewerRowsPerStatement``, then of one.
        static let foldRowsPerStatement = 64
        static let fewerRowsPerStatement = 8
        /// The inserts of several rows, prepared once, by their count of rows.
        private var multipleInserts: [Int: SQLiteDatabase.Statement] = [:]

        /// Lines `lines` of `spooled` (a fold's, or a daemon's batch) inserted as
        /// ``insert(_:)`` inserts rows, with the running total of bytes (`upto`) counted here
        /// from the last row's, their text bound where it lies (the bytes outlive the
        /// statements' runs).
        func insert(_ spooled: some HistorySpool.Lines, lines: Range<Int>) throws(SQLiteDatabase.Failure) {
            guard !lines.isEmpty else { return }
            let last = try statement(.lastUpto).bind()
            var upto = try last.step() ? last.integer(0) : 0
            last.finish()
            let one = try statement(.insertFoldedEvent)
            var line = lines.lowerBound
            while line < lines.upperBound {
                let left = lines.upperBound - line
                let rows = left >= Self.foldRowsPerStatement ? Self.foldRowsPerStatement : left >= Self.fewerRowsPerStatement ? Self.fewerRowsPerStatement : 1
                let insert = rows == 1 ? one : try multipleInsert(rows)
                let raw = insert.statement
                sqlite3_reset(raw)
                for row in 0..<rows {
                    let first = Int32(row * Self.insertedColumns)
                    func text(_ position: Int32, _ index: Int) {
                        guard let bytes = spooled.field(line, index), let base = bytes.baseAddress else {
                            sqlite3_bind_null(raw, first + position)
                            return
                        }
                        // No destructor (SQLITE_STATIC): SQLite reads the bytes in place.
                        sqlite3_bind_text(raw, first + position, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
                                          Int32(clamping: bytes.count), nil)
                    }
                    sqlite3_bind_double(raw, first + 1, spooled.time(line))
                    for position in Int32(2)...10 { text(position, Int(position) + 1) }
                    let bytes = spooled.bytes(ofLine: line)
                    upto += bytes
                    sqlite3_bind_int64(raw, first + 11, Int64(bytes))
                    sqlite3_bind_int64(raw, first + 12, Int64(upto))
                    text(13, 12)
                    for position in Int32(14)...16 { text(position, Int(position) + 1) }
                    line += 1
                }
                defer { sqlite3_clear_bindings(raw) }
                try insert.run()
            }
        }

        private func multipleInsert(_ rows: Int) throws(SQLiteDatabase.Failure) -> SQLiteDatabase.Statement {
            if let prepared = multipleInserts[rows] { return prepared }
            let row = "(" + (0..<Self.insertedColumns).map { _ in "?" }.joined(separator: ",") + ")"
            let prepared = try database.prepare(Self.insertColumns + Array(repeating: row, count: rows).joined(separator: ","))
            multipleInserts[rows] = prepared
            return prepared
        }

        static let insertColumns = """
            INSERT INTO events(time, level, source, app, title, body, category, tags, record, input, bytes, upto, summary,
                               timeout, dedup_key, dropped_by) VALUES
            """ + " "
        static let insertedColumns = 16

        /// Drops the oldest events past either bound.
        func evict(_ settings: HistorySettings) throws(SQLiteDatabase.Failure) {
            let counts = try statement(.counts).bind()
            guard try counts.step() else { return }
            let events = counts.integer(0), bytes = counts.integer(1)
            counts.finish()
            var excess = max(0, events - settings.maxEvents)
            if bytes > settings.maxBytes {
                // Records are of similar size: drop the share of rows over the bound, at least one.
                excess = max(excess, max(1, Int((Double(bytes - settings.maxBytes) / Double(bytes) * Double(events)).rounded(.up))))
            }
            if excess > 0 { try statement(.evictOldest).bind(.integer(excess)).run() }
        }

        /// Writes `marker` when no pause is stored, saying when the last silence ends. In a
        /// write transaction that changes neither.
        func markControls(_ marker: ControlsMarker) throws(SQLiteDatabase.Failure) {
            let stored = try statement(.controlsStored).bind()
            defer { stored.finish() }
            guard try stored.step(), stored.integer(0) == 0 else { return }
            marker.write(lastEnd: stored.isNull(1) ? 0 : stored.real(1))
        }

        func controls() throws(SQLiteDatabase.Failure) -> Controls {
            let version = try statement(.dataVersion).bind()
            _ = try version.step()
            let current = version.integer(0)
            version.finish()
            if let cached, current == dataVersion { return cached }
            let statement = try statement(.controls).bind()
            var controls = Controls()
            while try statement.step() {
                if statement.integer(0) == 1 {
                    controls.pause = Self.pause(statement, from: 1)
                } else if let silence = Self.silence(statement, from: 1) {
                    controls.silences.append(silence)
                }
            }
            cached = controls
            dataVersion = current
            return controls
        }

        func allSilences() throws(SQLiteDatabase.Failure) -> [Silence] {
            let statement = try statement(.allSilences).bind()
            var silences: [Silence] = []
            while try statement.step() {
                if let silence = Self.silence(statement, from: 0) { silences.append(silence) }
            }
            return silences
        }

        /// The silence in the columns from `first` (`id, matchers, starts, ends, comment, created`).
        private static func silence(_ statement: SQLiteDatabase.Statement, from first: Int32) -> Silence? {
            let words = (statement.text(first + 1) ?? "").split(separator: " ").map(String.init)
            // Stored by this program from a matcher it parsed; one that no longer parses matches nothing.
            guard let matcher = try? MatcherLine.parse(words), !matcher.isEmpty else { return nil }
            return Silence(
                id: statement.text(first) ?? "?", matcher: matcher, starts: Date(timeIntervalSince1970: statement.real(first + 2)),
                ends: Date(timeIntervalSince1970: statement.real(first + 3)), comment: statement.text(first + 4),
                created: Date(timeIntervalSince1970: statement.real(first + 5)))
        }

        /// The pause in the columns from `first` (`below, _, since, until`).
        private static func pause(_ statement: SQLiteDatabase.Statement, from first: Int32) -> Pause {
            Pause(below: Level(rawValue: statement.text(first) ?? "") ?? .critical,
                  since: Date(timeIntervalSince1970: statement.real(first + 2)),
                  until: statement.isNull(first + 3) ? nil : Date(timeIntervalSince1970: statement.real(first + 3)))
        }

        func readPause() throws(SQLiteDatabase.Failure) -> Pause? {
            let statement = try statement(.readPause).bind()
            guard try statement.step() else { return nil }
            defer { statement.finish() }
            return Self.pause(statement, from: 0)
        }
    }
}

/// One recorded event, as `notify-route history` reads it.
public struct HistoryEntry: Sendable {
    public var time: Date
    /// The event as it was given (ingest schema): what `replay` routes again.
    public var input: String
    public var subject: MatchSubject
    /// The outcome in words as recorded; `nil` for events recorded before it was kept.
    var summary: String?
    /// The row's `record`: the whole record, or its outcome when it was stored in `parts`
    /// (the event's other values are the subject's: a row in parts has them all).
    private var stored: String
    private var parts: HistoryRecord.Parts?

    init(_ statement: SQLiteDatabase.Statement) {
        time = Date(timeIntervalSince1970: statement.real(0))
        let tags = statement.text(7) ?? ""
        subject = MatchSubject(
            level: Level(rawValue: statement.text(1) ?? "") ?? .info, source: statement.text(2), app: statement.text(3),
            title: statement.text(4) ?? "", body: statement.text(5), category: statement.text(6),
            tags: tags.isEmpty ? [] : Set(tags.split(separator: "\u{1F}").map(String.init)))
        stored = statement.text(8) ?? "{}"
        input = statement.text(9) ?? "{}"
        summary = statement.text(10)
        parts = statement.text(11).map { HistoryRecord.Parts(timeout: $0, dedupKey: statement.text(12) ?? "", droppedBy: statement.text(13)) }
    }

    /// What `history --json` prints: `time`, `event`, `sinks`, `rules`, `routes`.
    public var record: String {
        guard let parts else { return stored }
        return HistoryRecord.rebuilt(
            parts: parts, outcome: stored, time: time, title: subject.title, body: subject.body, level: subject.level.rawValue,
            app: subject.app ?? "", source: subject.source, category: subject.category, tags: subject.tags.sorted())
    }
}

extension HistoryEntry {
    /// Each sink's outcome in words (`desktop delivered, journal suppressed: silenced`),
    /// or what dropped the event.
    public var outcomeSummary: String {
        if let summary, !summary.isEmpty { return summary }
        guard case .object(let fields)? = try? JSONLine.parse(record) else { return "?" }
        func text(_ key: String, in values: [(key: String, value: JSONLine)]) -> String? {
            if case .string(let value)? = values.first(where: { $0.key == key })?.value { return value }
            return nil
        }
        if let rule = text("dropped_by", in: fields) { return HistoryRecord.summary(droppedBy: rule, sinks: []) }
        guard case .array(let sinks)? = fields.first(where: { $0.key == "sinks" })?.value else { return "?" }
        return HistoryRecord.summary(droppedBy: nil, sinks: sinks.compactMap { sink in
            guard case .object(let values) = sink else { return nil }
            return HistoryRecord.Sink(sink: text("sink", in: values) ?? "?", status: text("status", in: values) ?? "?",
                                      reason: text("reason", in: values), detail: text("detail", in: values))
        })
    }
}

/// A daemon's records routed in a batch are written to the spool when it commits.
extension RouterMemory: StateBatchMember {
    func commitBatch(of batch: ObjectIdentifier) throws -> DispatchGroup? { flushSpool(for: batch) }
}
