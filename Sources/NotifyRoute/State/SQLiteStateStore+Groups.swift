#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Open groups as rows of `groups`: a record as JSON, found by key or by when it is due
/// (through `groups_by_due`, so that the daemon's clock reads only what is due).
extension SQLiteStateStore.Transaction {
    func group(forKey key: String) -> RouterState.GroupRecord? {
        groupAttempt(nil) { () throws(SQLiteDatabase.Failure) in
            let statement = try database.prepare("SELECT record FROM groups WHERE key = ?1").bind(.text(key))
            defer { statement.finish() }
            return try statement.step() ? Self.decodeGroup(statement.text(0)) : nil
        }
    }

    func storeGroup(_ record: RouterState.GroupRecord?, forKey key: String) {
        groupAttempt(()) { () throws(SQLiteDatabase.Failure) in
            guard let record else {
                try database.prepare("DELETE FROM groups WHERE key = ?1").bind(.text(key)).run()
                return
            }
            let json = (try? JSONEncoder().encode(record)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            try database.prepare("INSERT OR REPLACE INTO groups(key, due, record) VALUES (?1, ?2, ?3)")
                .bind(.text(key), .real(record.due.timeIntervalSince1970), .text(json)).run()
        }
    }

    func groups(dueBy date: Date) -> [(key: String, record: RouterState.GroupRecord)] {
        groupAttempt([]) { () throws(SQLiteDatabase.Failure) in
            let statement = try database.prepare("SELECT key, record FROM groups WHERE due <= ?1 ORDER BY due")
                .bind(.real(date.timeIntervalSince1970))
            var due: [(key: String, record: RouterState.GroupRecord)] = []
            while try statement.step() {
                guard let key = statement.text(0), let record = Self.decodeGroup(statement.text(1)) else { continue }
                due.append((key, record))
            }
            return due
        }
    }

    func nextGroupDue() -> Date? {
        groupAttempt(nil) { () throws(SQLiteDatabase.Failure) in
            let statement = try database.prepare("SELECT due FROM groups ORDER BY due LIMIT 1").bind()
            defer { statement.finish() }
            return try statement.step() ? Date(timeIntervalSince1970: statement.real(0)) : nil
        }
    }

    private static func decodeGroup(_ json: String?) -> RouterState.GroupRecord? {
        json.flatMap { try? JSONDecoder().decode(RouterState.GroupRecord.self, from: Data($0.utf8)) }
    }

    /// As the transaction's other calls: the first failure is kept and ends the transaction.
    private func groupAttempt<T>(_ fallback: T, _ body: () throws(SQLiteDatabase.Failure) -> T) -> T {
        guard failure == nil else { return fallback }
        do { return try body() } catch {
            failure = error
            return fallback
        }
    }
}
