import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One routed event as the history keeps it and `history --json` prints it: `time`,
/// `event` (the ingest schema, every value decided), `sinks` (each `sink`, `status`,
/// `reason`), and the rules and routes that matched.
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
    }

    init(_ report: DeliveryReport, time: Date) {
        self.time = HistoryTime.format(time)
        event = ResolvedEvent.Payload(report.event)
        rules = report.matchedRules
        routes = report.matchedRoutes
        droppedBy = report.droppedBy
        sinks = report.outcomes.map { outcome in
            var sink = Sink(sink: outcome.sink, status: outcome.status.name)
            switch outcome.status {
            case .delivered, .replaced, .planned: break
            case .queued(let reason), .unavailable(let reason): sink.reason = reason
            case .suppressed(let reason):
                sink.reason = reason.code
                sink.detail = reason.description
                if case .silenced(let id) = reason { sink.silence = id }
            case .failed(let error):
                sink.reason = error.kind.rawValue
                sink.detail = error.message
            }
            return sink
        }
    }

    /// Each sink's outcome in words (`desktop delivered, journal suppressed (silenced)`),
    /// or what dropped the event: what `history` prints after the event.
    var summary: String { Self.summary(droppedBy: droppedBy, sinks: sinks) }

    static func summary(droppedBy: String?, sinks: [Sink]) -> String {
        if let droppedBy { return "dropped by \(droppedBy)" }
        let parts = sinks.map { sink in
            var part = "\(sink.sink) \(sink.status)"
            if let reason = sink.detail ?? sink.reason { part += " (\(reason))" }
            return part
        }
        return parts.isEmpty ? "no sink" : parts.joined(separator: ", ")
    }

    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// An event as it was given (only what it set), in the ingest schema: what replay and a
/// pause's release send again.
struct IngestInput: Encodable {
    let event: NotificationEvent

    enum CodingKeys: String, CodingKey {
        case title, body, level, timeout, app, source, tags, dedupKey = "dedup_key", replaceKey = "replace_key"
        case icon, category, actions, fields, messageID = "message_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.title, forKey: .title)
        try container.encodeIfPresent(event.body, forKey: .body)
        try container.encodeIfPresent(event.level?.rawValue, forKey: .level)
        try container.encodeIfPresent(event.timeout?.description, forKey: .timeout)
        try container.encodeIfPresent(event.app, forKey: .app)
        try container.encodeIfPresent(event.source, forKey: .source)
        if !event.tags.isEmpty { try container.encode(event.tags.sorted(), forKey: .tags) }
        try container.encodeIfPresent(event.dedupKey, forKey: .dedupKey)
        try container.encodeIfPresent(event.replaceKey, forKey: .replaceKey)
        try container.encodeIfPresent(event.icon, forKey: .icon)
        try container.encodeIfPresent(event.category, forKey: .category)
        if !event.actions.isEmpty { try container.encode(event.actions.map(\.description), forKey: .actions) }
        if !event.fields.isEmpty { try container.encode(event.fields, forKey: .fields) }
        try container.encodeIfPresent(event.messageID, forKey: .messageID)
    }

    static func json(_ event: NotificationEvent) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(IngestInput(event: event)) else { return "{\"title\":\"?\"}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Times as RFC 3339 in UTC with milliseconds (`2026-11-24T07:00:01.250Z`).
public enum HistoryTime {
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let millis = min(999, Int((date.timeIntervalSince1970 - seconds) * 1000))
        var tm = tm()
        var time = Int(seconds)
        _ = gmtime_r(&time, &tm)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(tm.tm_year + 1900, 4))-\(pad(tm.tm_mon + 1, 2))-\(pad(tm.tm_mday, 2))T\(pad(tm.tm_hour, 2)):\(pad(tm.tm_min, 2)):\(pad(tm.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
