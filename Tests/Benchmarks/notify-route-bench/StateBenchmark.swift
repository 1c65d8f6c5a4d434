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
/// size and the ratio of the largest to the smallest (CPU time); then the same in `ingest`'s batches
/// (``StateBatch``). In /dev/shm (a tmpfs, as `$XDG_RUNTIME_DIR` is), or `$BENCH_STATE_DIR`.
func benchState(events: Int) async {
    var rows: [(Int, Double)] = [], batchedRows: [(Int, Double)] = []
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
        // Each event alone (a `send`), then in `ingest`'s batches (committed every 20 ms).
        let alone = eventsMicros(store, events: events, size: size, first: 0, start: start)
        let batch = StateBatch()
        let batched = eventsMicros(store, events: events, size: size, first: events, start: start, batch: batch)
        print("state: \(size) live keys: \(fixed(alone.wall)) µs per event (\(fixed(alone.cpu)) CPU), "
              + "\(fixed(batched.wall)) in batches (\(fixed(batched.cpu)) CPU)")
        rows.append((size, alone.cpu))
        batchedRows.append((size, batched.cpu))
    }
    let ratio = rows.map(\.1).max()! / rows.map(\.1).min()!
    let batchedRatio = batchedRows.map(\.1).max()! / batchedRows.map(\.1).min()!
    print("RESULT state events=\(events) " + rows.map { "cpu_us_per_event_at_\($0.0)=\(fixed($0.1))" }.joined(separator: " ")
          + " max_over_min=\(fixed(ratio)) "
          + batchedRows.map { "batched_cpu_us_per_event_at_\($0.0)=\(fixed($0.1))" }.joined(separator: " ")
          + " batched_max_over_min=\(fixed(batchedRatio))")
}

/// µs per event of `events` new keys from `first` on, each as the router makes it: one
/// transaction to decide (a new window, a replace-key lookup), one to settle (the handle
/// stored). Wall-clock and CPU (user + system, from getrusage): on a shared machine the
/// CPU time is what the ratio between sizes is taken from.
private func eventsMicros(_ store: SQLiteStateStore, events: Int, size: Int, first: Int, start: Date,
                          batch: StateBatch? = nil) -> (wall: Double, cpu: Double) {
    let clock = ContinuousClock()
    let began = clock.now, cpuBegan = cpuSeconds()
    for index in first..<(first + events) {
        let now = start.addingTimeInterval(1 + Double(index) / 1e6)
        let key = RouterState.Key(sink: "a", key: "event \(index)")
        let replace = RouterState.Key(sink: "a", key: "shard \(index % 64)")
        _ = try? store.withState(discardingChanges: false, in: batch) { state -> Bool in
            let (_, duplicate) = state.recordDedup(forKey: key, now: now, window: 600, maxEntries: size)
            return duplicate || state.handle(forKey: replace) != nil
        }
        _ = try? store.withState(discardingChanges: false, in: batch) { state in
            state.storeHandle(RouterState.HandleRecord(handle: SinkHandle("\(index)"), lastUsed: now), forKey: replace)
            state.setDedupHandle(SinkHandle("\(index)"), forKey: key)
        }
    }
    batch?.commit()
    return (seconds(clock.now - began) * 1e6 / Double(events), (cpuSeconds() - cpuBegan) * 1e6 / Double(events))
}

private func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
