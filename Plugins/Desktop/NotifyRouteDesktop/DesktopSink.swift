import NotifyRoute

// Placeholder until the desktop plugin (its own issue) lands: the kind exists so configs
// that name it load, and every delivery reports the sink unavailable with the reason.
public struct DesktopSink: NotificationSink {
    public static let plugin = SinkPlugin(kind: "desktop", summary: "desktop notifications through libnotify (not built yet)") { _ in DesktopSink() }
    public var capabilities: SinkCapabilities { SinkCapabilities() }
    public func availability() async -> SinkAvailability { .unavailable(reason: "the desktop plugin is not built yet") }
    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        throw SinkError(.unavailable, "the desktop plugin is not built yet")
    }
}
