import Yams

extension RouterConfiguration {
    /// The effective config as YAML, with every default filled in: what
    /// `notify-route config show` prints. The output loads back to the same config.
    public func effectiveYAML() throws -> String {
        var top: [(Node, Node)] = []
        func key(_ text: String) -> Node { Node(text) }
        func scalar(_ text: String) -> Node { Node(text, Tag(.str), .plain) }
        func map(_ pairs: [(String, Node?)]) -> Node {
            Node(pairs.compactMap { pair in pair.1.map { (key(pair.0), $0) } }, Tag(.map), .block)
        }
        func list(_ items: [String]) -> Node { Node(items.map(scalar), Tag(.seq), .flow) }

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
            return (level.rawValue, Node([
                (key("timeout"), scalar(style.timeout.description)),
                (key("priority"), Node(String(style.journalPriority))),
                (key("urgency"), scalar(style.urgency.rawValue)),
                (key("tint"), scalar(style.tint.rawValue)),
            ], Tag(.map), .flow))
        })))

        top.append((key("sinks"), map(sinks.map { sink in
            var pairs: [(String, Node?)] = [
                ("kind", scalar(sink.kind)),
                ("deadline", scalar(DurationParser.format(sink.deadline ?? defaults.deadline ?? EventDefaults.builtInDeadline))),
                ("timeout", sink.timeout.map { scalar($0.description) }),
                ("app", sink.app.map(scalar)),
                ("icon", sink.icon.map(scalar)),
                ("min_level", sink.minimumLevel.map { scalar($0.rawValue) }),
            ]
            pairs += sink.options.entries.map { ($0.key, $0.value.yamsNode) }
            return (sink.name, map(pairs))
        })))

        if !rules.isEmpty {
            top.append((key("rules"), Node(rules.map { rule in
                map([
                    ("name", rule.name.map(scalar)),
                    ("match", rule.matcher.isEmpty ? nil : rule.matcher.yamsNode),
                    ("set", rule.effects.yamsNode),
                ])
            }, Tag(.seq), .block)))
        }

        if !routes.isEmpty {
            top.append((key("routes"), Node(routes.map { route in
                map([
                    ("name", route.name.map(scalar)),
                    ("match", route.matcher.isEmpty ? Node([(Node, Node)](), Tag(.map), .flow) : route.matcher.yamsNode),
                    ("to", list(route.sinks)),
                    ("continue", route.continues ? Node("true") : nil),
                    ("failover", route.failover.isEmpty ? nil : list(route.failover)),
                    ("dedup", route.dedupWindow.map { Node([(key("window"), scalar(DurationParser.format($0)))], Tag(.map), .flow) }),
                    ("set", route.effects.isEmpty ? nil : route.effects.yamsNode),
                ])
            }, Tag(.seq), .block)))
        }
        top.append((key("fallback"), list(fallback)))
        top.append((key("state"), Node([(key("max_entries"), Node(String(state.maxEntries)))], Tag(.map), .block)))
        return try Yams.serialize(node: Node(top, Tag(.map), .block), sortKeys: false)
    }
}

extension EventMatcher {
    var yamsNode: Node {
        var pairs: [(Node, Node)] = []
        func globs(_ name: String, _ globs: [Glob]?) {
            guard let globs else { return }
            pairs.append((Node(name), globs.count == 1 ? Node(globs[0].pattern, Tag(.str), .doubleQuoted)
                : Node(globs.map { Node($0.pattern, Tag(.str), .doubleQuoted) }, Tag(.seq), .flow)))
        }
        if let level { pairs.append((Node("level"), Node(level.description, Tag(.str), .doubleQuoted))) }
        globs("source", source)
        globs("app", app)
        globs("title", title)
        globs("body", body)
        globs("category", category)
        if !tags.isEmpty { pairs.append((Node("tags"), Node(tags.sorted().map { Node($0) }, Tag(.seq), .flow))) }
        return Node(pairs, Tag(.map), .flow)
    }
}

extension EventEffects {
    var yamsNode: Node {
        var pairs: [(Node, Node)] = []
        func add(_ name: String, _ value: String?) {
            if let value { pairs.append((Node(name), Node(value, Tag(.str), .doubleQuoted))) }
        }
        add("level", level?.rawValue)
        add("timeout", timeout?.description)
        add("app", app)
        add("source", source)
        add("icon", icon)
        add("category", category)
        if !tags.isEmpty { pairs.append((Node("tags"), Node(tags.sorted().map { Node($0) }, Tag(.seq), .flow))) }
        add("dedup_key", dedupKey?.template)
        add("replace_key", replaceKey?.template)
        add("message_id", messageID)
        if !fields.isEmpty {
            pairs.append((Node("fields"), Node(fields.sorted { $0.key < $1.key }.map { (Node($0.key), Node($0.value, Tag(.str), .doubleQuoted)) }, Tag(.map), .flow)))
        }
        if drop { pairs.append((Node("drop"), Node("true"))) }
        return Node(pairs, Tag(.map), .flow)
    }
}

extension ConfigNode {
    var yamsNode: Node {
        switch value {
        case .null: Node("null")
        case .scalar(let text): Node(text, Tag(.str), .doubleQuoted)
        case .sequence(let items): Node(items.map(\.yamsNode), Tag(.seq), .flow)
        case .mapping(let entries): Node(entries.map { (Node($0.key), $0.value.yamsNode) }, Tag(.map), .flow)
        }
    }
}
