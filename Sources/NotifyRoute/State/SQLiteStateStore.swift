import Dispatch
import CSQLite
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Router state in an SQLite database, `state.db` in the state directory, so that dedup
/// windows, duplicate counts, replace handles, held events and inhibitors hold across
/// separate `notify-route send` calls and processes.
///
/// Each ``withState(discardingChanges:_:)`` is one short transaction (`BEGIN IMMEDIATE`:
/// writers queue on SQLite's lock, each waiting at most ``busyTimeout``), touching only
/// the rows of the event at hand through indexes, so its cost does not grow with the
/// number of keys. The database is in WAL mode: a crash, even SIGKILL mid-write, leaves
/// the last committed state; concurrent processes never see half a transaction.
///
/// Opening is careful with what it finds: the directory is checked on its descriptor
/// (``StateDirectory``); the database file is created by this store (0600); a file in its
/// place that is not a regular file of this user (a FIFO, a symbolic link, another
/// user's), larger than ``maximumBytes``, or that SQLite finds is not a database or is
/// damaged, is set aside (renamed `state.db.unusable` or `state.db.corrupt`) with a
/// notice, and a fresh database takes its place. A `state.json` of earlier versions is
/// imported once and renamed `state.json.imported`.
///
/// ```swift
/// let store = SQLiteStateStore(directory: try StateDirectory.resolve())
/// let router = try NotificationRouter(configuration: config, registry: registry, store: store)
/// ```
public final class SQLiteStateStore: RouterStateStore, StateBatchMember {
    public let directory: String
    public var databasePath: String { directory + "/" + Self.fileName }
    /// How long a transaction waits for another process's to end.
    public let busyTimeout: Duration
    /// Files larger than this are not opened (nor grown past it).
    public let maximumBytes: Int
    private let notice: @Sendable (String) -> Void
    private let connection = Mutex<Connection?>(nil)

    static let fileName = "state.db"
    static let legacyFileName = "state.json"
    /// A state file of earlier versions held at most `max_entries` (10 million) records of
    /// about 150 bytes: larger is not one of ours.
    static let legacyMaximumBytes = 64 << 20

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// - Parameter notice: told what opening set aside or imported, and why.
    public init(directory: String, busyTimeout: Duration = .seconds(2), maximumBytes: Int = 4 << 30,
                notice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.directory = directory
        self.busyTimeout = busyTimeout
        self.maximumBytes = maximumBytes
        self.notice = notice
    }

    public func withState<Result: Sendable>(
        discardingChanges: Bool, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result {
        try withState(discardingChanges: discardingChanges, in: nil, body)
    }

    public func withState<Result: Sendable>(
        discardingChanges: Bool, in batch: StateBatch?, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result {
        try connection.withLock { connection in
            if connection == nil { connection = try open() }
            guard let open = connection else { throw Failure(description: "no state database") }
            do {
                guard let batch else {
                    return try open.transaction(discardingChanges: discardingChanges, body)
                }
                return try open.transaction(discardingChanges: discardingChanges, in: batch, member: self, body)
            } catch let failure as SQLiteDatabase.Failure {
                // A batch's earlier events keep what they wrote; only this one's part was undone.
                try? open.commitBatch()
                connection = nil
                if failure.isCorruption {
                    // The next call starts afresh; this one goes on without state.
                    let aside = try? StateFiles(directory: directory).setAside(Self.fileName, as: "corrupt")
                    throw Failure(description: "\(databasePath): \(failure.description); set aside as \(aside ?? "?")")
                }
                throw Failure(description: "\(databasePath): \(failure.description)")
            }
        }
    }

    func commitBatch(of batch: ObjectIdentifier) throws -> DispatchGroup? {
        try connection.withLock { connection in
            do throws(SQLiteDatabase.Failure) { try connection?.commitBatch() } catch {
                throw Failure(description: "\(databasePath): \(error.description)")
            }
        }
        return nil
    }

    /// Everything the database holds, as one value: for tests and tools, not for routing
    /// (it reads every row).
    public func stateSnapshot() -> RouterState? { try? snapshot() }
    public var stateDirectory: String? { directory }

    public func snapshot() throws -> RouterState {
        try connection.withLock { connection in
            if connection == nil { connection = try open() }
            guard let open = connection else { throw Failure(description: "no state database") }
            do { return try open.snapshot() } catch let failure as SQLiteDatabase.Failure {
                throw Failure(description: "\(databasePath): \(failure.description)")
            }
        }
    }

    // MARK: Opening

    private func open() throws -> Connection {
        let files = try StateFiles(directory: directory)
        let file = SQLiteFile(files: files, name: Self.fileName, maximumBytes: maximumBytes, busyTimeout: busyTimeout,
                              synchronous: "NORMAL", migrations: StateSchema.migrations, notice: notice)
        return Connection(try file.open { database, version throws(SQLiteDatabase.Failure) in
            if version == 0 { try importLegacy(into: database, files: files) }
        })
    }

    /// The `state.json` of earlier versions, imported once into a new database and renamed
    /// `state.json.imported`; one that cannot be read is set aside with the reason. Files
    /// that their writers, killed mid-write, left behind go too.
    private func importLegacy(into database: SQLiteDatabase, files: StateFiles) throws(SQLiteDatabase.Failure) {
        files.removeLeftovers()
        let name = Self.legacyFileName
        let bytes: [UInt8]
        switch files.read(name, limit: Self.legacyMaximumBytes) {
        case .absent: return
        case .unusable(let why):
            let aside = (try? files.setAside(name, as: "unusable")) ?? "?"
            notice("\(directory)/\(name) \(why); set aside as \(aside), not imported")
            return
        case .contents(let contents): bytes = contents
        }
        guard let state = try? JSONDecoder.state.decode(RouterState.self, from: Data(bytes)) else {
            let aside = (try? files.setAside(name, as: "corrupt")) ?? "?"
            notice("\(directory)/\(name) is not a state file; set aside as \(aside), not imported")
            return
        }
        let transaction = Transaction(database)
        transaction.insert(state)
        if let failure = transaction.failure { throw failure }
        let imported = (try? files.setAside(name, as: "imported")) ?? "?"
        notice("imported \(state.dedup.count) dedup windows and \(state.handles.count) replace handles from \(directory)/\(name) (now \(imported))")
    }

    // MARK: The connection

    /// The open database and its transaction. Unchecked: used under the store's mutex only,
    /// where a transaction's body (task-isolated) would otherwise join its region.
    final class Connection: @unchecked Sendable {
        let database: SQLiteDatabase
        let transaction: Transaction

        init(_ database: SQLiteDatabase) {
            self.database = database
            transaction = Transaction(database)
        }

        func transaction<Result>(discardingChanges: Bool, _ body: (any RouterStateTransaction) throws -> Result) throws -> Result {
            // A call from outside the batch's task (a timer's) sees what the batch did, committed.
            try commitBatch()
            try transaction.statement(.begin).run()
            transaction.failure = nil
            let result: Result
            do {
                result = try body(transaction)
            } catch {
                try? transaction.statement(.rollback).run()
                throw error
            }
            if let failure = transaction.failure {
                try? transaction.statement(.rollback).run()
                throw failure
            }
            if discardingChanges {
                try transaction.statement(.rollback).run()
            } else {
                do { try transaction.statement(.commit).run() } catch {
                    try? transaction.statement(.rollback).run()
                    throw error
                }
            }
            return result
        }

        /// Whether a transaction of a ``StateBatch`` is open (`BEGIN IMMEDIATE`, not yet committed).
        private(set) var batchOpen = false
        /// The batches that wrote in the open transaction: each commits it, whichever ends first.
        private var joined: [ObjectIdentifier] = []

        /// `body` as a savepoint in the batch's transaction, which it opens if none is:
        /// its changes are undone alone when it throws or is a dry run.
        func transaction<Result>(
            discardingChanges: Bool, in batch: StateBatch, member: some StateBatchMember,
            _ body: (any RouterStateTransaction) throws -> Result
        ) throws -> Result {
            if !batchOpen {
                try transaction.statement(.begin).run()
                batchOpen = true
                joined.removeAll(keepingCapacity: true)
            }
            if !joined.contains(ObjectIdentifier(batch)) {
                joined.append(ObjectIdentifier(batch))
                batch.join(member)
            }
            try transaction.statement(.savepoint).run()
            transaction.failure = nil
            let result: Result
            do {
                result = try body(transaction)
                if let failure = transaction.failure { throw failure }
            } catch {
                undoSavepoint()
                throw error
            }
            if discardingChanges { undoSavepoint() } else {
                do { try transaction.statement(.release).run() } catch {
                    undoSavepoint()
                    throw error
                }
            }
            return result
        }

        private func undoSavepoint() {
            try? transaction.statement(.rollbackToSavepoint).run()
            try? transaction.statement(.release).run()
            // Some errors (a full disk, an I/O error) roll the whole transaction back.
            if sqlite3_get_autocommit(database.handle) != 0 { batchOpen = false }
        }

        func commitBatch() throws(SQLiteDatabase.Failure) {
            guard batchOpen else { return }
            batchOpen = false
            do { try transaction.statement(.commit).run() } catch {
                try? transaction.statement(.rollback).run()
                throw error
            }
        }

        func snapshot() throws(SQLiteDatabase.Failure) -> RouterState {
            try commitBatch()
            try database.execute("BEGIN")
            defer { try? database.execute("COMMIT") }
            return try transaction.all()
        }
    }
}

extension JSONDecoder {
    static var state: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}
