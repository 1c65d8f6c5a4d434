#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

// The floor under `route`: what the same events cost the state and the types alone.

/// The work that `route`'s events make necessary, done with the state's own operations
/// (those the router uses, reached with `package` access) and none of the router's
/// logic: per event a ``ResolvedEvent`` (its default dedup key built and hashed once),
/// then for each of the two sinks the state's keys (made from the hashes at hand), the
/// dedup window opened (eviction past 10,000 entries, from the eviction order), the
/// replace key's handle looked up, one delivery to a `CountingSink`, the handle and the
/// window's handle stored, an outcome; then a ``DeliveryReport``. Two state transactions
/// per sink (the router makes two per event). No normalising, no rules, no routes or
/// plan, no cascade, no wave: what `route` costs above this is the router's own.
func benchFloor(events: Int) async {
    let names = ["a", "b"], nameHashes = ["a".hashValue, "b".hashValue]
    let sinks = [CountingSink(), CountingSink()]
    let store = InMemoryStateStore()
    let sources = (0..<64).map { "bench\($0)" }
    let warmUp = min(events / 10, 10_000)
    let titles = (0..<(warmUp + events)).map { "event \($0)" }
    let matchedRoutes = ["route 20 \"r20\""], matchedRules = ["rule 1 \"replace by shard\""]
    let window: Duration = .seconds(600)
    let maxEntries = 10_000

    func one(_ index: Int) -> DeliveryReport {
        let source = sources[index % 64]
        let event = ResolvedEvent(title: titles[index], level: .warning, source: source, replaceKey: "shard-" + source)
        let dedupKey = event.dedupKey, replaceKey = event.replaceKey!
        let dedupHash = dedupKey.hashValue, replaceHash = replaceKey.hashValue
        let now = Date()
        var outcomes: [SinkOutcome] = []
        outcomes.reserveCapacity(2)
        for position in 0..<2 {
            let name = names[position]
            let key = RouterState.Key(plainSink: name, sinkHash: nameHashes[position], key: dedupKey, keyHash: dedupHash)
            let handleKey = RouterState.Key(plainSink: name, sinkHash: nameHashes[position], key: replaceKey, keyHash: replaceHash)
            let intent: SinkDelivery.Intent? = try? store.withState { state -> SinkDelivery.Intent? in
                if state.recordDedup(forKey: key, now: now, window: 600, maxEntries: maxEntries).isDuplicate { return nil }
                if let record = state.handle(forKey: handleKey) { return .replace(record.handle) }
                return .show
            }
            guard let intent else {
                outcomes.append(SinkOutcome(sink: name, kind: "counting", status: .suppressed(.duplicate(count: 2, window: window, updatedInPlace: false)), route: matchedRoutes[0]))
                continue
            }
            let delivery = SinkDelivery(event: event, sinkName: name, intent: intent, deadline: .now.advanced(by: .seconds(1)))
            let receipt = sinks[position].count(delivery)
            if let handle = receipt.handle {
                _ = try? store.withState { state in
                    state.storeHandle(RouterState.HandleRecord(handle: handle, lastUsed: now), forKey: handleKey)
                    state.setDedupHandle(handle, forKey: key)
                }
            }
            let status: SinkOutcome.Status
            if case .replace(let previous) = intent { status = .replaced(previous: previous) } else { status = .delivered }
            outcomes.append(SinkOutcome(sink: name, kind: "counting", status: status, handle: receipt.handle, route: matchedRoutes[0]))
        }
        return DeliveryReport(event: event, matchedRules: matchedRules, matchedRoutes: matchedRoutes, outcomes: outcomes)
    }

    for index in 0..<warmUp { _ = one(index) }
    var run = EventRun(events: events)
    for index in warmUp..<(warmUp + events) {
        let sent = run.clock.now
        run.record(one(index), sentAt: sent)
    }
    run.finish("floor", replacedOn: sinks[0])
}
