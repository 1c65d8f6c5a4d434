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
        case failoverFor = "failover_for", notes, durationMS = "duration_ms"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(sink, forKey: .sink)
        try container.encode(kind, forKey: .kind)
        try container.encode(status.name, forKey: .status)
        try container.encode(route, forKey: .route)
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
        try container.encode((duration.seconds * 1_000_000).rounded() / 1_000, forKey: .durationMS)
    }
}
