/// Where in a config a key is allowed: `defaults`, `routes[].rate`, a sink of one kind.
public struct ConfigSection: Hashable, Sendable, CustomStringConvertible {
    /// The path as the key reference writes it: `routes[].rate`, `sinks.NAME`.
    public let path: String

    public init(_ path: String) { self.path = path }

    public var description: String { path }

    public static let top = ConfigSection("(top level)")
    public static let defaults = ConfigSection("defaults")
    public static let level = ConfigSection("levels.LEVEL")
    public static let sink = ConfigSection("sinks.NAME")
    public static let rule = ConfigSection("rules[]")
    public static let ruleSet = ConfigSection("rules[].set")
    public static let route = ConfigSection("routes[]")
    public static let routeSet = ConfigSection("routes[].set")
    public static let dedup = ConfigSection("routes[].dedup")
    public static let rate = ConfigSection("routes[].rate")
    public static let quiet = ConfigSection("routes[].quiet")
    public static let escalate = ConfigSection("routes[].escalate")
    public static let snooze = ConfigSection("routes[].snooze")
    public static let group = ConfigSection("routes[].group")
    /// A `match` of a rule or a route, and an inhibit rule's `source` and `target`.
    public static let match = ConfigSection("match")
    public static let inhibit = ConfigSection("inhibit[]")
    public static let state = ConfigSection("state")
    public static let history = ConfigSection("history")
    public static let serve = ConfigSection("serve")
    public static let serveAllow = ConfigSection("serve.allow")
    /// A source of `notify-route serve`: the journal, failed units.
    public static let source = ConfigSection("sources.NAME")

    /// The options of a sink of one plugin kind, besides the generic ``sink`` keys.
    public static func sinkOptions(kind: String) -> ConfigSection { ConfigSection("sinks.NAME (kind: \(kind))") }
}

/// What a key takes, as the key reference describes it.
public enum ConfigValueType: Hashable, Sendable, CustomStringConvertible {
    case string
    case bool
    case duration
    /// A duration, `never` or `default`.
    case timeout
    case level
    /// A level, optionally after `>=`, `>`, `<=`, `<` or `=`.
    case levelCondition
    /// A glob, or a list of globs any of which may match.
    case globs
    case strings
    case sinkNames
    case keyTemplate
    case messageID
    case stringMap
    case int(ClosedRange<Int>)
    case choice([String])
    case clockSpans
    case timeZone
    /// A mapping holding the keys of a section.
    case mapping(ConfigSection)
    /// A list of mappings, each holding the keys of a section.
    case list(ConfigSection)
    /// A mapping of names (sinks, levels) to mappings holding the keys of a section.
    case named(ConfigSection)
    /// Anything the plugin reads, described in its summary.
    case other(String)

    public var description: String {
        switch self {
        case .string: "string"
        case .bool: "`true` or `false`"
        case .duration: "duration (`1500ms`, `5s`, `2m`, `1h`, `1d`)"
        case .timeout: "duration, `never` or `default`"
        case .level: "level (`\(Level.allCases.map(\.rawValue).joined(separator: "` `"))`)"
        case .levelCondition: "level, optionally after `>=` `>` `<=` `<` `=`"
        case .globs: "glob or list of globs"
        case .strings: "string or list of strings"
        case .sinkNames: "list of sink names"
        case .keyTemplate: "string with `{source}` `{title}` `{body}` `{level}` `{app}` `{category}`"
        case .messageID: "32 hexadecimal digits"
        case .stringMap: "mapping of names to strings"
        case .int(let range): "whole number, \(range.lowerBound) to \(range.upperBound)"
        case .choice(let choices): "one of `\(choices.joined(separator: "` `"))`"
        case .clockSpans: "list of `HH:MM-HH:MM` spans"
        case .timeZone: "IANA time zone (`Europe/Paris`), `UTC` or `GMT±hh:mm`"
        case .mapping(let section): "mapping: [`\(section.path)`](#\(section.anchor))"
        case .list(let section): "list of mappings: [`\(section.path)`](#\(section.anchor))"
        case .named(let section): "mapping of names to [`\(section.path)`](#\(section.anchor))"
        case .other(let text): text
        }
    }
}

/// What a key is when the config does not set it.
public enum ConfigDefault: Hashable, Sendable, CustomStringConvertible {
    /// Nothing: the key has no effect unless set; `config show` writes it only when set.
    case none
    /// The config must set it.
    case required
    /// This value, as written in a config; `config show` writes it when the key is not set.
    case value(String)
    /// Taken from elsewhere (another key, the level table); `config show` writes the value in effect.
    case derived(String)
    /// Decided when the key is unset, as described; `config show` writes the key only when set.
    case implicit(String)

    public var description: String {
        switch self {
        case .none: "none"
        case .required: "required"
        case .value(let text): "`\(text)`"
        case .derived(let text), .implicit(let text): text
        }
    }

    /// Whether `config show` writes the key even when the config does not set it.
    public var isFilledIn: Bool {
        switch self {
        case .none, .implicit: false
        case .required, .value, .derived: true
        }
    }
}

/// One config key, declared once: the loader allows exactly these keys (and suggests
/// among them), `config show` writes them in this order, and the key reference
/// (`notify-route config reference`, `config/REFERENCE.md`) is generated from them.
public struct ConfigKey: Hashable, Sendable {
    public var section: ConfigSection
    public var name: String
    public var type: ConfigValueType
    public var defaultValue: ConfigDefault
    /// One line for the key reference.
    public var summary: String
    /// A valid value in YAML flow style, different from the default: the schema's own
    /// tests set every key to its example.
    public var example: String
    /// What of the value `config show` keeps to itself (``ConfigSecret``).
    public var secret: ConfigSecret?

    public init(
        _ section: ConfigSection, _ name: String, _ type: ConfigValueType, default defaultValue: ConfigDefault = .none,
        example: String, secret: ConfigSecret? = nil, _ summary: String
    ) {
        self.section = section
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.summary = summary
        self.example = example
        self.secret = secret
    }
}

/// A value that may hold a secret, and how `config show` writes it unless asked for secrets.
public enum ConfigSecret: Hashable, Sendable {
    /// A URL or a list of them: their origins alone (``SecretText/redactedURL(_:)``).
    case url
    /// A mapping whose values are secrets (HTTP headers): each value `<secret>`.
    case values
}

/// Every key the core reads, section by section (dunst's `settings_data.h` is the model).
/// Sink plugins declare their own options in ``SinkPlugin/options``.
public enum ConfigSchema {
    public static let keys: [ConfigKey] = sections.flatMap { keys(in: $0) }

    /// The sections in the order the key reference lists them.
    public static let sections: [ConfigSection] = [
        .top, .defaults, .level, .sink, .rule, .ruleSet, .match, .route, .routeSet, .dedup, .rate, .quiet, .group, .escalate, .snooze, .inhibit, .state, .history, .serve, .serveAllow, .source,
    ]

    /// A section's own array: loading a config builds only the sections it reads, not
    /// the whole table (``keys`` is for `config show` and the key reference).
    public static func keys(in section: ConfigSection) -> [ConfigKey] {
        switch section {
        case .top: top
        case .defaults: defaults
        case .level: level
        case .sink: sink
        case .rule: rule
        case .ruleSet: ruleSet
        case .match: match
        case .route: route
        case .routeSet: routeSet
        case .dedup: dedup
        case .rate: rate
        case .quiet: quiet
        case .escalate: Escalation.keys
        case .snooze: Snooze.keys
        case .group: group
        case .inhibit: inhibit
        case .state: state
        case .serve: serve
        case .serveAllow: serveAllow
        case .history: HistorySettings.keys
        case .source: source
        default: []
        }
    }

    /// The key names of a section, in declaration order: what the loader allows there.
    public static func names(in section: ConfigSection) -> [String] {
        keys(in: section).map(\.name)
    }

    private static let top: [ConfigKey] = [
        ConfigKey(.top, "defaults", .mapping(.defaults), default: .derived("each key's own"), example: "{ app: backupd }",
                  "the config's layer of the cascade, and the deadline of sinks that set none"),
        ConfigKey(.top, "levels", .named(.level), default: .derived("the built-in level table"), example: "{ critical: { timeout: never } }",
                  "overrides of the level table, by level name"),
        ConfigKey(.top, "sinks", .named(.sink), default: .value("{}"), example: "{ tty: { kind: terminal } }", "the sink instances, by name"),
        ConfigKey(.top, "rules", .list(.rule), default: .value("[]"), example: "[{ set: { tags: [ops] } }]",
                  "rules: every rule whose `match` holds applies its `set`, in file order"),
        ConfigKey(.top, "routes", .list(.route), default: .value("[]"), example: "[{ to: [tty] }]",
                  "routes, tried in order: the first match delivers and stops unless it says `continue`"),
        ConfigKey(.top, "fallback", .sinkNames, default: .value("[]"), example: "[tty]", "the sinks for events no route matched"),
        ConfigKey(.top, "state", .mapping(.state), default: .derived("each key's own"), example: "{ max_entries: 500 }", "bounds of what is remembered between calls"),
        ConfigKey(.top, "serve", .mapping(.serve), default: .derived("each key's own"), example: "{ allow: { groups: [adm] } }",
                  "what `notify-route serve` allows besides routing"),
        ConfigKey(.top, "history", .mapping(.history), default: .derived("each key's own"), example: "{ max_events: 500 }",
                  "how much of what was routed `notify-route history` and `replay` remember"),
        ConfigKey(.top, "inhibit", .list(.inhibit), default: .value("[]"), example: "[{ source: { level: critical }, target: {} }]",
                  "inhibition rules: while a source event is active, matching target events are suppressed"),
        ConfigKey(.top, "sources", .named(.source), default: .value("{}"), example: "{ errors: { kind: journal, match: { PRIORITY: \"<=3\" } } }",
                  "what `notify-route serve` watches: journal records and failed systemd units, by name"),
    ]

    private static let defaults: [ConfigKey] = [
        ConfigKey(.defaults, "level", .level, default: .value(EventDefaults.builtInLevel.rawValue), example: "notice",
                  "the level of an event that names none"),
        ConfigKey(.defaults, "timeout", .timeout, default: .implicit("per level, see `levels`"), example: "6s",
                  "how long a notification stays visible, for every level that sets no `timeout`"),
        ConfigKey(.defaults, "app", .string, default: .value(EventDefaults.builtInApp), example: "backupd",
                  "the application name"),
        ConfigKey(.defaults, "source", .string, example: "host-1", "the event's source"),
        ConfigKey(.defaults, "icon", .string, example: "dialog-information", "an icon name or path"),
        ConfigKey(.defaults, "category", .string, example: "device", "the freedesktop category (`device`, `network.error`, ...)"),
        ConfigKey(.defaults, "deadline", .duration, default: .value(DurationParser.format(EventDefaults.builtInDeadline)),
                  example: "3s", "how long the router waits for a sink that sets no `deadline` of its own"),
    ]

    private static let level: [ConfigKey] = [
        ConfigKey(.level, "timeout", .timeout, default: .derived("`defaults.timeout`, else the built-in per level"),
                  example: "never", "how long a notification of this level stays visible"),
        ConfigKey(.level, "priority", .int(0...7), default: .derived("built-in per level"), example: "1",
                  "the journal priority (syslog: 0 emerg ... 7 debug)"),
        ConfigKey(.level, "urgency", .choice(Urgency.allCases.map(\.rawValue)), default: .derived("built-in per level"),
                  example: "low", "the desktop notification urgency"),
        ConfigKey(.level, "tint", .choice(Tint.allCases.map(\.rawValue)), default: .derived("built-in per level"),
                  example: "magenta", "the terminal colour"),
    ]

    private static let sink: [ConfigKey] = [
        ConfigKey(.sink, "kind", .other("the plugin: `terminal`, `desktop`, `journal`, `exec` or an external plugin's"),
                  default: .required, example: "terminal", "which plugin makes this sink"),
        ConfigKey(.sink, "deadline", .duration, default: .derived("`defaults.deadline`"), example: "750ms",
                  "how long the router waits for this sink"),
        ConfigKey(.sink, "timeout", .timeout, example: "4s", "the sink's layer of the cascade: how long it stays visible"),
        ConfigKey(.sink, "app", .string, example: "sink-app", "the sink's layer of the cascade: the application name"),
        ConfigKey(.sink, "icon", .string, example: "sink-icon", "the sink's layer of the cascade: the icon"),
        ConfigKey(.sink, "min_level", .level, example: "warning", "events below this level are not sent to this sink"),
    ]

    private static let rule: [ConfigKey] = [
        ConfigKey(.rule, "name", .string, example: "tag backups", "a name for `explain` and the report"),
        ConfigKey(.rule, "match", .mapping(.match), default: .value("{}"), example: "{ source: \"backup*\" }",
                  "which events the rule applies to; empty: every event"),
        ConfigKey(.rule, "set", .mapping(.ruleSet), default: .required, example: "{ drop: true }", "what the rule changes"),
    ]

    private static let ruleSet: [ConfigKey] = [
        ConfigKey(.ruleSet, "level", .level, example: "error", "the level (not of an event sent with an explicit level)"),
        ConfigKey(.ruleSet, "timeout", .timeout, example: "20s", "how long it stays visible"),
        ConfigKey(.ruleSet, "app", .string, example: "rule-app", "the application name"),
        ConfigKey(.ruleSet, "source", .string, example: "rule-source", "the source"),
        ConfigKey(.ruleSet, "icon", .string, example: "rule-icon", "the icon"),
        ConfigKey(.ruleSet, "category", .string, example: "transfer", "the category"),
        ConfigKey(.ruleSet, "tags", .strings, example: "[ops, night]", "tags added to the event's"),
        ConfigKey(.ruleSet, "dedup_key", .keyTemplate, example: "\"{source}-{title}\"",
                  "events with the same key inside a route's dedup window are suppressed"),
        ConfigKey(.ruleSet, "replace_key", .keyTemplate, example: "\"status-{source}\"",
                  "the next event with the same key replaces what this one showed"),
        ConfigKey(.ruleSet, "message_id", .messageID, example: "0123456789abcdef0123456789abcdef",
                  "the journal MESSAGE_ID (as `journalctl --new-id128` prints)"),
        ConfigKey(.ruleSet, "fields", .stringMap, example: "{ TICKET: \"42\" }", "fields added to the event's"),
        ConfigKey(.ruleSet, "drop", .bool, default: .value("false"), example: "true", "drop the event: nothing is sent"),
        ConfigKey(.ruleSet, "history", .bool, default: .value("true"), example: "false",
                  "`false` keeps the event out of the history (events that carry secrets)"),
    ]

    private static let match: [ConfigKey] = [
        ConfigKey(.match, "level", .levelCondition, example: "\">=warning\"", "the event's level"),
        ConfigKey(.match, "source", .globs, example: "\"backup*\"", "the event's source"),
        ConfigKey(.match, "app", .globs, example: "[\"cron\", \"rsync*\"]", "the application name"),
        ConfigKey(.match, "title", .globs, example: "\"*failed*\"", "the title"),
        ConfigKey(.match, "body", .globs, example: "\"*disk*\"", "the body"),
        ConfigKey(.match, "category", .globs, example: "\"network.*\"", "the category"),
        ConfigKey(.match, "tags", .strings, example: "[ops]", "tags the event must all carry"),
    ]

    private static let route: [ConfigKey] = [
        ConfigKey(.route, "name", .string, example: "to the desk", "a name for `explain` and the report"),
        ConfigKey(.route, "match", .mapping(.match), default: .value("{}"), example: "{ level: \">=warning\" }",
                  "which events take this route; empty: every event"),
        ConfigKey(.route, "to", .sinkNames, default: .required, example: "[desktop]", "the sinks"),
        ConfigKey(.route, "continue", .bool, default: .value("false"), example: "true",
                  "try the routes after this one too when it matched"),
        ConfigKey(.route, "failover", .sinkNames, default: .value("[]"), example: "[tty]",
                  "sinks that get the event when one of `to` fails or is unavailable"),
        ConfigKey(.route, "dedup", .mapping(.dedup), example: "{ window: 10m }",
                  "events with the same dedup key inside the window are suppressed and counted"),
        ConfigKey(.route, "set", .mapping(.routeSet), default: .value("{}"), example: "{ icon: route-icon }",
                  "the route's layer of the cascade"),
        ConfigKey(.route, "rate", .mapping(.rate), example: "{ max: 5, per: 1m }",
                  "at most `max` events per sink per period; the rest are held and summarised"),
        ConfigKey(.route, "quiet", .mapping(.quiet), example: "{ hours: [\"22:00-07:00\"] }",
                  "hours in which events below a level are held and summarised after (short form: the list of hours)"),
        ConfigKey(.route, "escalate", .mapping(.escalate), example: "{ after: 10m, to: [pager], repeat: 30m }",
                  "send an event with actions or no timeout to more sinks when nobody acted on or dismissed it (needs `serve`)"),
        ConfigKey(.route, "snooze", .mapping(.snooze), example: "{ for: 1h }",
                  "add a snooze action to desktop notifications: shown again after the duration (needs `serve`)"),
        ConfigKey(.route, "group", .mapping(.group), example: "{ by: [source], wait: 30s, interval: 5m }",
                  "events sharing the `by` values become one notification, updated in place (needs `serve`)"),
    ]

    private static let routeSet: [ConfigKey] = [
        ConfigKey(.routeSet, "timeout", .timeout, example: "9s", "how long it stays visible"),
        ConfigKey(.routeSet, "app", .string, example: "route-app", "the application name"),
        ConfigKey(.routeSet, "icon", .string, example: "route-icon", "the icon"),
        ConfigKey(.routeSet, "category", .string, example: "email", "the category"),
    ]

    private static let dedup: [ConfigKey] = [
        ConfigKey(.dedup, "window", .duration, example: "10m", "how long a dedup key suppresses the events that repeat it"),
    ]

    private static let group: [ConfigKey] = [
        ConfigKey(.group, "by", .strings, default: .implicit("none: the whole route is one group"), example: "[source]",
                  "`source`, `app`, `level`, `category`, `tags` or a field's name: the values a group shares"),
        ConfigKey(.group, "wait", .duration, default: .value("30s"), example: "10s",
                  "how long after its first event a group's notification is sent"),
        ConfigKey(.group, "interval", .duration, default: .value("5m"), example: "10m",
                  "how often it is updated in place while events arrive; a group quiet this long closes"),
    ]

    private static let rate: [ConfigKey] = [
        ConfigKey(.rate, "max", .int(1...1_000_000), default: .required, example: "5", "how many events per sink in each period"),
        ConfigKey(.rate, "per", .duration, default: .required, example: "1m", "the period"),
    ]

    private static let quiet: [ConfigKey] = [
        ConfigKey(.quiet, "hours", .clockSpans, default: .required, example: "[\"22:00-07:00\", \"12:00-13:00\"]",
                  "the quiet spans of each day, past midnight when the end is earlier"),
        ConfigKey(.quiet, "timezone", .timeZone, default: .implicit("the machine's: `$TZ`, else `/etc/localtime`"),
                  example: "Europe/Paris", "the zone whose wall clock the hours are read on"),
        ConfigKey(.quiet, "breakthrough", .level, default: .value(Level.critical.rawValue), example: "error",
                  "events at or above this level go through"),
    ]

    // `reduce`, not `joined(separator:)`: the latter runs unspecialised here, looking its
    // associated types up at run time on every start that reads an inhibit rule.
    private static let inhibit: [ConfigKey] = [
        ConfigKey(.inhibit, "source", .mapping(.match), default: .required, example: "{ level: critical }",
                  "the events that inhibit"),
        ConfigKey(.inhibit, "target", .mapping(.match), default: .required, example: "{ level: \"<=warning\" }",
                  "the events they inhibit"),
        ConfigKey(.inhibit, "equal", .other(InhibitRule.equalKeys.reduce("list of") { $0 + " `\($1)`" }), default: .value("[]"),
                  example: "[source]", "the event values that must be equal in the source and the target"),
        ConfigKey(.inhibit, "for", .duration, default: .implicit("the source event's timeout (1h if sticky), or until closed"),
                  example: "30m", "how long a source event stays active"),
    ]

    private static let state: [ConfigKey] = [
        ConfigKey(.state, "max_entries", .int(1...10_000_000), default: .value(String(StateSettings.defaultMaxEntries)),
                  example: "500", "how many dedup windows and replace handles are remembered; the oldest are forgotten past it"),
    ]

    private static let source: [ConfigKey] = [
        ConfigKey(.source, "kind", .choice(SourceDeclaration.Kind.allCases.map(\.rawValue)), default: .required, example: "units",
                  "`journal`: matching records become events; `units`: a unit entering the failed state becomes an error"),
        ConfigKey(.source, "journal", .choice(SourceDeclaration.JournalScope.allCases.map(\.rawValue)),
                  default: .value(SourceDeclaration.JournalScope.all.rawValue), example: "user",
                  "which journal is read: the user's, the system's, or every one the user may read"),
        ConfigKey(.source, "match", .other("mapping of journal field names to a glob, a list of globs, or a number after `<=` `>=` `<` `>` `=`"),
                  example: "{ PRIORITY: \"<=3\", _SYSTEMD_UNIT: \"nginx*\" }", "conditions on the record's fields, all of which must hold"),
        ConfigKey(.source, "units", .globs, example: "[\"nginx*\", \"backup.service\"]",
                  "which units (`units`), or whose records (`journal`: the record's `_SYSTEMD_UNIT` or `_SYSTEMD_USER_UNIT`)"),
        ConfigKey(.source, "level", .level, default: .implicit("from the record's PRIORITY (`journal`); `error` (`units`)"), example: "warning",
                  "the events' level"),
        ConfigKey(.source, "max_level", .level, default: .value(SourceDeclaration.defaultMaxLevel.rawValue), example: "critical",
                  "the highest level a record gives the event (`journal`: its PRIORITY, which any local user may set; `units`: error); a fixed `level` is not capped"),
        ConfigKey(.source, "title", .other("template: text with `{FIELD}` or `{FIELD|OTHER}`"),
                  default: .implicit("`{SYSLOG_IDENTIFIER|_COMM}: {MESSAGE}`; units: `{UNIT} failed`"), example: "\"{_SYSTEMD_UNIT}: {MESSAGE}\"",
                  "the events' title, over the record's fields"),
        ConfigKey(.source, "body", .other("template: text with `{FIELD}` or `{FIELD|OTHER}`"),
                  default: .implicit("none; units: `Result: {UNIT_RESULT}` and the unit's last lines (`{LINES}`)"), example: "\"{MESSAGE}\"",
                  "the events' body, over the record's fields"),
        ConfigKey(.source, "app", .other("template: text with `{FIELD}` or `{FIELD|OTHER}`"), default: .implicit("`{SYSLOG_IDENTIFIER|_COMM}`"),
                  example: "\"{_COMM}\"", "the events' application name"),
        ConfigKey(.source, "source", .string, default: .implicit("the source's name"), example: "web", "the events' source, for rules and routes"),
        ConfigKey(.source, "tags", .strings, example: "[ops]", "tags on every event of this source"),
        ConfigKey(.source, "dedup_key", .other("template: text with `{FIELD}` or `{FIELD|OTHER}`"), example: "\"{MESSAGE_ID}\"",
                  "the events' dedup key"),
        ConfigKey(.source, "replace_key", .other("template: text with `{FIELD}` or `{FIELD|OTHER}`"),
                  default: .implicit("units: `unit:{UNIT}`"), example: "\"journal-{_SYSTEMD_UNIT}\"", "the events' replace key"),
        ConfigKey(.source, "rate", .mapping(.rate), default: .implicit("at most 5 a minute"), example: "{ max: 20, per: 10m }",
                  "how many events this source lets through per period; the rest are counted and summarised when it ends"),
        ConfigKey(.source, "recovered", .choice(SourceDeclaration.Recovery.allCases.map(\.rawValue)),
                  default: .value(SourceDeclaration.Recovery.notify.rawValue), example: "close",
                  "`units`: when a failed unit is active again, replace its error with a success, or close it"),
    ]

    private static let serve: [ConfigKey] = [
        ConfigKey(.serve, "allow", .mapping(.serveAllow), default: .derived("each key's own"), example: "{ uids: [0] }",
                  "who besides the daemon's own user may hand it events (checked per connection with SO_PEERCRED)"),
    ]

    private static let serveAllow: [ConfigKey] = [
        ConfigKey(.serveAllow, "uids", .other("list of user names or numeric uids"), default: .value("[]"), example: "[root, 65534]",
                  "users who may connect; the socket becomes 0666 (the uid check still applies)"),
        ConfigKey(.serveAllow, "groups", .other("list of group names or numeric gids"), default: .value("[]"), example: "[adm]",
                  "members of these groups (primary or supplementary) may connect; the socket becomes 0660, owned by the first group"),
    ]
}

extension ConfigSection {
    /// The heading anchor of the section in the key reference.
    var anchor: String {
        path.lowercased().unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == " " || $0 == "-" || $0 == "_" }
            .map { $0 == " " ? "-" : String($0) }.joined()
    }
}

extension ConfigKey {
    /// A sink plugin's option, for ``SinkPlugin/init(kind:summary:options:makeSink:)``,
    /// which places it in the plugin's section.
    public static func option(
        _ name: String, _ type: ConfigValueType, default defaultValue: ConfigDefault = .none, example: String,
        secret: ConfigSecret? = nil, _ summary: String
    ) -> ConfigKey {
        ConfigKey(.sink, name, type, default: defaultValue, example: example, secret: secret, summary)
    }
}
