extension RouterConfiguration {
    /// The effective config as YAML, with every default filled in: what
    /// `notify-route config show` prints. The output loads back to the same config.
    public func effectiveYAML() throws -> String {
        var top: [(key: YAMLOutput, value: YAMLOutput)] = []
        func key(_ text: String) -> YAMLOutput { .key(text) }
        func scalar(_ text: String) -> YAMLOutput { .scalar(text, .plain) }
        func map(_ pairs: [(String, YAMLOutput?)]) -> YAMLOutput {
            .mapping(pairs.compactMap { pair in pair.1.map { (key(pair.0), $0) } }, flow: false)
        }
        func list(_ items: [String]) -> YAMLOutput { .sequence(items.map(scalar), flow: true) }

        let defaultLevel = defaults.level ?? EventDefaults.builtInLevel
        top.append((key("defaults"), map([
            ("level", scalar(defaultLevel.rawValue)),
            ("timeout", defaults.timeout.map { scalar($0.description) }),
            ("app", scalar(defaults.app ?? EventDefaults.builtInApp)),
            ("source", defaults.source.map(scalar)),
            ("icon", defaults.icon.map(scalar)),
            ("category", defaults.category.map(scalar)),
            ("deadline", scalar(DurationParser.format(defaults.deadline ?? EventDefaults.builtInDeadline))),
        ])))

        top.append((key("levels"), map(Level.allCases.map { level in
            let style = style(for: level)
            return (level.rawValue, .mapping([
                (key("timeout"), scalar(style.timeout.description)),
                (key("priority"), .key(String(style.journalPriority))),
                (key("urgency"), scalar(style.urgency.rawValue)),
                (key("tint"), scalar(style.tint.rawValue)),
            ], flow: true))
        })))

        top.append((key("sinks"), map(sinks.map { sink in
            var pairs: [(String, YAMLOutput?)] = [
                ("kind", scalar(sink.kind)),
                ("deadline", scalar(DurationParser.format(sink.deadline ?? defaults.deadline ?? EventDefaults.builtInDeadline))),
                ("timeout", sink.timeout.map { scalar($0.description) }),
                ("app", sink.app.map(scalar)),
                ("icon", sink.icon.map(scalar)),
                ("min_level", sink.minimumLevel.map { scalar($0.rawValue) }),
            ]
            pairs += sink.options.entries.map { ($0.key, $0.value.yamlOutput) }
            return (sink.name, map(pairs))
        })))

        if !rules.isEmpty {
            top.append((key("rules"), .sequence(rules.map { rule in
                map([
                    ("name", rule.name.map(scalar)),
                    ("match", rule.matcher.isEmpty ? nil : rule.matcher.yamlOutput),
                    ("set", rule.effects.yamlOutput),
                ])
            }, flow: false)))
        }

        if !routes.isEmpty {
            top.append((key("routes"), .sequence(routes.map { route in
                map([
                    ("name", route.name.map(scalar)),
                    ("match", route.matcher.isEmpty ? .mapping([], flow: true) : route.matcher.yamlOutput),
                    ("to", list(route.sinks)),
                    ("continue", route.continues ? .key("true") : nil),
                    ("failover", route.failover.isEmpty ? nil : list(route.failover)),
                    ("dedup", route.dedupWindow.map { .mapping([(key("window"), scalar(DurationParser.format($0)))], flow: true) }),
                    ("set", route.effects.isEmpty ? nil : route.effects.yamlOutput),
                ])
            }, flow: false)))
        }
        top.append((key("fallback"), list(fallback)))
        top.append((key("state"), .mapping([(key("max_entries"), .key(String(state.maxEntries)))], flow: false)))
        return try YAMLEmitter.serialize(.mapping(top, flow: false))
    }
}

extension EventMatcher {
    var yamlOutput: YAMLOutput {
        var pairs: [(key: YAMLOutput, value: YAMLOutput)] = []
        func globs(_ name: String, _ globs: [Glob]?) {
            guard let globs else { return }
            pairs.append((.key(name), globs.count == 1 ? .scalar(globs[0].pattern, .doubleQuoted)
                : .sequence(globs.map { .scalar($0.pattern, .doubleQuoted) }, flow: true)))
        }
        if let level { pairs.append((.key("level"), .scalar(level.description, .doubleQuoted))) }
        globs("source", source)
        globs("app", app)
        globs("title", title)
        globs("body", body)
        globs("category", category)
        if !tags.isEmpty { pairs.append((.key("tags"), .sequence(tags.sorted().map { .key($0) }, flow: true))) }
        return .mapping(pairs, flow: true)
    }
}

extension EventEffects {
    var yamlOutput: YAMLOutput {
        var pairs: [(key: YAMLOutput, value: YAMLOutput)] = []
        func add(_ name: String, _ value: String?) {
            if let value { pairs.append((.key(name), .scalar(value, .doubleQuoted))) }
        }
        add("level", level?.rawValue)
        add("timeout", timeout?.description)
        add("app", app)
        add("source", source)
        add("icon", icon)
        add("category", category)
        if !tags.isEmpty { pairs.append((.key("tags"), .sequence(tags.sorted().map { .key($0) }, flow: true))) }
        add("dedup_key", dedupKey?.template)
        add("replace_key", replaceKey?.template)
        add("message_id", messageID)
        if !fields.isEmpty {
            pairs.append((.key("fields"), .mapping(fields.sorted { $0.key < $1.key }.map { (.key($0.key), .scalar($0.value, .doubleQuoted)) }, flow: true)))
        }
        if drop { pairs.append((.key("drop"), .key("true"))) }
        return .mapping(pairs, flow: true)
    }
}

extension ConfigNode {
    var yamlOutput: YAMLOutput {
        switch value {
        case .null: .key("null")
        case .scalar(let text): .scalar(text, .doubleQuoted)
        case .sequence(let items): .sequence(items.map(\.yamlOutput), flow: true)
        case .mapping(let entries): .mapping(entries.map { (.key($0.key), $0.value.yamlOutput) }, flow: true)
        }
    }
}
