import Glibc
import NotifyRoute
import NotifyRouteJournal

/// Records through the router into journald, one `send` after the other (the sink's fast
/// path when journald keeps up). Besides records/s, the process's CPU time per record
/// (user + system, all threads, from getrusage): on a shared machine the wall-clock rate
/// follows the load, the CPU cost far less. journal-sendv.c prints the same for the C loop.
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
    let cpuBefore = cpuMicroseconds()
    let clock = ContinuousClock()
    let started = clock.now
    var failed = 0
    for index in 0..<records {
        let report = try? await router.send(NotificationEvent(title: "bench record \(index)", level: .info))
        if report?.outcomes.first?.status.isSuccess != true { failed += 1 }
    }
    let flushed = await journal.flush(within: .seconds(60))
    let elapsed = seconds(clock.now - started)
    let cpu = cpuMicroseconds() - cpuBefore
    let written = journal.statistics.written - before
    report("journal", [
        "records": "\(records)", "records_per_s": "\(Int(Double(written) / elapsed))", "written": "\(written)",
        "failed": "\(failed)", "flushed": "\(flushed)", "cpu_us_per_record": fixed(Double(cpu) / Double(max(1, records)), 2),
    ])
}

/// User + system CPU time of the whole process so far, in microseconds.
func cpuMicroseconds() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec
}
