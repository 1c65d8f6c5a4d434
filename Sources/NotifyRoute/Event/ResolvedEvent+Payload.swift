extension ResolvedEvent {
    /// The event as the keys of `notify-route ingest`'s schema, every value decided: what
    /// sinks that speak JSON (exec plugins, webhooks) send, each adding keys of its own.
    package struct Payload: Encodable, Sendable {
        var title: String
        var body: String?
        var level: String
        var timeout: String
        var app: String
        var source: String?
        var tags: [String]
        var dedupKey: String
        var replaceKey: String?
        var icon: String?
        var category: String?
        var actions: [NotificationAction]
        var fields: [String: String]
        var messageID: String?
        var progress: Int?

        enum CodingKeys: String, CodingKey {
            case title, body, level, timeout, app, source, tags, dedupKey = "dedup_key", replaceKey = "replace_key"
            case icon, category, actions, fields, messageID = "message_id", progress
        }

        package init(_ event: ResolvedEvent) {
            title = event.title
            body = event.body
            level = event.level.rawValue
            timeout = event.timeout.description
            app = event.app
            source = event.source
            tags = event.tags.sorted()
            dedupKey = event.dedupKey
            replaceKey = event.replaceKey
            icon = event.icon
            category = event.category
            actions = event.actions
            fields = event.fields
            messageID = event.messageID
            progress = event.progress
        }
    }
}

extension ResolvedEvent.Payload {
    /// The bytes of its `Encodable` form through `JSONEncoder` with sorted keys.
    package func write(into writer: inout JSONWriter) {
        Self.write(
            into: &writer, title: title, body: body, level: level, timeout: timeout, app: app, source: source, tags: tags,
            dedupKey: dedupKey, replaceKey: replaceKey, icon: icon, category: category, actions: actions, fields: fields,
            messageID: messageID, progress: progress)
    }

    /// The payload's keys, spelled once for a payload, an event written as one, and a
    /// history record stored in parts.
    static func write(
        into writer: inout JSONWriter, title: String, body: String?, level: String, timeout: String, app: String, source: String?,
        tags: [String], dedupKey: String, replaceKey: String?, icon: String?, category: String?, actions: [NotificationAction],
        fields: [String: String], messageID: String?, progress: Int?
    ) {
        writer.object { writer in
            writer.key("actions")
            writer.array { writer in
                for action in actions {
                    writer.object { writer in
                        writer.member("id", action.id)
                        writer.member("label", action.label)
                    }
                }
            }
            writer.member("app", app)
            writer.member("body", body)
            writer.member("category", category)
            writer.member("dedup_key", dedupKey)
            writer.member("fields", object: fields)
            writer.member("icon", icon)
            writer.member("level", level)
            writer.member("message_id", messageID)
            writer.member("progress", progress)
            writer.member("replace_key", replaceKey)
            writer.member("source", source)
            writer.member("tags", strings: tags)
            writer.member("timeout", timeout)
            writer.member("title", title)
        }
    }
}

extension ResolvedEvent {
    /// What ``Payload/write(into:)`` writes of `Payload(self)`, without the payload made
    /// first (its copies, its sorted tags): the history writes one per event.
    package func writePayload(into writer: inout JSONWriter) {
        Payload.write(
            into: &writer, title: title, body: body, level: level.rawValue, timeout: timeout.description, app: app, source: source,
            tags: tags.count > 1 ? tags.sorted() : Array(tags), dedupKey: dedupKey, replaceKey: replaceKey, icon: icon,
            category: category, actions: actions, fields: fields, messageID: messageID, progress: progress)
    }
}
