import Foundation
import Logging
import NotifyRoute
import NotifyRouteService
import NotifyRouteTestSupport
import Synchronization
import Testing

/// The daemon's escalation clock under load: a thousand escalations open at once, in the
/// state database, each sent within a second of its due time.
struct EscalationLoadTests {
    /// Records when each delivery arrived, by title.
    final class TimedSink: NotificationSink {
        let arrivals = Mutex<[String: Date]>([:])
        var capabilities: SinkCapabilities { SinkCapabilities(canReplace: true, canClose: true) }
        func availability() async -> SinkAvailability { .available }
        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            let title = delivery.event.title
            arrivals.withLock { if $0[title] == nil { $0[title] = Date() } }
            return SinkReceipt(handle: SinkHandle(title))
        }
    }

    @Test func aThousandOpenEscalationsEachFireWithinASecondOfTheirDueTime() async throws {
        let directory = try TestEnvironment.temporaryDirectory("escalation-load").path
        let configuration = try RouterConfiguration.load(yaml: """
            sinks: { desk: { kind: timed }, pager: { kind: timed } }
            routes: [ { to: [desk], escalate: { after: 3s, to: [pager] } } ]
            """, file: "load.yaml", registry: SinkRegistry([SinkPlugin(kind: "timed", summary: "records arrival times") { _ in TimedSink() }]))
        let desk = TimedSink(), pager = TimedSink()
        let router = try NotificationRouter(configuration: configuration, sinks: ["desk": desk, "pager": pager],
                                            store: SQLiteStateStore(directory: directory))
        var sentAt: [String: Date] = [:]
        for number in 0..<1_000 {
            let title = "event \(number)"
            sentAt[title] = Date()
            _ = try await router.send(NotificationEvent(title: title, timeout: .never, replaceKey: "key-\(number)"))
        }
        #expect(try router.pendingTimers() == 1_000)

        let timer = EscalationTimer(router: { router }, logger: Logger(label: "test"))
        let running = Task { try await timer.run() }
        let deadline = ContinuousClock.now + .seconds(30)
        while pager.arrivals.withLock({ $0.count }) < 1_000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        running.cancel()
        _ = try? await running.value

        let arrivals = pager.arrivals.withLock { $0 }
        #expect(arrivals.count == 1_000)
        var worst = 0.0, early = 0
        for (title, arrived) in arrivals {
            let late = arrived.timeIntervalSince(sentAt[title]!) - 3
            if late < 0 { early += 1 }
            worst = max(worst, late)
        }
        #expect(early == 0, "\(early) escalations went out before their due time")
        #expect(worst <= 1.0, "the latest escalation went out \(worst) s after its due time")
        #expect(try router.pendingTimers() == 0)
        print("1,000 escalations: the latest \(String(format: "%.3f", worst)) s after its due time")
    }
}
