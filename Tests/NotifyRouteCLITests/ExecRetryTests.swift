import Foundation
import NotifyRouteTestSupport
import Testing

/// `serve` retries an exec plugin's failure when the plugin answers `"retryable": true`,
/// within the sink's `retry_*` options, as it does a network sink's.
@Suite struct ExecRetryTests {
    @Test func aPluginsRetryableFailureIsRetriedByServe() throws {
        let fixture = try ExecFixture(faults: true, options: "    retry_backoff: 100ms\n    retry_backoff_max: 200ms")
        let daemon = try DaemonProcess.start(config: fixture.config, environment: fixture.environment)
        defer { daemon.stop() }
        let sent = try ProcessRunner.notifyRoute(["send", "--json", "--sink", "ex", "example: flaky", "once"], environment: daemon.environment)
        let report = try DaemonTests.json(sent.standardOutput)
        #expect(report["via"] as? String == "daemon", "\(sent.standardError)")
        let outcome = try #require(ExecFixture.sink(report, "ex"), "\(sent.standardOutput)")
        #expect(outcome["status"] as? String == "failed" && outcome["retryable"] as? Bool == true, "\(outcome)")

        var retries: [String: Any] = [:]
        for _ in 0..<100 {
            let status = try ProcessRunner.notifyRoute(["status", "--json"], environment: daemon.environment)
            retries = ((try DaemonTests.json(status.standardOutput))["retries"] as? [String: [String: Any]])?["ex"] ?? [:]
            if retries["recovered"] as? Int == 1 { break }
            usleep(50_000)
        }
        #expect(retries["recovered"] as? Int == 1, "\(retries) \(daemon.log)")
        let titles = try fixture.requests().compactMap { ($0["event"] as? [String: Any])?["title"] as? String }
        #expect(titles == ["example: flaky", "example: flaky"], "tried, then retried once: \(titles)")
    }

    /// The retry options are the exec sink's own, checked where they are written.
    @Test func aBadRetryOptionIsAConfigErrorAtItsKey() throws {
        let fixture = try ExecFixture(options: "    retry_backoff: 0s")
        let result = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "x"], environment: fixture.environment)
        #expect(result.status == 78, "\(result.standardError)")
        #expect(result.standardError.contains("\(fixture.config.path):8:5: sink \"ex\": retry_backoff must be longer than 0s"), "\(result.standardError)")
    }
}
