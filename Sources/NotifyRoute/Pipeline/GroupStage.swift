#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A route's `group` (``GroupPolicy``): the event joins the open group of its `by` values
/// on this sink instead of being shown; the daemon's clock sends the group's notification
/// when its `wait` ends and updates it in place every `interval`
/// (``NotificationRouter/deliverDueGroups()``). Without a clock (a one-shot `send`) the
/// event is delivered at once, and the report says why.
struct GroupStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let group = delivery.target.group else { return }
        guard context.keepsTime else {
            delivery.decision.note = "not grouped: grouping needs `notify-route serve`; delivered at once"
            return
        }
        let name = group.name(of: delivery.event, route: delivery.target.route?.name ?? delivery.target.label)
        let key = Self.key(delivery.policyKey, name)
        var record = context.state.group(forKey: key) ?? RouterState.GroupRecord(
            route: delivery.target.label, sink: delivery.target.sinkName, name: name,
            due: context.now.addingTimeInterval(group.wait.seconds), interval: group.interval.seconds)
        record.interval = group.interval.seconds
        record.add(delivery.event)
        context.state.storeGroup(record, forKey: key)
        if delivery.decision.createdWindow {
            // Grouped, not shown: the next identical event must not count as a duplicate of it.
            context.state.removeDedup(forKey: delivery.stateKey)
        }
        delivery.decision = PolicyDecision(suppressed: .grouped(group: name, count: record.count, due: record.due))
    }

    /// Per route, sink and `by` values.
    static func key(_ policyKey: String, _ name: String) -> String {
        policyKey + "\u{1E}" + name
    }
}
