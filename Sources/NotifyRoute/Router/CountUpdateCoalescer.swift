#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Duplicate-count updates, coalesced per sink and dedup key, so that a storm of
/// identical events costs a handful of updates instead of one per duplicate.
///
/// For each key at most one update is in flight. A duplicate that arrives while the
/// original delivery has not returned its handle, while an update is in flight, or
/// sooner than ``minimumInterval`` after the last update, only records its count: the
/// pending update. It goes out, once, with the latest count, when the original's handle
/// arrives, when the update in flight returns (but not before the interval), and at
/// ``NotificationRouter/finish(within:)`` in any case, so the last count always shows.
///
/// The bookkeeping that depends on the remembered state (did the duplicate see the
/// original's handle?) runs inside the state transaction, so that a duplicate and the
/// commit of its original cannot pass each other unnoticed.
final class CountUpdateCoalescer: Sendable {
    /// The latest duplicate of a key, waiting for its count to be sent.
    struct Pending: Sendable {
        var count: Int
        var event: ResolvedEvent
        var target: RouteTarget
        var instance: SinkInstance
    }

    /// What a duplicate should do now.
    enum Verdict: Sendable {
        /// Send the count update with this wave, to the original's handle.
        case updateNow(SinkHandle)
        /// Counted; the update goes out later with a later count.
        case coalesced
    }

    /// What the caller must start after a change: send the pending update of a key
    /// after `delay` (zero: at once).
    struct Flush: Sendable {
        var key: RouterState.Key
        var delay: Duration
    }

    private struct Entry {
        /// The original notification's handle, once its delivery returned one.
        var handle: SinkHandle?
        var inFlight = false
        /// A flush is already planned (a timer or a task is on its way).
        var scheduled = false
        var pending: Pending?
        var lastUpdate: Date?
        /// After the first update of a storm, the next waits for the storm to end: no
        /// duplicate for ``minimumInterval`` (then the count is the total).
        var lastDuplicate: Date?
        var storming = false
        /// Duplicates seen, and how many had been when the flush was planned: none since
        /// means the storm has been quiet for the flush's delay, whatever the clock says.
        var duplicates = 0, duplicatesAtPlan = 0

        var isIdle: Bool { !inFlight && !scheduled && pending == nil }
    }

    let minimumInterval: Duration
    private let entries = Mutex([RouterState.Key: Entry]())
    /// How many keys have an entry: the hot path reads this instead of taking the lock.
    private let active = Atomic<Int>(0)

    init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// True when no key is being coalesced: the common case, one atomic load.
    var isEmpty: Bool { active.load(ordering: .acquiring) == 0 }

    /// A duplicate for a sink that can update in place. `handle` is what the state
    /// remembers of the original (nil while its delivery has not returned).
    func duplicate(key: RouterState.Key, handle: SinkHandle?, pending: Pending, now: Date) -> (Verdict, Flush?) {
        withEntry(key) { entry in
            if let handle { entry.handle = handle }
            if let last = entry.lastDuplicate, now.timeIntervalSince(last) >= minimumInterval.seconds { entry.storming = false }
            entry.lastDuplicate = now
            entry.duplicates += 1
            // A planned flush does not hold back a duplicate that comes after the interval:
            // it takes the update now, and the flush finds nothing left to send.
            if let handle = entry.handle, !entry.inFlight, !entry.storming, intervalElapsed(entry, now: now) {
                entry.inFlight = true
                entry.pending = nil
                entry.lastUpdate = now
                entry.storming = true
                return (.updateNow(handle), nil)
            }
            if (entry.pending?.count ?? 0) <= pending.count { entry.pending = pending }
            return (.coalesced, planFlush(key, &entry, now: now))
        }
    }

    /// A new dedup window opened for `key`: its original is on its way, and an earlier
    /// window's handle must not receive the new window's counts.
    func originalStarted(key: RouterState.Key) {
        _ = withExistingEntry(key) { entry in entry.handle = nil }
    }

    /// The original delivery of `key` returned (`handle` nil: it failed or gave none).
    /// Only called when ``isEmpty`` is false.
    func originalFinished(key: RouterState.Key, handle: SinkHandle?, now: Date) -> Flush? {
        withExistingEntry(key) { entry in
            guard let handle else {
                // Nothing to update: the duplicates stay counted in their reports.
                entry.pending = nil
                return nil
            }
            entry.handle = handle
            return planFlush(key, &entry, now: now)
        } ?? nil
    }

    /// An update of `key` (sent with a wave or by a flush) returned.
    func updateFinished(key: RouterState.Key, now: Date) -> Flush? {
        withExistingEntry(key) { entry in
            entry.inFlight = false
            return planFlush(key, &entry, now: now)
        } ?? nil
    }

    /// Takes the pending update of `key` to send it now, marking it in flight; `nil` also
    /// while a storm goes on (unless `force`): ``replan(key:now:)`` then plans it again.
    func takePending(key: RouterState.Key, now: Date, force: Bool = false) -> (Pending, SinkHandle)? {
        withExistingEntry(key) { entry in
            entry.scheduled = false
            guard !entry.inFlight, let pending = entry.pending, let handle = entry.handle else { return nil }
            let quietSincePlan = entry.duplicates == entry.duplicatesAtPlan
            let recent = entry.lastDuplicate.map { now.timeIntervalSince($0) < minimumInterval.seconds } ?? false
            if entry.storming && !quietSincePlan && recent && !force { return nil }
            // The first update of a storm goes at once; the one after it ends, with the total.
            entry.storming = entry.storming ? false : recent
            entry.pending = nil
            entry.inFlight = true
            entry.lastUpdate = now
            return (pending, handle)
        } ?? nil
    }

    /// Keys with an update waiting for a handle that is known, and whether any update is
    /// still in flight: what ``NotificationRouter/finish(within:)`` sends at once or awaits.
    func outstanding() -> (ready: [RouterState.Key], inFlight: Bool) {
        entries.withLock { entries in
            var ready: [RouterState.Key] = []
            var inFlight = false
            for (key, entry) in entries {
                if entry.inFlight { inFlight = true }
                if entry.pending != nil, entry.handle != nil, !entry.inFlight { ready.append(key) }
            }
            return (ready, inFlight)
        }
    }

    /// Plans a pending update that ``takePending(key:now:force:)`` held back.
    func replan(key: RouterState.Key, now: Date) -> Flush? {
        withExistingEntry(key) { planFlush(key, &$0, now: now) } ?? nil
    }

    /// When the pending update of an entry can go, if it has one and none is planned.
    private func planFlush(_ key: RouterState.Key, _ entry: inout Entry, now: Date) -> Flush? {
        guard entry.pending != nil, entry.handle != nil, !entry.inFlight, !entry.scheduled else { return nil }
        entry.scheduled = true
        entry.duplicatesAtPlan = entry.duplicates
        var delay = Duration.zero
        if let last = entry.lastUpdate {
            let remaining = minimumInterval.seconds - now.timeIntervalSince(last)
            if remaining > 0 { delay = .milliseconds(Int64((remaining * 1000).rounded(.up))) }
        }
        if entry.storming, let last = entry.lastDuplicate {
            let quiet = minimumInterval.seconds - now.timeIntervalSince(last)
            if quiet > 0 { delay = max(delay, .milliseconds(Int64((quiet * 1000).rounded(.up)))) }
        }
        return Flush(key: key, delay: delay)
    }

    private func intervalElapsed(_ entry: Entry, now: Date) -> Bool {
        guard let last = entry.lastUpdate else { return true }
        return now.timeIntervalSince(last) >= minimumInterval.seconds
    }

    private func withEntry<R>(_ key: RouterState.Key, _ body: (inout Entry) -> R) -> R {
        entries.withLock { entries in
            let isNew = entries[key] == nil
            let result = body(&entries[key, default: Entry()])
            if isNew { active.add(1, ordering: .releasing) }
            prune(&entries, keeping: key)
            return result
        }
    }

    private func withExistingEntry<R>(_ key: RouterState.Key, _ body: (inout Entry) -> R) -> R? {
        entries.withLock { entries in
            guard entries[key] != nil else { return nil }
            let result = body(&entries[key]!)
            if let entry = entries[key], entry.isIdle, entry.lastUpdate == nil || entry.handle == nil {
                // Nothing waits and no interval to enforce: forget the key.
                entries.removeValue(forKey: key)
                active.subtract(1, ordering: .releasing)
            }
            return result
        }
    }

    /// Keeps the map small: idle keys only remember when their last update went, which
    /// matters for one interval; past 1,024 keys the idle ones are forgotten.
    private func prune(_ entries: inout [RouterState.Key: Entry], keeping key: RouterState.Key) {
        guard entries.count > 1_024 else { return }
        let idle = entries.compactMap { $0.value.isIdle && $0.key != key ? $0.key : nil }
        for key in idle { entries.removeValue(forKey: key) }
        active.subtract(idle.count, ordering: .releasing)
    }
}
