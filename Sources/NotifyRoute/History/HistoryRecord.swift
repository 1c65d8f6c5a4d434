import Glibc
import TimeZoneInfo
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One routed event as the history keeps it and `history --json` prints it: `time`,
/// `event` (the ingest schema, every value decided), `sinks` (each `sink`, `status`,
/// `reason`), and the rules and routes that matched.
///
/// `Encodable` defines the form: ``json()`` writes the bytes `JSONEncoder` gives it.
struct HistoryRecord: Encodable {
    var time: String
    var event: ResolvedEvent.Payload
    var sinks: [Sink]
    var rules: [String]
    var routes: [String]
    var droppedBy: String?

    enum CodingKeys: String, CodingKey {
        case time, event, sinks, rules, routes, droppedBy = "dropped_by"
    }

    struct Sink: Encodable {
        var sink: String
        var status: String
        /// The suppression's code, the failure's kind, the unavailability's reason.
        var reason: String?
        /// What the reason says in words (`duplicate (2 in 10m)`, the error's message).
        var detail: String?
        /// The silence that suppressed it.
        var silence: String?

        init(sink: String, status: String, reason: String? = nil, detail: String? = nil, silence: String? = nil) {
            self.sink = sink
            self.status = status
            self.reason = reason
            self.detail = detail
            self.silence = silence
        }

        init(_ outcome: SinkOutcome) {
            let details = Self.details(of: outcome.status)
            self.init(sink: outcome.sink, status: outcome.status.name, reason: details.reason, detail: details.detail,
                      silence: details.silence)
        }

        /// What a record says of `status` besides its name.
        static func details(of status: SinkOutcome.Status) -> (reason: String?, detail: String?, silence: String?) {
            switch status {
            case .delivered, .replaced, .planned: return (nil, nil, nil)
            case .queued(let reason), .unavailable(let reason): return (reason, nil, nil)
            case .suppressed(let reason):
                if case .silenced(let id) = reason { return (reason.code, reason.description, id) }
                return (reason.code, reason.description, nil)
            case .failed(let error): return (error.kind.rawValue, error.message, nil)
            }
        }

        func write(into writer: inout JSONWriter) {
            Self.write(sink: sink, status: status, reason: reason, detail: detail, silence: silence, into: &writer)
        }

        /// The sink's object from its parts: ``HistoryRecord/stored(_:time:)`` writes each outcome's
        /// without a `Sink`, which would copy the outcome's strings for every event.
        static func write(sink: String, status: String, reason: String?, detail: String?, silence: String?, into writer: inout JSONWriter) {
            writer.object { writer in
                writer.member("detail", detail)
                writer.member("reason", reason)
                writer.member("silence", silence)
                writer.member("sink", sink)
                writer.member("status", status)
            }
        }

        /// `sink status`, and `(detail)` (else `(reason)`) when there is one.
        func summarize(into summary: inout String) {
            Self.summarize(sink: sink, status: status, reason: detail ?? reason, into: &summary)
        }

        static func summarize<Target: TextOutputStream>(sink: String, status: String, reason: String?, into summary: inout Target) {
            summary.write(sink)
            summary.write(" ")
            summary.write(status)
            if let reason {
                summary.write(" (")
                summary.write(reason)
                summary.write(")")
            }
        }
    }

    /// What the history stores of a record: its JSON, or (``Parts``) only what the row's
    /// columns do not hold; and its ``summary``.
    struct Stored {
        var record: String
        var summary: String
        var parts: Parts?
    }

    /// A record kept in parts: the event's values in the row's columns (`title`, `body`,
    /// `level`, `app`, `source`, `category`, `tags`, and these), the time in `time`, and in
    /// `record` only `{"routes":...,"rules":...,"sinks":...}`: half the bytes of a row, and
    /// no event written as JSON per event. ``rebuilt(parts:outcome:...)`` gives back the bytes ``json()`` writes.
    struct Parts: Equatable {
        var timeout: String
        var dedupKey: String
        var droppedBy: String?
    }

    /// The record of `report` at `time` as the history stores it, in one pass and without
    /// the record's arrays: in parts when the columns hold every value of its event (no
    /// actions, fields, icon, message id, progress or replace key, and tags that the
    /// `tags` column splits back as they were), else its whole ``json()``.
    static func stored(_ report: DeliveryReport, time: Date) -> Stored {
        var writer = JSONWriter(capacity: 256)
        let parts = writeStored(report, time: time, into: &writer)
        var summary = ""
        summarize(report, into: &summary)
        return Stored(record: writer.text, summary: summary, parts: parts)
    }

    /// ``stored(_:time:)``'s record written at the end of `writer` (a daemon writes it in
    /// place, in the spool's line); for a record in parts, the parts.
    static func writeStored(_ report: DeliveryReport, time: Date, into writer: inout JSONWriter) -> Parts? {
        let event = report.event
        guard event.actions.isEmpty, event.fields.isEmpty, event.icon == nil, event.messageID == nil, event.progress == nil,
              event.replaceKey == nil, event.tags.allSatisfy({ !$0.isEmpty && !$0.utf8.contains(0x1F) })
        else {
            writeWhole(report, time: time, into: &writer)
            return nil
        }
        writer.object { writer in writeOutcome(report, into: &writer) }
        return Parts(timeout: event.timeout.description, dedupKey: event.dedupKey, droppedBy: report.droppedBy)
    }

    /// The stored record's ``summary`` (each sink's outcome in words, or what dropped the
    /// event) into `target`: a daemon writes it in place, in the spool's line.
    static func summarize<Target: TextOutputStream>(_ report: DeliveryReport, into target: inout Target) {
        report.outcomes.withUnsafeBufferPointer { outcomes in
            summarize(droppedBy: report.droppedBy, sinks: outcomes.count, into: &target) { index, target in
                let details = Sink.details(of: outcomes[index].status)
                Sink.summarize(sink: outcomes[index].sink, status: outcomes[index].status.name, reason: details.detail ?? details.reason,
                               into: &target)
            }
        }
    }

    /// What dropped the event, else each of `count` sinks' outcome in words (`sink` writes
    /// one), else that there was no sink: the one spelling of a summary, stored or rebuilt.
    private static func summarize<Target: TextOutputStream>(
        droppedBy: String?, sinks count: Int, into target: inout Target, sink: (Int, inout Target) -> Void
    ) {
        if let droppedBy {
            target.write("dropped by ")
            target.write(droppedBy)
        } else if count == 0 {
            target.write("no sink")
        } else {
            for index in 0..<count {
                if index > 0 { target.write(", ") }
                sink(index, &target)
            }
        }
    }

    /// ``json()`` and ``summary`` of the record of `report` at `time`, in one pass and
    /// without the record's arrays.
    static func written(_ report: DeliveryReport, time: Date) -> (json: String, summary: String) {
        var writer = JSONWriter(capacity: 768)
        writeWhole(report, time: time, into: &writer)
        var summary = ""
        summarize(report, into: &summary)
        return (writer.text, summary)
    }

    /// ``written(_:time:)``'s JSON at the end of `writer`.
    private static func writeWhole(_ report: DeliveryReport, time: Date, into writer: inout JSONWriter) {
        writer.object { writer in
            writer.member("dropped_by", report.droppedBy)
            writer.key("event")
            report.event.writePayload(into: &writer)
            writeOutcome(report, into: &writer)
            HistoryTime.write(time, named: "time", into: &writer)
        }
    }

    /// `routes`, `rules` and `sinks`.
    private static func writeOutcome(_ report: DeliveryReport, into writer: inout JSONWriter) {
        writer.member("routes", strings: report.matchedRoutes)
        writer.member("rules", strings: report.matchedRules)
        writer.key("sinks")
        writer.array { writer in
            // Borrowed in place: a loop variable was a copy of the outcome and of its strings.
            report.outcomes.withUnsafeBufferPointer { outcomes in
                for index in outcomes.indices {
                    let status = outcomes[index].status.name
                    let details = Sink.details(of: outcomes[index].status)
                    Sink.write(sink: outcomes[index].sink, status: status, reason: details.reason, detail: details.detail,
                               silence: details.silence, into: &writer)
                }
            }
        }
    }

    /// The bytes ``json()`` writes for a record stored in parts: `outcome` is what the row's
    /// `record` holds, the rest its columns.
    static func rebuilt(
        parts: Parts, outcome: String, time: Date, title: String, body: String?, level: String, app: String, source: String?,
        category: String?, tags: [String]
    ) -> String {
        var writer = JSONWriter(capacity: 512)
        writer.object { writer in
            writer.member("dropped_by", parts.droppedBy)
            writer.key("event")
            ResolvedEvent.Payload.write(
                into: &writer, title: title, body: body, level: level, timeout: parts.timeout, app: app, source: source, tags: tags,
                dedupKey: parts.dedupKey, replaceKey: nil, icon: nil, category: category, actions: [], fields: [:], messageID: nil,
                progress: nil)
            writer.members(of: outcome)
            HistoryTime.write(time, named: "time", into: &writer)
        }
        return writer.text
    }

    init(_ report: DeliveryReport, time: Date) {
        self.time = HistoryTime.format(time)
        event = ResolvedEvent.Payload(report.event)
        rules = report.matchedRules
        routes = report.matchedRoutes
        droppedBy = report.droppedBy
        sinks = report.outcomes.map(Sink.init)
    }

    /// Each sink's outcome in words (`desktop delivered, journal suppressed (silenced)`),
    /// or what dropped the event: what `history` prints after the event.
    var summary: String { Self.summary(droppedBy: droppedBy, sinks: sinks) }

    static func summary(droppedBy: String?, sinks: [Sink]) -> String {
        var summary = ""
        summarize(droppedBy: droppedBy, sinks: sinks.count, into: &summary) { index, summary in sinks[index].summarize(into: &summary) }
        return summary
    }

    /// The record as `history --json` prints it: the bytes its `Encodable` form gives
    /// `JSONEncoder` with sorted keys (HistoryJSONTests holds them to it), written
    /// directly: the encoder boxes every value, and every `send` records one.
    func json() -> String {
        var writer = JSONWriter(capacity: 768)
        writer.object { writer in
            writer.member("dropped_by", droppedBy)
            writer.key("event")
            event.write(into: &writer)
            writer.member("routes", strings: routes)
            writer.member("rules", strings: rules)
            writer.key("sinks")
            writer.array { writer in
                for sink in sinks { sink.write(into: &writer) }
            }
            writer.member("time", time)
        }
        return writer.text
    }
}

/// An event as it was given (only what it set), in the ingest schema: what replay and a
/// pause's release send again.
enum IngestInput {
    /// Keys in sorted order, as `JSONEncoder` wrote them with `.sortedKeys`.
    static func json(_ event: NotificationEvent) -> String {
        var writer = JSONWriter()
        write(event, into: &writer)
        return writer.text
    }

    /// ``json(_:)``'s object at the end of `writer`.
    static func write(_ event: NotificationEvent, into writer: inout JSONWriter) {
        writer.object { writer in
            if !event.actions.isEmpty { writer.member("actions", strings: event.actions.map(\.description)) }
            writer.member("app", event.app)
            writer.member("body", event.body)
            writer.member("category", event.category)
            writer.member("dedup_key", event.dedupKey)
            if !event.fields.isEmpty { writer.member("fields", object: event.fields) }
            writer.member("icon", event.icon)
            writer.member("level", event.level?.rawValue)
            writer.member("message_id", event.messageID)
            writer.member("progress", event.progress)
            writer.member("replace_key", event.replaceKey)
            writer.member("source", event.source)
            if !event.tags.isEmpty { writer.member("tags", strings: event.tags.sorted()) }
            writer.member("timeout", event.timeout?.description)
            writer.member("title", event.title)
        }
    }
}

/// Times as RFC 3339 in UTC with milliseconds (`2026-11-24T07:00:01.250Z`).
public enum HistoryTime {
    public static func format(_ date: Date) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { bytes in
            digits(date, into: bytes).map { String(decoding: UnsafeBufferPointer(rebasing: bytes[..<$0]), as: UTF8.self) }
                ?? padded(date, millis: millisecond(date))
        }
    }

    /// `"name":"<time>"`, the digits copied from the stack: every event's record has a
    /// time, and a string of 24 bytes would be allocated for it.
    static func write(_ date: Date, named name: StaticString, into writer: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { bytes in
            if let count = digits(date, into: bytes) {
                writer.member(name, plain: UnsafeBufferPointer(rebasing: bytes[..<count]))
            } else {
                writer.member(name, padded(date, millis: millisecond(date)))
            }
        }
    }

    private static func millisecond(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return min(999, Int((date.timeIntervalSince1970 - seconds) * 1000))
    }

    /// The 24 bytes of `date` into `bytes`; `nil` (nothing written) for a year outside 0...9999.
    private static func digits(_ date: Date, into bytes: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let millis = millisecond(date)
        guard let whole = Int64(exactly: seconds) else { return nil }
        // By arithmetic, not `gmtime_r`, which takes glibc's time zone lock.
        let days = CivilTime.floorDiv(whole, CivilTime.secondsPerDay)
        let second = Int(whole - days * CivilTime.secondsPerDay)
        let (year, month, day) = CivilTime.date(days: days)
        guard (0...9999).contains(year), millis >= 0, bytes.count >= 24 else { return nil }
        var at = 0
        func put(_ value: Int, _ width: Int, then separator: UInt8?) {
            var rest = value
            for index in stride(from: at + width - 1, through: at, by: -1) {
                bytes[index] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                rest /= 10
            }
            at += width
            if let separator {
                bytes[at] = separator
                at += 1
            }
        }
        put(Int(year), 4, then: UInt8(ascii: "-"))
        put(month, 2, then: UInt8(ascii: "-"))
        put(day, 2, then: UInt8(ascii: "T"))
        put(second / 3600, 2, then: UInt8(ascii: ":"))
        put(second / 60 % 60, 2, then: UInt8(ascii: ":"))
        put(second % 60, 2, then: UInt8(ascii: "."))
        put(millis, 3, then: UInt8(ascii: "Z"))
        return at
    }

    /// Years outside 0...9999, by the general path.
    private static func padded(_ date: Date, millis: Int) -> String {
        var tm = tm()
        var time = Int(date.timeIntervalSince1970.rounded(.down))
        _ = gmtime_r(&time, &tm)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(Int(tm.tm_year) + 1900, 4))-\(pad(Int(tm.tm_mon) + 1, 2))-\(pad(Int(tm.tm_mday), 2))T\(pad(Int(tm.tm_hour), 2)):\(pad(Int(tm.tm_min), 2)):\(pad(Int(tm.tm_sec), 2)).\(pad(millis, 3))Z"
    }
}
