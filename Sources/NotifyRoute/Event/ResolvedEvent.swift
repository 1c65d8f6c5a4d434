/// An event after normalisation and the cascade: every value is decided.
///
/// Sinks receive this (inside a ``SinkDelivery``), never a raw ``NotificationEvent``,
/// so no sink has to know about defaults, rules or routes.
public struct ResolvedEvent: Hashable, Sendable {
    public var title: String
    public var body: String?
    public var level: Level
    public var timeout: NotificationTimeout
    public var app: String
    public var source: String?
    public var tags: Set<String>
    public var dedupKey: String
    public var replaceKey: String?
    public var icon: String?
    public var category: String?
    public var actions: [NotificationAction]
    public var fields: [String: String]
    public var messageID: String?
    public var callSite: CallSite?
    /// The level's presentation: journal priority, desktop urgency, terminal tint.
    public var style: LevelStyle

    public init(
        title: String, body: String? = nil, level: Level = .info,
        timeout: NotificationTimeout = .after(.seconds(5)), app: String = "notify-route",
        source: String? = nil, tags: Set<String> = [], dedupKey: String? = nil,
        replaceKey: String? = nil, icon: String? = nil, category: String? = nil,
        actions: [NotificationAction] = [], fields: [String: String] = [:],
        messageID: String? = nil, callSite: CallSite? = nil, style: LevelStyle? = nil
    ) {
        self.title = title
        self.body = body
        self.level = level
        self.timeout = timeout
        self.app = app
        self.source = source
        self.tags = tags
        self.dedupKey = dedupKey ?? ResolvedEvent.defaultDedupKey(level: level, source: source, title: title, body: body)
        self.replaceKey = replaceKey
        self.icon = icon
        self.category = category
        self.actions = actions
        self.fields = fields
        self.messageID = messageID
        self.callSite = callSite
        self.style = style ?? .builtIn(for: level)
    }

    /// The default dedup key: level, source, title and body, separated by a unit separator.
    public static func defaultDedupKey(level: Level, source: String?, title: String, body: String?) -> String {
        // Built for every event: one allocation (see KeyBuilder), not four appends.
        KeyBuilder.join(level.rawValue, source ?? "", title, body ?? "", separator: 0x1F)
    }
}
