#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Coalesced duplicate-count updates (see ``CountUpdateCoalescer``): how a wave hands
/// its duplicates to the coalescer, and how pending updates go out later.
extension NotificationRouter {
    /// Runs inside the state transaction of a wave, for a sink that can replace: a new
    /// window starts a new original; a duplicate updates at once or is coalesced.
    func coalesce(_ decision: inout PolicyDecision, _ item: PendingDelivery, now: Date) -> CountUpdateCoalescer.Flush? {
        if decision.createdWindow {
            if !countUpdates.isEmpty { countUpdates.originalStarted(key: item.stateKey) }
            return nil
        }
        guard case .duplicate(let count, _, _)? = decision.suppressed else { return nil }
        var handle: SinkHandle?
        if case .updateDuplicateCount(let known, _) = decision.intent { handle = known }
        let (verdict, flush) = countUpdates.duplicate(
            key: item.stateKey, handle: handle,
            pending: .init(count: count, event: item.event, target: item.target, instance: item.instance), now: now)
        switch verdict {
        case .updateNow(let handle):
            decision.intent = .updateDuplicateCount(handle, count: count)
        case .coalesced:
            decision.intent = .show
            decision.coalesced = true
        }
        return flush
    }

    /// After a wave's commit: updates sent with it have returned, and originals that
    /// duplicates were waiting for now have their handle (or failed).
    func settleCountUpdates(_ slots: [Slot], _ finishedUpdates: [RouterState.Key]) {
        let now = clock.now()
        for key in finishedUpdates {
            if let flush = countUpdates.updateFinished(key: key, now: now) { schedule(flush) }
        }
        for position in slots.indices where slots[position].decision.createdWindow && slots[position].item.capabilities.canReplace {
            // A window's original is never suppressed: its receipt is still in the answer.
            let handle = slots[position].answer.receipt?.handle
            if let flush = countUpdates.originalFinished(key: slots[position].item.stateKey, handle: handle, now: now) { schedule(flush) }
        }
    }

    /// Sends the pending update of a key after the flush's delay, in a task of its own:
    /// the sends that coalesced into it have long returned their reports.
    func schedule(_ flush: CountUpdateCoalescer.Flush) {
        Task {
            if flush.delay > .zero { try? await Task.sleep(for: flush.delay) }
            await sendPendingCountUpdate(key: flush.key)
        }
    }

    /// Sends the latest count of a key, if one is still pending, then plans the next.
    func sendPendingCountUpdate(key: RouterState.Key) async {
        guard let (pending, handle) = countUpdates.takePending(key: key, now: clock.now()) else { return }
        let delivery = SinkDelivery(
            event: pending.event, sinkName: pending.target.sinkName,
            intent: .updateDuplicateCount(handle, count: pending.count),
            deadline: .now.advanced(by: pending.instance.deadline), duplicateCount: pending.count)
        if case .failure(let error) = await attempt(pending.instance, delivery) {
            logger.warning("count update failed", metadata: ["sink": "\(pending.target.sinkName)", "error": "\(error.message)"])
        }
        if let flush = countUpdates.updateFinished(key: key, now: clock.now()) { schedule(flush) }
    }

    /// Sends every pending update now, whatever the interval, and waits for those in
    /// flight: what ``finish(within:)`` does first.
    func flushCountUpdates() async {
        while !countUpdates.isEmpty {
            let (ready, inFlight) = countUpdates.outstanding()
            if ready.isEmpty && !inFlight { return }
            if ready.isEmpty {
                try? await Task.sleep(for: .milliseconds(1))
                continue
            }
            await withTaskGroup(of: Void.self) { group in
                for key in ready { group.addTask { await self.sendPendingCountUpdate(key: key) } }
            }
        }
    }
}
