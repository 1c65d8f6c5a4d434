/// Events as JSON objects, one per line: the input of `notify-route ingest` (its
/// schema ships as `config/event.schema.json`).
///
/// ```swift
/// let event = try NotificationEvent.decode(jsonLine: #"{"title":"Disk full","level":"warning","tags":["ops"]}"#)
/// event.level  // .warning
/// ```
///
/// Keys are the snake_case names of the config (`dedup_key`, `replace_key`,
/// `message_id`). `null` means "not set", as if the key were absent. An unknown key
/// is an error, never ignored: a typo like `"titel"` must not turn into an event
/// without a title.
extension NotificationEvent {
    /// The keys an event object may have, in the order the schema lists them.
    public static let jsonKeys = [
        "title", "body", "level", "timeout", "app", "source", "tags", "dedup_key", "replace_key",
        "icon", "category", "actions", "fields", "message_id", "progress",
    ]

    /// ``jsonKeys`` by their places in it, in its order (``decode(object:)`` keeps a place
    /// for each in a `SIMD16`: sixteen keys at most).
    private enum JSONKey: Int {
        case title, body, level, timeout, app, source, tags, dedupKey, replaceKey, icon, category, actions, fields, messageID, progress
    }

    /// Decodes one line of JSON into an event.
    ///
    /// - Throws: ``EventError`` naming the key and what was expected, for example
    ///   `unknown key "titel" (did you mean "title"?)` or
    ///   `"level": unknown level "warn" (did you mean "warning"?); expected one of: debug, info, ...`.
    public static func decode(jsonLine text: String) throws(EventError) -> NotificationEvent {
        let root: JSONLine
        do {
            root = try JSONLine.parse(text)
        } catch {
            throw EventError("invalid JSON at column \(error.column): \(error.message)")
        }
        return try decode(object: root)
    }

    /// Decodes an event from a JSON value already parsed (the daemon's requests carry
    /// the event object inside the request line).
    package static func decode(object root: JSONLine) throws(EventError) -> NotificationEvent {
        guard case .object(let entries) = root else {
            throw EventError("expected a JSON object such as {\"title\": \"Disk full\"}, found \(root.kindDescription)")
        }
        // Where each key is first found among the members (as a dictionary that keeps the
        // first would say), in one pass that also finds an unknown key: an event has a few
        // members, and a lookup of each of the fifteen keys went over all of them.
        assert(jsonKeys.count <= SIMD16<Int32>.scalarCount)
        var first = SIMD16<Int32>(repeating: -1)
        for (position, entry) in entries.enumerated() {
            guard let index = jsonKeys.firstIndex(where: { Self.sameKey($0, entry.key) }) else {
                if let hint = Suggestions.didYouMean(entry.key, among: jsonKeys) {
                    throw EventError("unknown key \"\(entry.key)\" (\(hint))")
                }
                throw EventError("unknown key \"\(entry.key)\"; expected one of: \(jsonKeys.joined(separator: ", "))")
            }
            if first[index] < 0 { first[index] = Int32(truncatingIfNeeded: position) }
        }
        func value(_ key: JSONKey) -> JSONLine? {
            let position = first[key.rawValue]
            return position < 0 ? nil : entries[Int(position)].value
        }
        func string(_ key: JSONKey) throws(EventError) -> String? {
            switch value(key) {
            case nil, .null?: return nil
            case .string(let text)?: return text
            case let other?: throw EventError("\"\(jsonKeys[key.rawValue])\": expected a string, found \(other.kindDescription)")
            }
        }

        guard let title = try string(.title) else {
            throw EventError(value(.title) == nil
                ? "missing \"title\"; every event needs a one-line title"
                : "\"title\": expected a string, found null")
        }
        var event = NotificationEvent(title: title)
        event.body = try string(.body)
        if let text = try string(.level) {
            guard let level = Level(rawValue: text.lowercased()) else {
                let names = Level.allCases.map(\.rawValue)
                let hint = Suggestions.didYouMean(text, among: names).map { " (\($0))" } ?? ""
                throw EventError("\"level\": unknown level \"\(text)\"\(hint); expected one of: \(names.joined(separator: ", "))")
            }
            event.level = level
        }
        if let text = try string(.timeout) {
            do { event.timeout = try NotificationTimeout(parsing: text) } catch {
                throw EventError("\"timeout\": \(error.description), or never, or default")
            }
        }
        event.app = try string(.app)
        event.source = try string(.source)
        event.dedupKey = try string(.dedupKey)
        event.replaceKey = try string(.replaceKey)
        event.icon = try string(.icon)
        event.category = try string(.category)
        event.messageID = try string(.messageID)
        event.tags = Set(try stringArray(value(.tags), key: "tags"))
        event.actions = try actions(value(.actions))
        event.fields = try fields(value(.fields))
        event.progress = try progress(value(.progress))
        return event
    }

    /// `==`, its lengths compared first: of two short strings that differ, `==` takes the
    /// runtime's out-of-line comparison, and an event's keys are looked up among all of them.
    @inline(__always) static func sameKey(_ one: String, _ other: String) -> Bool {
        one.utf8.count == other.utf8.count && one == other
    }

    /// A whole number from 0 to 100 (`50`, or `50.0` as some encoders write it).
    private static func progress(_ value: JSONLine?) throws(EventError) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .number(let text)?:
            guard let number = Double(text), number.rounded() == number,
                  let progress = Int(exactly: number), progressRange.contains(progress)
            else {
                throw EventError("\"progress\": \(text) is not a whole number from 0 to 100")
            }
            return progress
        case let other?:
            throw EventError("\"progress\": expected a whole number from 0 to 100, found \(other.kindDescription)")
        }
    }

    private static func stringArray(_ value: JSONLine?, key: String) throws(EventError) -> [String] {
        switch value {
        case nil, .null?: return []
        case .array(let items)?:
            var strings: [String] = []
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item else {
                    throw EventError("\"\(key)\"[\(index)]: expected a string, found \(item.kindDescription)")
                }
                strings.append(text)
            }
            return strings
        case let other?:
            throw EventError("\"\(key)\": expected an array of strings, found \(other.kindDescription)")
        }
    }

    /// `[{"id": "ack", "label": "Acknowledge"}]` or the command-line form `["ack=Acknowledge"]`.
    private static func actions(_ value: JSONLine?) throws(EventError) -> [NotificationAction] {
        switch value {
        case nil, .null?: return []
        case .array(let items)?:
            var actions: [NotificationAction] = []
            for (index, item) in items.enumerated() {
                let context = "\"actions\"[\(index)]"
                switch item {
                case .string(let text):
                    guard let action = NotificationAction(parsing: text) else {
                        throw EventError("\(context): expected \"id=Label\", found \"\(text)\"")
                    }
                    actions.append(action)
                case .object(let entries):
                    for entry in entries where entry.key != "id" && entry.key != "label" {
                        throw EventError("\(context): unknown key \"\(entry.key)\"; an action has an \"id\" and a \"label\"")
                    }
                    guard case .string(let id)? = entries.first(where: { $0.key == "id" })?.value,
                          case .string(let label)? = entries.first(where: { $0.key == "label" })?.value
                    else {
                        throw EventError("\(context): expected {\"id\": \"ack\", \"label\": \"Acknowledge\"}, with both as strings")
                    }
                    actions.append(NotificationAction(id: id, label: label))
                default:
                    throw EventError("\(context): expected {\"id\": ..., \"label\": ...} or \"id=Label\", found \(item.kindDescription)")
                }
            }
            return actions
        case let other?:
            throw EventError("\"actions\": expected an array, found \(other.kindDescription)")
        }
    }

    /// String values; numbers and booleans are kept as written (`{"attempt": 3}` gives `3`),
    /// because producers print them that way and the journal stores text anyway.
    private static func fields(_ value: JSONLine?) throws(EventError) -> [String: String] {
        switch value {
        case nil, .null?: return [:]
        case .object(let entries)?:
            var fields: [String: String] = [:]
            for entry in entries {
                switch entry.value {
                case .string(let text): fields[entry.key] = text
                case .number(let text): fields[entry.key] = text
                case .bool(let flag): fields[entry.key] = flag ? "true" : "false"
                case let other:
                    throw EventError("\"fields\".\"\(entry.key)\": expected a string, number or boolean, found \(other.kindDescription)")
                }
            }
            return fields
        case let other?:
            throw EventError("\"fields\": expected an object of names to strings, found \(other.kindDescription)")
        }
    }
}
