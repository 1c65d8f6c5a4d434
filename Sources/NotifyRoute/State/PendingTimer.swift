#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// An escalation or a snooze waiting for its time, kept with the state so that it survives
/// a reload and a restart of `notify-route serve`.
struct PendingTimer: Hashable, Sendable {
    enum Kind: String, Sendable {
        /// Sends the event to the route's `escalate.to` sinks when due, unless acknowledged first.
        case escalate
        /// A notification showing the snooze action: kept until the action (then ``snooze``)
        /// or a dismissal, at most a day.
        case snoozable
        /// Shows the event again on its sink when due.
        case snooze
    }

    var id: String
    var kind: Kind
    /// The label of the route that armed it (`route 1 "ops"`).
    var route: String
    var replaceKey: String?
    var due: Date
    /// Where it goes when due (the escalation's sinks; the snoozed sink).
    var sinks: [String]
    /// The event as resolved when it was armed, as an ingest JSON line.
    var event: String
    /// How many times it has escalated.
    var sent = 0
    var since: Date
    /// `sink` + U+001F + `handle` of each notification whose action or dismissal acknowledges it.
    var watches: [String] = []

    static func watch(sink: String, handle: SinkHandle) -> String { sink + "\u{1F}" + handle.value }
}

/// Where pending timers are kept: the state database's `timers` tables, or memory.
protocol PendingTimerTable {
    func store(_ timer: PendingTimer) throws
    func remove(id: String) throws
    /// Those due by `date`, earliest first, at most `limit`.
    func due(by date: Date, limit: Int) throws -> [PendingTimer]
    func nextDue() throws -> Date?
    /// The timers watching a notification.
    func watching(_ watch: String) throws -> [PendingTimer]
    func escalations(replaceKey: String) throws -> [PendingTimer]
    func exists(id: String) throws -> Bool
    func count() throws -> Int
}

/// ``PendingTimerTable`` for ``InMemoryStateStore``.
final class InMemoryTimerTable: Sendable {
    private let timers = Mutex<[String: PendingTimer]>([:])

    func with<Result>(_ body: (Table) throws -> Result) rethrows -> Result {
        try timers.withLock { timers in
            let table = Table(timers)
            defer { timers = table.timers }
            return try body(table)
        }
    }

    /// The timers for the length of one ``with(_:)``.
    final class Table: PendingTimerTable {
        var timers: [String: PendingTimer]
        init(_ timers: [String: PendingTimer]) { self.timers = timers }

        func store(_ timer: PendingTimer) { timers[timer.id] = timer }
        func remove(id: String) { timers[id] = nil }
        func due(by date: Date, limit: Int) -> [PendingTimer] {
            Array(timers.values.filter { $0.due <= date }.sorted { $0.due < $1.due }.prefix(limit))
        }
        func nextDue() -> Date? { timers.values.map(\.due).min() }
        func watching(_ watch: String) -> [PendingTimer] { timers.values.filter { $0.watches.contains(watch) } }
        func escalations(replaceKey: String) -> [PendingTimer] {
            timers.values.filter { $0.kind == .escalate && $0.replaceKey == replaceKey }
        }
        func exists(id: String) -> Bool { timers[id] != nil }
        func count() -> Int { timers.count }
    }
}

/// ``PendingTimerTable`` over the state database, inside one of its transactions; every
/// query goes through an index.
struct SQLiteTimerTable: PendingTimerTable {
    let database: SQLiteDatabase

    func store(_ timer: PendingTimer) throws {
        try database.prepare("""
            INSERT OR REPLACE INTO timers(id, kind, route, replace_key, due, sinks, event, sent, since)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """).bind(.text(timer.id), .text(timer.kind.rawValue), .text(timer.route), timer.replaceKey.map { .text($0) } ?? .null,
                      .real(timer.due.timeIntervalSince1970), .text(timer.sinks.joined(separator: "\u{1F}")), .text(timer.event),
                      .integer(timer.sent), .real(timer.since.timeIntervalSince1970)).run()
        try database.prepare("DELETE FROM timer_handles WHERE timer = ?1").bind(.text(timer.id)).run()
        let insert = try database.prepare("INSERT OR IGNORE INTO timer_handles(sink, handle, timer) VALUES (?1, ?2, ?3)")
        for watch in timer.watches {
            let parts = watch.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
            try insert.bind(.text(String(parts[0])), .text(parts.count > 1 ? String(parts[1]) : ""), .text(timer.id)).run()
        }
    }

    func remove(id: String) throws {
        try database.prepare("DELETE FROM timers WHERE id = ?1").bind(.text(id)).run()
        try database.prepare("DELETE FROM timer_handles WHERE timer = ?1").bind(.text(id)).run()
    }

    func due(by date: Date, limit: Int) throws -> [PendingTimer] {
        try timers(database.prepare(Self.select + " WHERE due <= ?1 ORDER BY due LIMIT ?2").bind(.real(date.timeIntervalSince1970), .integer(limit)))
    }

    func nextDue() throws -> Date? {
        let statement = try database.prepare("SELECT min(due) FROM timers")
        defer { statement.finish() }
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return Date(timeIntervalSince1970: statement.real(0))
    }

    func watching(_ watch: String) throws -> [PendingTimer] {
        let parts = watch.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
        return try timers(database.prepare(Self.select + " WHERE id IN (SELECT timer FROM timer_handles WHERE sink = ?1 AND handle = ?2)")
            .bind(.text(String(parts[0])), .text(parts.count > 1 ? String(parts[1]) : "")))
    }

    func escalations(replaceKey: String) throws -> [PendingTimer] {
        try timers(database.prepare(Self.select + " WHERE replace_key = ?1 AND kind = 'escalate'").bind(.text(replaceKey)))
    }

    func exists(id: String) throws -> Bool {
        let statement = try database.prepare("SELECT 1 FROM timers WHERE id = ?1").bind(.text(id))
        defer { statement.finish() }
        return try statement.step()
    }

    func count() throws -> Int { try database.integer("SELECT count(*) FROM timers") }

    private static let select = "SELECT id, kind, route, replace_key, due, sinks, event, sent, since FROM timers"

    private func timers(_ statement: SQLiteDatabase.Statement) throws -> [PendingTimer] {
        var found: [PendingTimer] = []
        while try statement.step() {
            guard let id = statement.text(0), let kind = statement.text(1).flatMap(PendingTimer.Kind.init(rawValue:)) else { continue }
            found.append(PendingTimer(
                id: id, kind: kind, route: statement.text(2) ?? "", replaceKey: statement.text(3),
                due: Date(timeIntervalSince1970: statement.real(4)),
                sinks: (statement.text(5) ?? "").split(separator: "\u{1F}").map(String.init), event: statement.text(6) ?? "{}",
                sent: statement.integer(7), since: Date(timeIntervalSince1970: statement.real(8))))
        }
        let handles = try database.prepare("SELECT sink, handle FROM timer_handles WHERE timer = ?1")
        for index in found.indices {
            handles.bind(.text(found[index].id))
            while try handles.step() { found[index].watches.append((handles.text(0) ?? "") + "\u{1F}" + (handles.text(1) ?? "")) }
        }
        return found
    }
}

/// A state store that keeps escalations and snoozes: both of this module's stores. Internal,
/// as the timers' types are: a store made elsewhere keeps none.
protocol PendingTimerStore: RouterStateStore {
    /// Runs `body` on the pending timers in one state transaction.
    func withTimers<Result: Sendable>(_ body: (any PendingTimerTable) throws -> Result) throws -> Result
}

extension InMemoryStateStore: PendingTimerStore {
    func withTimers<Result: Sendable>(_ body: (any PendingTimerTable) throws -> Result) throws -> Result {
        try timers.with { try body($0) }
    }
}

extension SQLiteStateStore: PendingTimerStore {
    func withTimers<Result: Sendable>(_ body: (any PendingTimerTable) throws -> Result) throws -> Result {
        try withState(discardingChanges: false) { transaction in
            // Its own transaction type: every transaction this store opens is one.
            guard let transaction = transaction as? Transaction else { throw Failure(description: "no state database") }
            return try body(SQLiteTimerTable(database: transaction.database))
        }
    }
}

extension NotificationRouter {
    /// Runs `body` on the pending timers in one state transaction.
    func withTimers<Result: Sendable>(_ body: (any PendingTimerTable) throws -> Result) throws -> Result {
        guard let store = store as? any PendingTimerStore else {
            throw StoreKeepsNoTimers()
        }
        return try store.withTimers(body)
    }
}

/// What ``NotificationRouter/withTimers(_:)`` throws for a store that keeps no timers.
struct StoreKeepsNoTimers: Error, CustomStringConvertible {
    var description: String { "this state store keeps no escalations or snoozes" }
}
