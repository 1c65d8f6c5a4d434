/// The JSON form of reports (`notify-route send --json`): one object, stable keys.
///
/// ```json
/// {"summary":"delivered","event":{"title":"Disk","level":"warning",...},
///  "sinks":[{"sink":"tty","kind":"terminal","status":"delivered","route":"route 1",...}]}
/// ```
extension DeliveryReport: Encodable {
    private enum Keys: String, CodingKey {
        case summary, event, rules, routes, droppedBy = "dropped_by", sinks, notes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(summary.rawValue, forKey: .summary)
        try container.encode(EventJSON(event), forKey: .event)
        try container.encode(matchedRules, forKey: .rules)
        try container.encode(matchedRoutes, forKey: .routes)
        try container.encode(droppedBy, forKey: .droppedBy)
        try container.encode(outcomes, forKey: .sinks)
        try container.encode(notes, forKey: .notes)
    }
}

struct EventJSON: Encodable {
    let event: ResolvedEvent
    init(_ event: ResolvedEvent) { self.event = event }

    private enum Keys: String, CodingKey {
        case title, body, level, timeout, app, source, tags, dedupKey = "dedup_key", replaceKey = "replace_key"
        case icon, category, actions, fields, messageID = "message_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(event.title, forKey: .title)
        try container.encode(event.body, forKey: .body)
        try container.encode(event.level, forKey: .level)
        try container.encode(event.timeout, forKey: .timeout)
        try container.encode(event.app, forKey: .app)
        try container.encode(event.source, forKey: .source)
        try container.encode(event.tags.sorted(), forKey: .tags)
        try container.encode(event.dedupKey, forKey: .dedupKey)
        try container.encode(event.replaceKey, forKey: .replaceKey)
        try container.encodeIfPresent(event.icon, forKey: .icon)
        try container.encodeIfPresent(event.category, forKey: .category)
        if !event.actions.isEmpty { try container.encode(event.actions.map(\.description), forKey: .actions) }
        if !event.fields.isEmpty { try container.encode(event.fields, forKey: .fields) }
        try container.encodeIfPresent(event.messageID, forKey: .messageID)
    }
}

extension SinkOutcome: Encodable {
    private enum Keys: String, CodingKey {
        case sink, kind, status, route, reason, error, retryable, count, handle, previousHandle = "previous_handle"
        case failoverFor = "failover_for", notes, durationMS = "duration_ms", drawnByCaller = "caller_draws"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(sink, forKey: .sink)
        try container.encode(kind, forKey: .kind)
        try container.encode(status.name, forKey: .status)
        try container.encode(route, forKey: .route)
        if drawnByCaller { try container.encode(true, forKey: .drawnByCaller) }
        switch status {
        case .delivered: break
        case .replaced(let previous): try container.encode(previous.value, forKey: .previousHandle)
        case .queued(let reason), .unavailable(let reason): try container.encode(reason, forKey: .reason)
        case .suppressed(let reason):
            try container.encode(reason.code, forKey: .reason)
            if case .duplicate(let count, _, _) = reason { try container.encode(count, forKey: .count) }
        case .failed(let error):
            try container.encode(error.kind.rawValue, forKey: .reason)
            try container.encode(error.message, forKey: .error)
            try container.encode(error.isRetryable, forKey: .retryable)
        case .planned(let intent):
            switch intent {
            case .show: try container.encode("show", forKey: .reason)
            case .replace(let handle):
                try container.encode("replace", forKey: .reason)
                try container.encode(handle.value, forKey: .previousHandle)
            case .updateDuplicateCount(let handle, let count):
                try container.encode("update-count", forKey: .reason)
                try container.encode(handle.value, forKey: .previousHandle)
                try container.encode(count, forKey: .count)
            }
        }
        try container.encodeIfPresent(handle?.value, forKey: .handle)
        try container.encodeIfPresent(failoverFor, forKey: .failoverFor)
        try container.encode(notes, forKey: .notes)
        try container.encode(Double(duration.roundedMicroseconds) / 1_000, forKey: .durationMS)
    }
}

extension DeliveryReport {
    /// The bytes of its `Encodable` form through `JSONEncoder` with `.sortedKeys` and
    /// `.withoutEscapingSlashes` (DeliveryReportJSONTests holds them to it), written
    /// directly: the daemon answers every `send` with one.
    package func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        write(into: &writer)
        return writer.bytes
    }

    package func write(into writer: inout JSONWriter) {
        writer.object { writer in
            writer.member("dropped_by", orNull: droppedBy)
            writer.key("event")
            EventJSON(event).write(into: &writer)
            writer.member("notes", strings: notes)
            writer.member("routes", strings: matchedRoutes)
            writer.member("rules", strings: matchedRules)
            writer.key("sinks")
            writer.array { writer in
                // Borrowed in place: a loop variable was a copy, a retain and release of each of its strings.
                outcomes.withUnsafeBufferPointer { outcomes in
                    for index in outcomes.indices { outcomes[index].write(into: &writer) }
                }
            }
            writer.member("summary", summary.rawValue)
        }
    }
}

extension EventJSON {
    /// ``encode(to:)``'s keys in sorted order.
    func write(into writer: inout JSONWriter) {
        writer.object { writer in
            if !event.actions.isEmpty { writer.member("actions", strings: event.actions.map(\.description)) }
            writer.member("app", event.app)
            writer.member("body", orNull: event.body)
            writer.member("category", event.category)
            writer.member("dedup_key", event.dedupKey)
            if !event.fields.isEmpty { writer.member("fields", object: event.fields) }
            writer.member("icon", event.icon)
            writer.member("level", event.level.rawValue)
            writer.member("message_id", event.messageID)
            writer.member("replace_key", orNull: event.replaceKey)
            writer.member("source", orNull: event.source)
            writer.member("tags", strings: event.tags.sorted())
            writer.member("timeout", event.timeout.description)
            writer.member("title", event.title)
        }
    }
}

extension SinkOutcome {
    /// ``encode(to:)``'s keys in sorted order.
    func write(into writer: inout JSONWriter) {
        var count: Int?
        var error: String?
        var previousHandle: String?
        var reason: String?
        var retryable: Bool?
        switch status {
        case .delivered: break
        case .replaced(let previous): previousHandle = previous.value
        case .queued(let text), .unavailable(let text): reason = text
        case .suppressed(let suppression):
            reason = suppression.code
            if case .duplicate(let duplicates, _, _) = suppression { count = duplicates }
        case .failed(let failure):
            reason = failure.kind.rawValue
            error = failure.message
            retryable = failure.isRetryable
        case .planned(let intent):
            switch intent {
            case .show: reason = "show"
            case .replace(let handle):
                reason = "replace"
                previousHandle = handle.value
            case .updateDuplicateCount(let handle, let duplicates):
                reason = "update-count"
                previousHandle = handle.value
                count = duplicates
            }
        }
        writer.object { writer in
            if drawnByCaller {
                writer.key("caller_draws")
                writer.bool(true)
            }
            writer.member("count", count)
            writer.key("duration_ms")
            writer.thousandths(duration.roundedMicroseconds)
            writer.member("error", error)
            writer.member("failover_for", failoverFor)
            writer.member("handle", handle?.value)
            writer.member("kind", kind)
            writer.member("notes", strings: notes)
            writer.member("previous_handle", previousHandle)
            writer.member("reason", reason)
            if let retryable {
                writer.key("retryable")
                writer.bool(retryable)
            }
            writer.member("route", route)
            writer.member("sink", sink)
            writer.member("status", status.name)
        }
    }
}
