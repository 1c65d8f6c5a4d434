import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Silences and the pause: what holds events, for every process that routes.
extension RouterMemory {

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
}
