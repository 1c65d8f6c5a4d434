import YAMLDocument

extension RouterConfiguration {
    /// The config in effect as YAML, every key of ``ConfigSchema`` that has a default
    /// written out: what `notify-route config show` prints. It loads back to a config
    /// equal to this one, unless `redactingSecrets` writes the values that may hold a
    /// secret (``ConfigSecret``) as their safe forms.
    public func effectiveYAML(redactingSecrets: Bool = false) throws -> String {
        let config = effective
        return try YAMLEmitter.serialize(YAMLOutput.section(.top) { name in
            switch name {
            case "defaults": config.defaults.yamlOutput
            case "levels": .mapping(Level.allCases.map { (.key($0.rawValue), (config.levels[$0] ?? LevelOverrides()).yamlOutput) }, flow: false)
            case "sinks": .mapping(config.sinks.map { (.key($0.name), $0.yamlOutput(redactingSecrets: redactingSecrets)) }, flow: false)
            case "rules": .sequence(config.rules.map(\.yamlOutput), flow: config.rules.isEmpty)
            case "routes": .sequence(config.routes.map(\.yamlOutput), flow: config.routes.isEmpty)
            case "fallback": .names(config.fallback)
            case "state": .section(.state) { $0 == "max_entries" ? .key(String(config.state.maxEntries)) : nil }
            case "history": config.history.yamlOutput
            case "inhibit": .sequence(config.inhibitRules.map(\.yamlOutput), flow: config.inhibitRules.isEmpty)
            case "serve": .section(.serve) { _ in
                .section(.serveAllow) { key in
                    let ids = key == "uids" ? config.serve.allowedUIDs : config.serve.allowedGroups
                    return .sequence(ids.map { .key(String($0)) }, flow: true)
                }
            }
            case "sources": .mapping(config.sources.map { (.key($0.name), $0.yamlOutput) }, flow: config.sources.isEmpty)
            default: nil
            }
        })
    }
}

extension YAMLOutput {
    /// A mapping of one section of ``ConfigSchema``, its keys in the schema's order; `value`
    /// gives each key's value, `nil` for a key that is not set.
    static func section(_ section: ConfigSection, flow: Bool = false, _ value: (String) -> YAMLOutput?) -> YAMLOutput {
        .mapping(pairs(section, value), flow: flow)
    }

    static func pairs(_ section: ConfigSection, _ value: (String) -> YAMLOutput?) -> [(key: YAMLOutput, value: YAMLOutput)] {
        ConfigSchema.keys(in: section).compactMap { key in value(key.name).map { (.key(key.name), $0) } }
    }

    static func names(_ names: [String]) -> YAMLOutput { .sequence(names.map { .key($0) }, flow: true) }

    static func quoted(_ text: String?) -> YAMLOutput? { text.map { .scalar($0, .doubleQuoted) } }

    static func plain(_ text: String?) -> YAMLOutput? { text.map { .key($0) } }

    static func duration(_ duration: Duration?) -> YAMLOutput? { duration.map { .key(DurationParser.format($0)) } }

    static func bool(_ value: Bool) -> YAMLOutput { .key(value ? "true" : "false") }
}

extension EventDefaults {
    var yamlOutput: YAMLOutput {
        .section(.defaults) { name in
            switch name {
            case "level": level.map { .key($0.rawValue) }
            case "timeout": timeout.map { .key($0.description) }
            case "app": .plain(app)
            case "source": .plain(source)
            case "icon": .plain(icon)
            case "category": .plain(category)
            case "deadline": .duration(deadline)
            default: nil
            }
        }
    }
}

extension LevelOverrides {
    var yamlOutput: YAMLOutput {
        .section(.level, flow: true) { name in
            switch name {
            case "timeout": timeout.map { .key($0.description) }
            case "priority": journalPriority.map { .key(String($0)) }
            case "urgency": urgency.map { .key($0.rawValue) }
            case "tint": tint.map { .key($0.rawValue) }
            default: nil
            }
        }
    }
}

extension SinkDeclaration {
    func yamlOutput(redactingSecrets: Bool) -> YAMLOutput {
        let generic = YAMLOutput.pairs(.sink) { name in
            switch name {
            case "kind": .key(kind)
            case "deadline": .duration(deadline)
            case "timeout": timeout.map { .key($0.description) }
            case "app": .plain(app)
            case "icon": .plain(icon)
            case "min_level": minimumLevel.map { .key($0.rawValue) }
            default: nil
            }
        }
        // The plugin's options as written: the plugin, not the router, knows their defaults.
        return .mapping(generic + options.entries.map { entry in
            let secret = redactingSecrets ? options.secrets[entry.key] : nil
            return (.key(entry.key), (secret.map { entry.value.redacted($0) } ?? entry.value).yamlOutput)
        }, flow: false)
    }
}

extension ConfigNode {
    /// The node with its secret parts replaced (``ConfigSecret``), its shape kept.
    func redacted(_ secret: ConfigSecret) -> ConfigNode {
        var node = self
        switch (secret, value) {
        case (.url, .scalar(let text)): node.value = .scalar(SecretText.redactedURL(text))
        case (.url, .sequence(let items)): node.value = .sequence(items.map { $0.redacted(.url) })
        case (.values, .mapping(let entries)):
            node.value = .mapping(entries.map { ConfigEntry(key: $0.key, value: ConfigNode(.scalar(SecretText.placeholder), at: $0.value.location)) })
        default: break
        }
        return node
    }
}

extension RoutingRule {
    var yamlOutput: YAMLOutput {
        .section(.rule) { name in
            switch name {
            case "name": .plain(self.name)
            case "match": matcher.yamlOutput
            case "set": effects.yamlOutput(.ruleSet)
            default: nil
            }
        }
    }
}

extension Route {
    var yamlOutput: YAMLOutput {
        .section(.route) { name in
            switch name {
            case "name": .plain(self.name)
            case "match": matcher.yamlOutput
            case "to": .names(sinks)
            case "continue": .bool(continues)
            case "failover": .names(failover)
            case "dedup": dedupWindow.map { window in .section(.dedup, flow: true) { $0 == "window" ? .duration(window) : nil } }
            case "set": effects.yamlOutput(.routeSet)
            case "rate": rateLimit?.yamlOutput
            case "quiet": quietHours?.yamlOutput
            case "escalate": escalation?.yamlOutput
            case "snooze": snooze?.yamlOutput
            case "group": group?.yamlOutput
            default: nil
            }
        }
    }
}

extension GroupPolicy {
    var yamlOutput: YAMLOutput {
        .section(.group, flow: true) { name in
            switch name {
            case "by": by.isEmpty ? nil : .names(by)
            case "wait": .duration(wait)
            case "interval": .duration(interval)
            default: nil
            }
        }
    }
}

extension RateLimit {
    var yamlOutput: YAMLOutput {
        .section(.rate, flow: true) { name in
            switch name {
            case "max": .key(String(max))
            case "per": .duration(per)
            default: nil
            }
        }
    }
}

extension QuietHours {
    var yamlOutput: YAMLOutput {
        .section(.quiet, flow: true) { name in
            switch name {
            case "hours": .sequence(windows.map { .scalar($0.description, .doubleQuoted) }, flow: true)
            case "timezone": .quoted(timeZone)
            case "breakthrough": .key(breakthrough.rawValue)
            default: nil
            }
        }
    }
}

extension InhibitRule {
    var yamlOutput: YAMLOutput {
        .section(.inhibit) { name in
            switch name {
            case "source": source.yamlOutput
            case "target": target.yamlOutput
            case "equal": .names(equal)
            case "for": .duration(duration)
            default: nil
            }
        }
    }
}

extension EventMatcher {
    var yamlOutput: YAMLOutput {
        func globs(_ globs: [Glob]?) -> YAMLOutput? {
            guard let globs else { return nil }
            return globs.count == 1 ? .scalar(globs[0].pattern, .doubleQuoted)
                : .sequence(globs.map { .scalar($0.pattern, .doubleQuoted) }, flow: true)
        }
        return .section(.match, flow: true) { name in
            switch name {
            case "level": .quoted(level?.description)
            case "source": globs(source)
            case "app": globs(app)
            case "title": globs(title)
            case "body": globs(body)
            case "category": globs(category)
            case "tags": tags.isEmpty ? nil : .names(tags.sorted())
            default: nil
            }
        }
    }
}

extension EventEffects {
    /// The keys of `section` (a rule's `set` or a route's): a route's effects hold only its keys.
    func yamlOutput(_ section: ConfigSection) -> YAMLOutput {
        .section(section, flow: true) { name in
            switch name {
            case "level": .quoted(level?.rawValue)
            case "timeout": .quoted(timeout?.description)
            case "app": .quoted(app)
            case "source": .quoted(source)
            case "icon": .quoted(icon)
            case "category": .quoted(category)
            case "tags": tags.isEmpty ? nil : .names(tags.sorted())
            case "dedup_key": .quoted(dedupKey?.template)
            case "replace_key": .quoted(replaceKey?.template)
            case "message_id": .quoted(messageID)
            case "fields": fields.isEmpty ? nil
                : .mapping(fields.sorted { $0.key < $1.key }.map { (.key($0.key), .scalar($0.value, .doubleQuoted)) }, flow: true)
            case "drop": .bool(drop)
            case "history": .bool(history)
            default: nil
            }
        }
    }
}

extension ConfigNode {
    var yamlOutput: YAMLOutput {
        switch value {
        case .null: .null
        case .scalar(let text): .scalar(text, .doubleQuoted)
        case .sequence(let items): .sequence(items.map(\.yamlOutput), flow: true)
        case .mapping(let entries): .mapping(entries.map { (.key($0.key), $0.value.yamlOutput) }, flow: true)
        }
    }
}
