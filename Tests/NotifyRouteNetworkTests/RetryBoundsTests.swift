import Foundation
import NotifyRouteTestSupport
import Testing

/// The retry queue's bounds, set per network sink (`retry_queue`, `retry_max_age`,
/// `retry_backoff`, `retry_backoff_max`), under a real `notify-route serve`: what is
/// retried to delivered and what is finally dropped is counted in `status` and logged.
@Suite(.serialized)
struct RetryBoundsTests {
    static func webhook(_ url: String, _ extra: String) throws -> NotifyRouteHost {
        try NotifyRouteHost(sinks: "  hook:\n    kind: webhook\n    url: \"\(url)\"\n\(extra)", routes: "fallback: [hook]")
    }

    static func status(_ daemon: DaemonProcess) throws -> [String: Any] {
        decodeObject(try ProcessRunner.notifyRoute(["status", "--json", "--socket", daemon.socketPath]).standardOutput)
    }

    /// The `retries` counts `status --json` shows for `sink`.
    static func retries(_ daemon: DaemonProcess, _ sink: String) throws -> [String: Any] {
        (try status(daemon)["retries"] as? [String: [String: Any]])?[sink] ?? [:]
    }

    static func count(_ counts: [String: Any], _ key: String) -> Int { counts[key] as? Int ?? -1 }

    /// Polls `condition` until it holds or `limit` passes; whether it held.
    @discardableResult
    static func waitFor(_ limit: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    static func send(_ arguments: [String], to daemon: DaemonProcess) throws -> [String: Any] {
        let result = try ProcessRunner.notifyRoute(["send", "--json"] + arguments, environment: daemon.environment)
        let report = decodeObject(result.standardOutput)
        #expect(report["via"] as? String == "daemon", "\(result.standardOutput) \(result.standardError)")
        return report
    }

    /// `where` is line:column of the key, or of the value the core's reader refused.
    @Test(arguments: [
        ("    retry_queue: -1", "5:18", "retry_queue: expected a whole number from 0 to 1000000, found \"-1\""),
        ("    retry_max_age: 0s", "5:5", "sink \"hook\": retry_max_age must be longer than 0s"),
        ("    retry_backoff: 2s\n    retry_backoff_max: 1s", "6:5", "sink \"hook\": retry_backoff_max (1s) must not be shorter than retry_backoff (2s)"),
        ("    retry_backoff_max: 500ms", "5:5", "sink \"hook\": retry_backoff_max (500ms) must not be shorter than retry_backoff (1s)"),
    ])
    func aBadBoundIsAConfigErrorAtItsKey(extra: String, where location: String, message: String) throws {
        let host = try Self.webhook("http://127.0.0.1:9/hook", extra)
        let result = try host.run(["send", "x"])
        #expect(result.status == 78, "\(result.standardError)")
        #expect(result.standardError.contains("\(host.config.path):\(location): \(message)"), "\(result.standardError)")
    }

    @Test func theBoundsAreInTheConfigReference() throws {
        let reference = try ProcessRunner.notifyRoute(["config", "reference"])
        #expect(reference.status == 0)
        for key in ["retry_queue", "retry_max_age", "retry_backoff", "retry_backoff_max"] {
            #expect(reference.standardOutput.components(separatedBy: "`\(key)`").count == 5, "\(key) under alertmanager, exec, journal and webhook")
        }
    }

    /// `retry_backoff` and `retry_backoff_max` set how soon a 503 is tried again: three 503s
    /// then 200 are delivered within a second (the default backoff, 1s doubling, would take
    /// at least 3.5s), and no sooner than the shortest waits allow.
    @Test func theBackoffIsTheConfiguredOne() throws {
        let receiver = try HTTPReceiver.start(statuses: [503, 503, 503, 503])
        defer { receiver.stop() }
        let host = try Self.webhook(receiver.url + "/hook", "    retry_backoff: 100ms\n    retry_backoff_max: 200ms")
        let daemon = try DaemonProcess.start(config: host.config)
        defer { daemon.stop() }
        let started = ContinuousClock.now
        let report = try Self.send(["Deploy finished"], to: daemon)
        #expect(report.sink("hook")?["retryable"] as? Bool == true)
        #expect(try Self.waitFor(.seconds(10)) { Self.count(try Self.retries(daemon, "hook"), "recovered") == 1 }, "\(daemon.log)")
        let took = ContinuousClock.now - started
        // Waits of 50-100ms, then 100-200ms twice, then 100-200ms.
        #expect(took >= .milliseconds(350))
        #expect(took < .seconds(3), "took \(took)")
        #expect(try receiver.requests(path: "/hook").count == 5)
        let counts = try Self.retries(daemon, "hook")
        #expect(Self.count(counts, "dropped") == 0 && Self.count(counts, "waiting") == 0, "\(counts)")
    }

    /// A webhook that answers 503 to everything: with `retry_queue: 1`, a second failure is
    /// dropped at once; the first is dropped once older than `retry_max_age`. `status`
    /// counts both (in JSON and in its text) and the log says why.
    @Test func theQueueSizeAndMaximumAgeDropAndCount() throws {
        let receiver = try HTTPReceiver.start(statuses: Array(repeating: 503, count: 200))
        defer { receiver.stop() }
        let host = try Self.webhook(
            receiver.url + "/hook", "    retry_queue: 1\n    retry_max_age: 2s\n    retry_backoff: 100ms\n    retry_backoff_max: 200ms")
        let daemon = try DaemonProcess.start(config: host.config)
        defer { daemon.stop() }
        _ = try Self.send(["One"], to: daemon)
        _ = try Self.send(["Two"], to: daemon)
        var counts = try Self.retries(daemon, "hook")
        #expect(Self.count(counts, "dropped") == 1 && Self.count(counts, "waiting") == 1, "\(counts)")
        #expect((counts["last_dropped"] as? String)?.hasPrefix("the retry queue is full (1 waiting); last error: ") == true, "\(counts)")

        #expect(try Self.waitFor(.seconds(10)) { Self.count(try Self.retries(daemon, "hook"), "dropped") == 2 }, "\(daemon.log)")
        counts = try Self.retries(daemon, "hook")
        #expect(Self.count(counts, "waiting") == 0 && Self.count(counts, "recovered") == 0, "\(counts)")
        #expect((counts["last_dropped"] as? String)?.contains("within 2s: ") == true, "\(counts)")
        // Tried again and again, but not past its maximum age.
        let ones = try receiver.requests(path: "/hook").filter { ($0.body as? [String: Any])?["title"] as? String == "One" }
        #expect(ones.count >= 5 && ones.count <= 42, "\(ones.count)")
        #expect(try receiver.requests(path: "/hook").filter { ($0.body as? [String: Any])?["title"] as? String == "Two" }.count == 1)

        let text = try ProcessRunner.notifyRoute(["status", "--socket", daemon.socketPath])
        #expect(text.standardOutput.contains("hook: delivered 0, dropped 2, failed 2,"), "\(text.standardOutput)")
        #expect(daemon.log.components(separatedBy: "dropped a delivery").count == 3, "\(daemon.log)")
        #expect(daemon.log.contains("the retry queue is full") && daemon.log.contains("still failing after"), "\(daemon.log)")
    }

    /// A real Alertmanager that is down, then up: with `retry_queue: 1` the second event is
    /// dropped at once, the first once older than `retry_max_age`; one sent while it is down
    /// is delivered once it is back, and only that one reaches it.
    @Test(.enabled(if: alertmanagerTestsEnabled, "needs prometheus-alertmanager"))
    func anAlertmanagerDownThenUp() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try NotifyRouteHost(
            sinks: """
                  am:
                    kind: alertmanager
                    url: \(cluster.peers[0].url)
                    deadline: 1s
                    retry_queue: 1
                    retry_max_age: 6s
                    retry_backoff: 200ms
                    retry_backoff_max: 400ms
                """,
            routes: "fallback: [am]")
        let daemon = try DaemonProcess.start(config: host.config)
        defer { daemon.stop() }
        cluster.stop(peer: 0)

        let first = try Self.send(["-r", "first", "Disk full"], to: daemon)
        #expect(first.sink("am")?["retryable"] as? Bool == true, "\(first)")
        _ = try Self.send(["-r", "second", "Disk full"], to: daemon)
        var counts = try Self.retries(daemon, "am")
        #expect(Self.count(counts, "dropped") == 1 && Self.count(counts, "waiting") == 1, "\(counts)")
        #expect(try Self.waitFor(.seconds(10)) { Self.count(try Self.retries(daemon, "am"), "dropped") == 2 }, "\(daemon.log)")
        let reason = try Self.retries(daemon, "am")["last_dropped"] as? String ?? ""
        #expect(reason.hasPrefix("still failing after ") && reason.contains(" within 6s: "), "\(reason)")

        _ = try Self.send(["-r", "third", "Disk full"], to: daemon)
        try cluster.restart(peer: 0)
        #expect(try Self.waitFor(.seconds(10)) { Self.count(try Self.retries(daemon, "am"), "recovered") == 1 }, "\(daemon.log)")
        counts = try Self.retries(daemon, "am")
        #expect(Self.count(counts, "dropped") == 2 && Self.count(counts, "waiting") == 0, "\(counts)")
        let keys = try cluster.alerts().compactMap { ($0["labels"] as? [String: String])?["replace_key"] }
        #expect(keys == ["third"])
    }
}
