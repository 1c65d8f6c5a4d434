import NotifyRoute
import Synchronization
import Testing

/// Sinks that deliver inline are asked through `deliverInline(_:)`, without the async
/// step; a `nil` answer, a summary to send first, or a sink that is not inline in the
/// same wave takes the async path. The report says the same either way.
@Suite struct InlineDeliveryTests {
    /// Counts how it was asked; answers inline unless told not to.
    final class InlineSink: NotificationSink {
        let capabilities = SinkCapabilities(canReplace: true, canClose: true, deliversInline: true)
        let answersInline: Bool
        let failure: SinkError?
        private let calls = Mutex((inline: 0, async: 0, next: 1))

        init(answersInline: Bool = true, failure: SinkError? = nil) {
            self.answersInline = answersInline
            self.failure = failure
        }

        var counts: (inline: Int, async: Int) { calls.withLock { ($0.inline, $0.async) } }

        func deliverInline(_ delivery: SinkDelivery) throws -> SinkReceipt? {
            guard answersInline else { return nil }
            calls.withLock { $0.inline += 1 }
            return try answer(delivery)
        }

        func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
            calls.withLock { $0.async += 1 }
            return try answer(delivery)
        }

        private func answer(_ delivery: SinkDelivery) throws -> SinkReceipt {
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

    @Test func inlineSinksAreAskedInlineWithTheSameReport() async throws {
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
        #expect(a.counts.inline == 3 && a.counts.async == 0)
        #expect(b.counts.inline == 3 && b.counts.async == 0)
    }

    @Test func aNilAnswerIsDeliveredAsync() async throws {
        let a = InlineSink(), b = InlineSink(answersInline: false)
        let router = try router(["a": a, "b": b], yaml: "routes: [ { to: [a, b] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.status.name) == ["delivered", "delivered"])
        #expect(a.counts == (1, 0) && b.counts == (0, 1))
    }

    /// A sink that answers only through `deliver` (as the desktop sink, which waits for the
    /// daemon) comes first in the route: the sinks after it are asked inline before it is,
    /// not made to wait for it.
    @Test func aSinkThatAnswersAsyncDoesNotHoldUpTheInlineOnesAfterIt() async throws {
        let slow = InlineSink(answersInline: false), quick = InlineSink(), also = InlineSink()
        let router = try router(["a": slow, "b": quick, "c": also], yaml: "routes: [ { to: [a, b, c] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.sink) == ["a", "b", "c"])
        #expect(report.outcomes.map(\.status.name) == ["delivered", "delivered", "delivered"])
        #expect(slow.counts == (0, 1) && quick.counts == (1, 0) && also.counts == (1, 0))
    }

    @Test func anInlineFailureFailsOver() async throws {
        let a = InlineSink(failure: SinkError(.failed, "boom")), b = InlineSink()
        let router = try router(["a": a, "b": b], yaml: "routes: [ { to: [a], failover: [b] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.status.description) == ["failed: boom", "delivered"])
        #expect(report.outcomes.last?.failoverFor == "a")
        #expect(a.counts == (1, 0) && b.counts == (1, 0))
    }

    @Test func aSinkThatIsNotInlineMakesTheWaveConcurrent() async throws {
        let a = InlineSink(), b = RecordingSink()
        let router = try router(["a": a, "b": b], yaml: "routes: [ { to: [a, b] } ]")
        let report = try await router.send(NotificationEvent(title: "one"))
        #expect(report.outcomes.map(\.status.name) == ["delivered", "delivered"])
        #expect(a.counts == (0, 1) && b.deliveries.count == 1)
    }

    /// The recording sink answers inline when its capabilities say so, failures included.
    @Test func recordingSinkInline() async throws {
        let recorder = RecordingSink(capabilities: SinkCapabilities(canReplace: true, deliversInline: true))
        let router = try router(["r": recorder], yaml: "routes: [ { to: [r] } ]")
        #expect(try await router.send(NotificationEvent(title: "one")).statusName(of: "r") == "delivered")
        recorder.setBehavior(.fail(SinkError(.failed, "no")))
        #expect(try await router.send(NotificationEvent(title: "two")).statusName(of: "r") == "failed")
        #expect(recorder.deliveries.map(\.event.title) == ["one", "two"])
    }
}
