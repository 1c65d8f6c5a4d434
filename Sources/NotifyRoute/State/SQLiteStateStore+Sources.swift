#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the daemon's sources keep how far they read and which units they saw failed.
package protocol SourcePositionStore: Sendable {
    func sourceCursor(_ source: String) throws -> String?
    func saveSourceCursor(_ cursor: String, for source: String) throws
    func failedUnits(_ source: String) throws -> Set<String>
    func setUnit(_ unit: String, failed: Bool, source: String) throws
}

/// The daemon's own tables beside the router's state: its outbox and its sources' positions.
package typealias DaemonStateStore = OutboxStore & SourcePositionStore & RouterStateStore

extension SQLiteStateStore: SourcePositionStore {
    /// Where a journal source stopped reading: the cursor of the last record it handled.
    package func sourceCursor(_ source: String) throws -> String? {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let statement = try database.prepare("SELECT cursor FROM source_cursors WHERE source = ?1").bind(.text(source))
            defer { statement.finish() }
            return try statement.step() ? statement.text(0) : nil
        }
    }

    package func saveSourceCursor(_ cursor: String, for source: String) throws {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            try database.prepare("""
                INSERT INTO source_cursors(source, cursor, saved) VALUES (?1, ?2, ?3)
                ON CONFLICT(source) DO UPDATE SET cursor = excluded.cursor, saved = excluded.saved
                """).bind(.text(source), .text(cursor), .real(Date().timeIntervalSince1970)).run()
        }
    }

    /// The units a units source reported failed and has not yet seen active again.
    package func failedUnits(_ source: String) throws -> Set<String> {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let statement = try database.prepare("SELECT unit FROM source_failed_units WHERE source = ?1").bind(.text(source))
            var units: Set<String> = []
            while try statement.step() { if let unit = statement.text(0) { units.insert(unit) } }
            return units
        }
    }

    package func setUnit(_ unit: String, failed: Bool, source: String) throws {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            if failed {
                try database.prepare("INSERT OR REPLACE INTO source_failed_units(source, unit, since) VALUES (?1, ?2, ?3)")
                    .bind(.text(source), .text(unit), .real(Date().timeIntervalSince1970)).run()
            } else {
                try database.prepare("DELETE FROM source_failed_units WHERE source = ?1 AND unit = ?2").bind(.text(source), .text(unit)).run()
            }
        }
    }

    /// One short transaction on the store's own connection (opened and migrated as for routing).
    func withStateTables<Result: Sendable>(_ body: (SQLiteDatabase) throws(SQLiteDatabase.Failure) -> Result) throws -> Result {
        try withState(discardingChanges: false) { transaction in
            guard let transaction = transaction as? Transaction else { throw Failure(description: "no state database") }
            do { return try body(transaction.database) } catch {
                throw Failure(description: "\(databasePath): \(error)")
            }
        }
    }
}
