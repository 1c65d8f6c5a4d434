
/// Why an event would go where it goes: which rules and routes matched and why, the
/// resolved event, and what each sink would do. Nothing is sent to get one.
///
/// ```swift
/// let explanation = try await router.explain(NotificationEvent(title: "Disk full", level: .error))
/// print(explanation)   // the text `notify-route explain` prints
/// ```
public struct RoutingExplanation: Sendable, CustomStringConvertible {
    public struct Step: Sendable, Hashable {
        /// `rule 1 "tag backups"`, `route 2`.
        public var label: String
        public var matched: Bool
        /// One line per condition: `level error >=warning`, `source "db" does not match "backup*"`.
        public var reasons: [String]
        /// What the rule sets, or where the route sends.
        public var detail: String
    }

    public var event: ResolvedEvent
    public var rules: [Step]
    public var routes: [Step]
    public var droppedBy: String?
    public var fallbackUsed: Bool
    public var notes: [String]
    /// What each sink would do, as a report of `planned`/`suppressed`/`unavailable` outcomes.
    public var plannedReport: DeliveryReport
    /// The event as a sink gets it, by sink name, where its route or the sink itself sets a
    /// value of the cascade (timeout, app, icon, category) over ``event``'s.
    public var asDelivered: [String: ResolvedEvent] = [:]

    public var description: String {
        var lines: [String] = []
        lines.append("event: [\(event.level.rawValue)] \(event.title)" + (event.body.map { " — \($0.split(separator: "\n").first ?? "")" } ?? ""))
        lines.append("  app \(event.app), source \(event.source ?? "(none)"), timeout \(event.timeout), tags \(event.tags.isEmpty ? "(none)" : event.tags.sorted().joined(separator: ","))")
        lines.append("  dedup key \(String(event.dedupKey.map { $0 == "\u{1F}" ? "|" : $0 })), replace key \(event.replaceKey ?? "(none)")")
        lines.append("rules:")
        if rules.isEmpty { lines.append("  (none)") }
        for step in rules {
            lines.append("  \(step.label): \(step.matched ? "matched" : "no match") — \(step.matched ? step.detail : step.reasons.filter { !$0.isEmpty }.joined(separator: "; "))")
            if step.matched { lines.append(contentsOf: step.reasons.map { "      \($0)" }) }
        }
        if let droppedBy { lines.append("dropped by \(droppedBy): nothing would be sent") }
        lines.append("routes:")
        if routes.isEmpty { lines.append("  (none)") }
        for step in routes {
            lines.append("  \(step.label): \(step.matched ? "matched" : "no match") \(step.detail.isEmpty ? "" : "(\(step.detail))")")
            lines.append(contentsOf: step.reasons.map { "      \($0)" })
        }
        if fallbackUsed { lines.append("  fallback: used, no route matched") }
        lines.append(contentsOf: notes.map { "note: \($0)" })
        lines.append("sinks:")
        if plannedReport.outcomes.isEmpty { lines.append("  (none)") }
        for outcome in plannedReport.outcomes {
            var line = "  \(outcome.sink) (\(outcome.kind)) via \(outcome.route): \(outcome.status)"
            if let failoverFor = outcome.failoverFor { line += " [failover for \(failoverFor)]" }
            lines.append(line)
            if let delivered = asDelivered[outcome.sink], let changes = Self.changes(from: event, to: delivered) {
                lines.append("      as delivered here: \(changes)")
            }
            lines.append(contentsOf: outcome.notes.map { "      \($0)" })
        }
        return lines.joined(separator: "\n")
    }

    /// The values a route or sink layer changed, as `timeout 2s, app backupd`; `nil` when none.
    static func changes(from event: ResolvedEvent, to delivered: ResolvedEvent) -> String? {
        var changes: [String] = []
        if delivered.timeout != event.timeout { changes.append("timeout \(delivered.timeout)") }
        if delivered.app != event.app { changes.append("app \(delivered.app)") }
        if delivered.icon != event.icon { changes.append("icon \(delivered.icon ?? "(none)")") }
        if delivered.category != event.category { changes.append("category \(delivered.category ?? "(none)")") }
        return changes.isEmpty ? nil : changes.joined(separator: ", ")
    }
}

extension NotificationRouter {
    /// Explains the routing decision for `event` without sending anything.
    public func explain(_ event: NotificationEvent, only sinkNames: [String]? = nil) async throws(EventError) -> RoutingExplanation {
        let routed = try planning.route(event, only: sinkNames, tracing: true)
        let report = await run(routed, through: planning)
        return RoutingExplanation(
            event: report.event,
            rules: routed.ruleTraces.map { .init(label: $0.label, matched: $0.matched, reasons: $0.reasons, detail: $0.detail) },
            routes: routed.routeTraces.map { .init(label: $0.label, matched: $0.matched, reasons: $0.reasons, detail: $0.detail) },
            droppedBy: routed.droppedBy, fallbackUsed: routed.matchedRoutes == ["fallback"], notes: routed.notes,
            plannedReport: report, asDelivered: asDelivered(routed, report))
    }

    /// Each sink's event where its route or itself lays values over the cascade, as the
    /// fan-out resolves it (``FanOutStage``), failover sinks under the route they stand in for.
    private func asDelivered(_ routed: RoutedEvent, _ report: DeliveryReport) -> [String: ResolvedEvent] {
        var events: [String: ResolvedEvent] = [:]
        for outcome in report.outcomes where events[outcome.sink] == nil {
            guard let instance = instances[outcome.sink] else { continue }
            let route = routed.targets.first { $0.sinkName == outcome.sink }?.route
                ?? route(labelled: outcome.route)
            guard Cascade.layers(route: route?.effects, sink: instance.declaration) else { continue }
            events[outcome.sink] = pipeline.fanOut.cascade.resolve(
                routed.explicit, rules: routed.ruleLayer, subject: routed.subject, route: route?.effects, sink: instance.declaration)
        }
        return events
    }

    /// `--dry-run`: the report `send` would give, from the current state and each sink's
    /// availability, with nothing sent and nothing remembered.
    public func dryRun(_ event: NotificationEvent, only sinkNames: [String]? = nil) async throws(EventError) -> DeliveryReport {
        try await run(planning.route(event, only: sinkNames), through: planning)
    }

    /// Each configured sink with its kind and availability, probed within its deadline.
    public func sinkAvailability() async -> [(name: String, kind: String, availability: SinkAvailability)] {
        await withTaskGroup(of: (Int, String, String, SinkAvailability).self) { group in
            for (index, declaration) in configuration.sinks.enumerated() {
                guard let instance = instances[declaration.name] else { continue }
                group.addTask {
                    (index, declaration.name, declaration.kind, await instance.availability(timeoutReason: "did not answer"))
                }
            }
            var rows: [(Int, String, String, SinkAvailability)] = []
            for await row in group { rows.append(row) }
            return rows.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2, $0.3) }
        }
    }
}
