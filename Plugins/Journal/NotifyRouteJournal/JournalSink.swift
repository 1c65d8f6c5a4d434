import NotifyRoute

// Placeholder until the journal plugin (its own issue) lands: the kind exists so configs
// that name it load, and every delivery reports the sink unavailable with the reason.
public struct JournalSink: NotificationSink {
    public static let plugin = SinkPlugin(kind: "journal", summary: "journal notifications through libnotify (not built yet)") { _ in JournalSink() }
    public var capabilities: SinkCapabilities { SinkCapabilities() }
    public func availability() async -> SinkAvailability { .unavailable(reason: "the journal plugin is not built yet") }
    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        throw SinkError(.unavailable, "the journal plugin is not built yet")
    }
}
