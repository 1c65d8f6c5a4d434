/// Everything a router is told by its config: defaults, the level table, sinks,
/// rules and routes.
///
/// Load one from YAML with ``RouterConfiguration/load(yaml:file:registry:)``, or build
/// one in code:
///
/// ```swift
/// var config = RouterConfiguration()
/// config.sinks = [SinkDeclaration(name: "tty", kind: "terminal")]
/// config.routes = [Route(matcher: EventMatcher(level: LevelCondition(.atLeast, .warning)), sinks: ["tty"])]
/// config.fallback = ["tty"]
/// ```
public struct RouterConfiguration: Sendable {
    /// Where it came from (a path, or `<embedded>`), for messages.
    public var origin: String
    public var defaults: EventDefaults
    public var levels: [Level: LevelOverrides]
    public var sinks: [SinkDeclaration]
    public var rules: [RoutingRule]
    public var routes: [Route]
    /// The route used when no route matches: its sinks.
    public var fallback: [String]
    public var state: StateSettings
    /// Inhibition rules, applied to every route.
    public var inhibitRules: [InhibitRule] = []
    /// `serve:`: what the daemon allows; routing ignores it.
    public var serve = ServeSettings()
    /// `sources:`: what `notify-route serve` watches; routing ignores it.
    public var sources: [SourceDeclaration] = []
    /// `history:`: how much of what was routed is remembered (``RouterMemory``).
    public var history = HistorySettings()

    public init(
        origin: String = "<code>", defaults: EventDefaults = EventDefaults(), levels: [Level: LevelOverrides] = [:],
        sinks: [SinkDeclaration] = [], rules: [RoutingRule] = [], routes: [Route] = [], fallback: [String] = [],
        state: StateSettings = StateSettings()
    ) {
        self.origin = origin
        self.defaults = defaults
        self.levels = levels
        self.sinks = sinks
        self.rules = rules
        self.routes = routes
        self.fallback = fallback
        self.state = state
    }

    public func sink(named name: String) -> SinkDeclaration? {
        sinks.first { $0.name == name }
    }

    /// The level table with this config's overrides applied.
    public func style(for level: Level) -> LevelStyle {
        var style = LevelStyle.builtIn(for: level)
        if let timeout = defaults.timeout { style.timeout = timeout }
        if let overrides = levels[level] {
            if let priority = overrides.journalPriority { style.journalPriority = priority }
            if let urgency = overrides.urgency { style.urgency = urgency }
            if let tint = overrides.tint { style.tint = tint }
            if let timeout = overrides.timeout { style.timeout = timeout }
        }
        return style
    }
}

/// The config's `defaults:`: the second layer of the cascade, after the built-in one.
public struct EventDefaults: Hashable, Sendable {
    public var level: Level?
    public var timeout: NotificationTimeout?
    public var app: String?
    public var source: String?
    public var icon: String?
    public var category: String?
    /// How long the router waits for a sink that sets no `deadline` of its own.
    public var deadline: Duration?

    public init(
        level: Level? = nil, timeout: NotificationTimeout? = nil, app: String? = nil, source: String? = nil,
        icon: String? = nil, category: String? = nil, deadline: Duration? = nil
    ) {
        self.level = level
        self.timeout = timeout
        self.app = app
        self.source = source
        self.icon = icon
        self.category = category
        self.deadline = deadline
    }

    public static let builtInApp = "notify-route"
    public static let builtInLevel = Level.info
    public static let builtInDeadline = Duration.seconds(2)
}

/// One row of `levels:`: overrides of the level table.
public struct LevelOverrides: Hashable, Sendable {
    public var timeout: NotificationTimeout?
    public var journalPriority: Int?
    public var urgency: Urgency?
    public var tint: Tint?

    public init(timeout: NotificationTimeout? = nil, journalPriority: Int? = nil, urgency: Urgency? = nil, tint: Tint? = nil) {
        self.timeout = timeout
        self.journalPriority = journalPriority
        self.urgency = urgency
        self.tint = tint
    }
}

/// One entry of `sinks:`: an instance name, a plugin kind and its options.
public struct SinkDeclaration: Equatable, Sendable {
    public var name: String
    public var kind: String
    /// The plugin's own options (generic keys are read into the properties below).
    public var options: SinkOptions
    public var deadline: Duration?
    /// The sink's layer of the cascade.
    public var timeout: NotificationTimeout?
    public var app: String?
    public var icon: String?
    /// Events below this level are not sent to this sink.
    public var minimumLevel: Level?
    public var location: SourceLocation?

    public init(
        name: String, kind: String, options: SinkOptions? = nil, deadline: Duration? = nil,
        timeout: NotificationTimeout? = nil, app: String? = nil, icon: String? = nil, minimumLevel: Level? = nil,
        location: SourceLocation? = nil
    ) {
        self.name = name
        self.kind = kind
        self.options = options ?? SinkOptions(sinkName: name, kind: kind)
        self.deadline = deadline
        self.timeout = timeout
        self.app = app
        self.icon = icon
        self.minimumLevel = minimumLevel
        self.location = location
    }
}

/// What a rule (`set:`) or a route changes in an event. Explicit event values always win.
public struct EventEffects: Hashable, Sendable {
    public var level: Level?
    public var timeout: NotificationTimeout?
    public var app: String?
    public var source: String?
    public var icon: String?
    public var category: String?
    /// Added to the event's tags.
    public var tags: Set<String>
    public var dedupKey: KeyTemplate?
    public var replaceKey: KeyTemplate?
    public var messageID: String?
    public var fields: [String: String]
    /// Drop the event: nothing is sent; the report says which rule dropped it.
    public var drop: Bool
    /// `history: false`: the event is kept out of the history (events that carry secrets).
    public var history = true

    public init(
        level: Level? = nil, timeout: NotificationTimeout? = nil, app: String? = nil, source: String? = nil,
        icon: String? = nil, category: String? = nil, tags: Set<String> = [], dedupKey: KeyTemplate? = nil,
        replaceKey: KeyTemplate? = nil, messageID: String? = nil, fields: [String: String] = [:], drop: Bool = false
    ) {
        self.level = level
        self.timeout = timeout
        self.app = app
        self.source = source
        self.icon = icon
        self.category = category
        self.tags = tags
        self.dedupKey = dedupKey
        self.replaceKey = replaceKey
        self.messageID = messageID
        self.fields = fields
        self.drop = drop
    }

    public var isEmpty: Bool { self == EventEffects() }
}

/// A rule: a matcher and its effects. Every matching rule applies, in file order,
/// each seeing the event as the rules before it left it.
public struct RoutingRule: Hashable, Sendable {
    public var name: String?
    public var matcher: EventMatcher
    public var effects: EventEffects
    public var location: SourceLocation?

    public init(name: String? = nil, matcher: EventMatcher = .any, effects: EventEffects, location: SourceLocation? = nil) {
        self.name = name
        self.matcher = matcher
        self.effects = effects
        self.location = location
    }
}

/// A route: where matching events go. Routes are tried in order; the first match
/// delivers and stops unless it says `continue`.
public struct Route: Hashable, Sendable {
    public var name: String?
    public var matcher: EventMatcher
    /// Sink instance names.
    public var sinks: [String]
    public var continues: Bool
    /// Sinks that get the event when one of ``sinks`` fails or is unavailable.
    public var failover: [String]
    /// Events with the same dedup key inside this window are suppressed (and counted).
    public var dedupWindow: Duration?
    /// The route's layer of the cascade (timeout, app, icon, category).
    public var effects: EventEffects
    /// At most so many events per sink per period; the rest are held and summarised.
    public var rateLimit: RateLimit?
    /// Hours in which events below a level are held and summarised afterwards.
    public var quietHours: QuietHours?
    /// Sent again to more sinks when nobody acknowledged it in time.
    public var escalation: Escalation?
    /// A snooze action on the desktop.
    public var snooze: Snooze?
    /// Events that share some values become one notification (``GroupPolicy``).
    public var group: GroupPolicy?
    public var location: SourceLocation?

    public init(
        name: String? = nil, matcher: EventMatcher = .any, sinks: [String], continues: Bool = false,
        failover: [String] = [], dedupWindow: Duration? = nil, effects: EventEffects = EventEffects(),
        location: SourceLocation? = nil
    ) {
        self.name = name
        self.matcher = matcher
        self.sinks = sinks
        self.continues = continues
        self.failover = failover
        self.dedupWindow = dedupWindow
        self.effects = effects
        self.location = location
    }
}

/// `state:`: bounds of what the router remembers (dedup windows, replace handles).
public struct StateSettings: Hashable, Sendable {
    /// Past this many remembered keys the oldest are forgotten.
    public var maxEntries: Int

    public static let defaultMaxEntries = 10_000

    public init(maxEntries: Int = defaultMaxEntries) {
        self.maxEntries = maxEntries
    }
}

/// `serve:`: who besides its own user may hand events to `notify-route serve`.
public struct ServeSettings: Hashable, Sendable {
    /// Other users allowed to connect, by uid (names are resolved when the config loads).
    public var allowedUIDs: [UInt32]
    /// Groups whose members (primary or supplementary) may connect, by gid.
    public var allowedGroups: [UInt32]

    public init(allowedUIDs: [UInt32] = [], allowedGroups: [UInt32] = []) {
        self.allowedUIDs = allowedUIDs
        self.allowedGroups = allowedGroups
    }
}

/// A key written with placeholders: `{source}`, `{title}`, `{body}`, `{level}`, `{app}`, `{category}`.
public struct KeyTemplate: Hashable, Sendable, CustomStringConvertible {
    enum Part: Hashable, Sendable {
        case literal(String)
        case placeholder(Placeholder)
    }

    enum Placeholder: String, Hashable, Sendable, CaseIterable {
        case source, title, body, level, app, category
    }

    let parts: [Part]
    public let template: String

    public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        public var template: String
        public var placeholder: String
        public var description: String {
            Suggestions.unknown("placeholder", "{\(placeholder)}", in: "key \"\(template)\"",
                                expected: Placeholder.allCases.map { "{\($0.rawValue)}" })
        }
    }

    public init(_ template: String) throws(SyntaxError) {
        self.template = template
        var parts: [Part] = []
        var literal = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = String(rest[rest.index(after: open)..<close])
            guard let placeholder = Placeholder(rawValue: name) else {
                throw SyntaxError(template: template, placeholder: name)
            }
            if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
            parts.append(.placeholder(placeholder))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    public var description: String { template }

    func render(_ subject: MatchSubject) -> String {
        // One or two parts (`{source}`, `shard-{source}`) are most templates: built in one allocation.
        switch parts.count {
        case 1: return Self.value(of: parts[0], subject)
        case 2: return KeyBuilder.concatenate(Self.value(of: parts[0], subject), Self.value(of: parts[1], subject))
        default:
            var output = ""
            for part in parts { output += Self.value(of: part, subject) }
            return output
        }
    }

    private static func value(of part: Part, _ subject: MatchSubject) -> String {
        switch part {
        case .literal(let text): text
        case .placeholder(.source): subject.source ?? ""
        case .placeholder(.title): subject.title
        case .placeholder(.body): subject.body ?? ""
        case .placeholder(.level): subject.level.rawValue
        case .placeholder(.app): subject.app ?? ""
        case .placeholder(.category): subject.category ?? ""
        }
    }
}
