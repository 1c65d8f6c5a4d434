import NotifyRoute

extension NotificationEvent {
    /// The event's explicit values as an `ingest` object, the form a `send` request
    /// carries: what the cascade would fill is left out, so the daemon's config fills it.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["title": .string(title)]
        func set(_ key: String, _ value: String?) {
            if let value { object[key] = .string(value) }
        }
        set("body", body)
        set("level", level?.rawValue)
        set("timeout", timeout?.description)
        set("app", app)
        set("source", source)
        set("dedup_key", dedupKey)
        set("replace_key", replaceKey)
        set("icon", icon)
        set("category", category)
        set("message_id", messageID)
        if let progress { object["progress"] = .number(Double(progress)) }
        if !tags.isEmpty { object["tags"] = .array(tags.sorted().map(JSONValue.string)) }
        if !actions.isEmpty {
            object["actions"] = .array(actions.map { .object(["id": .string($0.id), "label": .string($0.label)]) })
        }
        if !fields.isEmpty { object["fields"] = .object(fields.mapValues(JSONValue.string)) }
        return .object(object)
    }
}
