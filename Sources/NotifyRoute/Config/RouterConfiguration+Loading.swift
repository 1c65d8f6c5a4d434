import TimeZoneInfo

extension RouterConfiguration {
    /// The top-level keys of a config file: a contract users and outside tests rely on.
    public static let topLevelKeys = ConfigSchema.names(in: .top)

    /// Parses and validates YAML text. `file` names the source in errors. Sink kinds
    /// and their option keys are checked against `registry`.
    public static func load(yaml: String, file: String, registry: SinkRegistry) throws(ConfigError) -> RouterConfiguration {
        try load(node: ConfigNode.parse(yaml: yaml, file: file), origin: file, registry: registry)
    }

    /// Validates a config tree (from YAML or built in code).
    public static func load(node root: ConfigNode, origin: String, registry: SinkRegistry) throws(ConfigError) -> RouterConfiguration {
        let top = try ConfigMapping(root, context: "the config", section: .top)
        var config = RouterConfiguration(origin: origin)

        if let node = top["defaults"] {
            let map = try ConfigMapping(node, context: "defaults", section: .defaults)
            config.defaults = EventDefaults(
                level: try map.level("level"), timeout: try map.timeout("timeout"), app: try map.string("app"),
                source: try map.string("source"), icon: try map.string("icon"), category: try map.string("category"),
                deadline: try map.duration("deadline"))
        }

        if let node = top["levels"] {
            let map = try ConfigMapping(node, context: "levels", allowing: Level.allCases.map(\.rawValue))
            for entry in map.entries {
                let level = Level(rawValue: entry.key)!
                let row = try ConfigMapping(entry.value, context: "levels.\(entry.key)", section: .level)
                var overrides = LevelOverrides(timeout: try row.timeout("timeout"), journalPriority: try row.int("priority"))
                if let urgency = try row.choice("urgency") {
                    overrides.urgency = Urgency(rawValue: urgency)
                }
                if let tint = try row.choice("tint") {
                    overrides.tint = Tint(rawValue: tint)
                }
                config.levels[level] = overrides
            }
        }

        if let node = top["sinks"] {
            config.sinks = try parseSinks(node, registry: registry)
            // A kind's own default (the desktop's 1s) where neither the entry nor `defaults` sets one.
            for index in config.sinks.indices where config.sinks[index].deadline == nil && config.defaults.deadline == nil {
                config.sinks[index].deadline = registry.plugin(forKind: config.sinks[index].kind)?.defaultDeadline
            }
        }
        let sinkNames = config.sinks.map(\.name)

        if let node = top["rules"] {
            for (index, item) in try sequence(node, "rules").enumerated() {
                config.rules.append(try parseRule(item, number: index + 1))
            }
        }

        if let node = top["routes"] {
            for (index, item) in try sequence(node, "routes").enumerated() {
                config.routes.append(try parseRoute(item, number: index + 1, sinkNames: sinkNames))
            }
        }

        if let node = top["fallback"] {
            config.fallback = try sinkList(node, what: "fallback", sinkNames: sinkNames)
        }

        if let node = top["inhibit"] {
            for (index, item) in try sequence(node, "inhibit").enumerated() {
                config.inhibitRules.append(try parseInhibitRule(item, number: index + 1))
            }
        }

        if let node = top["state"] {
            let map = try ConfigMapping(node, context: "state", section: .state)
            if let max = try map.int("max_entries") { config.state.maxEntries = max }
        }

        if let node = top["history"] { config.history = try HistorySettings(node) }

        if let node = top["serve"] {
            let serve = try ConfigMapping(node, context: "serve", section: .serve)
            if let allowNode = serve["allow"] {
                let allow = try ConfigMapping(allowNode, context: "serve.allow", section: .serveAllow)
                if let node = allow["uids"] { config.serve.allowedUIDs = try AccountNames.ids(node, "serve.allow.uids", user: true) }
                if let node = allow["groups"] { config.serve.allowedGroups = try AccountNames.ids(node, "serve.allow.groups", user: false) }
            }
        }

        if let node = top["sources"] { config.sources = try parseSources(node) }

        if config.routes.isEmpty && config.fallback.isEmpty && !config.sinks.isEmpty {
            throw ConfigError(
                "the config declares sinks but no routes and no fallback, so nothing would ever be sent; add `fallback: [\(sinkNames.first!)]`",
                at: root.location)
        }
        return config
    }

    private static func sequence(_ node: ConfigNode, _ what: String) throws(ConfigError) -> [ConfigNode] {
        switch node.value {
        case .sequence(let items): return items
        case .null: return []
        default: throw ConfigError("\(what): expected a list, found \(node.kindDescription)", at: node.location)
        }
    }

    private static func parseSinks(_ node: ConfigNode, registry: SinkRegistry) throws(ConfigError) -> [SinkDeclaration] {
        guard case .mapping(let entries) = node.value else {
            if case .null = node.value { return [] }
            throw ConfigError("sinks: expected a mapping of sink names to their settings, found \(node.kindDescription)", at: node.location)
        }
        var sinks: [SinkDeclaration] = []
        for entry in entries {
            let name = entry.key
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic && $0.isASCII || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }) else {
                throw ConfigError("invalid sink name \"\(name)\"; use letters, digits, - and _", at: entry.keyLocation)
            }
            let context = "sink \"\(name)\""
            // Read `kind` first: the allowed keys depend on the plugin.
            guard case .mapping(let fields) = entry.value.value,
                  let kindEntry = fields.first(where: { $0.key == "kind" })
            else {
                throw ConfigError("\(context): expected a mapping with a `kind` (one of: \(registry.kinds.joined(separator: ", ")))",
                                  at: entry.value.location ?? entry.keyLocation)
            }
            let kind = try kindEntry.value.scalarString("\(context) kind")
            guard let plugin = registry.plugin(forKind: kind) else {
                throw ConfigError(Suggestions.unknown("sink kind", kind, in: context, expected: registry.kinds),
                                  at: kindEntry.value.location)
            }
            let map = try ConfigMapping(entry.value, context: context, allowing: SinkPlugin.genericOptionKeys + plugin.optionKeys)
            let pluginEntries = map.entries.filter { !SinkPlugin.genericOptionKeys.contains($0.key) }
            let pluginMap = try ConfigMapping(
                ConfigNode(.mapping(pluginEntries), at: entry.value.location), context: context, allowing: plugin.optionKeys)
            sinks.append(SinkDeclaration(
                name: name, kind: kind, options: SinkOptions(
                    sinkName: name, kind: kind, mapping: pluginMap,
                    secrets: Dictionary(plugin.options.compactMap { key in key.secret.map { (key.name, $0) } }, uniquingKeysWith: { first, _ in first })),
                deadline: try map.duration("deadline"), timeout: try map.timeout("timeout"), app: try map.string("app"),
                icon: try map.string("icon"), minimumLevel: try map.level("min_level"), location: entry.keyLocation))
        }
        return sinks
    }

    private static func parseMatcher(_ node: ConfigNode?, context: String) throws(ConfigError) -> EventMatcher {
        guard let node else { return .any }
        let map = try ConfigMapping(node, context: context.hasPrefix("inhibit") ? context : "\(context) match", section: .match)
        var matcher = EventMatcher()
        if let levelNode = map["level"] {
            let text = try levelNode.scalarString("level")
            guard let condition = LevelCondition(parsing: text) else {
                throw ConfigError(
                    "invalid level condition \"\(text)\" in \(context); expected a level, optionally after >=, >, <=, < or = (for example \">=warning\"); levels: \(Level.allCases.map(\.rawValue).joined(separator: ", "))",
                    at: levelNode.location)
            }
            matcher.level = condition
        }
        func globs(_ key: String) throws(ConfigError) -> [Glob]? {
            guard let node = map[key] else { return nil }
            var globs: [Glob] = []
            for pattern in try node.stringList(key) {
                do { globs.append(try Glob(pattern)) } catch {
                    throw ConfigError("\(error.description) in \(context)", at: node.location)
                }
            }
            return globs
        }
        matcher.source = try globs("source")
        matcher.app = try globs("app")
        matcher.title = try globs("title")
        matcher.body = try globs("body")
        matcher.category = try globs("category")
        matcher.tags = Set(try map.stringList("tags") ?? [])
        return matcher
    }

    private static func parseEffects(_ node: ConfigNode?, context: String, section: ConfigSection) throws(ConfigError) -> EventEffects {
        guard let node else { return EventEffects() }
        let map = try ConfigMapping(node, context: context, section: section)
        func template(_ key: String) throws(ConfigError) -> KeyTemplate? {
            guard let text = try map.string(key) else { return nil }
            do { return try KeyTemplate(text) } catch {
                throw ConfigError(error.description, at: map[key]?.location)
            }
        }
        var effects = EventEffects(
            level: try map.level("level"), timeout: try map.timeout("timeout"), app: try map.string("app"),
            source: try map.string("source"), icon: try map.string("icon"), category: try map.string("category"),
            tags: Set(try map.stringList("tags") ?? []), dedupKey: try template("dedup_key"),
            replaceKey: try template("replace_key"), fields: try map.stringMap("fields") ?? [:],
            drop: try map.bool("drop") ?? false)
        if let id = try map.string("message_id") {
            guard id.count == 32, id.allSatisfy(\.isHexDigit) else {
                throw ConfigError("message_id: expected 32 hexadecimal digits (as `journalctl --new-id128` prints), found \"\(id)\"",
                                  at: map["message_id"]?.location)
            }
            effects.messageID = id.lowercased()
        }
        if let keep = try map.bool("history") { effects.history = keep }
        return effects
    }

    private static func parseRule(_ node: ConfigNode, number: Int) throws(ConfigError) -> RoutingRule {
        let context = "rule \(number)"
        let map = try ConfigMapping(node, context: context, section: .rule)
        guard let set = map["set"] else {
            throw ConfigError("\(context) has no `set`; a rule must change something (or use `set: { drop: true }`)", at: node.location)
        }
        return RoutingRule(
            name: try map.string("name"), matcher: try parseMatcher(map["match"], context: context),
            effects: try parseEffects(set, context: "\(context) set", section: .ruleSet), location: node.location)
    }

    private static func parseRoute(_ node: ConfigNode, number: Int, sinkNames: [String]) throws(ConfigError) -> Route {
        let context = "route \(number)"
        let map = try ConfigMapping(node, context: context, section: .route)
        guard let to = map["to"] else {
            throw ConfigError("\(context) has no `to`; expected a list of sink names (known sinks: \(sinkNames.joined(separator: ", ")))", at: node.location)
        }
        var route = Route(
            name: try map.string("name"), matcher: try parseMatcher(map["match"], context: context),
            sinks: try sinkList(to, what: context, sinkNames: sinkNames), continues: try map.bool("continue") ?? false,
            effects: try parseEffects(map["set"], context: "\(context) set", section: .routeSet),
            location: node.location)
        if let failover = map["failover"] {
            route.failover = try sinkList(failover, what: "\(context) failover", sinkNames: sinkNames)
        }
        if let dedup = map["dedup"] {
            let dedupMap = try ConfigMapping(dedup, context: "\(context) dedup", section: .dedup)
            route.dedupWindow = try dedupMap.duration("window")
        }
        if let rate = map["rate"] {
            let rateMap = try ConfigMapping(rate, context: "\(context) rate", section: .rate)
            guard let max = try rateMap.int("max"), let per = try rateMap.duration("per"), per > .zero else {
                throw ConfigError("\(context) rate: expected both `max` (a whole number) and `per` (a duration), as { max: 5, per: 1m }",
                                  at: rate.location)
            }
            route.rateLimit = RateLimit(max: max, per: per)
        }
        if let quiet = map["quiet"] {
            route.quietHours = try parseQuietHours(quiet, context: "\(context) quiet")
        }
        if let escalate = map["escalate"] {
            let escalateMap = try ConfigMapping(escalate, context: "\(context) escalate", section: .escalate)
            guard let after = try escalateMap.duration("after"), after > .zero, let to = escalateMap["to"] else {
                throw ConfigError("\(context) escalate: expected `after` (a duration) and `to` (sink names), as { after: 10m, to: [pager] }",
                                  at: escalate.location)
            }
            let every = try escalateMap.duration("repeat")
            if let every, every < .seconds(1) {
                throw ConfigError("\(context) escalate: repeat must be at least 1s", at: escalateMap["repeat"]?.location)
            }
            route.escalation = Escalation(after: after, sinks: try sinkList(to, what: "\(context) escalate", sinkNames: sinkNames),
                                          repeatEvery: every, level: try escalateMap.level("level"))
        }
        if let snooze = map["snooze"] {
            let snoozeMap = try ConfigMapping(snooze, context: "\(context) snooze", section: .snooze)
            let duration = try snoozeMap.duration("for") ?? .seconds(3600)
            guard duration >= .seconds(1) else {
                throw ConfigError("\(context) snooze: `for` must be at least 1s", at: snoozeMap["for"]?.location)
            }
            route.snooze = Snooze(label: try snoozeMap.string("label"), duration: duration)
        }
        if let group = map["group"] {
            let groupMap = try ConfigMapping(group, context: "\(context) group", section: .group)
            var policy = GroupPolicy(by: try groupMap.stringList("by") ?? [])
            policy.wait = try groupMap.duration("wait") ?? GroupPolicy.defaultWait
            policy.interval = try groupMap.duration("interval") ?? GroupPolicy.defaultInterval
            guard policy.interval > .zero else {
                throw ConfigError("\(context) group: `interval` must be longer than 0s", at: groupMap["interval"]?.location)
            }
            route.group = policy
        }
        return route
    }

    private static func parseQuietHours(_ node: ConfigNode, context: String) throws(ConfigError) -> QuietHours {
        var quiet = QuietHours(windows: [])
        let hoursNode: ConfigNode
        if case .mapping = node.value {
            let map = try ConfigMapping(node, context: context, section: .quiet)
            guard let hours = map["hours"] else {
                throw ConfigError("\(context): expected `hours`, a list of spans such as \"22:00-07:00\"", at: node.location)
            }
            hoursNode = hours
            if let zone = try map.string("timezone") {
                if let problem = ZoneInfo.configProblem(zone) {
                    throw ConfigError("\(context): \(problem)", at: map["timezone"]?.location)
                }
                quiet.timeZone = zone
            }
            quiet.breakthrough = try map.level("breakthrough") ?? .critical
        } else {
            hoursNode = node
        }
        for text in try hoursNode.stringList("\(context) hours") {
            guard let window = ClockWindow(parsing: text) else {
                throw ConfigError("\(context): invalid span \"\(text)\"; expected HH:MM-HH:MM, such as \"22:00-07:00\"", at: hoursNode.location)
            }
            quiet.windows.append(window)
        }
        return quiet
    }

    private static func parseInhibitRule(_ node: ConfigNode, number: Int) throws(ConfigError) -> InhibitRule {
        let context = "inhibit rule \(number)"
        let map = try ConfigMapping(node, context: context, section: .inhibit)
        guard let source = map["source"], let target = map["target"] else {
            throw ConfigError("\(context): expected a `source` and a `target` matcher", at: node.location)
        }
        let equal = try map.stringList("equal") ?? []
        for (index, key) in equal.enumerated() where !InhibitRule.equalKeys.contains(key) {
            var location = map["equal"]?.location
            if case .sequence(let items)? = map["equal"]?.value { location = items[index].location }
            throw ConfigError(Suggestions.unknown("key", key, in: "\(context) equal", expected: InhibitRule.equalKeys), at: location)
        }
        return InhibitRule(
            source: try parseMatcher(source, context: "\(context) source"), target: try parseMatcher(target, context: "\(context) target"),
            equal: equal, duration: try map.duration("for"), location: node.location)
    }

    private static func sinkList(_ node: ConfigNode, what: String, sinkNames: [String]) throws(ConfigError) -> [String] {
        let items: [ConfigNode]
        switch node.value {
        case .scalar: items = [node]
        case .sequence(let list): items = list
        default: throw ConfigError("\(what): expected a list of sink names, found \(node.kindDescription)", at: node.location)
        }
        var names: [String] = []
        for item in items {
            let name = try item.scalarString("\(what) sink")
            guard sinkNames.contains(name) else {
                var message = "unknown sink \"\(name)\" in \(what)"
                message += Suggestions.didYouMean(name, among: sinkNames).map { "; \($0) " } ?? "; "
                message += sinkNames.isEmpty ? "no sinks are declared under `sinks:`" : "known sinks: \(sinkNames.joined(separator: ", "))"
                throw ConfigError(message, at: item.location)
            }
            if !names.contains(name) { names.append(name) }
        }
        return names
    }
}
