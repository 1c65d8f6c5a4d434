import NotifyRoute
import NotifyRouteDesktop

// Routing, memory and the event storm: the router's own cost.

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
    let warmUp = min(events / 10, 10_000)
    // The titles past the prepared events, made before the timed loop (small strings, 16
    // bytes each: 16 MB for a million): interpolated inside it, they cost the harness
    // some 300 instructions per event that the router never sees.
    let laterTitles = (min(prepared.count, warmUp + events)..<(warmUp + events)).map { "event \($0)" }
    func event(_ index: Int) -> NotificationEvent {
        var event = prepared[index % prepared.count]
        if index >= prepared.count { event.title = laterTitles[index - prepared.count] }
        return event
    }
    for index in 0..<warmUp { _ = try? await router.send(event(index)) }

    let a = router.sink(named: "a") as! CountingSink
    var run = EventRun(events: events)
    for index in warmUp..<(warmUp + events) {
        let sent = run.clock.now
        run.record(try? await router.send(event(index)), sentAt: sent)
    }
    run.finish("route", replacedOn: a)
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

