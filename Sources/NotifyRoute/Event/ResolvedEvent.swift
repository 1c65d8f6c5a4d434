/// An event after normalisation and the cascade: every value is decided.
///
/// Sinks receive this (inside a ``SinkDelivery``), never a raw ``NotificationEvent``,
/// so no sink has to know about defaults, rules or routes.
public struct ResolvedEvent: Hashable, Sendable {
    // One copy-on-write box, since the router copies the event for each sink, delivery and
    // report: a copy is one retain (the routing benchmark measures it).
    private var storage: Storage

    /// Mutated only while uniquely referenced (see ``update(_:)``), hence unchecked.
    private final class Storage: @unchecked Sendable {
        var values: Values
        init(_ values: Values) { self.values = values }
    }

    private struct Values: Hashable, Sendable, Codable {
        var title: String
        var body: String?
        var level: Level
        var timeout: NotificationTimeout
        var app: String
        var source: String?
        var tags: Set<String>
        var dedupKey: String
        var replaceKey: String?
        var icon: String?
        var category: String?
        var actions: [NotificationAction]
        var fields: [String: String]
        var messageID: String?
        var callSite: CallSite?
        var style: LevelStyle
        var progress: Int?
    }

    /// Runs `body` on the values, copying the box first when another event shares it.
    @inline(__always)
    private mutating func update<Result>(_ body: (inout Values) -> Result) -> Result {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values) }
        return body(&storage.values)
    }

    public var title: String {
        get { storage.values.title }
        set { update { $0.title = newValue } }
    }
    public var body: String? {
        get { storage.values.body }
        set { update { $0.body = newValue } }
    }
    public var level: Level {
        get { storage.values.level }
        set { update { $0.level = newValue } }
    }
    public var timeout: NotificationTimeout {
        get { storage.values.timeout }
        set { update { $0.timeout = newValue } }
    }
    public var app: String {
        get { storage.values.app }
        set { update { $0.app = newValue } }
    }
    public var source: String? {
        get { storage.values.source }
        set { update { $0.source = newValue } }
    }
    public var tags: Set<String> {
        get { storage.values.tags }
        set { update { $0.tags = newValue } }
    }
    public var dedupKey: String {
        get { storage.values.dedupKey }
        set { update { $0.dedupKey = newValue } }
    }
    public var replaceKey: String? {
        get { storage.values.replaceKey }
        set { update { $0.replaceKey = newValue } }
    }
    public var icon: String? {
        get { storage.values.icon }
        set { update { $0.icon = newValue } }
    }
    public var category: String? {
        get { storage.values.category }
        set { update { $0.category = newValue } }
    }
    public var actions: [NotificationAction] {
        get { storage.values.actions }
        set { update { $0.actions = newValue } }
    }
    public var fields: [String: String] {
        get { storage.values.fields }
        set { update { $0.fields = newValue } }
    }
    public var messageID: String? {
        get { storage.values.messageID }
        set { update { $0.messageID = newValue } }
    }
    public var callSite: CallSite? {
        get { storage.values.callSite }
        set { update { $0.callSite = newValue } }
    }
    /// The level's presentation: journal priority, desktop urgency, terminal tint.
    public var style: LevelStyle {
        get { storage.values.style }
        set { update { $0.style = newValue } }
    }

    /// How far a task has got, 0 to 100 (see ``NotificationEvent/progress``).
    public var progress: Int? {
        get { storage.values.progress }
        set { update { $0.progress = newValue } }
    }

    public static func == (lhs: ResolvedEvent, rhs: ResolvedEvent) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.values == rhs.storage.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.values)
    }

    public init(
        title: String, body: String? = nil, level: Level = .info,
        timeout: NotificationTimeout = .after(.seconds(5)), app: String = "notify-route",
        source: String? = nil, tags: Set<String> = [], dedupKey: String? = nil,
        replaceKey: String? = nil, icon: String? = nil, category: String? = nil,
        actions: [NotificationAction] = [], fields: [String: String] = [:],
        messageID: String? = nil, callSite: CallSite? = nil, style: LevelStyle? = nil, progress: Int? = nil
    ) {
        storage = Storage(Values(
            title: title, body: body, level: level, timeout: timeout, app: app, source: source, tags: tags,
            dedupKey: dedupKey ?? ResolvedEvent.defaultDedupKey(level: level, source: source, title: title, body: body, progress: progress),
            replaceKey: replaceKey, icon: icon, category: category, actions: actions, fields: fields,
            messageID: messageID, callSite: callSite, style: style ?? .builtIn(for: level), progress: progress))
    }

    /// The default dedup key: level, source, title and body, separated by a unit separator.
    public static func defaultDedupKey(level: Level, source: String?, title: String, body: String?) -> String {
        // Built for every event: one allocation (see KeyBuilder), not four appends.
        KeyBuilder.join(level.rawValue, source ?? "", title, body ?? "", separator: 0x1F)
    }

    /// The default dedup key of an event that may carry a progress value: the value is a
    /// fifth part, so that "Copying 40%" after "Copying 30%" is news, not a duplicate, while
    /// the same value sent twice still is one. Without a value, the four-part key.
    public static func defaultDedupKey(level: Level, source: String?, title: String, body: String?, progress: Int?) -> String {
        let key = defaultDedupKey(level: level, source: source, title: title, body: body)
        guard let progress else { return key }
        return KeyBuilder.join(key, String(progress), separator: 0x1F)
    }
}

/// Every decided value, for what must outlive the process: the daemon's outbox keeps an
/// event it accepted and has not delivered, to deliver it exactly so after a restart.
extension ResolvedEvent: Codable {
    public init(from decoder: any Decoder) throws {
        storage = Storage(try Values(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try storage.values.encode(to: encoder)
    }
}
