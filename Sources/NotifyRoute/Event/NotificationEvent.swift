/// What a producer hands the router: a title and whatever else it wants to say.
///
/// Only ``title`` is required. Every optional value left `nil` is filled by the
/// cascade (built-in defaults, config `defaults`, per-level settings, rule effects,
/// the route and the sink); a value set here is *explicit* and always wins.
///
/// ```swift
/// var event = NotificationEvent(title: "Backup finished", body: "42 GB in 7m")
/// event.level = .success
/// event.source = "backup"
/// event.replaceKey = "backup-status"   // the next status replaces this one
/// let report = try await router.send(event)
/// ```
public struct NotificationEvent: Hashable, Sendable {
    /// One line; newlines are folded into spaces when the event is normalised.
    public var title: String
    /// Optional, may be multi-line.
    public var body: String?
    public var level: Level?
    public var timeout: NotificationTimeout?
    /// The producing program: desktop `app_name`, journal `SYSLOG_IDENTIFIER`.
    public var app: String?
    /// A free-form origin used by rules and keys (`backup`, `db.pool`).
    public var source: String?
    public var tags: Set<String>
    /// Events with equal dedup keys are duplicates. Default: level + source + title + body.
    public var dedupKey: String?
    /// An event with the replace key of an earlier one replaces it on every sink that can.
    public var replaceKey: String?
    /// A desktop icon name or path.
    public var icon: String?
    /// A desktop notification category (`device.added`, `network.error`, ...).
    public var category: String?
    public var actions: [NotificationAction]
    /// Structured fields, written to the journal as `KEY=VALUE`.
    public var fields: [String: String]
    /// A journal `MESSAGE_ID` (32 hex digits), for catalogued messages.
    public var messageID: String?
    /// Where a library caller sent the event from (journal `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`).
    public var callSite: CallSite?

    public init(
        title: String,
        body: String? = nil,
        level: Level? = nil,
        timeout: NotificationTimeout? = nil,
        app: String? = nil,
        source: String? = nil,
        tags: Set<String> = [],
        dedupKey: String? = nil,
        replaceKey: String? = nil,
        icon: String? = nil,
        category: String? = nil,
        actions: [NotificationAction] = [],
        fields: [String: String] = [:],
        messageID: String? = nil,
        callSite: CallSite? = nil
    ) {
        self.title = title
        self.body = body
        self.level = level
        self.timeout = timeout
        self.app = app
        self.source = source
        self.tags = tags
        self.dedupKey = dedupKey
        self.replaceKey = replaceKey
        self.icon = icon
        self.category = category
        self.actions = actions
        self.fields = fields
        self.messageID = messageID
        self.callSite = callSite
    }
}

/// An action button: `id` is reported back when the user picks it, `label` is shown.
public struct NotificationAction: Hashable, Sendable, Codable, CustomStringConvertible {
    public var id: String
    public var label: String

    public init(id: String, label: String) {
        self.id = id
        self.label = label
    }

    /// Parses the command-line form `id=Label`.
    public init?(parsing text: String) {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        let label = text[text.index(after: equals)...]
        guard !label.isEmpty else { return nil }
        self.init(id: String(text[..<equals]), label: String(label))
    }

    public var description: String { "\(id)=\(label)" }
}

/// The source position of a library call, recorded by `#fileID`/`#line`/`#function` defaults.
public struct CallSite: Hashable, Sendable, Codable {
    public var file: String
    public var line: Int
    public var function: String

    public init(file: String, line: Int, function: String) {
        self.file = file
        self.line = line
        self.function = function
    }
}
