/// Reads one mapping of a config: checks its keys against the allowed ones (unknown
/// keys are errors, with a suggestion), and converts values with precise errors.
struct ConfigMapping: Sendable {
    let node: ConfigNode
    let entries: [ConfigEntry]
    /// Where this mapping sits, for messages: `sink "tty"`, `route 2`.
    let context: String
    /// The schema's section, whose keys declare the ranges and choices of ``int(_:)`` and ``choice(_:)``.
    let section: ConfigSection?

    init(_ node: ConfigNode, context: String, allowing allowedKeys: [String], section: ConfigSection? = nil) throws(ConfigError) {
        self.node = node
        self.context = context
        self.section = section
        switch node.value {
        case .null:
            entries = []
        case .mapping(let entries):
            self.entries = entries
        default:
            throw ConfigError("\(context): expected a mapping of keys to values, found \(node.kindDescription)", at: node.location)
        }
        for entry in entries where !allowedKeys.contains(entry.key) {
            throw ConfigError(
                Suggestions.unknown("key", entry.key, in: context, expected: allowedKeys),
                at: entry.keyLocation ?? entry.value.location)
        }
    }

    /// A mapping of one section of the config schema: its keys are the ones allowed.
    init(_ node: ConfigNode, context: String, section: ConfigSection) throws(ConfigError) {
        try self.init(node, context: context, allowing: ConfigSchema.names(in: section), section: section)
    }

    subscript(key: String) -> ConfigNode? {
        guard let node = entries.first(where: { $0.key == key })?.value else { return nil }
        if case .null = node.value { return nil }
        return node
    }

    func location(of key: String) -> SourceLocation? {
        entries.first(where: { $0.key == key })?.keyLocation ?? node.location
    }

    func string(_ key: String) throws(ConfigError) -> String? {
        try self[key].map { node throws(ConfigError) in try node.scalarString("\(key)") }
    }

    func bool(_ key: String) throws(ConfigError) -> Bool? {
        try self[key].map { node throws(ConfigError) in try node.bool(key) }
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        try self[key].map { node throws(ConfigError) in try node.int(key, in: range) }
    }

    func duration(_ key: String) throws(ConfigError) -> Duration? {
        try self[key].map { node throws(ConfigError) in try node.duration(key) }
    }

    func timeout(_ key: String) throws(ConfigError) -> NotificationTimeout? {
        try self[key].map { node throws(ConfigError) in try node.timeout(key) }
    }

    func level(_ key: String) throws(ConfigError) -> Level? {
        try self[key].map { node throws(ConfigError) in try node.level(key) }
    }

    func stringList(_ key: String) throws(ConfigError) -> [String]? {
        try self[key].map { node throws(ConfigError) in try node.stringList(key) }
    }

    func stringMap(_ key: String) throws(ConfigError) -> [String: String]? {
        try self[key].map { node throws(ConfigError) in try node.stringMap(key) }
    }

    /// A whole number in the range the schema declares for `key`.
    func int(_ key: String) throws(ConfigError) -> Int? {
        guard case .int(let range)? = schemaKey(key)?.type else { preconditionFailure("\(key) is not a whole number in the schema") }
        return try int(key, in: range)
    }

    /// One of the values the schema declares for `key`.
    func choice(_ key: String) throws(ConfigError) -> String? {
        guard case .choice(let choices)? = schemaKey(key)?.type else { preconditionFailure("\(key) is not a choice in the schema") }
        return try choice(key, from: choices)
    }

    private func schemaKey(_ name: String) -> ConfigKey? {
        section.flatMap { section in ConfigSchema.keys(in: section).first { $0.name == name } }
    }

    func choice(_ key: String, from choices: [String]) throws(ConfigError) -> String? {
        guard let node = self[key] else { return nil }
        let value = try node.scalarString(key)
        guard choices.contains(value) else {
            throw ConfigError(Suggestions.unknown("value for \(key)", value, expected: choices), at: node.location)
        }
        return value
    }
}

extension ConfigNode {
    func scalarString(_ what: String) throws(ConfigError) -> String {
        guard case .scalar(let text) = value else {
            throw ConfigError("\(what): expected a string, found \(kindDescription)", at: location)
        }
        return text
    }

    func bool(_ what: String) throws(ConfigError) -> Bool {
        guard case .scalar(let text) = value else {
            throw ConfigError("\(what): expected true or false, found \(kindDescription)", at: location)
        }
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        case let other: throw ConfigError("\(what): expected true or false, found \"\(other)\"", at: location)
        }
    }

    func int(_ what: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int {
        let text = try scalarString(what)
        guard let number = Int(text), range.contains(number) else {
            throw ConfigError("\(what): expected a whole number from \(range.lowerBound) to \(range.upperBound), found \"\(text)\"", at: location)
        }
        return number
    }

    func duration(_ what: String) throws(ConfigError) -> Duration {
        let text = try scalarString(what)
        do {
            return try DurationParser.parse(text)
        } catch {
            throw ConfigError("\(what): \(error.description)", at: location)
        }
    }

    func timeout(_ what: String) throws(ConfigError) -> NotificationTimeout {
        let text = try scalarString(what)
        do {
            return try NotificationTimeout(parsing: text)
        } catch {
            throw ConfigError("\(what): \(error.description), or never, or default", at: location)
        }
    }

    func level(_ what: String) throws(ConfigError) -> Level {
        let text = try scalarString(what)
        guard let level = Level(rawValue: text.lowercased()) else {
            throw ConfigError(Suggestions.unknown("level", text, in: what, expected: Level.allCases.map(\.rawValue)), at: location)
        }
        return level
    }

    /// A string, or a list of strings.
    func stringList(_ what: String) throws(ConfigError) -> [String] {
        switch value {
        case .scalar(let text): return [text]
        case .sequence(let items):
            var strings: [String] = []
            for item in items { strings.append(try item.scalarString("\(what) item")) }
            return strings
        default:
            throw ConfigError("\(what): expected a string or a list of strings, found \(kindDescription)", at: location)
        }
    }

    func stringMap(_ what: String) throws(ConfigError) -> [String: String] {
        guard case .mapping(let entries) = value else {
            throw ConfigError("\(what): expected a mapping of names to strings, found \(kindDescription)", at: location)
        }
        var map: [String: String] = [:]
        for entry in entries { map[entry.key] = try entry.value.scalarString("\(what).\(entry.key)") }
        return map
    }
}
