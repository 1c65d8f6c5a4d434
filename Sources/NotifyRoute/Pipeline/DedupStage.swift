/// Suppresses a repeat of the same dedup key inside the route's window, counting it;
/// a sink that can replace gets the count updated in place (coalesced in a storm).
struct DedupStage: PolicyStage {
    func decide(_ delivery: inout SinkFlow, _ context: PolicyContext) {
        guard let window = delivery.target.dedupWindow else { return }
        let (record, isDuplicate) = context.state.recordDedup(
            forKey: delivery.stateKey, now: context.now, window: delivery.target.dedupSeconds, maxEntries: context.maxEntries)
        let canReplace = delivery.capabilities.canReplace
        guard isDuplicate else {
            delivery.decision.createdWindow = true
            // A new original: an earlier window's handle must not receive its counts.
            if canReplace, let coalescer = context.countUpdates, !coalescer.isEmpty {
                coalescer.originalStarted(key: delivery.stateKey)
            }
            return
        }
        let handle = canReplace ? record.handle : nil
        delivery.decision = PolicyDecision(
            intent: handle.map { .updateDuplicateCount($0, count: record.count) } ?? .show, count: record.count,
            suppressed: .duplicate(count: record.count, window: window, updatedInPlace: handle != nil))
        guard canReplace, let coalescer = context.countUpdates else { return }
        // Inside the state transaction: a duplicate and its original's commit cannot pass each other.
        let (verdict, flush) = coalescer.duplicate(
            key: delivery.stateKey, handle: handle,
            pending: .init(count: record.count, event: delivery.event, target: delivery.target, instance: delivery.instance),
            now: context.now)
        switch verdict {
        case .updateNow(let handle):
            delivery.decision.intent = .updateDuplicateCount(handle, count: record.count)
        case .coalesced:
            delivery.decision.intent = .show
            delivery.decision.coalesced = true
        }
        delivery.flush = flush
    }
}
