import Foundation
import NotifyRouteTestSupport
import Testing

/// `for p in 10 20 ...; do notify-route send -r copy --progress $p "Copying"; done` against
/// python-dbusmock on a private bus: each send carries the `value` hint and replaces the
/// one notification, directly and through `notify-route serve`.
@Suite(
    "send --progress on the desktop", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct ProgressDesktopCLITests {
    /// The embedded default's route: a dedup window, which must not swallow the updates.
    static let config = """
        sinks:
          desktop: { kind: desktop, deadline: 2s }
        routes:
          - match: {}
            to: [desktop]
            dedup: { window: 10m }
        """

    static func environment(_ daemon: DBusMockDaemon) throws -> (config: URL, environment: [String: String]) {
        let directory = try TestEnvironment.temporaryDirectory("progress-desktop")
        let config = directory.appendingPathComponent("config.yaml")
        try Self.config.write(to: config, atomically: true, encoding: .utf8)
        return (config, daemon.environment.merging(["XDG_RUNTIME_DIR": directory.path, "NOTIFY_ROUTE_CONFIG": config.path]) { _, new in new })
    }

    @Test func aLoopOfSendsUpdatesOneNotification() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let (config, environment) = try Self.environment(daemon)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let steps = Array(stride(from: 10, through: 100, by: 10))
        for progress in steps {
            let result = try ProcessRunner.notifyRoute(
                ["send", "--no-daemon", "-r", "copy", "--progress", String(progress), "Copying"], environment: environment,
                timeLimit: .seconds(10))
            #expect(result.status == 0, "\(progress): \(result.standardError)")
        }
        let calls = try daemon.notifyCalls()
        #expect(calls.count == steps.count, "no update was swallowed as a duplicate of the one before: \(calls.map(\.summary))")
        #expect(calls.map { $0.hints["value"]?.text } == steps.map { String($0) })
        #expect(calls.allSatisfy { $0.hints["value"]?.type == "i" }, "an int32, as notify-send -h int:value:N sends it")
        #expect(calls.allSatisfy { $0.summary == "Copying" })
        let first = try #require(calls.first)
        #expect(first.replacesID == 0)
        // dbusmock numbers its notifications from 1: every update replaced the first.
        #expect(calls.dropFirst().allSatisfy { $0.replacesID == 1 }, "\(calls.map(\.replacesID))")
    }

    /// The default dedup key includes the progress: the same value sent again is a
    /// duplicate (counted in place), a new one is news, and without a value nothing changes.
    @Test func theSameProgressTwiceIsADuplicateAndANewOneIsNot() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let (config, environment) = try Self.environment(daemon)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        for progress in ["30", "30", "60"] {
            let result = try ProcessRunner.notifyRoute(
                ["send", "--no-daemon", "--json", "-r", "copy", "--progress", progress, "Copying"], environment: environment,
                timeLimit: .seconds(10))
            #expect(result.status == 0, "\(result.standardError)")
        }
        for _ in 1...2 {
            _ = try ProcessRunner.notifyRoute(["send", "--no-daemon", "-r", "plain", "Plain"], environment: environment, timeLimit: .seconds(10))
        }
        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.summary) == ["Copying", "Copying (×2)", "Copying", "Plain", "Plain (×2)"])
        #expect(calls.map { $0.hints["value"]?.text } == ["30", "30", "60", nil, nil])
        #expect(calls.map(\.replacesID) == [0, 1, 1, 0, 2])
    }

    /// The same loop handed to `notify-route serve`: the progress is part of the protocol's event.
    @Test func throughTheDaemonToo() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let (config, environment) = try Self.environment(bus)
        defer { try? FileManager.default.removeItem(at: config.deletingLastPathComponent()) }
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        for progress in [25, 50, 75] {
            let result = try ProcessRunner.notifyRoute(
                ["send", "--json", "-r", "copy", "--progress", String(progress), "Copying"],
                environment: environment.merging(daemon.environment) { _, new in new }, timeLimit: .seconds(10))
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try DaemonTests.json(result.standardOutput)["via"] as? String == "daemon", "\(result.standardOutput)")
        }
        let calls = try bus.notifyCalls()
        #expect(calls.map { $0.hints["value"]?.text } == ["25", "50", "75"], "\(daemon.log)")
        #expect(calls.map(\.replacesID) == [0, 1, 1])
    }
}
