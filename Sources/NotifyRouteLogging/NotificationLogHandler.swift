import Logging
import NotifyRoute

/// A swift-log `LogHandler` that turns records at or above ``minimumLevel`` into
/// notifications, sent through a ``NotificationLogBridge``'s router.
///
/// Make one with ``NotificationLogBridge/handler(label:minimumLevel:metadataProvider:)``,
/// usually next to your console handler in a `MultiplexLogHandler`:
///
/// ```swift
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([
///         StreamLogHandler.standardOutput(label: label),
///         bridge.handler(label: label, minimumLevel: .error),
///     ])
/// }
/// ```
///
/// Logging never waits for a sink: ``log(event:)`` hands the record to the bridge's
/// bounded buffer and returns. The record becomes a `NotificationEvent` with the
/// logger's label as `app`, the record's source as `source`, the first line of the
/// message as the title and the rest as the body, the metadata (the handler's, the
/// provider's, the record's; nested values flattened to `a.b` and `a.0`) as `fields`,
/// the record's error as the `error` field, and its file, function and line as the
/// `callSite`.
public struct NotificationLogHandler: LogHandler {
    public let label: String
    /// Records below this level are never sent, whatever ``logLevel`` says.
    ///
    /// `MultiplexLogHandler` sets the `logLevel` of every handler it holds, so
    /// `logger.logLevel = .debug` for a chattier console would otherwise turn every
    /// debug record into a notification. `logLevel` can raise the threshold, not lower it.
    public let minimumLevel: Logger.Level
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let bridge: NotificationLogBridge
    /// False for the router's own loggers (see ``NotificationLogBridge/ignoredLabelPrefixes``).
    let forwards: Bool

    init(label: String, minimumLevel: Logger.Level, metadataProvider: Logger.MetadataProvider?,
         bridge: NotificationLogBridge, forwards: Bool) {
        self.label = label
        self.minimumLevel = minimumLevel
        // An ignored label asks for nothing, so it never lowers a multiplexer's effective level.
        self.logLevel = forwards ? minimumLevel : .critical
        self.metadataProvider = metadataProvider
        self.bridge = bridge
        self.forwards = forwards
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // A sink that logs while the bridge delivers (on the bridge's own task) must not
        // feed its record back into the router.
        guard forwards, event.level >= max(minimumLevel, logLevel), !NotificationLogBridge.isDelivering else { return }
        // Merged as StreamLogHandler does: handler, then provider, then the record's own.
        // The provider runs here, on the caller's task, where its task-locals live.
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, provided in provided }
        }
        if let own = event.metadata, !own.isEmpty {
            merged.merge(own) { _, own in own }
        }
        bridge.enqueue(LogRecord(
            label: label, level: event.level, message: event.message.description, error: event.error,
            metadata: merged, source: event.source, file: event.file, function: event.function, line: event.line))
    }
}
