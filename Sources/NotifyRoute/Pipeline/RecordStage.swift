#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Turns what the sinks answered into the wave's outcomes, and remembers in one state
/// transaction what later events depend on: the handles of what was shown, the
/// inhibitors it starts, and the dedup windows of failed deliveries undone.
struct RecordStage: Sendable {
    let inhibitRules: [InhibitRule]
    let maxEntries: Int
    let countUpdates: CountUpdateCoalescer
    /// Where routed events are remembered (``RouterMemory``), and its bounds.
    var memory: RouterMemory? = nil
    var history = HistorySettings()

    /// Returns the count updates to send later (see ``CountUpdateCoalescer``).
    func record(_ wave: inout Wave, store: any RouterStateStore, batch: StateBatch?, clock: any RouterClock,
                logger: Logger, planning: Bool) -> [CountUpdateCoalescer.Flush] {
        // The deliveries that showed something are found again by `committed(_:)`: an
        // array of their positions was allocated per wave.
        var firstCommitted: Int?
        var rollbacks: [RouterState.Key] = []
        var finishedUpdates: [RouterState.Key] = []
        var handles = false  // whether a committed delivery returned a handle to remember
        for position in wave.flows.indices {
            let index = wave.flows[position].index
            switch settle(&wave.flows[position], &wave.outcomes[index]) {
            case .none: break
            case .committed(let remembersHandle):
                if firstCommitted == nil { firstCommitted = position }
                if remembersHandle { handles = true }
            case .rollback(let key): rollbacks.append(key)
            case .finishedUpdate(let key): finishedUpdates.append(key)
            }
        }
        let flows = wave.flows
        if !planning { log(wave.outcomes, logger) }
        let inhibits = !inhibitRules.isEmpty && firstCommitted != nil
        if handles || !rollbacks.isEmpty || inhibits {
            let now = clock.now()
            _ = try? store.withState(discardingChanges: false, in: batch) { state in
                flows.withUnsafeBufferPointer { flows in
                    for position in flows.indices where Self.committed(flows[position]) {
                        guard let handle = flows[position].answer.receipt?.handle else { continue }
                        if let key = flows[position].handleKey {
                            state.storeHandle(RouterState.HandleRecord(handle: handle, lastUsed: now), forKey: key)
                        }
                        if flows[position].decision.createdWindow { state.setDedupHandle(handle, forKey: flows[position].stateKey) }
                    }
                    if inhibits, let firstCommitted { recordInhibitor(flows[firstCommitted].event, now: now, state: state) }
                }
                for key in rollbacks { state.removeDedup(forKey: key) }
                state.evictHandles(maxEntries: maxEntries)
            }
        }
        return countUpdates.isEmpty ? [] : settleCountUpdates(flows, finishedUpdates, now: clock.now())
    }

    /// What ``settle(_:_:)`` leaves for the wave's state transaction.
    private enum Settled {
        case none
        /// Showed something; `remembersHandle`: it returned a handle that has a place in
        /// the state (``remembersHandle(_:)``).
        case committed(remembersHandle: Bool)
        /// Failed: its new dedup window is undone.
        case rollback(RouterState.Key)
        /// A count update that has returned.
        case finishedUpdate(RouterState.Key)
    }

    /// Whether ``settle(_:_:)`` settles `flow` as ``Settled/committed``.
    private static func committed(_ flow: borrowing SinkFlow) -> Bool {
        !flow.answer.planned && flow.decision.suppressed == nil && flow.answer.receipt != nil
    }

    /// Whether a committed delivery's handle has a place in the state: under its replace
    /// key, or in the dedup window it opened (a later duplicate updates its count there).
    /// Otherwise the wave opens no state transaction for it.
    private static func remembersHandle(_ flow: borrowing SinkFlow) -> Bool {
        flow.handleKey != nil || flow.decision.createdWindow
    }

    /// One flow's outcome from what its sink answered (or, planning, would be asked). The
    /// flow is only read: `inout` passes it in place, where a borrowed flow was copied first.
    private func settle(_ flow: inout SinkFlow, _ outcome: inout SinkOutcome) -> Settled {
        outcome.duration = flow.answer.duration
        if let note = flow.decision.note { outcome.notes.append(note) }
        if flow.answer.planned {
            if let summary = flow.decision.summary, let error = flow.answer.error {
                outcome.notes.append("a summary of \(summary.held) events held \(summary.why) would fail (\(error.message)); they would stay held")
            } else if let summary = flow.decision.summary {
                outcome.notes.append("would deliver first: a summary of \(summary.held) events held \(summary.why)")
            }
            if let error = flow.answer.error {
                outcome.status = SinkOutcome.Status(failure: error)
            } else {
                outcome.status = flow.decision.suppressed.map { .suppressed($0) } ?? .planned(flow.decision.intent)
            }
            return .none
        }
        if let summary = flow.decision.summary, let error = flow.answer.summaryError {
            outcome.notes.append("a summary of \(summary.held) events held \(summary.why) failed (\(error.message)); they stay held")
        } else if let summary = flow.decision.summary {
            outcome.notes.append("delivered first: a summary of \(summary.held) events held \(summary.why)")
        }
        if let suppressed = flow.decision.suppressed {
            guard case .duplicate(let count, let window, _) = suppressed else {
                outcome.status = .suppressed(suppressed)
                return .none
            }
            if let error = flow.answer.error {
                outcome.notes.append("count update failed: \(error.message)")
            }
            if flow.decision.coalesced {
                outcome.notes.append("count update coalesced: the notification will show the latest count")
            }
            outcome.status = .suppressed(.duplicate(count: count, window: window, updatedInPlace: flow.answer.receipt != nil))
            if case .updateDuplicateCount = flow.decision.intent { return .finishedUpdate(flow.stateKey) }
            return .none
        }
        if let receipt = flow.answer.receipt {
            outcome.handle = receipt.handle
            outcome.notes += receipt.notes
            switch (receipt.disposition, flow.decision.intent) {
            case (.queued(let reason), _): outcome.status = .queued(reason: reason)
            case (.delivered, .replace(let previous)): outcome.status = .replaced(previous: previous)
            case (.delivered, _): outcome.status = .delivered
            }
            return .committed(remembersHandle: receipt.handle != nil && Self.remembersHandle(flow))
        }
        if let error = flow.answer.error {
            outcome.status = SinkOutcome.Status(failure: error)
            // A failed delivery must not make the next attempt look like a duplicate.
            if flow.decision.createdWindow { return .rollback(flow.stateKey) }
        }
        return .none
    }

    /// The first delivered event becomes an inhibitor for the rules whose source it matches.
    private func recordInhibitor(_ event: ResolvedEvent, now: Date, state: any RouterStateTransaction) {
        let subject = MatchSubject(event)
        for (index, rule) in inhibitRules.enumerated() where rule.source.matches(subject) {
            let lifetime = rule.duration?.seconds ?? event.timeout.milliseconds.map { Double($0) / 1000 } ?? 3600
            let signature = rule.signature(of: subject)
            state.storeInhibitor(RouterState.InhibitorRecord(
                rule: index, signature: signature, expires: now.addingTimeInterval(lifetime), replaceKey: event.replaceKey,
                dedupKey: event.dedupKey), forKey: "\(index)\u{1E}\(signature)")
        }
    }

    /// Updates sent with the wave have returned, and originals that duplicates were
    /// waiting for now have their handle (or failed).
    private func settleCountUpdates(_ flows: [SinkFlow], _ finishedUpdates: [RouterState.Key], now: Date) -> [CountUpdateCoalescer.Flush] {
        var flushes: [CountUpdateCoalescer.Flush] = []
        for key in finishedUpdates {
            if let flush = countUpdates.updateFinished(key: key, now: now) { flushes.append(flush) }
        }
        for position in flows.indices where flows[position].decision.createdWindow && flows[position].capabilities.canReplace {
            if let flush = countUpdates.originalFinished(key: flows[position].stateKey, handle: flows[position].answer.receipt?.handle, now: now) {
                flushes.append(flush)
            }
        }
        return flushes
    }

    private func log(_ outcomes: [SinkOutcome], _ logger: Logger) {
        // By position: each outcome copied out for the loop, for nothing to log in the usual case.
        for position in outcomes.indices {
            switch outcomes[position].status {
            case .failed(let error):
                logger.warning("sink failed", metadata: ["sink": "\(outcomes[position].sink)", "error": "\(error.message)"])
            case .unavailable(let reason):
                logger.debug("sink unavailable", metadata: ["sink": "\(outcomes[position].sink)", "reason": "\(reason)"])
            default: break
            }
        }
    }
}

extension RecordStage {
    /// Appends the settled event to the history, unless a rule said `history: false`
    /// (what a pause held is kept for its release all the same). `now` is read only when
    /// there is a history.
    func remember(_ routed: borrowing RoutedEvent, _ report: DeliveryReport, now: @autoclosure () -> Date) {
        guard let memory else { return }
        memory.record(report, input: routed.explicit, settings: history, now: now(), keep: routed.ruleLayer.history, batch: routed.batch)
    }
}
