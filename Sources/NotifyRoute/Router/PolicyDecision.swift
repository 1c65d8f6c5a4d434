import Foundation

/// Step 4 of the pipeline for one sink, decided against the remembered state: is this
/// a duplicate inside the dedup window, and does it replace something shown before?
struct PolicyDecision: Sendable {
    var intent: SinkDelivery.Intent
    var count: Int
    var suppressed: SuppressionReason?
    /// True when this decision opened a dedup window (to undo if delivery fails).
    var createdWindow: Bool

    static func decide(
        for event: ResolvedEvent, sink: String, window: Duration?, capabilities: SinkCapabilities, now: Date,
        state: inout RouterState, maxEntries: Int
    ) -> PolicyDecision {
        var count = 1
        var createdWindow = false
        if let window {
            let key = RouterState.key(sink: sink, event.dedupKey)
            if var record = state.dedup[key], now.timeIntervalSince(record.firstSeen) < window.seconds {
                record.count += 1
                record.lastSeen = now
                state.dedup[key] = record
                if capabilities.canReplace, let handle = record.handle {
                    return PolicyDecision(
                        intent: .updateDuplicateCount(handle, count: record.count), count: record.count,
                        suppressed: .duplicate(count: record.count, window: window, updatedInPlace: true), createdWindow: false)
                }
                return PolicyDecision(intent: .show, count: record.count,
                                      suppressed: .duplicate(count: record.count, window: window, updatedInPlace: false),
                                      createdWindow: false)
            }
            state.dedup[key] = RouterState.DedupRecord(
                firstSeen: now, lastSeen: now, count: 1, handle: nil, expires: now.addingTimeInterval(window.seconds))
            createdWindow = true
            count = 1
            // Windows that have closed go first; then, if still over the bound, the oldest.
            if state.dedup.count > maxEntries { state.evict(maxEntries: maxEntries, now: now) }
        }
        if capabilities.canReplace, let replaceKey = event.replaceKey,
           let record = state.handles[RouterState.key(sink: sink, replaceKey)] {
            return PolicyDecision(intent: .replace(record.handle), count: count, suppressed: nil, createdWindow: createdWindow)
        }
        return PolicyDecision(intent: .show, count: count, suppressed: nil, createdWindow: createdWindow)
    }

    /// After a successful delivery: remember the handle for the replace key and the dedup window.
    static func commit(event: ResolvedEvent, sink: String, handle: SinkHandle?, now: Date, state: inout RouterState) {
        guard let handle else { return }
        if let replaceKey = event.replaceKey {
            state.handles[RouterState.key(sink: sink, replaceKey)] = RouterState.HandleRecord(handle: handle, lastUsed: now)
        }
        let dedupKey = RouterState.key(sink: sink, event.dedupKey)
        if state.dedup[dedupKey] != nil { state.dedup[dedupKey]?.handle = handle }
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
