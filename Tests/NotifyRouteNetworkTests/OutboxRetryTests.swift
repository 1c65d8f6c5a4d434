import Foundation
import NotifyRouteTestSupport
import Testing

/// Deliveries to a webhook that is down, which `serve` retries, outlive the daemon: after a
/// stop or a kill, a new `serve` delivers each to the webhook, now up, once.
@Suite(.serialized)
struct OutboxRetryTests {
    @Test(arguments: [SIGTERM, SIGKILL])
    func retriesOfADownWebhookAreDeliveredOnceByTheNextServe(signal: Int32) throws {
        let count = 10
        // Down (503) for the first attempt of each, then up.
        let receiver = try HTTPReceiver.start(statuses: Array(repeating: 503, count: count))
        defer { receiver.stop() }
        // A backoff longer than the test: only the next serve tries them again.
        let host = try RetryBoundsTests.webhook(receiver.url + "/hook", "    retry_backoff: 60s\n    retry_backoff_max: 120s")
        let first = try DaemonProcess.start(config: host.config)
        defer { first.stop() }
        for sequence in 0..<count {
            let report = try RetryBoundsTests.send(["event \(sequence)"], to: first)
            #expect(report.sink("hook")?["retryable"] as? Bool == true, "\(report)")
        }
        #expect(try RetryBoundsTests.status(first)["outbox"] as? Int == count)
        #expect(try receiver.requests(path: "/hook").count == count)
        first.signal(signal)
        let exit = try #require(first.waitForExit(timeLimit: .seconds(10)), "\(first.log)")
        if signal == SIGTERM { #expect(exit.status == 0, "\(first.log)") }

        let second = try DaemonProcess.start(config: host.config, socket: first.socketPath, runtime: first.runtimeDirectory)
        defer { second.stop() }
        #expect(RetryBoundsTests.waitFor(.seconds(10)) { ((try? receiver.requests(path: "/hook").count) ?? 0) >= 2 * count }, "\(second.log)")
        #expect(RetryBoundsTests.waitFor(.seconds(5)) { (try? RetryBoundsTests.status(second)["outbox"] as? Int) == 0 }, "\(second.log)")
        usleep(300_000)
        let titles = try receiver.requests(path: "/hook").dropFirst(count).compactMap { ($0.body as? [String: Any])?["title"] as? String }
        #expect(titles.sorted() == (0..<count).map { "event \($0)" }.sorted(), "each once, after the restart: \(titles)")
    }
}
