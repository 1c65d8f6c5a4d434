import Logging
import NotifyRoute
import NotifyRouteService
import NotifyRouteTesting
import ServiceLifecycle
import Synchronization
import Testing

/// The router's runtime owns what goes on after a call returned, and a library user's
/// `NotificationRouterService` runs it with the timers, as `serve` does.
@Suite struct RouterRuntimeTests {
    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// Waits (briefly, in real time) until `condition` holds.
    func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async throws {
        let end = ContinuousClock.now + limit
        while !condition(), ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func workStartedBeforeARunWaitsForIt() async throws {
        let runtime = RouterRuntime()
        let done = Flag()
        runtime.start { done.set() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!done.isSet)
        let run = Task { await runtime.run() }
        try await eventually { done.isSet }
        #expect(done.isSet)
        run.cancel()
        await run.value
    }

    @Test func cancellingTheRunCancelsItsWorkAndWaitsForIt() async throws {
        let runtime = RouterRuntime()
        let started = Flag(), sawCancel = Flag()
        let run = Task { await runtime.run() }
        runtime.start {
            started.set()
            do { try await Task.sleep(for: .seconds(60)) } catch { sawCancel.set() }
        }
        try await eventually { started.isSet }
        let cancelledAt = ContinuousClock.now
        run.cancel()
        await run.value
        // The work was cancelled, not waited out, and had ended by the time the run returned.
        #expect(sawCancel.isSet)
        #expect(ContinuousClock.now - cancelledAt < .seconds(5))
        // What is started after the run waits for the next one.
        let later = Flag()
        runtime.start { later.set() }
        let again = Task { await runtime.run() }
        try await eventually { later.isSet }
        #expect(later.isSet)
        again.cancel()
        await again.value
    }

    @Test func endReturnsOnceTheWorkBegunIsDone() async throws {
        let runtime = RouterRuntime()
        let finished = Flag()
        let run = Task { await runtime.run() }
        runtime.start {
            try? await Task.sleep(for: .milliseconds(100))
            finished.set()
        }
        try await Task.sleep(for: .milliseconds(20))
        runtime.end()
        await run.value
        #expect(finished.isSet)
    }

    @Test func aSecondConcurrentRunReturnsAtOnce() async throws {
        let runtime = RouterRuntime()
        let first = Task { await runtime.run() }
        try await Task.sleep(for: .milliseconds(20))
        let started = ContinuousClock.now
        await runtime.run()
        #expect(ContinuousClock.now - started < .seconds(1))
        first.cancel()
        await first.value
    }

    /// What `serve` does later, a library user's service does too: a count update goes out
    /// when its interval ends (not only at finish), and an escalation fires when due.
    @Test func aLibraryServiceSendsCountUpdatesAndEscalationsOnTime() async throws {
        let desk = RecordingSink(), pager = RecordingSink()
        let configuration = try RouterConfiguration.load(yaml: """
            sinks: { desk: { kind: recording }, pager: { kind: recording } }
            routes:
              - { match: { title: "Disk*" }, to: [desk], dedup: { window: 10m } }
              - { to: [desk], escalate: { after: 1s, to: [pager] } }
            """, file: "library.yaml", registry: SinkRegistry([SinkPlugin(kind: "recording", summary: "records") { _ in RecordingSink() }]))
        let router = try NotificationRouter(configuration: configuration, sinks: ["desk": desk, "pager": pager],
                                            countUpdateInterval: .milliseconds(200))
        let service = NotificationRouterService(router: router)
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }

        for _ in 0..<6 { try await router.send("Disk full") }
        try await router.send(NotificationEvent(title: "Deploy stuck", timeout: .never, replaceKey: "deploy"))
        // Count 2 goes out at once; 3 to 6 coalesce and go out once the interval has passed.
        try await eventually {
            desk.deliveries.contains { $0.intent == .updateDuplicateCount(SinkHandle("1"), count: 6) }
        }
        #expect(desk.deliveries.filter { if case .updateDuplicateCount = $0.intent { true } else { false } }.map(\.duplicateCount) == [2, 6])
        try await eventually { pager.deliveries.contains { $0.event.title == "Deploy stuck" } }
        #expect(pager.deliveries.map(\.event.title) == ["Deploy stuck"])

        await group.triggerGracefulShutdown()
        try await running.value
    }
}
