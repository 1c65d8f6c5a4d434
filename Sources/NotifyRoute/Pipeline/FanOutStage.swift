/// Gives each target of a wave its own copy of the event (the route's and the sink's
/// layers of the cascade, fitted to what the sink can show) and settles the targets
/// that go no further: no such sink, or an event below the sink's `min_level`.
struct FanOutStage: Sendable {
    let cascade: Cascade

    /// The event without route and sink layers: what the report shows.
    func resolve(_ event: RoutedEvent) -> ResolvedEvent {
        cascade.resolve(event.explicit, rules: event.ruleLayer, subject: event.subject)
    }

    /// `failoverFor`: failover sink → the sinks it stands in for.
    func run(_ targets: [RouteTarget], _ event: RoutedEvent, resolved: ResolvedEvent, failoverFor: [String: [String]]) -> Wave {
        var wave = Wave()
        wave.outcomes.reserveCapacity(targets.count)
        wave.flows.reserveCapacity(targets.count)
        // The cascade's route and sink layers set neither key: hashed once for every sink.
        let dedupKeyHash = resolved.dedupKey.hashValue, replaceKeyHash = resolved.replaceKey?.hashValue ?? 0
        for (index, target) in targets.enumerated() {
            // Looked up only in a failover wave: an empty dictionary's lookup still hashes the name.
            let failoverLabel = failoverFor.isEmpty ? nil : failoverFor[target.sinkName]?.joined(separator: ", ")
            guard let instance = target.instance else {
                wave.outcomes.append(SinkOutcome(
                    sink: target.sinkName, kind: "?", status: .unavailable(reason: "no sink named \"\(target.sinkName)\" in the config"),
                    route: target.label, failoverFor: failoverLabel))
                continue
            }
            let capabilities = instance.sink.capabilities
            var copy = resolved
            if target.layers {
                copy = cascade.resolve(event.explicit, rules: event.ruleLayer, subject: event.subject,
                                       route: target.route?.effects, sink: instance.declaration)
            }
            var notes: [String] = []
            Self.fit(&copy, to: capabilities, notes: &notes)
            if let minimum = instance.declaration.minimumLevel, copy.level < minimum {
                wave.outcomes.append(SinkOutcome(
                    sink: target.sinkName, kind: instance.declaration.kind, status: .suppressed(.belowMinimumLevel(minimum)),
                    route: target.label, failoverFor: failoverLabel, notes: notes))
                continue
            }
            wave.outcomes.append(SinkOutcome(sink: target.sinkName, kind: instance.declaration.kind, status: .delivered,
                                             route: target.label, failoverFor: failoverLabel, notes: notes,
                                             drawnByCaller: capabilities.drawnByCaller))
            assert(copy.dedupKey == resolved.dedupKey && copy.replaceKey == resolved.replaceKey)
            wave.flows.append(SinkFlow(
                index: index, target: target, instance: instance, capabilities: capabilities, event: copy,
                stateKey: instance.stateKey(copy.dedupKey, keyHash: dedupKeyHash),
                handleKey: copy.replaceKey.map { instance.stateKey($0, keyHash: replaceKeyHash) }))
        }
        return wave
    }

    /// Caps title and body at the sink's limits, with a marker, and drops actions it cannot show.
    static func fit(_ event: inout ResolvedEvent, to capabilities: SinkCapabilities, notes: inout [String]) {
        if capabilities.maxTitleLength == nil && capabilities.maxBodyLength == nil
            && (event.actions.isEmpty || capabilities.supportsActions) {
            return
        }
        event.title = TextSanitizer.truncate(event.title, to: capabilities.maxTitleLength)
        if let body = event.body { event.body = TextSanitizer.truncate(body, to: capabilities.maxBodyLength) }
        if !event.actions.isEmpty && !capabilities.supportsActions {
            notes.append("actions dropped: this sink cannot show them")
            event.actions = []
        }
    }
}
