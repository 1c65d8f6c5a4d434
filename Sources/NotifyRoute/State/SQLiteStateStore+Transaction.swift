import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SQLiteStateStore {
    /// The records of ``RouterStateTransaction`` as rows, one indexed statement per call.
    /// Statements are prepared on first use and kept: a `send` prepares only the few its
    /// event needs. The first failure is kept in ``failure`` and ends the transaction.
    final class Transaction: RouterStateTransaction {
        let database: SQLiteDatabase
        var failure: SQLiteDatabase.Failure?
        private var statements: [SQLiteDatabase.Statement?] = Array(repeating: nil, count: Query.allCases.count)

        init(_ database: SQLiteDatabase) { self.database = database }

        enum Query: Int, CaseIterable {
            case begin, commit, rollback, savepoint, release, rollbackToSavepoint
            case recordDedup, dedupCount, evictExpiredDedup, evictOldestDedup, setDedupHandle, removeDedup, countDedup
            case handle, storeHandle, removeHandle, handleCount, evictOldestHandles, replaceKey, countHandles
            case held, storeHeld, removeHeld, holdsQuiet
            case inhibitor, storeInhibitor, removeInhibitor, removeInhibitorsByReplaceKey
            case insertDedup, allDedup, allHandles, allHeld, allInhibitors

            var sql: String {
                switch self {
                case .begin: "BEGIN IMMEDIATE"
                case .commit: "COMMIT"
                case .rollback: "ROLLBACK"
                case .savepoint: "SAVEPOINT event"
                case .release: "RELEASE event"
                case .rollbackToSavepoint: "ROLLBACK TO event"
                // A duplicate inside its window counts; otherwise a new window opens (every
                // expression of SET reads the row as it was).
                case .recordDedup: """
                    INSERT INTO dedup(sink, key, first_seen, last_seen, count, handle, expires)
                    VALUES (?1, ?2, ?3, ?3, 1, NULL, ?3 + ?4)
                    ON CONFLICT(sink, key) DO UPDATE SET
                        count = CASE WHEN ?3 - first_seen < ?4 THEN count + 1 ELSE 1 END,
                        handle = CASE WHEN ?3 - first_seen < ?4 THEN handle ELSE NULL END,
                        expires = CASE WHEN ?3 - first_seen < ?4 THEN expires ELSE ?3 + ?4 END,
                        first_seen = CASE WHEN ?3 - first_seen < ?4 THEN first_seen ELSE ?3 END,
                        last_seen = ?3
                    RETURNING first_seen, last_seen, count, handle, expires
                    """
                case .dedupCount: "SELECT n FROM counts WHERE name = 'dedup'"
                case .countDedup: "UPDATE counts SET n = n + ?1 WHERE name = 'dedup'"
                case .evictExpiredDedup: "DELETE FROM dedup WHERE id IN (SELECT id FROM dedup WHERE expires <= ?1 ORDER BY expires LIMIT ?2)"
                case .evictOldestDedup: "DELETE FROM dedup WHERE id IN (SELECT id FROM dedup ORDER BY last_seen, id LIMIT ?1)"
                case .setDedupHandle: "UPDATE dedup SET handle = ?3 WHERE sink = ?1 AND key = ?2"
                case .removeDedup: "DELETE FROM dedup WHERE sink = ?1 AND key = ?2"
                case .handle: "SELECT handle, last_used FROM handles WHERE sink = ?1 AND key = ?2"
                case .storeHandle: """
                    INSERT INTO handles(sink, key, handle, last_used) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT(sink, key) DO UPDATE SET handle = excluded.handle, last_used = excluded.last_used
                    """
                case .removeHandle: "DELETE FROM handles WHERE sink = ?1 AND key = ?2"
                case .handleCount: "SELECT n FROM counts WHERE name = 'handles'"
                case .countHandles: "UPDATE counts SET n = n + ?1 WHERE name = 'handles'"
                case .evictOldestHandles: "DELETE FROM handles WHERE id IN (SELECT id FROM handles ORDER BY last_used, id LIMIT ?1)"
                case .replaceKey: "SELECT key FROM handles WHERE sink = ?1 AND handle = ?2 LIMIT 1"
                case .held: "SELECT period_start, sent, held, sources, highest FROM held WHERE kind = ?1 AND key = ?2"
                case .storeHeld: "INSERT OR REPLACE INTO held(kind, key, period_start, sent, held, sources, highest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                case .removeHeld: "DELETE FROM held WHERE kind = ?1 AND key = ?2"
                case .holdsQuiet: "SELECT EXISTS (SELECT 1 FROM held WHERE kind = 1)"
                case .inhibitor: "SELECT rule, signature, expires, replace_key, dedup_key FROM inhibitors WHERE key = ?1"
                case .storeInhibitor: """
                    INSERT OR REPLACE INTO inhibitors(key, rule, signature, expires, replace_key, dedup_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    """
                case .removeInhibitor: "DELETE FROM inhibitors WHERE key = ?1"
                case .removeInhibitorsByReplaceKey: "DELETE FROM inhibitors WHERE replace_key = ?1"
                case .insertDedup: """
                    INSERT OR REPLACE INTO dedup(sink, key, first_seen, last_seen, count, handle, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    """
                case .allDedup: "SELECT sink, key, first_seen, last_seen, count, handle, expires FROM dedup"
                case .allHandles: "SELECT sink, key, handle, last_used FROM handles"
                case .allHeld: "SELECT kind, key, period_start, sent, held, sources, highest FROM held"
                case .allInhibitors: "SELECT key, rule, signature, expires, replace_key, dedup_key FROM inhibitors"
                }
            }
        }

        func statement(_ query: Query) throws(SQLiteDatabase.Failure) -> SQLiteDatabase.Statement {
            if let statement = statements[query.rawValue] { return statement }
            let statement = try database.prepare(query.sql)
            statements[query.rawValue] = statement
            return statement
        }

        /// Runs `body` unless an earlier call failed; a failure is kept and `fallback` returned.
        private func attempt<T>(_ fallback: T, _ body: () throws(SQLiteDatabase.Failure) -> T) -> T {
            guard failure == nil else { return fallback }
            do { return try body() } catch {
                failure = error
                return fallback
            }
        }

        /// A key's two columns: a key read from a hand-written state file has no sink part.
        private static func columns(_ key: RouterState.Key) -> (SQLiteDatabase.Value, SQLiteDatabase.Value) {
            (.text(key.sink ?? ""), .text(key.key))
        }

        // MARK: Dedup windows

        func recordDedup(forKey key: RouterState.Key, now: Date, window: Double, maxEntries: Int)
            -> (record: RouterState.DedupRecord, isDuplicate: Bool) {
            let fresh = RouterState.DedupRecord(firstSeen: now, lastSeen: now, count: 1, handle: nil, expires: now.addingTimeInterval(window))
            return attempt((fresh, false)) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                let statement = try statement(.recordDedup).bind(sink, text, .real(now.timeIntervalSince1970), .real(window))
                database.lastInsertedRow = 0
                guard try statement.step() else { return (fresh, false) }
                if database.lastInsertedRow != 0 { try counted(.countDedup, 1) }
                let record = RouterState.DedupRecord(
                    firstSeen: Date(timeIntervalSince1970: statement.real(0)), lastSeen: Date(timeIntervalSince1970: statement.real(1)),
                    count: statement.integer(2), handle: statement.text(3).map(SinkHandle.init),
                    expires: Date(timeIntervalSince1970: statement.real(4)))
                try statement.run()
                if record.count == 1 { try evictDedup(maxEntries: maxEntries, now: now) }
                return (record, record.count > 1)
            }
        }

        /// Past `maxEntries`: closed windows first, then the least recently seen, down to a
        /// tenth (at most 1,000) below the bound, so eviction runs once per that many new
        /// windows; each through an index, for as many rows as it removes.
        private func evictDedup(maxEntries: Int, now: Date) throws(SQLiteDatabase.Failure) {
            let count = try count(.dedupCount)
            guard count > maxEntries else { return }
            let keep = maxEntries - max(1, min(maxEntries / 10, 1_000))
            let expired = try statement(.evictExpiredDedup)
            try expired.bind(.real(now.timeIntervalSince1970), .integer(count - keep)).run()
            var remaining = count - expired.changes
            if remaining > maxEntries {
                let oldest = try statement(.evictOldestDedup)
                try oldest.bind(.integer(remaining - keep)).run()
                remaining -= oldest.changes
            }
            try counted(.countDedup, remaining - count)
        }

        /// Adds `delta` to a table's row count: the code that inserts and deletes keeps it
        /// (a trigger would be parsed by every process that opens the database).
        private func counted(_ query: Query, _ delta: Int) throws(SQLiteDatabase.Failure) {
            guard delta != 0 else { return }
            try statement(query).bind(.integer(delta)).run()
        }

        private func count(_ query: Query) throws(SQLiteDatabase.Failure) -> Int {
            let statement = try statement(query)
            guard try statement.step() else { return 0 }
            let count = statement.integer(0)
            statement.finish()
            return count
        }

        func setDedupHandle(_ handle: SinkHandle, forKey key: RouterState.Key) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                try statement(.setDedupHandle).bind(sink, text, .text(handle.value)).run()
            }
        }

        func removeDedup(forKey key: RouterState.Key) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                let remove = try statement(.removeDedup)
                try remove.bind(sink, text).run()
                try counted(.countDedup, -remove.changes)
            }
        }

        // MARK: Replace handles

        func handle(forKey key: RouterState.Key) -> RouterState.HandleRecord? {
            attempt(nil) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                let statement = try statement(.handle).bind(sink, text)
                guard try statement.step() else { return nil }
                let record = RouterState.HandleRecord(
                    handle: SinkHandle(statement.text(0) ?? ""), lastUsed: Date(timeIntervalSince1970: statement.real(1)))
                statement.finish()
                return record
            }
        }

        func storeHandle(_ record: RouterState.HandleRecord, forKey key: RouterState.Key) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                database.lastInsertedRow = 0
                try statement(.storeHandle).bind(sink, text, .text(record.handle.value), .real(record.lastUsed.timeIntervalSince1970)).run()
                if database.lastInsertedRow != 0 { try counted(.countHandles, 1) }
            }
        }

        func removeHandle(forKey key: RouterState.Key) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                let (sink, text) = Self.columns(key)
                let remove = try statement(.removeHandle)
                try remove.bind(sink, text).run()
                try counted(.countHandles, -remove.changes)
            }
        }

        func evictHandles(maxEntries: Int) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                let count = try count(.handleCount)
                guard count > maxEntries else { return }
                let keep = maxEntries - max(1, min(maxEntries / 10, 1_000))
                let oldest = try statement(.evictOldestHandles)
                try oldest.bind(.integer(count - keep)).run()
                try counted(.countHandles, -oldest.changes)
            }
        }

        func replaceKey(sink: String, handle: SinkHandle) -> String? {
            attempt(nil) { () throws(SQLiteDatabase.Failure) in
                let statement = try statement(.replaceKey).bind(.text(sink), .text(handle.value))
                guard try statement.step() else { return nil }
                let key = statement.text(0)
                statement.finish()
                return key
            }
        }

        // MARK: Held events

        func held(_ kind: RouterState.HeldKind, key: String) -> RouterState.HeldRecord? {
            attempt(nil) { () throws(SQLiteDatabase.Failure) in
                let statement = try statement(.held).bind(.integer(kind.rawValue), .text(key))
                guard try statement.step() else { return nil }
                let record = Self.heldRecord(statement, from: 0)
                statement.finish()
                return record
            }
        }

        private static func heldRecord(_ statement: SQLiteDatabase.Statement, from first: Int32) -> RouterState.HeldRecord {
            let sources = (statement.text(first + 3)).flatMap { try? JSONDecoder().decode([String: Int].self, from: Data($0.utf8)) }
            return RouterState.HeldRecord(
                periodStart: Date(timeIntervalSince1970: statement.real(first)), sent: statement.integer(first + 1),
                held: statement.integer(first + 2), sources: sources ?? [:],
                highest: statement.text(first + 4).flatMap(Level.init(rawValue:)) ?? .debug)
        }

        func storeHeld(_ record: RouterState.HeldRecord?, _ kind: RouterState.HeldKind, key: String) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                guard let record else {
                    try statement(.removeHeld).bind(.integer(kind.rawValue), .text(key)).run()
                    return
                }
                let sources = (try? JSONEncoder().encode(record.sources)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                try statement(.storeHeld).bind(
                    .integer(kind.rawValue), .text(key), .real(record.periodStart.timeIntervalSince1970), .integer(record.sent),
                    .integer(record.held), .text(sources), .text(record.highest.rawValue)).run()
            }
        }

        var holdsQuietEvents: Bool {
            attempt(false) { () throws(SQLiteDatabase.Failure) in try count(.holdsQuiet) != 0 }
        }

        // MARK: Inhibitors

        func inhibitor(forKey key: String) -> RouterState.InhibitorRecord? {
            attempt(nil) { () throws(SQLiteDatabase.Failure) in
                let statement = try statement(.inhibitor).bind(.text(key))
                guard try statement.step() else { return nil }
                let record = Self.inhibitorRecord(statement, from: 0)
                statement.finish()
                return record
            }
        }

        private static func inhibitorRecord(_ statement: SQLiteDatabase.Statement, from first: Int32) -> RouterState.InhibitorRecord {
            RouterState.InhibitorRecord(
                rule: statement.integer(first), signature: statement.text(first + 1) ?? "",
                expires: Date(timeIntervalSince1970: statement.real(first + 2)), replaceKey: statement.text(first + 3),
                dedupKey: statement.text(first + 4) ?? "")
        }

        func storeInhibitor(_ record: RouterState.InhibitorRecord?, forKey key: String) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                guard let record else {
                    try statement(.removeInhibitor).bind(.text(key)).run()
                    return
                }
                try statement(.storeInhibitor).bind(
                    .text(key), .integer(record.rule), .text(record.signature), .real(record.expires.timeIntervalSince1970),
                    record.replaceKey.map { .text($0) } ?? .null, .text(record.dedupKey)).run()
            }
        }

        func removeInhibitors(replaceKey: String) {
            attempt(()) { () throws(SQLiteDatabase.Failure) in
                try statement(.removeInhibitorsByReplaceKey).bind(.text(replaceKey)).run()
            }
        }

        // MARK: The whole state (import of a state file, snapshots for tests)

        func insert(_ state: RouterState) {
            for (key, record) in state.dedup {
                attempt(()) { () throws(SQLiteDatabase.Failure) in
                    let (sink, text) = Self.columns(key)
                    try statement(.insertDedup).bind(
                        sink, text, .real(record.firstSeen.timeIntervalSince1970), .real(record.lastSeen.timeIntervalSince1970),
                        .integer(record.count), record.handle.map { .text($0.value) } ?? .null,
                        .real(record.expires.timeIntervalSince1970)).run()
                }
            }
            for (key, record) in state.handles { storeHandle(record, forKey: key) }
            for (key, record) in state.rates { storeHeld(record, .rate, key: key) }
            for (key, record) in state.quiet { storeHeld(record, .quiet, key: key) }
            for (key, record) in state.inhibitors { storeInhibitor(record, forKey: key) }
            // INSERT OR REPLACE over a row replaces it: counted again, once.
            attempt(()) { () throws(SQLiteDatabase.Failure) in try database.execute(StateSchema.recount) }
        }

        func all() throws(SQLiteDatabase.Failure) -> RouterState {
            var state = RouterState()
            let dedup = try statement(.allDedup).bind()
            while try dedup.step() {
                let sink = dedup.text(0) ?? "", text = dedup.text(1) ?? ""
                let key = sink.isEmpty ? RouterState.Key(text) : RouterState.Key(sink: sink, key: text)
                state.storeDedup(RouterState.DedupRecord(
                    firstSeen: Date(timeIntervalSince1970: dedup.real(2)), lastSeen: Date(timeIntervalSince1970: dedup.real(3)),
                    count: dedup.integer(4), handle: dedup.text(5).map(SinkHandle.init),
                    expires: Date(timeIntervalSince1970: dedup.real(6))), forKey: key)
            }
            let handles = try statement(.allHandles).bind()
            while try handles.step() {
                state.storeHandle(RouterState.HandleRecord(
                    handle: SinkHandle(handles.text(2) ?? ""), lastUsed: Date(timeIntervalSince1970: handles.real(3))),
                    forKey: RouterState.Key(sink: handles.text(0) ?? "", key: handles.text(1) ?? ""))
            }
            let held = try statement(.allHeld).bind()
            while try held.step() {
                let record = Self.heldRecord(held, from: 2), key = held.text(1) ?? ""
                if held.integer(0) == RouterState.HeldKind.rate.rawValue { state.rates[key] = record } else { state.quiet[key] = record }
            }
            let inhibitors = try statement(.allInhibitors).bind()
            while try inhibitors.step() {
                state.inhibitors[inhibitors.text(0) ?? ""] = Self.inhibitorRecord(inhibitors, from: 1)
            }
            return state
        }
    }
}
