import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif


/// One recorded event, as `notify-route history` reads it.
public struct HistoryEntry: Sendable {
    public var time: Date
    /// The event as it was given (ingest schema): what `replay` routes again.
    public var input: String
    public var subject: MatchSubject
    /// The outcome in words as recorded; `nil` for events recorded before it was kept.
    var summary: String?
    /// The row's `record`: the whole record, or its outcome when it was stored in `parts`
    /// (the event's other values are the subject's: a row in parts has them all).
    private var stored: String
    private var parts: HistoryRecord.Parts?

    init(_ statement: SQLiteDatabase.Statement) {
        time = Date(timeIntervalSince1970: statement.real(0))
        let tags = statement.text(7) ?? ""
        subject = MatchSubject(
            level: Level(rawValue: statement.text(1) ?? "") ?? .info, source: statement.text(2), app: statement.text(3),
            title: statement.text(4) ?? "", body: statement.text(5), category: statement.text(6),
            tags: tags.isEmpty ? [] : Set(tags.split(separator: "\u{1F}").map(String.init)))
        stored = statement.text(8) ?? "{}"
        input = statement.text(9) ?? "{}"
        summary = statement.text(10)
        parts = statement.text(11).map { HistoryRecord.Parts(timeout: $0, dedupKey: statement.text(12) ?? "", droppedBy: statement.text(13)) }
    }

    /// What `history --json` prints: `time`, `event`, `sinks`, `rules`, `routes`.
    public var record: String {
        guard let parts else { return stored }
        return HistoryRecord.rebuilt(
            parts: parts, outcome: stored, time: time, title: subject.title, body: subject.body, level: subject.level.rawValue,
            app: subject.app ?? "", source: subject.source, category: subject.category, tags: subject.tags.sorted())
    }
}

extension HistoryEntry {
    /// Each sink's outcome in words (`desktop delivered, journal suppressed: silenced`),
    /// or what dropped the event.
    public var outcomeSummary: String {
        if let summary, !summary.isEmpty { return summary }
        guard case .object(let fields)? = try? JSONLine.parse(record) else { return "?" }
        func text(_ key: String, in values: [(key: String, value: JSONLine)]) -> String? {
            if case .string(let value)? = values.first(where: { $0.key == key })?.value { return value }
            return nil
        }
        if let rule = text("dropped_by", in: fields) { return HistoryRecord.summary(droppedBy: rule, sinks: []) }
        guard case .array(let sinks)? = fields.first(where: { $0.key == "sinks" })?.value else { return "?" }
        return HistoryRecord.summary(droppedBy: nil, sinks: sinks.compactMap { sink in
            guard case .object(let values) = sink else { return nil }
            return HistoryRecord.Sink(sink: text("sink", in: values) ?? "?", status: text("status", in: values) ?? "?",
                                      reason: text("reason", in: values), detail: text("detail", in: values))
        })
    }
}
