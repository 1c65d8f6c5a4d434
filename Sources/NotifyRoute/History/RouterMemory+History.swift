import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The history proper: recording what was routed, and reading it back.
extension RouterMemory {

    // MARK: Recording

    /// Appends the event `report` settled, and the event as given, as one transaction;
    /// drops the oldest past the bounds. Events a pause held are kept for its release.
    /// A failure is told to `notice`: losing a history record never loses the event.
    ///
    /// A one-shot command that found no silence and no pause to read (history.db not
    /// opened) appends the record to the ``HistorySpool`` instead; so does a daemon that
    /// spools its records (``spoolRecords()``).
    func record(_ report: DeliveryReport, input: NotificationEvent, settings: HistorySettings, now: Date, keep: Bool,
                batch: StateBatch? = nil) {
        let held = report.outcomes.contains { if case .suppressed(.paused) = $0.status { true } else { false } }
        guard keep || held else { return }
        let event = report.event
        let tags = KeyBuilder.join(event.tags.sorted(), separator: "\u{1F}")
        let row: HistorySpool.Row
        if keep && !held && spoolingEnabled.load(ordering: .acquiring) {
            // The daemon's line, its record and input written in place; made before the
            // spooling lock, which concurrent records wait for.
            var line = JSONWriter(capacity: 384 + event.title.utf8.count + (event.body?.utf8.count ?? 0))
            HistorySpool.writeLine(
                into: &line, token: HistorySpool.Row.token(), time: now.timeIntervalSince1970, level: event.level.rawValue,
                source: event.source, app: event.app, title: event.title, body: event.body, category: event.category, tags: tags,
                maxEvents: settings.maxEvents, maxBytes: settings.maxBytes,
                record: { writer in HistoryRecord.writeStored(report, time: now, into: &writer) },
                input: { writer in IngestInput.write(input, into: &writer) },
                summary: { writer in HistoryRecord.summarize(report, into: &writer) })
            if let size = line.withBytes({ spoolKeptOpen(line: $0, time: now.timeIntervalSince1970, batch: batch) }) {
                if size >= Self.spoolFoldBytes { foldSpooledRecords() }
                return
            }
            // Not spooled: recorded below, from the line's fields.
            guard let spooled = line.withBytes({ HistorySpool.Row(line: ArraySlice($0.dropLast())) }) else {
                return notice("history: this event is not in the history")
            }
            row = spooled
        } else {
            let record = keep ? HistoryRecord.stored(report, time: now) : nil
            row = HistorySpool.Row(
                token: HistorySpool.Row.token(), time: now.timeIntervalSince1970, level: event.level.rawValue, source: event.source,
                app: event.app, title: event.title, body: event.body, category: event.category, tags: tags,
                record: record?.record ?? "", input: IngestInput.json(input), summary: record?.summary ?? "",
                maxEvents: settings.maxEvents, maxBytes: settings.maxBytes, parts: record?.parts)
        }
        if keep && !held && !keepsOpen && connection.withLock({ $0 == nil }) && marker.rulesOut(at: now),
           let size = spool.append(row) {
            // Past its bound, this send folds the spool (opening history.db does).
            if size >= HistorySpool.foldBytes {
                do { try withConnection { _ in } } catch { notice("history: \(error); the spool is folded later") }
                close()
            }
            return
        }
        // Lines a daemon's batch under way buffered were routed before this event (one a
        // pause holds goes in at once): appended to the spool, which the connection folds first.
        if keepsOpen { spoolBuffered() }
        do {
            try withConnection { connection in
                try connection.write { db throws(SQLiteDatabase.Failure) in
                    if keep {
                        try connection.insert(row)
                        try connection.evict(settings)
                    }
                    // Changes no control: the place to say, once after they change, that none is stored.
                    if !marker.exists { try connection.markControls(marker) }
                    if held {
                        try connection.statement(.insertHeld).bind(
                            .real(now.timeIntervalSince1970), .text(event.level.rawValue), Self.text(event.source), .text(row.input)
                        ).run()
                        // A pause left on for weeks holds at most as many events as the history keeps.
                        try connection.statement(.boundHeld).bind(.integer(settings.maxEvents)).run()
                    }
                }
            }
        } catch {
            notice("history: \(error); this event is not in the history")
        }
        if !keepsOpen { close() }
    }

    static func text(_ value: String?) -> SQLiteDatabase.Value { value.map { .text($0) } ?? .null }

    // MARK: Reading the history

    /// The recorded events since `since` that `matcher` matches, oldest first; with
    /// `limit`, the newest `limit` of them.
    public func entries(since: Date?, limit: Int?, matching matcher: EventMatcher = .any) throws -> [HistoryEntry] {
        try withConnection { connection in
            let statement = try connection.statement(.entriesSince).bind(.real(since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude))
            var entries: [HistoryEntry] = []
            defer { statement.finish() }
            while try statement.step() {
                let entry = HistoryEntry(statement)
                guard matcher.isEmpty || matcher.matches(entry.subject) else { continue }
                entries.append(entry)
                if let limit, entries.count >= limit { break }
            }
            return entries.reversed()
        }
    }
}
