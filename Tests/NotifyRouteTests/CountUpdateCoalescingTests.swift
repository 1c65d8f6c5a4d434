import Foundation
import NotifyRoute
import NotifyRouteTestSupport
import NotifyRouteTesting
import Synchronization
import Testing

/// A sink that can replace, whose first `show` waits until the test opens the gate:
/// the original delivery of a storm that is still on its way.
final class GatedSink: NotificationSink {
    let capabilities = SinkCapabilities(canReplace: true, canClose: true)
    private struct State {
        var deliveries: [SinkDelivery] = []
        var open = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    var deliveries: [SinkDelivery] { state.withLock { $0.deliveries } }
    var shows: Int { deliveries.filter { $0.intent == .show }.count }
    var updates: [Int] {
        deliveries.compactMap { if case .updateDuplicateCount(_, let count) = $0.intent { count } else { nil } }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        state.withLock { $0.deliveries.append(delivery) }
        if delivery.intent == .show {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.open { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        return SinkReceipt(handle: SinkHandle("7"))
    }
}

@Suite struct CountUpdateCoalescingTests {
    func router(_ sink: any NotificationSink, clock: ManualClock, interval: Duration = .seconds(60),
                store: any RouterStateStore = InMemoryStateStore()) throws -> NotificationRouter {
        var config = RouterConfiguration()
        config.defaults.deadline = .seconds(60)
        config.routes = [Route(sinks: ["desk"], dedupWindow: .seconds(600))]
        return try NotificationRouter(configuration: config, sinks: ["desk": sink], store: store, clock: clock,
                                      countUpdateInterval: interval)
    }

    /// Waits (briefly, in real time) until `condition` holds.
    func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<2_000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func aBurstWhileTheFirstDeliveryIsSlowBecomesOneShowAndFewUpdates() async throws {
        let sink = GatedSink()
        let router = try router(sink, clock: ManualClock())
        let event = NotificationEvent(title: "Database down", level: .error, source: "db")
        let burst = 1_000
        let first = Task { try await router.send(event) }
        try await eventually { sink.shows == 1 }
        // Every duplicate is decided while the original has no handle yet.
        let reports = try await withThrowingTaskGroup(of: DeliveryReport.self) { group in
            for _ in 1..<burst { group.addTask { try await router.send(event) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        var counts: [Int] = []
        for report in reports {
            guard case .suppressed(.duplicate(let count, _, let updated)) = report.status(of: "desk") else {
                Issue.record("expected a duplicate: \(String(describing: report.status(of: "desk")))")
                return
            }
            #expect(!updated)
            #expect(report.outcomes[0].notes.contains { $0.contains("coalesced") })
            counts.append(count)
        }
        #expect(counts.sorted() == Array(2...burst))  // every one counted, each with its own count
        #expect(sink.updates.isEmpty)  // nothing can be updated before the handle is known
        sink.open()
        #expect(try await first.value.statusName(of: "desk") == "delivered")
        await router.finish(within: .seconds(10))
        #expect(sink.shows == 1)
        #expect(sink.updates.count == 1)
        #expect(sink.updates.last == burst)
    }

    @Test func duplicatesInsideTheIntervalWaitAndFinishSendsTheLastCount() async throws {
        let sink = RecordingSink()
        let clock = ManualClock()
        let router = try router(sink, clock: clock, interval: .seconds(60))
        try await router.send("Disk full")
        // The first duplicate after the handle is known updates at once, as before.
        let second = try await router.send("Disk full")
        guard case .suppressed(.duplicate(2, _, true)) = second.status(of: "desk") else {
            Issue.record("\(String(describing: second.status(of: "desk")))")
            return
        }
        // Within the interval: counted and coalesced, nothing sent yet.
        for _ in 0..<10 {
            let report = try await router.send("Disk full")
            #expect(report.statusName(of: "desk") == "suppressed")
        }
        #expect(sink.deliveries.map(\.intent) == [.show, .updateDuplicateCount(SinkHandle("1"), count: 2)])
        // finish sends the trailing update at once, without waiting out the 60 s interval.
        await router.finish(within: .seconds(5))
        #expect(sink.deliveries.map(\.intent) == [
            .show, .updateDuplicateCount(SinkHandle("1"), count: 2), .updateDuplicateCount(SinkHandle("1"), count: 12),
        ])
        await router.finish(within: .seconds(5))
        #expect(sink.deliveries.count == 3)  // nothing left to flush
    }

    @Test func afterTheIntervalADuplicateUpdatesAtOnceWithTheLatestCount() async throws {
        let sink = RecordingSink()
        let clock = ManualClock()
        let router = try router(sink, clock: clock, interval: .seconds(60))
        try await router.send("Disk full")
        try await router.send("Disk full")  // count 2, at once
        for _ in 0..<5 { try await router.send("Disk full") }  // 3...7, coalesced
        clock.advance(by: .seconds(61))
        let report = try await router.send("Disk full")  // 8: the interval has passed
        guard case .suppressed(.duplicate(8, _, true)) = report.status(of: "desk") else {
            Issue.record("\(String(describing: report.status(of: "desk")))")
            return
        }
        #expect(sink.deliveries.compactMap { if case .updateDuplicateCount(_, let count) = $0.intent { count } else { nil } } == [2, 8])
    }

    @Test func aTrailingUpdateGoesOutOnItsOwnAfterTheInterval() async throws {
        let sink = RecordingSink()
        let router = try router(sink, clock: ManualClock(), interval: .milliseconds(50))
        // The trailing update is the runtime's work, run here as a service would run it.
        let running = Task { await router.runtime.run() }
        defer { running.cancel() }
        try await router.send("Disk full")
        try await router.send("Disk full")  // 2, at once
        try await router.send("Disk full")  // 3, coalesced: due 50 ms after the last update
        try await eventually { sink.deliveries.count == 3 }
        #expect(sink.deliveries.last?.intent == .updateDuplicateCount(SinkHandle("1"), count: 3))
    }

    @Test func aDuplicateInAnotherProcessUpdatesAtOnce() async throws {
        // Two routers on one state file stand for two `notify-route send` calls.
        let directory = try TestEnvironment.temporaryDirectory("nr-coalesce", permissions: 0o700).path
        let clock = ManualClock()
        let first = RecordingSink()
        try await router(first, clock: clock, store: SQLiteStateStore(directory: directory)).send("Disk full")
        let second = RecordingSink()
        let router = try router(second, clock: clock, store: SQLiteStateStore(directory: directory))
        let report = try await router.send("Disk full")
        guard case .suppressed(.duplicate(2, _, true)) = report.status(of: "desk") else {
            Issue.record("\(String(describing: report.status(of: "desk")))")
            return
        }
        #expect(second.deliveries.map(\.intent) == [.updateDuplicateCount(SinkHandle("1"), count: 2)])
        await router.finish(within: .seconds(5))
        #expect(second.deliveries.count == 1)
    }

    @Test func aFailedOriginalLeavesNothingToUpdate() async throws {
        let sink = RecordingSink()
        let router = try router(sink, clock: ManualClock())
        sink.setBehavior(.fail(SinkError(.failed, "down")))
        #expect(try await router.send("Disk full").statusName(of: "desk") == "failed")
        sink.setBehavior(.deliver)
        // The window was undone: the next one is shown, not counted as a duplicate.
        #expect(try await router.send("Disk full").statusName(of: "desk") == "delivered")
        await router.finish(within: .seconds(5))
        #expect(sink.deliveries.map(\.intent) == [.show, .show])
    }
}
