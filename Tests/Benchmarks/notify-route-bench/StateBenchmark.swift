import Glibc
import NotifyRoute
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `state N`: the state database's cost per event at 1,000, 100,000 and 1,000,000 live
/// dedup keys (those of them at most N). For each size, a database filled to that many
/// windows (`max_entries` the same, so eviction runs as it does in use), then N events
/// with new keys, each as the router makes it: one transaction to decide (a new window,
/// a replace-key lookup), one to settle (the handle stored). Prints µs per event at each
/// size and the ratio of the largest to the smallest. In /dev/shm (a tmpfs, as
/// `$XDG_RUNTIME_DIR` is), or `$BENCH_STATE_DIR`.
func benchState(events: Int) async {
    var rows: [(Int, Double)] = []
    for size in [1_000, 100_000, 1_000_000] {
        let directory = "\(ProcessEnvironment.value("BENCH_STATE_DIR") ?? "/dev/shm")/notify-route-bench-state-\(getpid())-\(size)"
        mkdir(directory, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let store = SQLiteStateStore(directory: directory)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        // The fill, 10,000 windows per transaction (its time is not measured).
        var filled = 0
        while filled < size {
            let batch = min(10_000, size - filled)
            _ = try? store.withState { state in
                for index in filled..<(filled + batch) {
                    _ = state.recordDedup(forKey: RouterState.Key(sink: "a", key: "fill \(index)"),
                                          now: start.addingTimeInterval(Double(index) / 1e6), window: 600, maxEntries: size)
                }
            }
            filled += batch
        }
        let clock = ContinuousClock()
        let began = clock.now
        for index in 0..<events {
            let now = start.addingTimeInterval(1 + Double(index) / 1e6)
            let key = RouterState.Key(sink: "a", key: "event \(index)")
            let replace = RouterState.Key(sink: "a", key: "shard \(index % 64)")
            _ = try? store.withState { state -> Bool in
                let (_, duplicate) = state.recordDedup(forKey: key, now: now, window: 600, maxEntries: size)
                return duplicate || state.handle(forKey: replace) != nil
            }
            _ = try? store.withState { state in
                state.storeHandle(RouterState.HandleRecord(handle: SinkHandle("\(index)"), lastUsed: now), forKey: replace)
                state.setDedupHandle(SinkHandle("\(index)"), forKey: key)
            }
        }
        let micros = seconds(clock.now - began) * 1e6 / Double(events)
        print("state: \(size) live keys: \(fixed(micros)) µs per event")
        rows.append((size, micros))
    }
    let ratio = rows.map(\.1).max()! / rows.map(\.1).min()!
    print("RESULT state events=\(events) " + rows.map { "us_per_event_at_\($0.0)=\(fixed($0.1))" }.joined(separator: " ")
          + " max_over_min=\(fixed(ratio))")
}
