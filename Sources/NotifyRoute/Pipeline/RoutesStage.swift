/// Picks the sinks: the first matching route wins unless it says `continue`; with no
/// match, the fallback; with `--sink`, the sinks named. Each sink is a target once.
struct RoutesStage: EventStage {
    let routes: [Route]
    let labels: [String]
    /// Per route, one target per sink it names (made once: deliveries refer to them).
    let targets: [[RouteTarget]]
    let fallback: [RouteTarget]
    /// Turns away, by the first byte of the source, the routes that cannot match.
    let index: RouteIndex
    /// Per route, whether its targets name every sink once: the first match's targets
    /// are then the event's as they are, without a new array.
    let distinct: [Bool]
    /// The target of `--sink NAME` for each sink the config makes: a daemon's clients name
    /// their sinks in every request, so the target is made once per config, not per event.
    let named: [String: RouteTarget]

    init(_ configuration: RouterConfiguration, instances: [String: SinkInstance]) {
        routes = configuration.routes
        let labels = configuration.routes.indices.map { RouteTarget.label("route", $0, configuration.routes[$0].name) }
        self.labels = labels
        targets = configuration.routes.indices.map { index in
            configuration.routes[index].sinks.map {
                RouteTarget(sinkName: $0, label: labels[index], route: configuration.routes[index], instance: instances[$0])
            }
        }
        distinct = configuration.routes.map { Set($0.sinks).count == $0.sinks.count }
        fallback = configuration.fallback.map { RouteTarget(sinkName: $0, label: "fallback", route: nil, instance: instances[$0]) }
        named = Dictionary(uniqueKeysWithValues: instances.map { ($0.key, RouteTarget(sinkName: $0.key, label: "--sink", route: nil, instance: $0.value)) })
        index = RouteIndex(configuration.routes.map(\.matcher))
    }

    func run(_ event: inout RoutedEvent) throws(EventError) {
        guard event.droppedBy == nil else { return }
        if let only = event.only {
            event.matchedRoutes = ["--sink"]
            event.targets = only.map { named[$0] ?? RouteTarget(sinkName: $0, label: "--sink", route: nil, instance: nil) }
            return
        }
        var stopped = false
        for position in event.tracing ? Array(routes.indices) : index.candidates(for: event.subject) {
            if stopped {
                guard event.tracing else { break }
                event.routeTraces.append(.init(label: labels[position], matched: false,
                                               reasons: ["not tried: an earlier route matched without `continue`"], detail: ""))
                continue
            }
            // Fields read in place: a copy of the route cost more than its matcher.
            let matched: Bool
            if event.tracing {
                let route = routes[position]
                let verdict = route.matcher.explain(event.subject)
                matched = verdict.matched
                event.routeTraces.append(.init(
                    label: labels[position], matched: matched, reasons: verdict.reasons,
                    detail: "to \(route.sinks.joined(separator: ", "))" + (route.continues ? ", continue" : "")
                        + (route.failover.isEmpty ? "" : ", failover \(route.failover.joined(separator: ", "))")))
            } else {
                matched = index.matches(position, event.subject)
            }
            guard matched else { continue }
            event.matchedRoutes.append(labels[position])
            if event.targets.isEmpty && distinct[position] {
                event.targets = targets[position]
            } else {
                for target in targets[position] where !event.targets.contains(where: { $0.sinkName == target.sinkName }) {
                    event.targets.append(target)
                }
            }
            if !routes[position].continues { stopped = true }
        }
        if event.matchedRoutes.isEmpty {
            if fallback.isEmpty {
                event.notes.append("no route matched and the config has no fallback; nothing was sent")
            } else {
                event.matchedRoutes = ["fallback"]
                event.targets = fallback
            }
        }
    }
}
