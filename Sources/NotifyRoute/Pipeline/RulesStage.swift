/// Applies every matching rule in file order, each seeing what the earlier ones set;
/// a rule that drops the event ends the routing.
struct RulesStage: EventStage {
    let rules: [RoutingRule]
    let labels: [String]
    /// Per rule, whether it sets a value that matchers see: only then is the subject remade.
    let changesSubject: [Bool]
    let cascade: Cascade

    init(_ configuration: RouterConfiguration, cascade: Cascade) {
        rules = configuration.rules
        changesSubject = configuration.rules.map {
            $0.effects.level != nil || $0.effects.source != nil || $0.effects.app != nil || $0.effects.category != nil
                || !$0.effects.tags.isEmpty
        }
        labels = configuration.rules.indices.map { RouteTarget.label("rule", $0, configuration.rules[$0].name) }
        self.cascade = cascade
    }

    func run(_ event: inout RoutedEvent) throws(EventError) {
        event.subject = cascade.subject(event.explicit, rules: event.ruleLayer)
        // Each rule read in place from a buffer: copied out of the array, a rule's
        // references were retained and released for every event.
        rules.withUnsafeBufferPointer { rules in
            for index in rules.indices {
                if apply(rules[index], at: index, to: &event) { return }
            }
        }
    }

    /// Applies one rule if it matches; true when it drops the event.
    private func apply(_ rule: RoutingRule, at index: Int, to event: inout RoutedEvent) -> Bool {
        let matched: Bool
        if event.tracing {
            let verdict = rule.matcher.explain(event.subject)
            matched = verdict.matched
            event.ruleTraces.append(.init(label: labels[index], matched: matched, reasons: verdict.reasons,
                                          detail: Self.describe(rule.effects)))
        } else {
            matched = rule.matcher.matches(event.subject)
        }
        guard matched else { return false }
        event.matchedRules.append(labels[index])
        event.ruleLayer.apply(rule.effects)
        if changesSubject[index] { event.subject = cascade.subject(event.explicit, rules: event.ruleLayer) }
        guard rule.effects.drop else { return false }
        event.droppedBy = labels[index]
        return true
    }

    /// What a rule sets, as `explain` shows it.
    static func describe(_ effects: EventEffects) -> String {
        var parts: [String] = []
        if let level = effects.level { parts.append("level \(level.rawValue)") }
        if let timeout = effects.timeout { parts.append("timeout \(timeout)") }
        if let app = effects.app { parts.append("app \(app)") }
        if let source = effects.source { parts.append("source \(source)") }
        if let icon = effects.icon { parts.append("icon \(icon)") }
        if let category = effects.category { parts.append("category \(category)") }
        if !effects.tags.isEmpty { parts.append("tags +\(effects.tags.sorted().joined(separator: ",+"))") }
        if let key = effects.dedupKey { parts.append("dedup key \(key)") }
        if let key = effects.replaceKey { parts.append("replace key \(key)") }
        if let id = effects.messageID { parts.append("message id \(id)") }
        if !effects.fields.isEmpty { parts.append("fields \(effects.fields.keys.sorted().joined(separator: ","))") }
        if effects.drop { parts.append("drop") }
        if !effects.history { parts.append("history false") }
        return parts.isEmpty ? "no effect" : "set " + parts.joined(separator: ", ")
    }
}

extension EventEffects {
    /// Layers `other` over `self`: its values win, its tags and fields add up.
    mutating func apply(_ other: EventEffects) {
        level = other.level ?? level
        timeout = other.timeout ?? timeout
        app = other.app ?? app
        source = other.source ?? source
        icon = other.icon ?? icon
        category = other.category ?? category
        if !other.tags.isEmpty { tags.formUnion(other.tags) }
        dedupKey = other.dedupKey ?? dedupKey
        replaceKey = other.replaceKey ?? replaceKey
        messageID = other.messageID ?? messageID
        if !other.fields.isEmpty { fields.merge(other.fields) { _, new in new } }
        drop = drop || other.drop
        history = history && other.history
    }
}
