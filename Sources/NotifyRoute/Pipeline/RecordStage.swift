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

    /// Returns the count updates to send later (see ``CountUpdateCoalescer``).
    func record(_ wave: inout Wave, store: any RouterStateStore, clock: any RouterClock,
                logger: Logger, planning: Bool) -> [CountUpdateCoalescer.Flush] {
        var committed: [Int] = []  // positions in flows of the deliveries that showed something
        var rollbacks: [RouterState.Key] = []
        var finishedUpdates: [RouterState.Key] = []
        for position in wave.flows.indices {
            let flow = wave.flows[position]
            let index = flow.index
            wave.outcomes[index].duration = flow.answer.duration
            if flow.answer.planned {
                if let summary = flow.decision.summary {
                    wave.outcomes[index].notes.append("would deliver first: a summary of \(summary.held) events held \(summary.why)")
                }
                if let error = flow.answer.error {
                    wave.outcomes[index].status = SinkOutcome.Status(failure: error)
                } else {
                    wave.outcomes[index].status = flow.decision.suppressed.map { .suppressed($0) } ?? .planned(flow.decision.intent)
                }
                continue
            }
            if let summary = flow.decision.summary {
                wave.outcomes[index].notes.append("delivered first: a summary of \(summary.held) events held \(summary.why)")
            }
            if let suppressed = flow.decision.suppressed {
                if case .duplicate(let count, let window, _) = suppressed {
                    if case .updateDuplicateCount = flow.decision.intent { finishedUpdates.append(flow.stateKey) }
                    if let error = flow.answer.error {
                        wave.outcomes[index].notes.append("count update failed: \(error.message)")
                    }
                    if flow.decision.coalesced {
                        wave.outcomes[index].notes.append("count update coalesced: the notification will show the latest count")
                    }
                    wave.outcomes[index].status = .suppressed(
                        .duplicate(count: count, window: window, updatedInPlace: flow.answer.receipt != nil))
                } else {
                    wave.outcomes[index].status = .suppressed(suppressed)
                }
            } else if let receipt = flow.answer.receipt {
                wave.outcomes[index].handle = receipt.handle
                wave.outcomes[index].notes += receipt.notes
                switch (receipt.disposition, flow.decision.intent) {
                case (.queued(let reason), _): wave.outcomes[index].status = .queued(reason: reason)
                case (.delivered, .replace(let previous)): wave.outcomes[index].status = .replaced(previous: previous)
                case (.delivered, _): wave.outcomes[index].status = .delivered
                }
                committed.append(position)
            } else if let error = flow.answer.error {
                wave.outcomes[index].status = SinkOutcome.Status(failure: error)
                // A failed delivery must not make the next attempt look like a duplicate.
                if flow.decision.createdWindow { rollbacks.append(flow.stateKey) }
            }
        }
        if !planning { log(wave.outcomes, logger) }
        let inhibits = !inhibitRules.isEmpty && !committed.isEmpty
        if committed.contains(where: { wave.flows[$0].answer.receipt?.handle != nil }) || !rollbacks.isEmpty || inhibits {
            let now = clock.now()
            _ = try? store.withState { state in
                for position in committed {
                    let flow = wave.flows[position]
                    guard let handle = flow.answer.receipt?.handle else { continue }
                    if let key = flow.handleKey {
                        state.storeHandle(RouterState.HandleRecord(handle: handle, lastUsed: now), forKey: key)
                    }
                    state.setDedupHandle(handle, forKey: flow.stateKey)
                }
                if inhibits { recordInhibitor(wave.flows[committed[0]].event, now: now, state: state) }
                for key in rollbacks { state.removeDedup(forKey: key) }
                state.evictHandles(maxEntries: maxEntries)
            }
        }
        return countUpdates.isEmpty ? [] : settleCountUpdates(wave.flows, finishedUpdates, now: clock.now())
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
        for flow in flows where flow.decision.createdWindow && flow.capabilities.canReplace {
            if let flush = countUpdates.originalFinished(key: flow.stateKey, handle: flow.answer.receipt?.handle, now: now) {
                flushes.append(flush)
            }
        }
        return flushes
    }

    private func log(_ outcomes: [SinkOutcome], _ logger: Logger) {
        for outcome in outcomes {
            switch outcome.status {
            case .failed(let error):
                logger.warning("sink failed", metadata: ["sink": "\(outcome.sink)", "error": "\(error.message)"])
            case .unavailable(let reason):
                logger.debug("sink unavailable", metadata: ["sink": "\(outcome.sink)", "reason": "\(reason)"])
            default: break
            }
        }
    }
}
