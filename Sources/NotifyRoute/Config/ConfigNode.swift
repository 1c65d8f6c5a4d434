import Yams

/// A config value with the place it came from, so every error can name file:line:column.
///
/// Built from YAML by ``ConfigNode/parse(yaml:file:)`` or in code with literals, for
/// library users who configure a router without a file.
public struct ConfigNode: Hashable, Sendable {
    public indirect enum Content: Hashable, Sendable {
        case null
        case scalar(String)
        case sequence([ConfigNode])
        case mapping([ConfigEntry])
    }

    public var value: Content
    public var location: SourceLocation?

    public init(_ value: Content, at location: SourceLocation? = nil) {
        self.value = value
        self.location = location
    }

    /// The most nodes one config may expand to: YAML aliases can make a small file
    /// describe an enormous tree ("billion laughs"); past this it is refused.
    public static let maximumNodeCount = 100_000

    /// Parses YAML text; `file` is the name used in error messages.
    public static func parse(yaml: String, file: String) throws(ConfigError) -> ConfigNode {
        let root: Node?
        do {
            root = try Parser(yaml: yaml).singleRoot()
        } catch let error as YamlError {
            throw ConfigError(yamlError: error, file: file)
        } catch {
            throw ConfigError("cannot parse YAML: \(error)", at: SourceLocation(file: file, line: 1, column: 1))
        }
        guard let root else { return ConfigNode(.null, at: SourceLocation(file: file, line: 1, column: 1)) }
        var budget = maximumNodeCount
        return try convert(root, file: file, budget: &budget, depth: 0)
    }

    private static func convert(_ node: Node, file: String, budget: inout Int, depth: Int) throws(ConfigError) -> ConfigNode {
        let location = node.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
            ?? SourceLocation(file: file, line: 1, column: 1)
        budget -= 1
        guard budget >= 0 else {
            throw ConfigError(
                "config expands to more than \(maximumNodeCount) values (YAML aliases nested too deep?); refusing to load it",
                at: location)
        }
        guard depth < 64 else {
            throw ConfigError("config is nested more than 64 levels deep; expected a shallow mapping", at: location)
        }
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain, ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
                return ConfigNode(.null, at: location)
            }
            return ConfigNode(.scalar(scalar.string), at: location)
        case .sequence(let sequence):
            var items: [ConfigNode] = []
            items.reserveCapacity(sequence.count)
            for item in sequence {
                items.append(try convert(item, file: file, budget: &budget, depth: depth + 1))
            }
            return ConfigNode(.sequence(items), at: location)
        case .mapping(let mapping):
            var entries: [ConfigEntry] = []
            entries.reserveCapacity(mapping.count)
            for (key, value) in mapping {
                let keyNode = try convert(key, file: file, budget: &budget, depth: depth + 1)
                guard case .scalar(let name) = keyNode.value else {
                    throw ConfigError("a mapping key must be a plain string", at: keyNode.location)
                }
                let valueNode = try convert(value, file: file, budget: &budget, depth: depth + 1)
                entries.append(ConfigEntry(key: name, keyLocation: keyNode.location, value: valueNode))
            }
            return ConfigNode(.mapping(entries), at: location)
        case .alias:
            throw ConfigError("YAML aliases are not supported here; write the value out", at: location)
        }
    }

    /// A short name of what this node is, for "expected a list, found a string".
    var kindDescription: String {
        switch value {
        case .null: "nothing"
        case .scalar(let text): "\"\(text)\""
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }
}

/// One `key: value` pair of a mapping, with the key's own position.
public struct ConfigEntry: Hashable, Sendable {
    public var key: String
    public var keyLocation: SourceLocation?
    public var value: ConfigNode

    public init(key: String, keyLocation: SourceLocation? = nil, value: ConfigNode) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }
}

extension ConfigNode: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public typealias Key = String
    public typealias Value = ConfigNode
    public init(stringLiteral value: String) { self.init(.scalar(value)) }
    public init(booleanLiteral value: Bool) { self.init(.scalar(value ? "true" : "false")) }
    public init(integerLiteral value: Int) { self.init(.scalar(String(value))) }
    public init(arrayLiteral elements: ConfigNode...) { self.init(.sequence(elements)) }
    public init(dictionaryLiteral elements: (String, ConfigNode)...) {
        self.init(.mapping(elements.map { ConfigEntry(key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self.init(.null) }
}

extension ConfigError {
    init(yamlError error: YamlError, file: String) {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(file: file, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            if problem.hasPrefix("Maximum nesting level reached") {
                // libyaml's own limit (1000), met before ours: say it as ours, not as its C API.
                self.init("config is nested more than 64 levels deep; expected a shallow mapping", at: at(mark))
                return
            }
            let prefix = context.map { "\($0.text.trimmingWhitespace()): " } ?? ""
            self.init("invalid YAML: \(prefix)\(problem)", at: at(mark))
        case .reader(let problem, let offset, _, let yaml):
            let location = offset.map { ConfigError.location(ofByteOffset: $0, in: yaml, file: file) }
            self.init("invalid YAML: \(problem)", at: location ?? SourceLocation(file: file, line: 1, column: 1))
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            self.init("duplicate key \(keys) in one mapping; each key may appear once", at: at(context.mark))
        default:
            self.init("invalid YAML: \(error)", at: SourceLocation(file: file, line: 1, column: 1))
        }
    }

    static func location(ofByteOffset offset: Int, in text: String, file: String) -> SourceLocation {
        var line = 1, column = 1
        for (index, byte) in text.utf8.enumerated() {
            if index >= offset { break }
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return SourceLocation(file: file, line: line, column: column)
    }
}
