/// A kind of sink (`terminal`, `desktop`, `journal`): a name, its options, and how to
/// make one instance from a config entry.
///
/// Plugins are registered by an explicit list (see ``SinkRegistry``), the way
/// Alertmanager wires its integrations: nothing is discovered by reflection.
///
/// ```swift
/// let plugin = SinkPlugin(kind: "stderr", summary: "one line per event on stderr",
///                         optionKeys: ["prefix"]) { options in
///     StderrSink(prefix: try options.string("prefix") ?? "")
/// }
/// ```
public struct SinkPlugin: Sendable {
    public var kind: String
    /// One line for `notify-route sinks`.
    public var summary: String
    /// The options this kind accepts besides the generic ones (``ConfigSection/sink``), in the
    /// config schema's terms: the loader allows exactly these, and the key reference lists them.
    public private(set) var options: [ConfigKey]
    /// How long the router waits for a sink of this kind whose entry sets no `deadline`,
    /// when the config's `defaults` set none either; `nil`: the built-in 2s.
    public var defaultDeadline: Duration?
    public var makeSink: @Sendable (SinkOptions) throws -> any NotificationSink

    /// A plugin whose options are declared with their type, default and description.
    ///
    /// ```swift
    /// SinkPlugin(kind: "stderr", summary: "one line per event on stderr", options: [
    ///     .option("prefix", .string, example: "\"> \"", "written before each line"),
    /// ]) { options in StderrSink(prefix: try options.string("prefix") ?? "") }
    /// ```
    public init(
        kind: String, summary: String, options: [ConfigKey], defaultDeadline: Duration? = nil,
        makeSink: @escaping @Sendable (SinkOptions) throws -> any NotificationSink
    ) {
        self.kind = kind
        self.summary = summary
        self.defaultDeadline = defaultDeadline
        self.options = options.map { option in
            var option = option
            option.section = .sinkOptions(kind: kind)
            return option
        }
        self.makeSink = makeSink
    }

    /// A plugin whose options are known by name only (the key reference lists them undescribed).
    public init(
        kind: String, summary: String, optionKeys: [String] = [], defaultDeadline: Duration? = nil,
        makeSink: @escaping @Sendable (SinkOptions) throws -> any NotificationSink
    ) {
        self.init(kind: kind, summary: summary, options: optionKeys.map {
            .option($0, .other("see the plugin's documentation (README: Sinks)"), example: "", "")
        }, defaultDeadline: defaultDeadline, makeSink: makeSink)
    }

    /// The option keys this kind accepts besides the generic ones (``SinkPlugin/genericOptionKeys``).
    public var optionKeys: [String] { options.map(\.name) }

    /// Keys every sink accepts; the router reads them, not the plugin (see ``ConfigSection/sink``).
    public static let genericOptionKeys = ConfigSchema.names(in: .sink)
}

/// The plugin kinds a router knows, by name. A duplicate kind is an error at start-up.
public struct SinkRegistry: Sendable {
    public struct DuplicateKindError: Error, Hashable, Sendable, CustomStringConvertible {
        public var kind: String
        public init(kind: String) { self.kind = kind }
        public var description: String { "sink kind \"\(kind)\" is registered twice; each kind must be unique" }
    }

    public private(set) var plugins: [SinkPlugin] = []

    public init(_ plugins: [SinkPlugin]) throws(DuplicateKindError) {
        for plugin in plugins { try register(plugin) }
    }

    public mutating func register(_ plugin: SinkPlugin) throws(DuplicateKindError) {
        guard self.plugin(forKind: plugin.kind) == nil else { throw DuplicateKindError(kind: plugin.kind) }
        plugins.append(plugin)
    }

    public func plugin(forKind kind: String) -> SinkPlugin? {
        plugins.first { $0.kind == kind }
    }

    public var kinds: [String] { plugins.map(\.kind) }
}
