extension RouterConfiguration {
    /// The config in effect: this one with every default of ``ConfigSchema`` filled in
    /// (the defaults' level, app and deadline, each sink's deadline, the whole level
    /// table). It routes every event as this one does; `config show` prints it.
    public var effective: RouterConfiguration {
        var config = self
        config.levels = Dictionary(uniqueKeysWithValues: Level.allCases.map { level in
            let style = style(for: level)
            return (level, LevelOverrides(timeout: style.timeout, journalPriority: style.journalPriority, urgency: style.urgency, tint: style.tint))
        })
        config.defaults.level = defaults.level ?? EventDefaults.builtInLevel
        config.defaults.app = defaults.app ?? EventDefaults.builtInApp
        let deadline = defaults.deadline ?? EventDefaults.builtInDeadline
        config.defaults.deadline = deadline
        for index in config.sinks.indices where config.sinks[index].deadline == nil {
            config.sinks[index].deadline = deadline
        }
        return config
    }

    /// What the config says, without where it was said (``origin`` and source locations).
    var withoutLocations: RouterConfiguration {
        var config = self
        config.origin = ""
        for index in config.sinks.indices {
            config.sinks[index].location = nil
        }
        for index in config.rules.indices { config.rules[index].location = nil }
        for index in config.routes.indices { config.routes[index].location = nil }
        for index in config.inhibitRules.indices { config.inhibitRules[index].location = nil }
        for index in config.sources.indices { config.sources[index].location = nil }
        return config
    }
}

extension RouterConfiguration: Equatable {
    /// Two configs are equal when they are the same config in effect: where each was read
    /// from (``origin``, source locations) is not compared, and a default left unset equals
    /// the same value written out. A config loaded from `config show`'s output equals the
    /// config shown.
    public static func == (lhs: RouterConfiguration, rhs: RouterConfiguration) -> Bool {
        let lhs = lhs.effective.withoutLocations, rhs = rhs.effective.withoutLocations
        // Every stored property but `origin`: a new one must be added here.
        return lhs.defaults == rhs.defaults && lhs.levels == rhs.levels && lhs.sinks == rhs.sinks && lhs.rules == rhs.rules
            && lhs.routes == rhs.routes && lhs.fallback == rhs.fallback && lhs.state == rhs.state
            && lhs.inhibitRules == rhs.inhibitRules && lhs.serve == rhs.serve && lhs.sources == rhs.sources
            && lhs.history == rhs.history
    }
}

extension SinkOptions: Equatable {
    /// Equal when they hold the same options for the same sink; the mapping's context and
    /// location are where they came from, not what they say.
    public static func == (lhs: SinkOptions, rhs: SinkOptions) -> Bool {
        lhs.sinkName == rhs.sinkName && lhs.kind == rhs.kind
            && ConfigNode(.mapping(lhs.entries)).withoutLocations == ConfigNode(.mapping(rhs.entries)).withoutLocations
    }
}

extension ConfigNode {
    var withoutLocations: ConfigNode {
        switch value {
        case .null, .scalar: ConfigNode(value, at: nil)
        case .sequence(let items): ConfigNode(.sequence(items.map(\.withoutLocations)), at: nil)
        case .mapping(let entries):
            ConfigNode(.mapping(entries.map { ConfigEntry(key: $0.key, keyLocation: nil, value: $0.value.withoutLocations) }), at: nil)
        }
    }
}
