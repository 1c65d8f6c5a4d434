import NotifyRoute

/// Everything one freedesktop `Notify` call carries, decided in Swift before any C
/// is touched (so the mapping is testable on its own).
struct DesktopNotificationRequest: Hashable, Sendable {
    /// 0 for a new notification; the id to update in place otherwise (`replaces_id`).
    var replacesID: UInt32
    var appName: String
    var summary: String
    var body: String?
    /// An icon name from the theme or a file path.
    var icon: String?
    /// The `urgency` hint byte: 0 low, 1 normal, 2 critical.
    var urgency: UInt8
    /// `expire_timeout`: -1 the server's default, 0 never, otherwise milliseconds.
    var expireTimeout: Int32
    var category: String?
    /// Hints from the sink's config, besides urgency and category, and the event's progress as `value`.
    var hints: [String: DesktopHint]
    var actions: [NotificationAction]

    /// Maps one delivery to a request for a server with `serverCapabilities`.
    ///
    /// - Parameter daemon: who owns the daemon's name now; a handle from another daemon
    ///   instance is not replaced (see ``DesktopHandle``).
    /// - Returns: the request and the notes for the report (actions dropped, ...).
    static func make(
        for delivery: SinkDelivery, serverCapabilities: Set<String>, serverName: String, configuredHints: [String: DesktopHint],
        daemon: DaemonIdentity? = nil
    ) -> (request: DesktopNotificationRequest, notes: [String]) {
        let event = delivery.event
        var notes: [String] = []
        var summary = event.title
        let replacesID: UInt32
        switch delivery.intent {
        case .show:
            replacesID = 0
        case .replace(let handle):
            replacesID = id(from: handle, daemon: daemon, notes: &notes)
        case .updateDuplicateCount(let handle, let count):
            replacesID = id(from: handle, daemon: daemon, notes: &notes)
            summary += " (×\(count))"
        }

        var actions = event.actions
        if !actions.isEmpty && !serverCapabilities.contains("actions") {
            // The router only knows after the first probe; until then it leaves them to us.
            notes.append("actions dropped: the notification daemon does not advertise the \"actions\" capability")
            actions = []
        }

        var hints = configuredHints
        // The event's own category wins over one set in the sink's hints (the cascade).
        let configuredCategory: String?
        if case .string(let value) = hints.removeValue(forKey: "category") { configuredCategory = value } else { configuredCategory = nil }
        // The `value` hint draws a bar (dunst, mako, GNOME Shell's OSD-like servers); the event's wins over the config's.
        if let progress = event.progress { hints["value"] = .int32(Int32(clamping: progress)) }

        let markup = readsMarkup(serverCapabilities)
        return (DesktopNotificationRequest(
            replacesID: replacesID,
            appName: event.app.isEmpty ? "notify-route" : event.app,
            summary: markup && readsMarkupInSummary(serverName) ? escapeMarkup(summary) : summary,
            body: event.body.map { markup ? escapeMarkup($0) : $0 },
            icon: event.icon.flatMap { $0.isEmpty ? nil : $0 },
            urgency: event.style.urgency.byteValue,
            expireTimeout: expireTimeout(event.timeout),
            category: event.category ?? configuredCategory,
            hints: hints,
            actions: actions
        ), notes)
    }

    /// `never` is 0 (sticky), the server's default is -1, a duration is milliseconds
    /// (at least 1, since 0 would mean never).
    static func expireTimeout(_ timeout: NotificationTimeout) -> Int32 {
        switch timeout {
        case .never: 0
        case .serverDefault: -1
        case .after(let duration): Int32(clamping: max(1, DurationParser.milliseconds(duration)))
        }
    }

    /// A server that advertises `body-markup` reads `<b>`, `&amp;`...; one that advertises
    /// `body-hyperlinks` reads `<a href>`, and so `&` and `<` too. Either way the text is
    /// escaped, so what anyone wrote (a journal line, say) shows as typed, never as a link.
    static func readsMarkup(_ serverCapabilities: Set<String>) -> Bool {
        serverCapabilities.contains("body-markup") || serverCapabilities.contains("body-hyperlinks")
    }

    /// The spec makes the summary plain text, and GNOME Shell and mako escape it themselves
    /// (escaping it here would show `&amp;`); dunst reads it with the body's markup.
    static func readsMarkupInSummary(_ serverName: String) -> Bool {
        serverName == "dunst"
    }

    /// Escapes `&`, `<` and `>` so markup shows as typed. Quotes need no escaping in element text.
    static func escapeMarkup(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private static func id(from handle: SinkHandle, daemon: DaemonIdentity?, notes: inout [String]) -> UInt32 {
        guard let parsed = DesktopHandle(handle) else {
            notes.append("handle \"\(handle.value)\" is not a desktop notification id; shown as a new notification")
            return 0
        }
        guard parsed.isFrom(daemon) else {
            // The id may now be another application's notification: never replace that.
            notes.append("handle \"\(handle.value)\" was given by a notification daemon that no longer owns the name "
                + "(it or the bus restarted); shown as a new notification")
            return 0
        }
        return parsed.id
    }
}
