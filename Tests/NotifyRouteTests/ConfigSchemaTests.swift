import Foundation
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteTestSupport
import Testing

/// The schema is the one list of keys: a config built from it (every key set to its
/// example) loads, `config show` writes every key back, and what it writes loads to an
/// equal config; each key on its own changes the config.
@Suite struct ConfigSchemaTests {
    static let registry = try! SinkRegistry([
        SinkPlugin(kind: "recording", summary: "records deliveries", options: [
            .option("label", .string, example: "\"x\"", "a label"),
        ]) { _ in RecordingSink() },
    ])

    static func load(_ yaml: String, _ file: String = "t.yaml") throws -> RouterConfiguration {
        try RouterConfiguration.load(yaml: yaml, file: file, registry: registry)
    }

    /// Which keys a generated config sets.
    enum Mode {
        /// Every key, at its example.
        case all
        /// The required keys, and every section with its required keys only.
        case minimal
        /// The required keys and the sections that hold `key`; `key` itself only when `included`.
        case only(ConfigKey, included: Bool)
    }

    /// Present in every generated config: a config with sinks needs somewhere to send.
    static func isSkeleton(_ key: ConfigKey) -> Bool {
        key.section == .top && (key.name == "sinks" || key.name == "fallback")
    }

    static func nested(_ type: ConfigValueType) -> ConfigSection? {
        switch type {
        case .mapping(let section), .list(let section), .named(let section): section
        default: nil
        }
    }

    /// Whether `target` sits somewhere inside `key`'s value.
    static func holds(_ key: ConfigKey, _ target: ConfigKey) -> Bool {
        guard let section = nested(key.type) else { return false }
        return target.section == section || ConfigSchema.keys(in: section).contains { holds($0, target) }
    }

    static func value(of key: ConfigKey, _ mode: Mode) -> String? {
        var inner = mode
        switch mode {
        case .all: break
        case .minimal:
            guard key.defaultValue == .required || isSkeleton(key) || nested(key.type) != nil else { return nil }
        case .only(let target, let included):
            if key == target {
                guard included else { return nil }
                inner = .all
            } else if !(key.defaultValue == .required || isSkeleton(key) || holds(key, target)) {
                return nil
            }
        }
        if key.section == .sink, key.name == "kind" { return "recording" }
        switch key.type {
        case .sinkNames: return "[one]"
        case .mapping(let section): return mapping(section, inner)
        case .list(let section): return "[\(mapping(section, inner))]"
        case .named(let section) where section == .level:
            return "{ " + Level.allCases.map { "\($0.rawValue): \(mapping(section, inner))" }.joined(separator: ", ") + " }"
        case .named(let section):
            let full = if case .all = inner, section == .sink { ", label: x" } else { "" }
            return "{ one: \(mapping(section, inner).dropLast(2))\(full) } }"
        default: return key.example
        }
    }

    static func mapping(_ section: ConfigSection, _ mode: Mode) -> String {
        "{ " + ConfigSchema.keys(in: section).compactMap { key in value(of: key, mode).map { "\(key.name): \($0)" } }
            .joined(separator: ", ") + " }"
    }

    static func yaml(_ mode: Mode) -> String {
        ConfigSchema.keys(in: .top).compactMap { key in value(of: key, mode).map { "\(key.name): \($0)\n" } }.joined()
    }

    /// The mappings of a shown config with the section each holds, for checking keys.
    static func sections(of root: ConfigNode) -> [(ConfigSection, [String])] {
        func keys(_ node: ConfigNode?) -> [String]? {
            guard case .mapping(let entries)? = node?.value else { return nil }
            return entries.map(\.key)
        }
        func child(_ node: ConfigNode?, _ key: String) -> ConfigNode? {
            guard case .mapping(let entries)? = node?.value else { return nil }
            return entries.first { $0.key == key }?.value
        }
        func items(_ node: ConfigNode?) -> [ConfigNode] {
            guard case .sequence(let items)? = node?.value else { return [] }
            return items
        }
        var found: [(ConfigSection, [String])] = []
        func add(_ section: ConfigSection, _ node: ConfigNode?) {
            if let keys = keys(node) { found.append((section, keys)) }
        }
        add(.top, root)
        add(.defaults, child(root, "defaults"))
        add(.state, child(root, "state"))
        add(.history, child(root, "history"))
        add(.serve, child(root, "serve"))
        add(.serveAllow, child(child(root, "serve"), "allow"))
        for level in Level.allCases { add(.level, child(child(root, "levels"), level.rawValue)) }
        if case .mapping(let sinks)? = child(root, "sinks")?.value {
            for sink in sinks { add(.sink, ConfigNode(.mapping(sink.value.entriesOfSchema(.sink)))) }
        }
        for rule in items(child(root, "rules")) {
            add(.rule, rule)
            add(.match, child(rule, "match"))
            add(.ruleSet, child(rule, "set"))
        }
        for route in items(child(root, "routes")) {
            add(.route, route)
            add(.match, child(route, "match"))
            add(.routeSet, child(route, "set"))
            add(.dedup, child(route, "dedup"))
            add(.rate, child(route, "rate"))
            add(.quiet, child(route, "quiet"))
            add(.escalate, child(route, "escalate"))
            add(.snooze, child(route, "snooze"))
            add(.group, child(route, "group"))
        }
        if case .mapping(let sources)? = child(root, "sources")?.value {
            for source in sources {
                add(.source, source.value)
                add(.rate, child(source.value, "rate"))
            }
        }
        for rule in items(child(root, "inhibit")) {
            add(.inhibit, rule)
            add(.match, child(rule, "source"))
            add(.match, child(rule, "target"))
        }
        return found
    }

    @Test func aConfigSettingEveryKeyIsShownWholeAndLoadsBackEqual() throws {
        let config = try Self.load(Self.yaml(.all))
        let shown = try config.effectiveYAML()
        let sections = Self.sections(of: try ConfigNode.parse(yaml: shown, file: "shown.yaml"))
        // Every section of the schema was found (the walk above is not missing one)...
        #expect(Set(sections.map(\.0)) == Set(ConfigSchema.sections), "\(shown)")
        // ...and holds every key of its section, in the schema's order.
        for (section, keys) in sections {
            #expect(keys == ConfigSchema.names(in: section), "\(section)\n\(shown)")
        }
        let again = try Self.load(shown, "shown.yaml")
        #expect(again == config)
        #expect(try again.effectiveYAML() == shown)
    }

    @Test func aMinimalConfigIsShownWithEveryDefaultFilledIn() throws {
        let config = try Self.load(Self.yaml(.minimal))
        let shown = try config.effectiveYAML()
        let sections = Self.sections(of: try ConfigNode.parse(yaml: shown, file: "shown.yaml"))
        for section in [ConfigSection.top, .defaults, .level, .sink, .rule, .ruleSet, .route, .rate, .quiet, .inhibit, .state] {
            #expect(sections.contains { $0.0 == section }, "\(section) not shown\n\(shown)")
        }
        for (section, keys) in sections {
            let filled = ConfigSchema.keys(in: section).filter(\.defaultValue.isFilledIn).map(\.name)
            #expect(Set(filled).isSubset(of: keys), "\(section)\n\(shown)")
        }
        #expect(try Self.load(shown, "shown.yaml") == config)
    }

    static let optionalKeys = ConfigSchema.keys.filter { $0.defaultValue != .required && !isSkeleton($0) }
        .map { "\($0.section.path) \($0.name)" }

    @Test(arguments: optionalKeys)
    func eachKeyIsReadComparedAndShown(path: String) throws {
        let key = try #require(ConfigSchema.keys.first { "\($0.section.path) \($0.name)" == path })
        let with = try Self.load(Self.yaml(.only(key, included: true)))
        let without = try Self.load(Self.yaml(.only(key, included: false)))
        // The loader reads the key, and equality sees it.
        #expect(with != without, "\(Self.yaml(.only(key, included: true)))")
        // config show writes it: what it prints loads back to the same config.
        let shown = try with.effectiveYAML()
        #expect(try Self.load(shown, "shown.yaml") == with, "\(shown)")
    }

    @Test func configShowKeepsInhibitRateAndQuiet() throws {
        let config = try Self.load("""
            sinks:
              one: { kind: recording }
            routes:
              - to: [one]
                rate: { max: 5, per: 1m }
                quiet: { hours: ["22:00-07:00"], timezone: UTC, breakthrough: error }
              - to: [one]
                quiet: ["12:00-13:00"]
            inhibit:
              - source: { level: critical, source: "db*" }
                target: { level: "<=warning" }
                equal: [source]
                for: 30m
            fallback: [one]
            """)
        let shown = try config.effectiveYAML()
        for line in ["  rate: {max: 5, per: 1m}\n", "  quiet: {hours: [\"22:00-07:00\"], timezone: \"UTC\", breakthrough: error}\n",
                     "  quiet: {hours: [\"12:00-13:00\"], breakthrough: critical}\n",
                     "inhibit:\n- source: {level: \"=critical\", source: \"db*\"}\n  target: {level: \"<=warning\"}\n  equal: [source]\n  for: 30m\n"] {
            #expect(shown.contains(line), "missing \(line)in\n\(shown)")
        }
        let again = try Self.load(shown, "shown.yaml")
        func located(_ rules: [InhibitRule]) -> [InhibitRule] { rules.map { var rule = $0; rule.location = nil; return rule } }
        #expect(located(again.inhibitRules) == located(config.inhibitRules))
        #expect(again.routes.map(\.rateLimit) == config.routes.map(\.rateLimit))
        #expect(again.routes.map(\.quietHours) == config.routes.map(\.quietHours))
        #expect(again == config)
    }

    @Test func equalityIsTheConfigInEffect() throws {
        let written = try Self.load("""
            defaults: { level: info, app: notify-route, deadline: 2s }
            sinks: { one: { kind: recording, deadline: 2s } }
            fallback: [one]
            """, "a.yaml")
        let left = try Self.load("sinks: { one: { kind: recording } }\nfallback: [one]\n", "b.yaml")
        // The same defaults, written out or not, from two files: equal.
        #expect(written == left)
        var other = left
        other.sinks[0].deadline = .seconds(3)
        #expect(other != left)
        other = left
        other.state.maxEntries = 9
        #expect(other != left)
        other = left
        other.levels[.debug] = LevelOverrides(tint: .red)
        #expect(other != left)
        other = left
        other.serve.allowedUIDs = [65534]
        #expect(other != left)
        other = left
        other.history.maxEvents = 5
        #expect(other != left)
    }

    /// `==` compares every stored property but `origin`: a new one must be added to it.
    @Test func equalityKnowsEveryStoredProperty() {
        let labels = Mirror(reflecting: RouterConfiguration()).children.compactMap(\.label)
        #expect(labels == ["origin", "defaults", "levels", "sinks", "rules", "routes", "fallback", "state", "inhibitRules", "serve", "sources", "history"])
    }

    @Test func everyKeyIsDescribedAndHasAValidExample() throws {
        for key in ConfigSchema.keys {
            #expect(!key.summary.isEmpty, "\(key.section) \(key.name)")
            #expect(!key.example.isEmpty, "\(key.section) \(key.name)")
        }
        #expect(Set(ConfigSchema.keys.map(\.section)) == Set(ConfigSchema.sections))
        // No key is declared twice in one section.
        for section in ConfigSchema.sections {
            let names = ConfigSchema.names(in: section)
            #expect(Set(names).count == names.count, "\(section)")
        }
    }

    @Test func unknownKeysAreSuggestedFromTheSchema() {
        let yaml = "sinks: { one: { kind: recording } }\nroutes:\n  - to: [one]\n    qiuet: [\"22:00-07:00\"]\nfallback: [one]\n"
        #expect(throws: ConfigError("unknown key \"qiuet\" in route 1; did you mean \"quiet\"? expected one of: "
            + ConfigSchema.names(in: .route).joined(separator: ", "), at: SourceLocation(file: "t.yaml", line: 4, column: 5))) {
            try RouterConfiguration.load(yaml: yaml, file: "t.yaml", registry: Self.registry)
        }
    }
}

extension ConfigNode {
    /// The entries of a sink mapping that are generic sink keys (the rest are the plugin's).
    fileprivate func entriesOfSchema(_ section: ConfigSection) -> [ConfigEntry] {
        guard case .mapping(let entries) = value else { return [] }
        let names = ConfigSchema.names(in: section)
        return entries.filter { names.contains($0.key) }
    }
}
