import Foundation
import Logging
import NotifyRoute
import Synchronization
import Testing

/// Issue 8, under load: one long-lived library router, 8 producers sending at once, while
/// one sink is stuck. The other sink keeps delivering; the stuck one's bounded queue takes
/// what it can, drops the rest with a count in each report, and when it recovers writes
/// what is queued in order; memory stays bounded; nothing deadlocks.
///
/// CI runs 8 × 10,000 events. `NOTIFY_ROUTE_LOAD_EVENTS=100000` (events per producer) runs
/// the full size:
///
///     NOTIFY_ROUTE_LOAD_EVENTS=100000 swift test --no-parallel --filter LoadTests
@Suite(.serialized) struct LoadTests {
    static let producers = 8
    static var eventsPerProducer: Int {
        ProcessInfo.processInfo.environment["NOTIFY_ROUTE_LOAD_EVENTS"].flatMap(Int.init) ?? 10_000
    }

    /// A sink that counts, and takes nothing else.
    final class CountingSink: NotificationSink {
        let delivered = Atomic<Int>(0)
        var capabilities: SinkCapabilities { SinkCapabilities() }
        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            delivered.add(1, ordering: .relaxed)
            return SinkReceipt()
        }
    }

    /// A sink whose backend has stopped taking records (as a stopped journald): each event
    /// waits in a bounded FIFO and is reported queued; past the bound it is dropped and
    /// reported failed with the running count. ``recover()`` writes the queue in order.
    final class StalledSink: NotificationSink {
        struct State {
            var stalled = true
            var queue: [String] = []
            var written: [String] = []
            var dropped = 0
        }
        let capacity: Int
        let state = Mutex(State())
        init(capacity: Int) { self.capacity = capacity }

        var capabilities: SinkCapabilities { SinkCapabilities() }

        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            let title = delivery.event.title
            let capacity = capacity
            let result: Result<SinkReceipt, SinkError> = state.withLock { state in
                if !state.stalled {
                    state.written.append(title)
                    return .success(SinkReceipt())
                }
                if state.queue.count < capacity {
                    state.queue.append(title)
                    return .success(SinkReceipt(disposition: .queued("the backend is stalled; waits in the queue (\(state.queue.count) of \(capacity))")))
                }
                state.dropped += 1
                return .failure(SinkError(.failed, "the queue is full (\(capacity)); dropped (\(state.dropped) dropped so far)", isRetryable: true))
            }
            return try result.get()
        }

        func recover() {
            state.withLock { state in
                state.stalled = false
                state.written += state.queue
                state.queue.removeAll()
            }
        }
    }

    /// A sink that never answers, and lets go when the router cancels it at its deadline.
    final class HungSink: NotificationSink {
        let waiting = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        var capabilities: SinkCapabilities { SinkCapabilities() }
        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            waiting.add(1, ordering: .relaxed)
            defer { waiting.subtract(1, ordering: .relaxed) }
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                cancelled.add(1, ordering: .relaxed)
                throw error
            }
            return SinkReceipt()
        }
    }

    /// VmRSS of this process, in KiB.
    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func router(_ sinks: [String: any NotificationSink], deadline: Duration = .seconds(2)) throws -> NotificationRouter {
        var configuration = RouterConfiguration()
        configuration.defaults.deadline = deadline
        configuration.routes = [Route(sinks: sinks.keys.sorted())]
        var logger = Logger(label: "notify-route.router") { _ in DiagnosticCounter() }
        logger.logLevel = .warning
        return try NotificationRouter(configuration: configuration, sinks: sinks, logger: logger)
    }

    /// The router's diagnostics (a failing sink is logged at warning), counted instead of printed.
    static let diagnostics = Atomic<Int>(0)

    struct DiagnosticCounter: LogHandler {
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            if event.level >= .warning { LoadTests.diagnostics.add(1, ordering: .relaxed) }
        }
    }

    /// Sends `count` events from each of `producers` tasks; `check` sees every report.
    static func storm(
        _ router: NotificationRouter, producers: Int, count: Int, check: @escaping @Sendable (Int, Int, DeliveryReport) -> Void
    ) async throws -> Duration {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<count {
                        let report = try await router.send(NotificationEvent(title: "p\(producer) #\(index)"))
                        check(producer, index, report)
                    }
                }
            }
            try await group.waitForAll()
        }
        return ContinuousClock.now - started
    }

    static func rate(_ count: Int, _ duration: Duration) -> Int {
        Int(Double(count) / (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18))
    }

    @Test func aStalledSinkQueuesThenDropsWhileTheOtherKeepsDelivering() async throws {
        let count = Self.eventsPerProducer, total = Self.producers * count, capacity = 1024

        // The same storm with the counting sink alone: the rate to keep up with.
        let alone = CountingSink()
        let baseline = try await Self.storm(try Self.router(["fast": alone]), producers: Self.producers, count: count) { _, _, _ in }
        #expect(alone.delivered.load(ordering: .relaxed) == total)

        let fast = CountingSink(), stalled = StalledSink(capacity: capacity)
        let router = try Self.router(["fast": fast, "stalled": stalled])
        let rssBefore = Self.residentKiB()
        let diagnosticsBefore = Self.diagnostics.load(ordering: .relaxed)
        let unaccounted = Atomic<Int>(0), queued = Atomic<Int>(0), dropped = Atomic<Int>(0)
        let elapsed = try await Self.storm(router, producers: Self.producers, count: count) { _, _, report in
            var fastDelivered = false, stalledAccounted = false
            for outcome in report.outcomes {
                switch (outcome.sink, outcome.status) {
                case ("fast", .delivered): fastDelivered = true
                case ("stalled", .queued(let reason)) where reason.contains("waits in the queue"):
                    queued.add(1, ordering: .relaxed); stalledAccounted = true
                case ("stalled", .failed(let error)) where error.message.contains("dropped so far"):
                    dropped.add(1, ordering: .relaxed); stalledAccounted = true
                default: break
                }
            }
            if !(fastDelivered && stalledAccounted && report.summary == .delivered) { unaccounted.add(1, ordering: .relaxed) }
        }
        let rssAfter = Self.residentKiB()
        print("""
            load: \(Self.producers) × \(count) events: fast sink alone \(Self.rate(total, baseline))/s; \
            with a stalled sink \(Self.rate(total, elapsed))/s (\(elapsed)); queued \(queued.load(ordering: .relaxed)), \
            dropped \(dropped.load(ordering: .relaxed)); VmRSS \(rssBefore) → \(rssAfter) KiB
            """)

        #expect(unaccounted.load(ordering: .relaxed) == 0, "every report: fast delivered, stalled queued or dropped with a reason")
        #expect(fast.delivered.load(ordering: .relaxed) == total)
        #expect(queued.load(ordering: .relaxed) == capacity)
        #expect(dropped.load(ordering: .relaxed) == total - capacity)
        #expect(stalled.state.withLock { $0.dropped } == total - capacity)
        #expect(Self.diagnostics.load(ordering: .relaxed) - diagnosticsBefore == total - capacity, "one warning per dropped event")
        // The stalled sink costs the others little: at least a third of the rate without it (noisy CI).
        #expect(elapsed < baseline * 3 + .seconds(1))
        // Memory: the queue is bounded, and so is the router's own state (max_entries).
        #expect(rssAfter - rssBefore < 200 * 1024, "VmRSS grew \(rssAfter - rssBefore) KiB")

        // Recovery: what is queued is written first, in the order each producer sent it.
        stalled.recover()
        _ = try await router.send(NotificationEvent(title: "after recovery"))
        let written = stalled.state.withLock { $0.written }
        #expect(written.count == capacity + 1)
        #expect(written.last == "after recovery")
        for producer in 0..<Self.producers {
            let indices = written.dropLast().filter { $0.hasPrefix("p\(producer) #") }.compactMap { Int($0.split(separator: "#")[1]) }
            #expect(indices == indices.sorted(), "producer \(producer)'s events in order")
            #expect(indices.first.map { $0 == 0 } ?? true)
        }
    }

    /// A sink that never answers, with a 20 ms deadline: every send returns after about the
    /// deadline, the hung sink is reported timed out, the other delivers, the router cancels
    /// each stuck delivery (none is left waiting), and nothing deadlocks.
    @Test func aHungSinkTimesOutEveryEventAndLeavesNothingBehind() async throws {
        let count = max(50, Self.eventsPerProducer / 100)
        let fast = CountingSink(), hung = HungSink()
        let router = try Self.router(["fast": fast, "hung": hung], deadline: .milliseconds(20))
        let rssBefore = Self.residentKiB()
        let unaccounted = Atomic<Int>(0)
        let elapsed = try await Self.storm(router, producers: Self.producers, count: count) { _, _, report in
            let ok = report.outcomes.contains { $0.sink == "fast" && { if case .delivered = $0.status { true } else { false } }($0) }
                && report.outcomes.contains { outcome in
                    guard outcome.sink == "hung", case .failed(let error) = outcome.status else { return false }
                    return error.kind == .timedOut
                }
            if !ok { unaccounted.add(1, ordering: .relaxed) }
        }
        // The cancelled deliveries finish promptly once cancelled.
        let settle = ContinuousClock.now + .seconds(5)
        while hung.waiting.load(ordering: .relaxed) > 0 && ContinuousClock.now < settle { try await Task.sleep(for: .milliseconds(10)) }
        let total = Self.producers * count
        print("load: hung sink, 20 ms deadline: \(Self.producers) × \(count) events in \(elapsed) (\(Self.rate(total, elapsed))/s); cancelled \(hung.cancelled.load(ordering: .relaxed)); VmRSS \(rssBefore) → \(Self.residentKiB()) KiB")
        #expect(unaccounted.load(ordering: .relaxed) == 0)
        #expect(fast.delivered.load(ordering: .relaxed) == total)
        #expect(hung.waiting.load(ordering: .relaxed) == 0, "stuck deliveries left behind")
        #expect(hung.cancelled.load(ordering: .relaxed) == total)
        // Each producer waits one deadline per event, no more: the producers do not queue behind each other.
        #expect(elapsed < .milliseconds(20) * count * 4 + .seconds(2))
    }
}
