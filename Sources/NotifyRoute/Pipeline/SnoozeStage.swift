#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import YAMLDocument

/// `snooze: { label: "Snooze 1h", for: 1h }` on a route: desktop notifications of the
/// route get one more action; choosing it closes the notification, and `notify-route serve`
/// shows it again after the duration, its title marked `(snoozed)`.
public struct Snooze: Hashable, Sendable {
    public var label: String
    public var duration: Duration

    public init(label: String? = nil, duration: Duration = .seconds(3600)) {
        self.duration = duration
        self.label = label ?? "Snooze " + DurationParser.format(duration)
    }

    /// The action's id: the daemon recognises it among the event's own actions.
    public static let actionID = "notify-route-snooze"
    /// What the title of a notification shown again after a snooze ends with.
    static let marker = " (snoozed)"

    static let keys: [ConfigKey] = [
        ConfigKey(.snooze, "for", .duration, default: .value("1h"), example: "15m", "how long a snoozed notification stays away"),
        ConfigKey(.snooze, "label", .string, default: .implicit("`Snooze` and the duration"), example: "\"Later\"", "the action's label"),
    ]

    var yamlOutput: YAMLOutput {
        .section(.snooze, flow: true) { name in
            switch name {
            case "for": .duration(duration)
            case "label": .quoted(label)
            default: nil
            }
        }
    }
}

/// Adds the snooze action to deliveries of a route with ``Snooze``, on sinks that show
/// actions and report what the user chose (the desktop).
struct SnoozeStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let snooze = delivery.target.route?.snooze, delivery.capabilities.supportsActions,
              delivery.capabilities.reportsInteractions, !delivery.event.actions.contains(where: { $0.id == Snooze.actionID })
        else { return }
        delivery.event.actions.append(NotificationAction(id: Snooze.actionID, label: snooze.label))
    }
}
