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

    // MARK: The connection

    /// `body` with history.db open (the spool folded first), under the connection's lock.
    func withConnection<Result>(folding: Bool = true, _ body: (Connection) throws -> Result) throws -> Result {
        try connection.withLock { connection in try use(&connection, folding: folding, body) }
    }

    /// ``withConnection(folding:_:)`` when no other thread holds the connection, else `nil`
    /// at once: a daemon's batch does not park a thread of the pool behind another's insert.
    func withConnectionIfFree<Result>(folding: Bool, _ body: (Connection) throws -> Result) throws -> Result? {
        try connection.withLockIfAvailable { connection in try use(&connection, folding: folding, body) }
    }

    func use<Result>(_ connection: inout Connection?, folding: Bool, _ body: (Connection) throws -> Result) throws -> sending Result {
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
    func fold(into connection: Connection, within wait: Duration? = nil) throws(SQLiteDatabase.Failure) {
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

    var busyTimeoutMilliseconds: Int32 {
        Int32(clamping: busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000)
    }

    func open() throws -> Connection {
        let files: StateFiles
        do { files = try StateFiles(directory: directory) } catch { throw Failure(description: error.description) }
        // synchronous=OFF: the history is a record, not a promise; a power cut may lose its last lines.
        let file = SQLiteFile(files: files, name: Self.fileName, maximumBytes: Self.maximumBytes, busyTimeout: busyTimeout,
                              synchronous: "OFF", migrations: HistorySchema.migrations, notice: notice)
        do { return Connection(try file.open()) } catch { throw Failure(description: error.description) }
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
