// notify-route-bench: in-process benchmarks of the router and the real sinks.
//
// A small harness of our own (ContinuousClock, warm-up, p50/p99, events/s, RSS from
// /proc/self/status) instead of ordo-one/benchmark: that one needs jemalloc and a
// build-tool plugin, and adds minutes to a release build on 2 cores for numbers we can
// take ourselves. Every benchmark prints one `RESULT name key=value ...` line that
// Tests/Benchmarks/run.sh puts in its table.
//
//   notify-route-bench route   EVENTS      20 routes, dedup + replace, 2 recording sinks
//   notify-route-bench memory  KEYS        distinct dedup keys, state.max_entries 10000
//   notify-route-bench journal RECORDS     journal sink throughput (through the router)
//   notify-route-bench storm   EVENTS      identical error events in one burst to the desktop

#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import NotifyRoute
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

/// A recording sink that counts instead of keeping every delivery, so that millions of
/// events measure the router and not an ever-growing array (RecordingSink keeps them all).
final class CountingSink: NotificationSink {
    let capabilities = SinkCapabilities(canReplace: true, canClose: true, deliversInline: true)
    private let state = Mutex((shown: 0, replaced: 0, updated: 0, next: 1))

    var counts: (shown: Int, replaced: Int, updated: Int) { state.withLock { ($0.shown, $0.replaced, $0.updated) } }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let handle: Int = state.withLock { state in
            switch delivery.intent {
            case .show:
                state.shown += 1
                state.next += 1
                return state.next
            case .replace(let existing):
                state.replaced += 1
                return Int(existing.value) ?? 0
            case .updateDuplicateCount(let existing, _):
                state.updated += 1
                return Int(existing.value) ?? 0
            }
        }
        return SinkReceipt(handle: SinkHandle(String(handle)))
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

// MARK: Benchmarks

/// 19 routes that do not match, then the one that does: every event walks all 20.
/// A rule sets a replace key (64 distinct), the route has a dedup window, two sinks.
let routingConfig: String = {
    var yaml = """
    sinks:
      a: { kind: counting }
      b: { kind: counting }
    rules:
      - name: replace by shard
        match: { source: "bench*" }
        set: { replace_key: "shard-{source}" }
    routes:

    """
    for index in 1...19 {
        yaml += "  - { name: r\(index), match: { source: \"svc\(index)-*\", level: \">=warning\" }, to: [a], dedup: { window: 10m } }\n"
    }
    yaml += "  - { name: r20, match: {}, to: [a, b], dedup: { window: 10m } }\n"
    yaml += "fallback: [a]\nstate: { max_entries: 10000 }\n"
    return yaml
}()

func benchRoute(events: Int) async {
    let router = makeRouter(yaml: routingConfig, plugins: [countingPlugin])
    let sources = (0..<64).map { "bench\($0)" }
    // Distinct titles: every event is new to dedup, and replaces its shard's earlier one.
    let prepared = (0..<min(events, 100_000)).map { NotificationEvent(title: "event \($0)", level: .warning, source: sources[$0 % 64]) }
    func event(_ index: Int) -> NotificationEvent {
        var event = prepared[index % prepared.count]
        if index >= prepared.count { event.title = "event \(index)" }
        return event
    }
    let warmUp = min(events / 10, 10_000)
    for index in 0..<warmUp { _ = try? await router.send(event(index)) }

    var latencies = Latencies()
    latencies.samples.reserveCapacity(events)
    let clock = ContinuousClock()
    let started = clock.now
    var delivered = 0
    for index in warmUp..<(warmUp + events) {
        let before = clock.now
        let report = try? await router.send(event(index))
        latencies.add(clock.now - before)
        delivered += report?.outcomes.filter(\.status.isSuccess).count ?? 0
    }
    let elapsed = seconds(clock.now - started)
    let a = router.sink(named: "a") as! CountingSink
    report("route", [
        "events": "\(events)", "events_per_s": "\(Int(Double(events) / elapsed))",
        "p50_us": fixed(latencies.percentile(0.5), 2), "p99_us": fixed(latencies.percentile(0.99), 2),
        "deliveries": "\(delivered)", "replaced_on_a": "\(a.counts.replaced)",
    ])
}

func benchMemory(keys: Int) async {
    let yaml = """
    sinks: { a: { kind: counting } }
    routes: [ { match: {}, to: [a], dedup: { window: 10m } } ]
    state: { max_entries: 10000 }
    """
    let router = makeRouter(yaml: yaml, plugins: [countingPlugin])
    let clock = ContinuousClock()
    let started = clock.now
    var marks: [(Int, Double)] = []
    let checkpoints = Set([keys / 10, keys / 2, keys, 1_000_000, 10_000_000].filter { $0 > 0 && $0 <= keys })
    for index in 1...keys {
        _ = try? await router.send(NotificationEvent(title: "key \(index)"))
        if checkpoints.contains(index) { marks.append((index, memoryMB("VmRSS"))) }
    }
    let elapsed = seconds(clock.now - started)
    var values: [(String, String)] = [("keys", "\(keys)"), ("events_per_s", "\(Int(Double(keys) / elapsed))")]
    for (count, rss) in marks.sorted(by: { $0.0 < $1.0 }) { values.append(("rss_mb_at_\(count)", fixed(rss))) }
    values.append(("peak_rss_mb", fixed(memoryMB("VmHWM"))))
    print("RESULT memory " + values.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
}

func benchJournal(records: Int) async {
    let yaml = """
    sinks: { journal: { kind: journal, identifier: notify-route-bench, queue_size: 100000 } }
    routes: [ { match: {}, to: [journal] } ]
    """
    let router = makeRouter(yaml: yaml, plugins: [JournalSink.plugin])
    let journal = router.sink(named: "journal") as! JournalSink
    for index in 0..<100 { _ = try? await router.send(NotificationEvent(title: "warm-up \(index)", level: .info)) }
    _ = await journal.flush(within: .seconds(10))
    let before = journal.statistics.written
    let clock = ContinuousClock()
    let started = clock.now
    var failed = 0
    for index in 0..<records {
        let report = try? await router.send(NotificationEvent(title: "bench record \(index)", level: .info))
        if report?.outcomes.first?.status.isSuccess != true { failed += 1 }
    }
    let flushed = await journal.flush(within: .seconds(60))
    let elapsed = seconds(clock.now - started)
    let written = journal.statistics.written - before
    report("journal", [
        "records": "\(records)", "records_per_s": "\(Int(Double(written) / elapsed))", "written": "\(written)",
        "failed": "\(failed)", "flushed": "\(flushed)",
    ])
}

func benchStorm(events: Int) async {
    let yaml = """
    sinks: { desktop: { kind: desktop, deadline: 5s } }
    routes: [ { match: {}, to: [desktop], dedup: { window: 10m } } ]
    """
    let router = makeRouter(yaml: yaml, plugins: [DesktopSink.plugin])
    let event = NotificationEvent(title: "Database down", body: "connection refused", level: .error, source: "db")
    let clock = ContinuousClock()
    let started = clock.now
    // One burst: every event is handed to the router at once, as a crashing service would.
    let (delivered, duplicates, updatedInPlace, other) = await withTaskGroup(of: Int.self) { group in
        for _ in 0..<events {
            group.addTask {
                guard let report = try? await router.send(event), let status = report.outcomes.first?.status else { return 3 }
                switch status {
                case .delivered, .replaced: return 0
                case .suppressed(.duplicate(_, _, let updated)): return updated ? 2 : 1
                default: return 3
                }
            }
        }
        var counts = [0, 0, 0, 0]
        for await kind in group { counts[kind] += 1 }
        return (counts[0], counts[1] + counts[2], counts[2], counts[3])
    }
    let elapsed = seconds(clock.now - started)
    await router.finish(within: .seconds(5))
    report("storm", [
        "events": "\(events)", "seconds": fixed(elapsed, 2), "delivered": "\(delivered)",
        "duplicates": "\(duplicates)", "updated_in_place": "\(updatedInPlace)", "other": "\(other)",
        "counted": "\(delivered + duplicates)",
    ])
}

// MARK: Main

let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let count = arguments.dropFirst().first.flatMap({ Int($0) }), count > 0 else {
    fail("usage: notify-route-bench route|memory|journal|storm COUNT")
}
switch name {
case "route": await benchRoute(events: count)
case "memory": await benchMemory(keys: count)
case "journal": await benchJournal(records: count)
case "storm": await benchStorm(events: count)
default: fail("unknown benchmark \(name)")
}
