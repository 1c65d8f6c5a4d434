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

extension NotificationEvent {
    /// ``jsonValue`` written as `JSONValue.write` writes it (keys sorted), straight from
    /// the fields: a one-shot `send` spent more on the dictionary and its sort than on the rest of its request.
    func writeJSON(into bytes: inout [UInt8]) {
        var first = true
        func key(_ name: String) {
            bytes.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            JSONWriter.string(name, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
        }
        func set(_ name: String, _ value: String?) {
            if let value { key(name); JSONWriter.string(value, into: &bytes) }
        }
        if !actions.isEmpty {
            key("actions")
            bytes.append(UInt8(ascii: "["))
            for (index, action) in actions.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes.append(contentsOf: #"{"id":"#.utf8)
                JSONWriter.string(action.id, into: &bytes)
                bytes.append(contentsOf: #","label":"#.utf8)
                JSONWriter.string(action.label, into: &bytes)
                bytes.append(UInt8(ascii: "}"))
            }
            bytes.append(UInt8(ascii: "]"))
        }
        set("app", app)
        set("body", body)
        set("category", category)
        set("dedup_key", dedupKey)
        if !fields.isEmpty {
            key("fields")
            bytes.append(UInt8(ascii: "{"))
            for (index, name) in fields.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.string(name, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                JSONWriter.string(fields[name]!, into: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
        set("icon", icon)
        set("level", level?.rawValue)
        set("message_id", messageID)
        if let progress { key("progress"); JSONValue.number(Double(progress)).write(into: &bytes) }
        set("replace_key", replaceKey)
        set("source", source)
        if !tags.isEmpty { key("tags"); JSONWriter.strings(tags.sorted(), into: &bytes) }
        set("timeout", timeout?.description)
        set("title", title)
        bytes.append(UInt8(ascii: "}"))
    }
}

