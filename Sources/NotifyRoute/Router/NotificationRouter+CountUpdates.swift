#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Coalesced duplicate-count updates (see ``CountUpdateCoalescer``; ``DedupStage`` hands
/// it the duplicates): how pending updates go out later.
extension NotificationRouter {
    /// Sends the pending update of a key after the flush's delay, in the router's runtime:
    /// the sends that coalesced into it have long returned their reports.
    func schedule(_ flush: CountUpdateCoalescer.Flush) {
        runtime.start {
            if flush.delay > .zero { try? await Task.sleep(for: flush.delay) }
            await self.sendPendingCountUpdate(key: flush.key)
        }
    }

    /// Sends the latest count of a key, if one is still pending, then plans the next.
    func sendPendingCountUpdate(key: RouterState.Key, force: Bool = false) async {
        guard let (pending, handle) = countUpdates.takePending(key: key, now: clock.now(), force: force) else {
            if let flush = countUpdates.replan(key: key, now: clock.now()) { schedule(flush) }  // the storm goes on
            return
        }
        let delivery = SinkDelivery(
            event: pending.event, sinkName: pending.target.sinkName,
            intent: .updateDuplicateCount(handle, count: pending.count),
            deadline: .now.advanced(by: pending.instance.deadline), duplicateCount: pending.count)
        if case .failure(let error) = await pending.instance.attempt(delivery) {
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
                for key in ready { group.addTask { await self.sendPendingCountUpdate(key: key, force: true) } }
            }
        }
    }
}
