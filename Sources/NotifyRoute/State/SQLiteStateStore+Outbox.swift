#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One row of the daemon's outbox (see `Outbox` in NotifyRouteDaemon).
package struct OutboxRow: Sendable {
    package var id: Int64
    package var sink: String
    /// `queued`: the sink holds it in a queue of its own; `retrying`: the daemon tries it again.
    package var state: String
    package var accepted: Date
    /// The event as JSON (``ResolvedEvent``'s `Codable` form).
    package var event: String
}

/// Where the daemon's outbox keeps what it accepted and has not delivered: a table in
/// the state database, written in the transaction that accepts it.
package protocol OutboxStore: Sendable {
    func addOutboxRows(_ rows: [(sink: String, state: String, event: String)], accepted: Date) throws -> [Int64]
    func setOutboxState(_ state: String, ids: [Int64]) throws
    func removeOutboxRows(_ ids: [Int64]) throws
    func removeQueuedOutboxRows(sink: String, through id: Int64) throws
    func outboxRows() throws -> [OutboxRow]
    func outboxCount() throws -> Int
}

extension SQLiteStateStore: OutboxStore {
    /// Adds rows for deliveries just accepted, in one transaction; returns their ids in order.
    package func addOutboxRows(_ rows: [(sink: String, state: String, event: String)], accepted: Date) throws -> [Int64] {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let insert = try database.prepare("INSERT INTO outbox(sink, state, accepted, event) VALUES (?1, ?2, ?3, ?4)")
            var ids: [Int64] = []
            for row in rows {
                try insert.bind(.text(row.sink), .text(row.state), .real(accepted.timeIntervalSince1970), .text(row.event)).run()
                ids.append(database.lastInsertedRow)
            }
            return ids
        }
    }

    package func setOutboxState(_ state: String, ids: [Int64]) throws {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let update = try database.prepare("UPDATE outbox SET state = ?1 WHERE id = ?2")
            for id in ids { try update.bind(.text(state), .integer(Int(id))).run() }
        }
    }

    package func removeOutboxRows(_ ids: [Int64]) throws {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let delete = try database.prepare("DELETE FROM outbox WHERE id = ?1")
            for id in ids { try delete.bind(.integer(Int(id))).run() }
        }
    }

    /// Removes `sink`'s queued rows up to `id`: the sink's queue has emptied since they were added.
    package func removeQueuedOutboxRows(sink: String, through id: Int64) throws {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            try database.prepare("DELETE FROM outbox WHERE sink = ?1 AND state = 'queued' AND id <= ?2")
                .bind(.text(sink), .integer(Int(id))).run()
        }
    }

    /// Every row, oldest first.
    package func outboxRows() throws -> [OutboxRow] {
        try withStateTables { database throws(SQLiteDatabase.Failure) in
            let select = try database.prepare("SELECT id, sink, state, accepted, event FROM outbox ORDER BY id")
            defer { select.finish() }
            var rows: [OutboxRow] = []
            while try select.step() {
                rows.append(OutboxRow(
                    id: Int64(select.integer(0)), sink: select.text(1) ?? "", state: select.text(2) ?? "",
                    accepted: Date(timeIntervalSince1970: select.real(3)), event: select.text(4) ?? "{}"))
            }
            return rows
        }
    }

    package func outboxCount() throws -> Int {
        try withStateTables { database throws(SQLiteDatabase.Failure) in try database.integer("SELECT count(*) FROM outbox") }
    }
}
