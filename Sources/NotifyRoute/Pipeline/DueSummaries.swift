#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// The summaries of what rate limits and quiet hours held, sent when their period or
/// window ends rather than with the next event: a run of its own through the fan-out, the
/// summary policy stages and the sinks, for a process that owns the clock (the daemon).
/// A process that does not (a local `send`) still attaches them to the next event.
extension NotificationRouter {
    /// What ``deliverDueSummaries()`` did: one report per route and sink whose summary
    /// was due, and when the next one falls due (`nil`: nothing is held).
    public struct DueSummaries: Sendable {
        public var reports: [DeliveryReport]
        public var nextDue: Date?
        /// Whether some route has a rate limit or quiet hours: something may be held later,
        /// by this router or by another process on the same state.
        public var watches = false
    }

    /// The policy stages of a due-summary run: the rate period's summary, then the quiet
    /// hours' (which joins it), as ``Pipeline/policy`` orders them for an event.
    static let dueSummaryStages: [any PolicyStage] = [DueRateSummaryStage(), QuietHoursSummaryStage()]

    /// Sends the summaries whose rate period or quiet hours have ended, each to its sink on
    /// its own; a summary its sink did not take stays held (and is due again).
    public func deliverDueSummaries() async -> DueSummaries {
        let targets = heldTargets
        guard !targets.isEmpty else { return DueSummaries(reports: [], nextDue: nil) }
        var result = DueSummaries(reports: [], nextDue: nil, watches: true)
        let now = clock.now()
        var due: [RouteTarget] = []
        var nextDue: Date?
        do {
            try store.withState(discardingChanges: true) { state in
                for target in targets {
                    guard let when = Self.due(target, state: state, now: now) else { continue }
                    if when <= now { due.append(target) } else { nextDue = min(nextDue ?? when, when) }
                }
            }
        } catch {
            logger.warning("held summaries: state unavailable", metadata: ["error": "\(error)"])
            result.nextDue = now.addingTimeInterval(5)
            return result
        }
        result.nextDue = nextDue
        guard !due.isEmpty else { return result }

        let routed = RoutedEvent(NotificationEvent(title: "held events"), only: nil, tracing: false)
        let resolved = pipeline.fanOut.resolve(routed)
        var wave = pipeline.fanOut.run(due, routed, resolved: resolved, failoverFor: [:])
        do {
            try store.withState { state in
                let context = PolicyContext(now: clock.now(), state: state, maxEntries: configuration.state.maxEntries, countUpdates: nil)
                for position in wave.flows.indices {
                    for stage in Self.dueSummaryStages { stage.decide(&wave.flows[position], context) }
                }
            }
        } catch {
            logger.warning("held summaries: state unavailable", metadata: ["error": "\(error)"])
            result.nextDue = now.addingTimeInterval(5)
            return result
        }
        await DueSummaryDeliverStage().deliver(&wave)
        restoreUndeliveredSummaries(wave.flows)

        for flow in wave.flows {
            guard let summary = flow.decision.summary else { continue }  // an event took it meanwhile
            let digest = SinkDeliverStage.summaryEvent(summary, like: flow.event)
            var outcome = wave.outcomes[flow.index]
            outcome.duration = flow.answer.duration
            outcome.handle = flow.answer.receipt?.handle
            if let error = flow.answer.summaryError {
                outcome.status = SinkOutcome.Status(failure: error)
                outcome.notes.append("the summary of \(summary.held) events held \(summary.why) stays held")
            } else {
                outcome.status = .delivered
                outcome.notes.append("a summary of \(summary.held) events held \(summary.why), sent when it ended")
            }
            result.reports.append(DeliveryReport(event: digest, matchedRoutes: [flow.target.label], outcomes: [outcome]))
        }
        return result
    }

    /// Puts back what a summary held when its sink did not take it, so that a later
    /// summary (an event's, or the next due run) still counts it.
    func restoreUndeliveredSummaries(_ flows: [SinkFlow]) {
        guard flows.contains(where: { $0.answer.summaryError != nil }) else { return }
        let undelivered = flows.filter { $0.decision.summary != nil && $0.answer.summaryError != nil }
        do {
            try store.withState { state in
                for flow in undelivered {
                    guard let summary = flow.decision.summary else { continue }
                    // Into the rate record when the route has a limit (its period has ended:
                    // due at once); else back into quiet hours' record.
                    let kind: RouterState.HeldKind = flow.target.rateLimit != nil ? .rate : .quiet
                    var record = state.held(kind, key: flow.policyKey) ?? RouterState.HeldRecord(periodStart: clock.now())
                    record.held += summary.held
                    record.sources.merge(summary.sources, uniquingKeysWith: +)
                    record.highest = max(record.highest, summary.highest)
                    state.storeHeld(record, kind, key: flow.policyKey)
                }
            }
        } catch {
            logger.error("held summaries not delivered and not kept", metadata: ["error": "\(error)"])
        }
    }

    /// Every route's sinks and failover sinks that a rate limit or quiet hours can hold for:
    /// the keys under which the state keeps what they held.
    var heldTargets: [RouteTarget] {
        configuration.routes.indices.flatMap { index -> [RouteTarget] in
            let route = configuration.routes[index]
            guard route.rateLimit != nil || route.quietHours != nil else { return [] }
            let label = RouteTarget.label("route", index, route.name)
            var names: [String] = []
            for name in route.sinks + route.failover where !names.contains(name) { names.append(name) }
            return names.map { RouteTarget(sinkName: $0, label: label, route: route, instance: instances[$0]) }
        }
    }

    /// When the summary of what `target` holds is due: the end of the rate period, or the
    /// end of quiet hours (windows move by whole minutes: checked at each minute's start);
    /// `nil` when nothing is held.
    static func due(_ target: RouteTarget, state: any RouterStateTransaction, now: Date) -> Date? {
        let key = target.label + "\u{1E}" + target.sinkName
        var due: Date?
        if let rate = target.rateLimit, let record = state.held(.rate, key: key), record.held > 0 {
            due = record.periodStart.addingTimeInterval(rate.per.seconds)
        }
        if state.holdsQuietEvents, let record = state.held(.quiet, key: key), record.held > 0 {
            var end = now
            if target.quietHours?.activeWindow(at: now) != nil {
                end = Date(timeIntervalSince1970: ((now.timeIntervalSince1970 / 60).rounded(.down) + 1) * 60 + 0.001)
            }
            due = min(due ?? end, end)
        }
        return due
    }
}

/// A due summary of the rate limit: the period has ended and events were held in it. The
/// period itself stays; the next event starts a new one (``RateLimitStage``).
struct DueRateSummaryStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let rate = delivery.target.rateLimit, var record = context.state.held(.rate, key: delivery.policyKey),
              record.held > 0, context.now.timeIntervalSince(record.periodStart) >= rate.per.seconds
        else { return }
        delivery.decision.summary = PolicyDecision.HeldSummary(
            held: record.held, sources: record.sources, highest: record.highest, why: "over the rate limit")
        record.held = 0
        record.sources = [:]
        record.highest = .debug
        context.state.storeHeld(record, .rate, key: delivery.policyKey)
    }
}

/// Delivers a due-summary wave: each summary alone (no event carries it), all sinks at
/// once, each under its own deadline.
struct DueSummaryDeliverStage: DeliverStage {
    var keepsState: Bool { true }

    nonisolated(nonsending) func deliver(_ wave: inout Wave) async {
        let flows = wave.flows
        let answers = await withTaskGroup(of: (Int, SinkFlow.Answer).self) { group in
            for (position, flow) in flows.enumerated() {
                guard let summary = flow.decision.summary else { continue }
                group.addTask {
                    let started = ContinuousClock.now
                    let digest = SinkDelivery(event: SinkDeliverStage.summaryEvent(summary, like: flow.event), sinkName: flow.target.sinkName,
                                              deadline: started.advanced(by: flow.instance.deadline))
                    var answer = SinkFlow.Answer()
                    switch await flow.instance.attempt(digest) {
                    case .success(let receipt): answer.receipt = receipt
                    case .failure(let error): answer.summaryError = error
                    }
                    answer.duration = ContinuousClock.now - started
                    return (position, answer)
                }
            }
            var answers: [(Int, SinkFlow.Answer)] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        for (position, answer) in answers { wave.flows[position].answer = answer }
    }
}
