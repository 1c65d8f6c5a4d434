import NotifyRoute
import NotifyRouteJournal

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

