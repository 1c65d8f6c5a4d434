import NotifyRoute
import NotifyRouteTesting
import Synchronization
import Testing

/// A sink that reports interactions the test emits. Like the desktop sink, each call to
/// `interactions()` is a new subscription that first replays what happened before it,
/// so the tests need not wait for the router to subscribe.
private final class InteractiveSink: NotificationSink {
    private struct State {
        var history: [SinkInteraction] = []
        var subscribers: [Int: AsyncStream<SinkInteraction>.Continuation] = [:]
        var nextID = 0
        var finished = false
        var nextHandle = 1
    }

    let name: String
    private let state = Mutex(State())
    var capabilities: SinkCapabilities { SinkCapabilities(canReplace: true, reportsInteractions: true) }

    init(_ name: String) { self.name = name }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        state.withLock { state in
            defer { state.nextHandle += 1 }
            return SinkReceipt(handle: SinkHandle("\(name)-\(state.nextHandle)"))
        }
    }

    func emit(_ interaction: NotificationInteraction, on handle: SinkHandle) {
        state.withLock { state in
            let item = SinkInteraction(handle: handle, interaction: interaction)
            state.history.append(item)
            for continuation in state.subscribers.values { continuation.yield(item) }
        }
    }

    /// Ends every subscription, as a sink does when it shuts down.
    func finishAll() {
        // Finished outside the lock: finishing runs onTermination, which takes the lock.
        let subscribers = state.withLock { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return state.subscribers.values
        }
        for continuation in subscribers { continuation.finish() }
    }

    func interactions() -> AsyncStream<SinkInteraction>? {
        let (stream, continuation) = AsyncStream.makeStream(of: SinkInteraction.self)
        let id = state.withLock { state in
            for item in state.history { continuation.yield(item) }
            if state.finished { continuation.finish() }
            defer { state.nextID += 1 }
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}

private func makeRouter(_ sinks: [String: any NotificationSink]) throws -> NotificationRouter {
    var config = RouterConfiguration(fallback: sinks.keys.sorted())
    config.defaults.deadline = .seconds(60)
    return try NotificationRouter(configuration: config, sinks: sinks, clock: ManualClock())
}

private struct DiskError: Error, CustomStringConvertible {
    var description: String { "no space left on /var" }
}

@Suite struct ReportTests {
    @Test func successBecomesASuccessEvent() async throws {
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        let result: Result<Int, DiskError> = .success(42)
        let line = #line + 1
        let report = try await router.report(
            result,
            success: { files in NotificationEvent(title: "Backup done", body: "\(files) files") },
            failure: { error in NotificationEvent(title: "Backup failed", body: "\(error)") })
        #expect(report.summary == .delivered)
        let event = try #require(recorder.deliveries.first?.event)
        #expect(event.title == "Backup done")
        #expect(event.body == "42 files")
        #expect(event.level == .success)
        #expect(event.callSite?.line == line)
    }

    @Test func failureBecomesAnErrorEventUnlessTheClosureSaysOtherwise() async throws {
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        let result: Result<Int, DiskError> = .failure(DiskError())
        try await router.report(
            result,
            success: { _ in NotificationEvent(title: "ok") },
            failure: { error in NotificationEvent(title: "Backup failed", body: "\(error)") })
        try await router.report(
            result,
            success: { _ in NotificationEvent(title: "ok") },
            failure: { _ in NotificationEvent(title: "Backup failed", level: .critical) })
        #expect(recorder.deliveries.map(\.event.level) == [.error, .critical])
        #expect(recorder.deliveries.first?.event.body == "no space left on /var")
    }

    @Test func titleFormSetsLevelsAndTheErrorAsBody() async throws {
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        let ok: Result<Void, DiskError> = .success(())
        let bad: Result<Void, DiskError> = .failure(DiskError())
        try await router.report(ok, success: "Deployed", failure: "Deploy failed") { $0.source = "deploy" }
        try await router.report(bad, success: "Deployed", failure: "Deploy failed") { $0.source = "deploy" }
        let events = recorder.deliveries.map(\.event)
        #expect(events.map(\.title) == ["Deployed", "Deploy failed"])
        #expect(events.map(\.level) == [.success, .error])
        #expect(events.map(\.body) == [nil, "no space left on /var"])
        #expect(events.allSatisfy { $0.source == "deploy" })
    }

    @Test func theClosureSendStillSetsWhatDiffers() async throws {
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        try await router.send("Connected") { $0.level = .success; $0.timeout = .after(.seconds(2)) }
        let event = try #require(recorder.deliveries.first?.event)
        #expect(event.level == .success)
        #expect(event.timeout == .after(.seconds(2)))
    }
}

@Suite struct ObserveTests {
    @Test func oneEventPerMappedElementInOrder() async throws {
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        let (usage, producer) = AsyncStream.makeStream(of: Int.self)
        for percent in [50, 91, 70, 97] { producer.yield(percent) }
        producer.finish()
        // A sequence that cannot fail needs no `try`.
        let summary = await router.observe(usage) { percent in
            percent < 90 ? nil : NotificationEvent(title: "Disk \(percent)% full", level: .warning)
        }
        #expect(recorder.deliveries.map(\.event.title) == ["Disk 91% full", "Disk 97% full"])
        #expect(summary.elements == 4)
        #expect(summary.sent == 2)
        #expect(summary.skipped == 2)
        #expect(summary.rejected == 0)
    }

    @Test func aRejectedEventIsCountedAndTheWatchGoesOn() async throws {
        let recorder = RecordingSink()
        recorder.setBehavior(.fail(SinkError(.failed, "down")))
        let router = try makeRouter(["tty": recorder])
        let summary = await router.observe(["a", "", "b"].async) { NotificationEvent(title: $0) }
        #expect(summary.rejected == 1)
        #expect(summary.sent == 2)
        #expect(summary.undelivered == 2)
    }

    @Test func whatTheSequenceThrowsIsRethrown() async throws {
        struct Broken: Error {}
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        let (values, producer) = AsyncThrowingStream.makeStream(of: String.self)
        producer.yield("first")
        producer.finish(throwing: Broken())
        await #expect(throws: Broken.self) {
            try await router.observe(values) { NotificationEvent(title: $0) }
        }
        #expect(recorder.deliveries.map(\.event.title) == ["first"])
    }

    @MainActor @Test func observesFromAnActorWithANonSendableTransform() async throws {
        final class Counter { var seen = 0 }  // not Sendable: the transform runs on the caller's actor
        let counter = Counter()
        let recorder = RecordingSink()
        let router = try makeRouter(["tty": recorder])
        await router.observe([1, 2, 3].async) { value in
            counter.seen += 1
            return NotificationEvent(title: "value \(value)")
        }
        #expect(counter.seen == 3)
        #expect(recorder.deliveries.count == 3)
    }
}

@Suite struct InteractionsTests {
    @Test func interactionsFromEverySinkAreMergedWithTheirReplaceKey() async throws {
        let desk = InteractiveSink("desk")
        let tty = InteractiveSink("tty")
        let router = try makeRouter(["desk": desk, "tty": tty, "log": RecordingSink()])
        let report = try await router.send("Backup running") { $0.replaceKey = "backup" }
        let deskHandle = try #require(report.outcomes.first { $0.sink == "desk" }?.handle)
        let ttyHandle = try #require(report.outcomes.first { $0.sink == "tty" }?.handle)

        let stream = router.interactions()
        desk.emit(.shown, on: deskHandle)
        tty.emit(.shown, on: ttyHandle)
        desk.emit(.actionInvoked("open"), on: deskHandle)
        tty.emit(.dismissed(.expired), on: ttyHandle)
        desk.emit(.dismissed(.dismissed), on: SinkHandle("unknown"))
        desk.finishAll()
        tty.finishAll()

        var seen: [RoutedInteraction] = []
        for await routed in stream { seen.append(routed) }  // ends when both sinks' streams end
        #expect(seen.filter { $0.sink == "desk" }.map(\.interaction) == [.shown, .actionInvoked("open"), .dismissed(.dismissed)])
        #expect(seen.filter { $0.sink == "tty" }.map(\.interaction) == [.shown, .dismissed(.expired)])
        #expect(seen.filter { $0.handle != SinkHandle("unknown") }.allSatisfy { $0.replaceKey == "backup" })
        #expect(seen.first { $0.handle == SinkHandle("unknown") }?.replaceKey == nil)
    }

    @Test func firstInteractionAndTheMergedStreamBothSeeAnAction() async throws {
        let desk = InteractiveSink("desk")
        let router = try makeRouter(["desk": desk])
        let report = try await router.send("Update ready") { $0.actions = [NotificationAction(id: "install", label: "Install")] }
        let handle = try #require(report.outcomes.first?.handle)
        let stream = router.interactions()
        async let first = router.firstInteraction(with: report)
        desk.emit(.shown, on: handle)
        desk.emit(.actionInvoked("install"), on: handle)

        let answer = await first
        #expect(answer?.sink == "desk")
        #expect(answer?.interaction == .actionInvoked("install"))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.interaction == .shown)
        #expect(await iterator.next()?.interaction == .actionInvoked("install"))
    }

    @Test func stoppingTheStreamUnsubscribesFromTheSinks() async throws {
        let desk = InteractiveSink("desk")
        let router = try makeRouter(["desk": desk])
        let report = try await router.send("x")
        let handle = try #require(report.outcomes.first?.handle)
        do {
            let stream = router.interactions()
            #expect(desk.subscriberCount == 1)
            desk.emit(.shown, on: handle)
            for await _ in stream { break }
        }
        // The pump is cancelled with the stream; its subscription ends with it.
        while desk.subscriberCount > 0 { await Task.yield() }
        #expect(desk.subscriberCount == 0)
    }

    @Test func withoutInteractiveSinksTheStreamEndsAtOnce() async throws {
        let router = try makeRouter(["tty": RecordingSink()])
        var count = 0
        for await _ in router.interactions() { count += 1 }
        #expect(count == 0)
    }
}

extension Array where Element: Sendable {
    /// The elements as an async sequence that cannot fail.
    fileprivate var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
