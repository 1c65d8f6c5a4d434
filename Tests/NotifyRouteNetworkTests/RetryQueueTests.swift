import Foundation
import NotifyRoute
@testable import NotifyRouteNetwork
@testable import NotifyRouteClient
@testable import NotifyRouteDaemon
import NotifyRouteTestSupport
import Testing

/// The daemon's retry queue, with a real webhook sink and a receiver scripted to fail.
@Suite(.serialized)
struct RetryQueueTests {
    static func router(posting to: String) throws -> NotificationRouter {
        let configuration = RouterConfiguration(
            sinks: [SinkDeclaration(name: "hook", kind: "webhook", deadline: .seconds(2))], fallback: ["hook"])
        let sink = WebhookSink(name: "hook", url: to, headers: [], timeout: nil)
        return try NotificationRouter(configuration: configuration, sinks: ["hook": sink])
    }

    static func waitFor(_ condition: () async -> Bool, within limit: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + limit
        while await !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    }

    @Test func aRetryableFailureIsRetriedUntilDelivered() async throws {
        let receiver = try HTTPReceiver.start(statuses: [500, 502])
        defer { receiver.stop() }
        let router = try Self.router(posting: receiver.url + "/hook")
        let queue = RetryQueue(policy: .init(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), maximumAge: .seconds(10)))
        let running = Task { await queue.runtime.run() }  // the retries' owner, as in `serve`
        defer { running.cancel() }
        let report = try await router.send(NotificationEvent(title: "Disk full"))
        #expect(report.summary == .failed)
        await queue.schedule(report, router: router)
        await Self.waitFor { await queue.counts["hook"]?.recovered == 1 }
        #expect(await queue.counts["hook"] == RetryQueue.Counts(recovered: 1, dropped: 0))
        #expect(await queue.waiting == 0)
        let requests = try receiver.requests(path: "/hook")
        #expect(requests.count == 3)
        #expect(Set(requests.compactMap { ($0.body as? [String: Any])?["title"] as? String }) == ["Disk full"])
    }

    @Test func whatNeverSucceedsIsDroppedAndCounted() async throws {
        let receiver = try HTTPReceiver.start(statuses: Array(repeating: 503, count: 100))
        defer { receiver.stop() }
        let router = try Self.router(posting: receiver.url + "/hook")
        let queue = RetryQueue(policy: .init(
            initialDelay: .milliseconds(50), maximumDelay: .milliseconds(100), maximumAge: .milliseconds(600), capacity: 1))
        let running = Task { await queue.runtime.run() }  // the retries' owner, as in `serve`
        defer { running.cancel() }
        let first = try await router.send(NotificationEvent(title: "One"))
        let second = try await router.send(NotificationEvent(title: "Two"))
        await queue.schedule(first, router: router)
        // The queue holds one: the second is dropped at once.
        await queue.schedule(second, router: router)
        #expect(await queue.counts["hook"]?.dropped == 1)
        await Self.waitFor { await queue.counts["hook"]?.dropped == 2 }
        let counts = try #require(await queue.counts["hook"])
        #expect(counts.recovered == 0 && counts.dropped == 2 && counts.waiting == 0)
        #expect(counts.lastDropped?.hasPrefix("still failing after ") == true, "\(counts)")
        #expect(await queue.waiting == 0)
        // Retried more than once before it was given up, never past its maximum age.
        let ones = try receiver.requests(path: "/hook").filter { ($0.body as? [String: Any])?["title"] as? String == "One" }
        #expect(ones.count >= 3 && ones.count <= 12, "\(ones.count)")
    }

    @Test func aPermanentFailureIsNotQueued() async throws {
        let receiver = try HTTPReceiver.start(statuses: [400])
        defer { receiver.stop() }
        let router = try Self.router(posting: receiver.url + "/hook")
        let queue = RetryQueue(policy: .init(initialDelay: .milliseconds(20)))
        let running = Task { await queue.runtime.run() }  // the retries' owner, as in `serve`
        defer { running.cancel() }
        let report = try await router.send(NotificationEvent(title: "Bad"))
        #expect(report.summary == .failed)
        await queue.schedule(report, router: router)
        #expect(await queue.waiting == 0)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try receiver.requests(path: "/hook").count == 1)
    }

    @Test func backoffDoublesWithJitterUpToItsCeiling() {
        let policy = RetryQueue.Policy(initialDelay: .seconds(1), maximumDelay: .seconds(8))
        for attempt in 0..<8 {
            let ceiling = min(Duration.seconds(1) * (1 << attempt), .seconds(8))
            for _ in 0..<20 {
                let delay = RetryQueue.delay(attempt: attempt, policy: policy)
                #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay)")
            }
        }
    }
}
