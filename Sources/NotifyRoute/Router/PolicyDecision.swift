#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Step 4 of the pipeline for one sink, decided against the remembered state: is this
/// a duplicate inside the dedup window, and does it replace something shown before?
struct PolicyDecision: Sendable {
    var intent: SinkDelivery.Intent
    var count: Int
    var suppressed: SuppressionReason?
    /// True when this decision opened a dedup window (to undo if delivery fails).
    var createdWindow: Bool
    /// Events held back earlier (rate limit, quiet hours), to be summarised before this one.
    var summary: HeldSummary? = nil
    /// A duplicate whose count update waits to go out later with a later count
    /// (see ``CountUpdateCoalescer``).
    var coalesced = false

    /// Whether the sink is asked anything: a show, a replace, or a count update.
    var sendsSomething: Bool { suppressed == nil || intent != .show }

    struct HeldSummary: Sendable, Hashable {
        var held: Int
        var sources: [String: Int]
        var highest: Level
        var why: String
    }

    /// Everything step 4 looks at, in order: inhibition, quiet hours, dedup, rate limit, replace.
    static func decide(
        for event: ResolvedEvent, sink: String, route: Route?, routeKey: String, inhibitRules: [InhibitRule],
        capabilities: SinkCapabilities, now: Date, state: any RouterStateTransaction, maxEntries: Int, dedupStateKey: RouterState.Key? = nil,
        handleStateKey: RouterState.Key? = nil
    ) -> PolicyDecision {
        if !inhibitRules.isEmpty,
           let inhibitor = activeInhibitor(for: MatchSubject(event), event: event, rules: inhibitRules, now: now, state: state) {
            return PolicyDecision(intent: .show, count: 1, suppressed: .inhibited(by: inhibitor), createdWindow: false)
        }
        // Built only for routes with quiet hours or a rate limit: most have neither.
        var policyKey: String { routeKey + "\u{1E}" + sink }
        if let quiet = route?.quietHours, let window = quiet.activeWindow(at: now), event.level < quiet.breakthrough {
            var record = state.held(.quiet, key: policyKey) ?? RouterState.HeldRecord(periodStart: now)
            record.hold(event)
            state.storeHeld(record, .quiet, key: policyKey)
            return PolicyDecision(intent: .show, count: 1, suppressed: .quietHours(window: window.description, held: record.held),
                                  createdWindow: false)
        }
        var decision = decideDedupAndReplace(for: event, sink: sink, window: route?.dedupWindow, capabilities: capabilities,
                                             now: now, state: state, maxEntries: maxEntries, dedupStateKey: dedupStateKey,
                                             handleStateKey: handleStateKey)
        guard decision.suppressed == nil else { return decision }
        if let rate = route?.rateLimit {
            var record = state.held(.rate, key: policyKey) ?? RouterState.HeldRecord(periodStart: now)
            if now.timeIntervalSince(record.periodStart) >= rate.per.seconds {
                // A new period: nothing sent yet in it; what was held waits for its summary.
                record.periodStart = now
                record.sent = 0
            }
            if record.sent >= rate.max {
                record.hold(event)
                state.storeHeld(record, .rate, key: policyKey)
                if decision.createdWindow {
                    // Held, not shown: the next identical event must not count as a duplicate of it.
                    state.removeDedup(forKey: dedupStateKey ?? RouterState.Key(sink: sink, key: event.dedupKey))
                }
                return PolicyDecision(intent: .show, count: 1, suppressed: .rateLimited(max: rate.max, per: rate.per, held: record.held),
                                      createdWindow: false)
            }
            record.sent += 1
            // The first event of a later period carries the summary of what the earlier ones held.
            if record.held > 0 && record.sent == 1 {
                decision.summary = HeldSummary(held: record.held, sources: record.sources, highest: record.highest, why: "over the rate limit")
                record.held = 0
                record.sources = [:]
                record.highest = .debug
            }
            state.storeHeld(record, .rate, key: policyKey)
        }
        // Out of quiet hours: what they held goes out as a summary with this event.
        if state.holdsQuietEvents, route?.quietHours?.activeWindow(at: now) == nil,
           let record = state.held(.quiet, key: policyKey) {
            state.storeHeld(nil, .quiet, key: policyKey)
            guard record.held > 0 else { return decision }
            let earlier = decision.summary
            decision.summary = HeldSummary(
                held: record.held + (earlier?.held ?? 0), sources: record.sources.merging(earlier?.sources ?? [:], uniquingKeysWith: +),
                highest: max(record.highest, earlier?.highest ?? .debug),
                why: earlier == nil ? "during quiet hours" : "during quiet hours and over the rate limit")
        }
        return decision
    }

    /// Records a delivered event as an inhibitor for the rules whose source it matches.
    static func recordInhibitor(_ event: ResolvedEvent, rules: [InhibitRule], now: Date, state: any RouterStateTransaction) {
        let subject = MatchSubject(event)
        for (index, rule) in rules.enumerated() where rule.source.matches(subject) {
            let lifetime = rule.duration?.seconds ?? event.timeout.milliseconds.map { Double($0) / 1000 } ?? 3600
            let signature = rule.signature(of: subject)
            state.storeInhibitor(RouterState.InhibitorRecord(
                rule: index, signature: signature, expires: now.addingTimeInterval(lifetime), replaceKey: event.replaceKey,
                dedupKey: event.dedupKey), forKey: "\(index)\u{1E}\(signature)")
        }
    }

    private static func activeInhibitor(
        for subject: MatchSubject, event: ResolvedEvent, rules: [InhibitRule], now: Date, state: any RouterStateTransaction
    ) -> String? {
        for (index, rule) in rules.enumerated() where rule.target.matches(subject) {
            // An event that is itself a source of the rule never inhibits itself (as in Alertmanager).
            if rule.source.matches(subject) { continue }
            let key = "\(index)\u{1E}\(rule.signature(of: subject))"
            guard let record = state.inhibitor(forKey: key) else { continue }
            if record.expires <= now {
                state.storeInhibitor(nil, forKey: key)
                continue
            }
            return "inhibit rule \(index + 1)" + (rule.equal.isEmpty ? "" : " (equal \(rule.equal.joined(separator: ", ")))")
        }
        return nil
    }

    /// Dedup and replace alone: all that ``decide(for:sink:route:routeKey:inhibitRules:capabilities:now:state:maxEntries:dedupStateKey:handleStateKey:)``
    /// does for a route without quiet hours or a rate limit, when no inhibit rule is
    /// configured and nothing is held from quiet hours. `dedupStateKey` and
    /// `handleStateKey` are the state's keys for the event's dedup and replace keys on
    /// this sink, when the caller has built them.
    static func decideDedupAndReplace(
        for event: ResolvedEvent, sink: String, window: Duration?, capabilities: SinkCapabilities, now: Date,
        state: any RouterStateTransaction, maxEntries: Int, dedupStateKey: RouterState.Key? = nil, handleStateKey: RouterState.Key? = nil,
        windowSeconds: Double? = nil
    ) -> PolicyDecision {
        var count = 1
        var createdWindow = false
        if let window {
            let key = dedupStateKey ?? RouterState.Key(sink: sink, key: event.dedupKey)
            let (record, isDuplicate) = state.recordDedup(forKey: key, now: now, window: windowSeconds ?? window.seconds,
                                                          maxEntries: maxEntries)
            if isDuplicate {
                if capabilities.canReplace, let handle = record.handle {
                    return PolicyDecision(
                        intent: .updateDuplicateCount(handle, count: record.count), count: record.count,
                        suppressed: .duplicate(count: record.count, window: window, updatedInPlace: true), createdWindow: false)
                }
                return PolicyDecision(intent: .show, count: record.count,
                                      suppressed: .duplicate(count: record.count, window: window, updatedInPlace: false),
                                      createdWindow: false)
            }
            createdWindow = true
            count = 1
        }
        if capabilities.canReplace, let replaceKey = event.replaceKey,
           let record = state.handle(forKey: handleStateKey ?? RouterState.Key(sink: sink, key: replaceKey)) {
            return PolicyDecision(intent: .replace(record.handle), count: count, suppressed: nil, createdWindow: createdWindow)
        }
        return PolicyDecision(intent: .show, count: count, suppressed: nil, createdWindow: createdWindow)
    }

    /// After a successful delivery: remember the handle for the replace key and the dedup window.
    static func commit(
        event: ResolvedEvent, sink: String, handle: SinkHandle?, now: Date, state: any RouterStateTransaction, dedupStateKey: RouterState.Key? = nil,
        handleStateKey: RouterState.Key? = nil
    ) {
        guard let handle else { return }
        if let replaceKey = event.replaceKey {
            state.storeHandle(RouterState.HandleRecord(handle: handle, lastUsed: now),
                              forKey: handleStateKey ?? RouterState.Key(sink: sink, key: replaceKey))
        }
        state.setDedupHandle(handle, forKey: dedupStateKey ?? RouterState.Key(sink: sink, key: event.dedupKey))
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
