import CSQLite
import Glibc

/// One SQLite connection, through SQLite's C API: the little of it the state store needs
/// (open, run SQL, prepared statements with bound values). Not thread-safe: its owner
/// serialises every use (``SQLiteStateStore`` holds it under a mutex).
final class SQLiteDatabase {
    struct Failure: Error, CustomStringConvertible, Sendable {
        /// SQLite's primary result code (`SQLITE_FULL`, `SQLITE_CORRUPT`, ...).
        var code: Int32
        var description: String

        /// The file is not a database, or is damaged: set it aside and start afresh.
        var isCorruption: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
        /// Another connection holds a lock this one needs.
        var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    }

    let handle: OpaquePointer

    /// SQLite's process-wide settings, made before its first connection initialises it.
    private static let configured: Int32 = csqlite_configure()
    /// The file, for the file system's free space when SQLite says it is full.
    private let path: String

    /// Opens (creating if missing) the database at `path`. `SQLITE_OPEN_NOFOLLOW` refuses a
    /// symbolic link in its place; `SQLITE_OPEN_EXRESCODE` gives extended codes.
    init(path: String, busyTimeout milliseconds: Int32) throws(Failure) {
        _ = Self.configured
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(db)
            throw Failure(code: status & 0xFF, description: "cannot open \(path): \(message)")
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, milliseconds)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// How long a statement waits for another connection's lock before failing busy.
    func setBusyTimeout(_ milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Keeps `-wal` and `-shm` when the last connection closes (the log emptied by its
    /// checkpoint), so that a process opening the database for one event does not create
    /// and unlink both each time. Set on each connection: it is not kept in the file.
    func keepLogFiles() {
        var on: Int32 = 1
        sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &on)
    }

    /// The rowid of the last row an INSERT added (an upsert that updated adds none); set it
    /// to 0 before a statement to learn whether the statement inserted.
    var lastInsertedRow: Int64 {
        get { sqlite3_last_insert_rowid(handle) }
        set { sqlite3_set_last_insert_rowid(handle, newValue) }
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(Failure) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure(status) }
    }

    func prepare(_ sql: String) throws(Failure) -> Statement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status) }
        return Statement(statement, database: self)
    }

    /// The first column of the first row of `sql`, as an integer (0 when there is no row).
    func integer(_ sql: String) throws(Failure) -> Int {
        let statement = try prepare(sql)
        return try statement.step() ? statement.integer(0) : 0
    }

    /// The error of `status`, with the system's reason where the file system failed
    /// ("database or disk is full (No space left on device)").
    func failure(_ status: Int32) -> Failure {
        var description = String(cString: sqlite3_errmsg(handle))
        let code = status & 0xFF
        let system = sqlite3_system_errno(handle)
        if system != 0 && [SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY].contains(code) {
            description += " (\(String(cString: strerror(system))))"
        } else if code == SQLITE_FULL && fileSystemIsFull {
            // SQLite clears the errno of a write cut short by ENOSPC (the same code as
            // `max_page_count` reached): the file system's free space tells the two apart.
            description += " (\(String(cString: strerror(ENOSPC))))"
        }
        return Failure(code: code, description: description)
    }

    private var fileSystemIsFull: Bool {
        var status = statvfs()
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        return statvfs(directory.isEmpty ? "/" : directory, &status) == 0 && status.f_bavail == 0
    }

    /// A prepared statement, reset after each use so that it holds no lock between uses.
    final class Statement {
        let statement: OpaquePointer
        unowned let database: SQLiteDatabase

        init(_ statement: OpaquePointer, database: SQLiteDatabase) {
            self.statement = statement
            self.database = database
        }

        deinit { sqlite3_finalize(statement) }

        /// Binds `values` to parameters 1, 2, ... after clearing the last use.
        @discardableResult
        func bind(_ values: Value...) -> Statement {
            sqlite3_reset(statement)
            for (index, value) in values.enumerated() {
                let position = Int32(index + 1)
                switch value {
                case .null: sqlite3_bind_null(statement, position)
                case .integer(let number): sqlite3_bind_int64(statement, position, Int64(number))
                case .real(let number): sqlite3_bind_double(statement, position, number)
                // By its length, not up to a NUL: text may hold one (an error message, a sink's answer).
                case .text(let text): sqlite3_bind_text(statement, position, text, Int32(clamping: text.utf8.count), csqlite_transient())
                }
            }
            return self
        }

        /// The next row: true when there is one, false when done.
        func step() throws(Failure) -> Bool {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return true
            case SQLITE_DONE:
                sqlite3_reset(statement)
                return false
            case let status:
                sqlite3_reset(statement)
                throw database.failure(status)
            }
        }

        /// Runs a statement that returns no rows.
        func run() throws(Failure) {
            while try step() {}
        }

        /// Rows changed by the last run.
        var changes: Int { Int(sqlite3_changes(database.handle)) }

        func integer(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
        func real(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
        func text(_ column: Int32) -> String? {
            guard let bytes = sqlite3_column_text(statement, column) else { return nil }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }

        /// Ends a read early (a lookup of one row), so the statement holds no read lock.
        func finish() { sqlite3_reset(statement) }
    }

    enum Value {
        case null
        case integer(Int)
        case real(Double)
        case text(String)
    }
}
