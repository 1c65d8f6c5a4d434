#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `group: { by: [source], wait: 30s, interval: 5m }` on a route (Alertmanager's
/// `group_by`, `group_wait`, `group_interval`): events that share the `by` values become
/// one notification ("backup: 14 failures"), sent `wait` after the first and updated in
/// place every `interval` while more arrive; a group quiet for an `interval` closes.
/// Needs a process that owns the clock (`notify-route serve`); a one-shot `send`
/// delivers at once.
public struct GroupPolicy: Hashable, Sendable {
    /// `source`, `app`, `level`, `category`, `tags`, or the name of a field; none: the
    /// whole route is one group.
    public var by: [String]
    public var wait: Duration
    public var interval: Duration

    public static let defaultWait = Duration.seconds(30)
    public static let defaultInterval = Duration.seconds(300)

    public init(by: [String] = [], wait: Duration = defaultWait, interval: Duration = defaultInterval) {
        self.by = by
        self.wait = wait
        self.interval = interval
    }

    /// The values `event` has for ``by``, as the group's name: `backup`, `backup, error`.
    func name(of event: ResolvedEvent, route label: String) -> String {
        guard !by.isEmpty else { return label }
        return by.map { field -> String in
            switch field {
            case "source": event.source ?? "(no source)"
            case "app": event.app
            case "level": event.level.rawValue
            case "category": event.category ?? "(no category)"
            case "tags": event.tags.isEmpty ? "(no tags)" : event.tags.sorted().joined(separator: "+")
            default: event.fields[field] ?? "(no \(field))"
            }
        }.joined(separator: ", ")
    }
}
