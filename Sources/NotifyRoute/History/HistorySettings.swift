import YAMLDocument

/// `history:`: the bounds of the history log and how a pause ends.
///
/// ```yaml
/// history: { max_events: 10000, max_bytes: 10485760, resume_one_by_one: 3 }
/// ```
public struct HistorySettings: Hashable, Sendable {
    /// Past this many events the oldest are dropped.
    public var maxEvents: Int
    /// Past this many bytes of recorded events the oldest are dropped.
    public var maxBytes: Int
    /// Up to this many events held by a pause are delivered one by one when it ends;
    /// more are delivered as one summary.
    public var resumeOneByOne: Int

    public static let defaultMaxEvents = 10_000
    public static let defaultMaxBytes = 10 << 20
    public static let defaultResumeOneByOne = 3

    public init(maxEvents: Int = defaultMaxEvents, maxBytes: Int = defaultMaxBytes, resumeOneByOne: Int = defaultResumeOneByOne) {
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
        self.resumeOneByOne = resumeOneByOne
    }

    static let keys: [ConfigKey] = [
        ConfigKey(.history, "max_events", .int(1...10_000_000), default: .value(String(defaultMaxEvents)), example: "500",
                  "how many routed events `notify-route history` keeps; the oldest are dropped past it"),
        ConfigKey(.history, "max_bytes", .int(4096...(1 << 34)), default: .value(String(defaultMaxBytes)), example: "1048576",
                  "how many bytes of recorded events are kept; the oldest are dropped past it"),
        ConfigKey(.history, "resume_one_by_one", .int(0...1000), default: .value(String(defaultResumeOneByOne)), example: "0",
                  "up to this many events held by `notify-route pause` are delivered one by one on resume; more as one summary"),
    ]

    init(_ node: ConfigNode) throws(ConfigError) {
        self.init()
        let map = try ConfigMapping(node, context: "history", section: .history)
        if let value = try map.int("max_events") { maxEvents = value }
        if let value = try map.int("max_bytes") { maxBytes = value }
        if let value = try map.int("resume_one_by_one") { resumeOneByOne = value }
    }

    var yamlOutput: YAMLOutput {
        .section(.history) { name in
            switch name {
            case "max_events": .key(String(maxEvents))
            case "max_bytes": .key(String(maxBytes))
            case "resume_one_by_one": .key(String(resumeOneByOne))
            default: nil
            }
        }
    }
}
