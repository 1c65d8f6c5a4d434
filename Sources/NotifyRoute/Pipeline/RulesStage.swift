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
        // Each rule read in place, one field at a time: a rule held as a value while the
        // event changed was copied for every event.
        for index in rules.indices {
            let matched = event.tracing ? trace(index, &event) : rules[index].matcher.matches(event.subject)
            guard matched else { continue }
            event.matchedRules.append(labels[index])
            event.ruleLayer.apply(rules[index].effects)
            if changesSubject[index] { event.subject = cascade.subject(event.explicit, rules: event.ruleLayer) }
            if rules[index].effects.drop {
                event.droppedBy = labels[index]
                return
            }
        }
    }

    /// Whether the rule at `index` matches, recording why for `explain`.
    private func trace(_ index: Int, _ event: inout RoutedEvent) -> Bool {
        let verdict = rules[index].matcher.explain(event.subject)
        event.ruleTraces.append(.init(label: labels[index], matched: verdict.matched, reasons: verdict.reasons,
                                      detail: Self.describe(rules[index].effects)))
        return verdict.matched
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
    // Inlined: called for every matching rule of every event, and cheaper inlined than
    // called (the routing benchmark).
    @inline(__always)
    mutating func apply(_ other: borrowing EventEffects) {
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
