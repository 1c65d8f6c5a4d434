import NotifyRoute
import NotifyRouteTesting
import Synchronization
import Testing

/// Sinks that deliver inline (``SinkCapabilities/deliversInline``) are asked one after
/// the other, without a deadline task; a sink that may block makes the wave concurrent,
/// so that it holds up none of the others. The report says the same either way.
@Suite struct InlineDeliveryTests {
    /// Counts its deliveries; declares itself inline unless told not to, and can wait
    /// for another sink to have been delivered to before it answers.
    final class InlineSink: NotificationSink {
        let capabilities: SinkCapabilities
        let failure: SinkError?
        let waitsFor: InlineSink?
        private let calls = Mutex((count: 0, next: 1))

        init(inline: Bool = true, failure: SinkError? = nil, waitsFor: InlineSink? = nil) {
            capabilities = SinkCapabilities(canReplace: true, canClose: true, deliversInline: inline)
            self.failure = failure
            self.waitsFor = waitsFor
        }

        var count: Int { calls.withLock { $0.count } }

        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            if let waitsFor {
                while waitsFor.count == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            calls.withLock { $0.count += 1 }
            if let failure { throw failure }
            switch delivery.intent {
            case .show:
                return SinkReceipt(handle: SinkHandle(String(calls.withLock { state in
                    defer { state.next += 1 }
                    return state.next
                })))
            case .replace(let handle), .updateDuplicateCount(let handle, _): return SinkReceipt(handle: handle)
            }
        }
    }

    func router(_ sinks: [String: any NotificationSink], yaml: String) throws -> NotificationRouter {
        let declared = sinks.keys.sorted().map { "\($0): { kind: recording }" }.joined(separator: ", ")
        let config = try RouterConfiguration.load(yaml: "sinks: { \(declared) }\n" + yaml, file: "test.yaml", registry: RouterFixture.registry)
        return try NotificationRouter(configuration: config, sinks: sinks, clock: ManualClock())
    }

    @Test func inlineSinksAreAskedInTurnWithTheSameReport() async throws {
        let a = InlineSink(), b = InlineSink()
        let router = try router(["a": a, "b": b], yaml: """
            rules: [ { match: {}, set: { replace_key: "r" } } ]
            routes: [ { to: [a, b], dedup: { window: 1m } } ]
            """)
        let first = try await router.send(NotificationEvent(title: "one"))
        #expect(first.outcomes.map(\.status.name) == ["delivered", "delivered"])
        #expect(first.outcomes.map(\.handle) == [SinkHandle("1"), SinkHandle("1")])
        let second = try await router.send(NotificationEvent(title: "two"))
        #expect(second.outcomes.map(\.status.description) == ["replaced 1", "replaced 1"])
        let again = try await router.send(NotificationEvent(title: "two"))
        #expect(again.outcomes.map(\.status.description) == Array(repeating: "suppressed: duplicate (2 in 1m), count updated in place", count: 2))
        #expect(a.count == 3 && b.count == 3)
    }

    /// A sink that may block (as the desktop sink, which waits for the daemon) comes first
    /// in the route and answers only once the sink after it has been delivered to: asked
    /// one after the other, it would wait out its deadline.
    @Test func aSinkThatMayBlockDoesNotHoldUpTheOnesAfterIt() async throws {
        let quick = InlineSink()
        let slow = InlineSink(inline: false, waitsFor: quick)
        let router = try router(["a": slow, "b": quick], yaml: "defaults: { deadline: 10s }\nroutes: [ { to: [a, b] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.sink) == ["a", "b"])
        #expect(report.outcomes.map(\.status.name) == ["delivered", "delivered"])
    }

    @Test func anInlineFailureFailsOver() async throws {
        let a = InlineSink(failure: SinkError(.failed, "boom")), b = InlineSink()
        let router = try router(["a": a, "b": b], yaml: "routes: [ { to: [a], failover: [b] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.status.description) == ["failed: boom", "delivered"])
        #expect(report.outcomes.last?.failoverFor == "a")
        #expect(a.count == 1 && b.count == 1)
    }

    /// The recording sink delivers inline when its capabilities say so, failures included.
    @Test func recordingSinkInline() async throws {
        let recorder = RecordingSink(capabilities: SinkCapabilities(canReplace: true, deliversInline: true))
        let router = try router(["r": recorder], yaml: "routes: [ { to: [r] } ]")
        #expect(try await router.send(NotificationEvent(title: "one")).statusName(of: "r") == "delivered")
        recorder.setBehavior(.fail(SinkError(.failed, "no")))
        #expect(try await router.send(NotificationEvent(title: "two")).statusName(of: "r") == "failed")
        #expect(recorder.deliveries.map(\.event.title) == ["one", "two"])
    }
}
