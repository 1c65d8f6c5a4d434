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
    // The values live in one copy-on-write box, as in ``ResolvedEvent``: the router hands
    // the event from the normaliser to the plan and keeps it as the explicit layer, and a
    // copy is then one retain rather than a copy of fifteen stored properties.
    private var storage: Storage

    /// Mutated only while uniquely referenced (see ``update(_:)``), hence unchecked.
    private final class Storage: @unchecked Sendable {
        var values: Values
        init(_ values: Values) { self.values = values }
    }

    private struct Values: Hashable, Sendable {
        var title: String
        var body: String?
        var level: Level?
        var timeout: NotificationTimeout?
        var app: String?
        var source: String?
        var tags: Set<String>
        var dedupKey: String?
        var replaceKey: String?
        var icon: String?
        var category: String?
        var actions: [NotificationAction]
        var fields: [String: String]
        var messageID: String?
        var callSite: CallSite?
        var progress: Int?
    }

    /// Runs `body` on the values, copying the box first when another event shares it.
    @inline(__always)
    private mutating func update<Result>(_ body: (inout Values) -> Result) -> Result {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values) }
        return body(&storage.values)
    }

    /// One line; newlines are folded into spaces when the event is normalised.
    public var title: String {
        get { storage.values.title }
        set { update { $0.title = newValue } }
    }
    /// Optional, may be multi-line.
    public var body: String? {
        get { storage.values.body }
        set { update { $0.body = newValue } }
    }
    public var level: Level? {
        get { storage.values.level }
        set { update { $0.level = newValue } }
    }
    public var timeout: NotificationTimeout? {
        get { storage.values.timeout }
        set { update { $0.timeout = newValue } }
    }
    /// The producing program: desktop `app_name`, journal `SYSLOG_IDENTIFIER`.
    public var app: String? {
        get { storage.values.app }
        set { update { $0.app = newValue } }
    }
    /// A free-form origin used by rules and keys (`backup`, `db.pool`).
    public var source: String? {
        get { storage.values.source }
        set { update { $0.source = newValue } }
    }
    public var tags: Set<String> {
        get { storage.values.tags }
        set { update { $0.tags = newValue } }
    }
    /// Events with equal dedup keys are duplicates. Default: level + source + title + body.
    public var dedupKey: String? {
        get { storage.values.dedupKey }
        set { update { $0.dedupKey = newValue } }
    }
    /// An event with the replace key of an earlier one replaces it on every sink that can.
    public var replaceKey: String? {
        get { storage.values.replaceKey }
        set { update { $0.replaceKey = newValue } }
    }
    /// A desktop icon name or path.
    public var icon: String? {
        get { storage.values.icon }
        set { update { $0.icon = newValue } }
    }
    /// A desktop notification category (`device.added`, `network.error`, ...).
    public var category: String? {
        get { storage.values.category }
        set { update { $0.category = newValue } }
    }
    public var actions: [NotificationAction] {
        get { storage.values.actions }
        set { update { $0.actions = newValue } }
    }
    /// Structured fields, written to the journal as `KEY=VALUE`.
    public var fields: [String: String] {
        get { storage.values.fields }
        set { update { $0.fields = newValue } }
    }
    /// A journal `MESSAGE_ID` (32 hex digits), for catalogued messages.
    public var messageID: String? {
        get { storage.values.messageID }
        set { update { $0.messageID = newValue } }
    }
    /// Where a library caller sent the event from (journal `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`).
    public var callSite: CallSite? {
        get { storage.values.callSite }
        set { update { $0.callSite = newValue } }
    }

    /// How far a task has got, 0 to 100: a desktop bar (the `value` hint), a bar in the
    /// terminal banner, `NOTIFY_ROUTE_PROGRESS` in the journal. With a replace key, each
    /// update replaces the last; the default dedup key includes it, so a new value is no duplicate.
    public var progress: Int? {
        get { storage.values.progress }
        set { update { $0.progress = newValue } }
    }

    /// The values ``progress`` accepts.
    public static let progressRange = 0...100

    public static func == (lhs: NotificationEvent, rhs: NotificationEvent) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.values == rhs.storage.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.values)
    }

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
        callSite: CallSite? = nil,
        progress: Int? = nil
    ) {
        storage = Storage(Values(
            title: title, body: body, level: level, timeout: timeout, app: app, source: source, tags: tags,
            dedupKey: dedupKey, replaceKey: replaceKey, icon: icon, category: category, actions: actions, fields: fields,
            messageID: messageID, callSite: callSite, progress: progress))
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
