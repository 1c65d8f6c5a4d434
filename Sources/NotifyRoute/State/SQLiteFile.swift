import CSQLite
import Glibc

/// One of our database files (the state's, the history's), opened the one careful way:
/// in write-ahead-log mode with its size bounded, migrated to its schema in one
/// transaction, waited for while another process converts it, and set aside once, with a
/// notice, when it is unusable, so that the caller starts afresh rather than failing for good.
struct SQLiteFile {
    /// The directory it lives in, opened safely.
    let files: StateFiles
    let name: String
    /// `PRAGMA max_page_count` of 4 KiB pages: a full disk of ours never grows past it.
    let maximumBytes: Int
    let busyTimeout: Duration
    /// `NORMAL`: a power cut may lose the last commits; `OFF` also lets the OS order the writes
    /// (for what can be rebuilt or lost without harm: the history).
    let synchronous: String
    /// Migration `n` brings `PRAGMA user_version` from `n` to `n + 1`.
    let migrations: [String]
    let notice: @Sendable (String) -> Void

    var path: String { files.directory + "/" + name }

    /// The open database at the schema's version. `fromVersion` runs in the migration's
    /// transaction, after the migrations, with the version the file had (0: new).
    func open(
        fromVersion: (SQLiteDatabase, Int) throws(SQLiteDatabase.Failure) -> Void = { _, _ in }
    ) throws(SQLiteStateStore.Failure) -> SQLiteDatabase {
        let deadline = ContinuousClock.now + busyTimeout
        let milliseconds = Int32(clamping: busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000)
        var setAside = false
        while true {
            try files.prepareDatabase(name, maximumBytes: maximumBytes, notice: notice)
            do {
                let database = try SQLiteDatabase(path: path, busyTimeout: milliseconds)
                database.keepLogFiles()
                // The common case, a database of this version, reads one header field here.
                let current = try database.integer("PRAGMA user_version") == migrations.count
                // The journal mode is kept in the file: only a database not yet migrated is
                // switched. The last connection to close checkpoints and empties the log
                // (`journal_size_limit`, kept files): a log left full would be read whole by
                // the next process to rebuild its index.
                try database.execute("""
                    \(current ? "" : "PRAGMA journal_mode = WAL;") PRAGMA synchronous = \(synchronous); \
                    PRAGMA journal_size_limit = 4194304; PRAGMA max_page_count = \(maximumBytes / 4096);
                    """)
                if !current { try migrate(database, fromVersion: fromVersion) }
                return database
            } catch where error.isCorruption {
                guard !setAside else { throw SQLiteStateStore.Failure(description: "\(path): still unusable after setting it aside") }
                setAside = true
                let aside = try files.setAside(name, as: "corrupt")
                notice("\(path): \(error.description); set aside as \(aside), starting afresh")
            } catch where error.isBusy && ContinuousClock.now < deadline {
                // Another process is turning a new database to WAL: SQLite answers that at
                // once, without its busy handler, so wait here within the same timeout.
                usleep(2_000)
            } catch {
                throw SQLiteStateStore.Failure(description: "\(path): \(error.description)")
            }
        }
    }

    private func migrate(
        _ database: SQLiteDatabase, fromVersion: (SQLiteDatabase, Int) throws(SQLiteDatabase.Failure) -> Void
    ) throws(SQLiteDatabase.Failure) {
        try database.execute("BEGIN IMMEDIATE")
        do throws(SQLiteDatabase.Failure) {
            let version = try database.integer("PRAGMA user_version")
            guard version <= migrations.count else {
                throw SQLiteDatabase.Failure(
                    code: SQLITE_ERROR,
                    description: "schema version \(version) was written by a newer notify-route (this one knows \(migrations.count))")
            }
            for migration in migrations[version...] { try database.execute(migration) }
            try fromVersion(database, version)
            try database.execute("PRAGMA user_version = \(migrations.count); COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }
}
