// notify-route-bench: in-process benchmarks of the router and the real sinks.
//
// A small harness of our own (ContinuousClock, warm-up, p50/p99, events/s, RSS from
// /proc/self/status) instead of ordo-one/benchmark: that one needs jemalloc and a
// build-tool plugin, and adds minutes to a release build on 2 cores for numbers we can
// take ourselves. Every benchmark prints one `RESULT name key=value ...` line that
// Tests/Benchmarks/run.sh puts in its table.
//
//   notify-route-bench route   EVENTS      20 routes, dedup + replace, 2 recording sinks
//   notify-route-bench floor   EVENTS      route's events through the state and types alone
//   notify-route-bench memory  KEYS        distinct dedup keys, state.max_entries 10000
//   notify-route-bench journal RECORDS     journal sink throughput (through the router)
//   notify-route-bench storm   EVENTS      identical error events in one burst to the desktop

import Glibc
import Synchronization
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteDesktop
import NotifyRouteJournal

// MARK: Harness

func report(_ name: String, _ values: KeyValuePairs<String, String>) {
    print("RESULT \(name) " + values.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
}

func fail(_ message: String) -> Never {
    _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    _ = write(STDERR_FILENO, "\n", 1)
    exit(1)
}

/// `VmRSS` / `VmHWM` of this process in MB.
func memoryMB(_ field: String) -> Double {
    guard let file = fopen("/proc/self/status", "r") else { return -1 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix(field + ":") {
            let digits = text.filter(\.isNumber)
            return Double(Int(digits) ?? 0) / 1024
        }
    }
    return -1
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func fixed(_ value: Double, _ digits: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return "\(rounded)"
}

/// Latencies in microseconds, sorted once.
struct Latencies {
    var samples: [Double] = []
    mutating func add(_ duration: Duration) { samples.append(seconds(duration) * 1e6) }
    func percentile(_ p: Double) -> Double {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}

/// The timed loop's bookkeeping that `route` and `floor` share: each event's latency and
/// successful deliveries, and the row they print. Made right before the loop: the clock
/// starts then.
struct EventRun {
    let clock = ContinuousClock()
    private var latencies = Latencies()
    private var delivered = 0
    private let started: ContinuousClock.Instant

    init(events: Int) {
        latencies.samples.reserveCapacity(events)
        started = clock.now
    }

    /// An event sent at `sent`: its latency up to now, then its deliveries (counted in
    /// place: `filter(...).count` allocated an array per event inside the timed loop).
    mutating func record(_ report: DeliveryReport?, sentAt sent: ContinuousClock.Instant) {
        latencies.add(clock.now - sent)
        guard let outcomes = report?.outcomes else { return }
        for outcome in outcomes where outcome.status.isSuccess { delivered += 1 }
    }

    /// Stops the clock and prints the row: events/s, p50, p99, deliveries, and how many
    /// deliveries `sink` (the benchmarks' sink `a`) saw as replacements.
    func finish(_ name: String, replacedOn sink: CountingSink) {
        let elapsed = seconds(clock.now - started)
        let events = latencies.samples.count
        report(name, [
            "events": "\(events)", "events_per_s": "\(Int(Double(events) / elapsed))",
            "p50_us": fixed(latencies.percentile(0.5), 2), "p99_us": fixed(latencies.percentile(0.99), 2),
            "deliveries": "\(delivered)", "replaced_on_a": "\(sink.counts.replaced)",
        ])
    }
}

/// A recording sink that counts instead of keeping every delivery, so that millions of
/// events measure the router and not an ever-growing array (RecordingSink keeps them all).
final class CountingSink: NotificationSink {
    let capabilities = SinkCapabilities(canReplace: true, canClose: true, deliversInline: true)
    private let state = Mutex((shown: 0, replaced: 0, updated: 0, next: 1))

    var counts: (shown: Int, replaced: Int, updated: Int) { state.withLock { ($0.shown, $0.replaced, $0.updated) } }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        count(delivery)
    }

    /// The delivery without suspending: what the floor benchmark calls.
    func count(_ delivery: SinkDelivery) -> SinkReceipt {
        // A replace or an update keeps the handle it was given (as RecordingSink does);
        // parsing it to an Int and formatting it back was the sink's own cost, not the router's.
        let handle: Int? = state.withLock { state in
            switch delivery.intent {
            case .show:
                state.shown += 1
                state.next += 1
                return state.next
            case .replace:
                state.replaced += 1
                return nil
            case .updateDuplicateCount:
                state.updated += 1
                return nil
            }
        }
        switch delivery.intent {
        case .replace(let existing), .updateDuplicateCount(let existing, _): return SinkReceipt(handle: existing)
        case .show: return SinkReceipt(handle: SinkHandle(String(handle!)))
        }
    }
}

let countingPlugin = SinkPlugin(kind: "counting", summary: "counts deliveries") { _ in CountingSink() }

func makeRouter(yaml: String, plugins: [SinkPlugin]) -> NotificationRouter {
    do {
        let registry = try SinkRegistry(plugins)
        let configuration = try RouterConfiguration.load(yaml: yaml, file: "bench.yaml", registry: registry)
        return try NotificationRouter(configuration: configuration, registry: registry)
    } catch {
        fail("bench config: \(error)")
    }
}

