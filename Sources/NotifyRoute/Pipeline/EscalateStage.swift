#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import YAMLDocument

/// `escalate: { after: 10m, to: [pager], repeat: 30m, level: critical }` on a route: an
/// event that asks for attention (it has actions, or it is sticky) and that nobody acted on
/// or dismissed within `after` is sent again to the `to` sinks, and again every `repeat`,
/// until it is acknowledged: an action, a dismissal, `notify-route close` or
/// `notify-route ack` with its replace key. The timer lives in the state, so only a process
/// that owns the clock (`notify-route serve`) sends it on time.
public struct Escalation: Hashable, Sendable {
    public var after: Duration
    public var sinks: [String]
    /// `nil`: escalate once.
    public var repeatEvery: Duration?
    /// The level the escalation is sent at (`nil`: the event's own).
    public var level: Level?

    public init(after: Duration, sinks: [String], repeatEvery: Duration? = nil, level: Level? = nil) {
        self.after = after
        self.sinks = sinks
        self.repeatEvery = repeatEvery
        self.level = level
    }

    static let keys: [ConfigKey] = [
        ConfigKey(.escalate, "after", .duration, default: .required, example: "10m",
                  "how long nobody may act on or dismiss the notification before it escalates"),
        ConfigKey(.escalate, "to", .sinkNames, default: .required, example: "[pager]", "the sinks the escalation is sent to"),
        ConfigKey(.escalate, "repeat", .duration, default: .implicit("once"), example: "30m",
                  "send the escalation again this often until it is acknowledged"),
        ConfigKey(.escalate, "level", .level, default: .implicit("the event's own"), example: "critical", "the escalation's level"),
    ]

    var yamlOutput: YAMLOutput {
        .section(.escalate, flow: true) { name in
            switch name {
            case "after": .duration(after)
            case "to": .names(sinks)
            case "repeat": .duration(repeatEvery)
            case "level": level.map { .key($0.rawValue) }
            default: nil
            }
        }
    }

    /// Whether an event asks for someone to act: only those escalate (a transient
    /// notification that expires on its own needs no answer).
    static func applies(to event: borrowing ResolvedEvent) -> Bool {
        !event.actions.isEmpty || event.timeout == .never
    }
}

/// Decides, per delivery of a route with ``Escalation``, when the event would escalate;
/// what was delivered is armed after the deliver stage (``NotificationRouter/armTimers(_:keepingState:)``).
struct EscalateStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let escalation = delivery.target.route?.escalation, Escalation.applies(to: delivery.event) else { return }
        delivery.decision.escalatesAt = context.now.addingTimeInterval(escalation.after.seconds)
    }
}
