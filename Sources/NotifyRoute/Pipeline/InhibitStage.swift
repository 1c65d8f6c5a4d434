#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Suppresses an event that an inhibit rule's source event, delivered earlier and
/// still active, covers (Alertmanager's inhibition).
struct InhibitStage: PolicyStage {
    let rules: [InhibitRule]

    init(_ rules: [InhibitRule]) { self.rules = rules }

    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard !rules.isEmpty else { return }
        let subject = MatchSubject(delivery.event)
        for (index, rule) in rules.enumerated() where rule.target.matches(subject) {
            // An event that is itself a source of the rule never inhibits itself (as in Alertmanager).
            if rule.source.matches(subject) { continue }
            let key = "\(index)\u{1E}\(rule.signature(of: subject))"
            guard let record = context.state.inhibitor(forKey: key) else { continue }
            if record.expires <= context.now {
                context.state.storeInhibitor(nil, forKey: key)
                continue
            }
            let by = "inhibit rule \(index + 1)" + (rule.equal.isEmpty ? "" : " (equal \(rule.equal.joined(separator: ", ")))")
            delivery.decision = PolicyDecision(suppressed: .inhibited(by: by))
            return
        }
    }
}
