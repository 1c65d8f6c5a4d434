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
    /// The option keys this kind accepts besides the generic ones (``SinkPlugin/genericOptionKeys``).
    public var optionKeys: [String]
    /// How long the router waits for a sink of this kind whose entry sets no `deadline`,
    /// when the config's `defaults` set none either; `nil`: the built-in 2s.
    public var defaultDeadline: Duration?
    public var makeSink: @Sendable (SinkOptions) throws -> any NotificationSink

    public init(
        kind: String, summary: String, optionKeys: [String] = [], defaultDeadline: Duration? = nil,
        makeSink: @escaping @Sendable (SinkOptions) throws -> any NotificationSink
    ) {
        self.kind = kind
        self.summary = summary
        self.optionKeys = optionKeys
        self.defaultDeadline = defaultDeadline
        self.makeSink = makeSink
    }

    /// Keys every sink accepts; the router reads them, not the plugin.
    ///
    /// - `kind`: the plugin.
    /// - `deadline`: how long the router waits for this sink (default: `defaults.deadline`,
    ///   else the plugin's ``defaultDeadline``, else 2s).
    /// - `timeout`, `app`, `icon`: the sink's layer of the cascade.
    /// - `min_level`: events below this level are not sent to this sink.
    public static let genericOptionKeys = ["kind", "deadline", "timeout", "app", "icon", "min_level"]
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
