import YAMLDocument

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

    /// The deepest a value may sit (the top-level mapping is at 0): a config is shallow,
    /// and a deeper file is a mistake or an attack on the parser.
    public static let maximumDepth = 64

    /// Parses YAML text; `file` is the name used in error messages.
    ///
    /// libyaml's event parser composes the tree (`YAMLComposer`); every value is kept
    /// as the string written, and only a plain empty, `~` or `null` is null: the readers
    /// of ``ConfigMapping`` decide what `true` or `5` means where they expect it.
    /// A UTF-8 byte-order mark at the start (as some Windows editors save) is skipped.
    public static func parse(yaml: String, file: String) throws(ConfigError) -> ConfigNode {
        let yaml = yaml.unicodeScalars.first == "\u{FEFF}" ? String(yaml.unicodeScalars.dropFirst()) : yaml
        let composed: YAMLNode?
        do throws(YAMLError) {
            composed = try YAMLComposer.singleRoot(yaml: yaml, maximumDepth: maximumDepth)
        } catch {
            throw ConfigError(error, in: yaml, file: file)
        }
        guard let root = composed else {
            return ConfigNode(.null, at: SourceLocation(file: file, line: 1, column: 1))
        }
        var budget = maximumNodeCount
        return try convert(root, file: file, budget: &budget, depth: 0)
    }

    private static func convert(_ node: YAMLNode, file: String, budget: inout Int, depth: Int) throws(ConfigError) -> ConfigNode {
        let location = SourceLocation(file: file, line: node.mark.line, column: node.mark.column)
        budget -= 1
        guard budget >= 0 else {
            throw ConfigError(
                "config expands to more than \(maximumNodeCount) values (YAML aliases nested too deep?); refusing to load it",
                at: location)
        }
        guard depth < maximumDepth else { throw ConfigError.tooDeep(at: location) }
        switch node {
        case .scalar(let text, let plain, _):
            if plain, YAMLNode.nullSpellings.contains(text) {
                return ConfigNode(.null, at: location)
            }
            return ConfigNode(.scalar(text), at: location)
        case .sequence(let sequence, _):
            var items: [ConfigNode] = []
            items.reserveCapacity(sequence.count)
            for item in sequence {
                items.append(try convert(item, file: file, budget: &budget, depth: depth + 1))
            }
            return ConfigNode(.sequence(items), at: location)
        case .mapping(let mapping, _):
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
    /// What the composer found, in the config's words and at its place in `text`.
    init(_ error: YAMLError, in text: String, file: String) {
        let location = switch error.position {
        case .mark(let mark): SourceLocation(file: file, line: mark.line, column: mark.column)
        case .byteOffset(let offset): ConfigError.location(ofByteOffset: offset, in: text, file: file)
        }
        switch error.problem {
        case .invalid(let problem):
            self.init("invalid YAML: \(problem)", at: location)
        case .duplicateKeys(let keys):
            let names = keys.map { "\"\($0.name)\" (first at \($0.first.line):\($0.first.column))" }.joined(separator: ", ")
            self.init("duplicate key \(names) in one mapping; each key may appear once", at: location)
        case .tooDeep:
            self = .tooDeep(at: location)
        }
    }

    static func tooDeep(at location: SourceLocation) -> ConfigError {
        ConfigError("config is nested more than \(ConfigNode.maximumDepth) levels deep; expected a shallow mapping", at: location)
    }

    /// Where the byte at `offset` of `text` is: lines and columns from 1, columns in Unicode scalars.
    static func location(ofByteOffset offset: Int, in text: String, file: String) -> SourceLocation {
        var line = 1, column = 1
        for (index, byte) in text.utf8.enumerated() {
            if index >= offset { break }
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return SourceLocation(file: file, line: line, column: column)
    }
}
