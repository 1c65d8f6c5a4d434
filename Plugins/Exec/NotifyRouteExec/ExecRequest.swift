#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

/// One line the router writes on a plugin's stdin.
///
/// ```json
/// {"type":"deliver","id":1,"sink":"pager","intent":"show","count":1,"deadline_ms":2000,
///  "event":{"title":"Disk full","level":"warning","timeout":"8s","app":"notify-route",...}}
/// {"type":"close","id":2,"sink":"pager","handle":"17","replace_key":"disk"}
/// ```
struct ExecRequest: Encodable {
    var type: String
    var id: Int
    var sink: String
    var intent: String?
    var handle: String?
    var count: Int?
    var replaceKey: String?
    var deadlineMS: Int
    var event: EventPayload?

    enum CodingKeys: String, CodingKey {
        case type, id, sink, intent, handle, count, replaceKey = "replace_key", deadlineMS = "deadline_ms", event
    }

    static func deliver(_ delivery: SinkDelivery, id: Int) -> ExecRequest {
        var request = ExecRequest(
            type: "deliver", id: id, sink: delivery.sinkName, intent: "show", count: delivery.duplicateCount,
            deadlineMS: remainingMilliseconds(until: delivery.deadline), event: EventPayload(delivery.event))
        switch delivery.intent {
        case .show: break
        case .replace(let handle):
            request.intent = "replace"
            request.handle = handle.value
        case .updateDuplicateCount(let handle, let count):
            request.intent = "update-count"
            request.handle = handle.value
            request.count = count
        }
        return request
    }

    static func close(_ close: SinkCloseRequest, id: Int) -> ExecRequest {
        ExecRequest(type: "close", id: id, sink: close.sinkName, handle: close.handle.value, replaceKey: close.replaceKey,
                    deadlineMS: remainingMilliseconds(until: close.deadline))
    }

    static func remainingMilliseconds(until deadline: ContinuousClock.Instant) -> Int {
        max(0, DurationParser.milliseconds(deadline - .now))
    }

    /// One line of JSON, with its newline.
    func line() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every value is a string, number, array or object of those: encoding cannot fail.
        var data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return data
    }
}

/// The resolved event as the plugin sees it: the keys of `notify-route ingest`'s schema,
/// every value decided, plus the level's presentation (priority, urgency).
struct EventPayload: Encodable {
    var event: ResolvedEvent.Payload
    var priority: Int
    var urgency: String

    enum CodingKeys: String, CodingKey { case priority, urgency }

    init(_ event: ResolvedEvent) {
        self.event = ResolvedEvent.Payload(event)
        priority = event.style.journalPriority
        urgency = event.style.urgency.rawValue
    }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(priority, forKey: .priority)
        try container.encode(urgency, forKey: .urgency)
    }
}
