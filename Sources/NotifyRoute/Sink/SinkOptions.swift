/// The options of one sink instance from the config, for its plugin to read.
///
/// The plugin declares its option names in ``SinkPlugin/optionKeys``; the router
/// rejects any other key (with a "did you mean") before the plugin sees them, and
/// each typed getter throws a ``ConfigError`` that names file:line:column.
///
/// ```swift
/// let style = try options.choice("style", from: ["line", "banner"]) ?? "line"
/// let identifier = try options.string("identifier")
/// ```
public struct SinkOptions: Sendable {
    /// The instance name in the config (`tty`).
    public let sinkName: String
    public let kind: String
    let mapping: ConfigMapping
    /// The options that may hold a secret (their plugin's ``ConfigKey/secret``), for `config show`.
    let secrets: [String: ConfigSecret]

    init(sinkName: String, kind: String, mapping: ConfigMapping, secrets: [String: ConfigSecret] = [:]) {
        self.sinkName = sinkName
        self.kind = kind
        self.mapping = mapping
        self.secrets = secrets
    }

    /// Options for a sink built in code, without a config file.
    public init(sinkName: String, kind: String, _ values: [String: ConfigNode] = [:]) {
        self.sinkName = sinkName
        self.kind = kind
        let node = ConfigNode(.mapping(values.sorted { $0.key < $1.key }.map { ConfigEntry(key: $0.key, value: $0.value) }))
        self.mapping = try! ConfigMapping(node, context: "sink \"\(sinkName)\"", allowing: values.keys.sorted())
        self.secrets = [:]
    }

    public func string(_ key: String) throws(ConfigError) -> String? { try mapping.string(key) }
    public func bool(_ key: String) throws(ConfigError) -> Bool? { try mapping.bool(key) }
    public func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? { try mapping.int(key, in: range) }
    public func duration(_ key: String) throws(ConfigError) -> Duration? { try mapping.duration(key) }
    public func stringList(_ key: String) throws(ConfigError) -> [String]? { try mapping.stringList(key) }
    public func stringMap(_ key: String) throws(ConfigError) -> [String: String]? { try mapping.stringMap(key) }
    public func choice(_ key: String, from choices: [String]) throws(ConfigError) -> String? {
        try mapping.choice(key, from: choices)
    }

    /// An error about one option, placed at its key.
    public func error(_ message: String, at key: String) -> ConfigError {
        ConfigError("sink \"\(sinkName)\": \(message)", at: mapping.location(of: key))
    }

    /// The raw option nodes, as written (for `config show`).
    public var entries: [ConfigEntry] { mapping.entries }
}
