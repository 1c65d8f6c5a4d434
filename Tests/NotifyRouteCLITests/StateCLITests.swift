import Foundation
import NotifyRouteTestSupport
import Testing

/// Dedup and replace decisions that hold across separate `notify-route send` calls.
@Suite struct StateCLITests {
    struct Setup {
        var runtime: URL
        var config: URL
        var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path, "NO_COLOR": "1"] }
        var statePath: String { runtime.path + "/notify-route/state.json" }
    }

    func setup() throws -> Setup {
        let runtime = try TestEnvironment.temporaryDirectory()
        let config = runtime.appendingPathComponent("c.yaml")
        try "sinks: { tty: { kind: terminal } }\nroutes: [ { to: [tty], dedup: { window: 1h } } ]\n"
            .write(to: config, atomically: true, encoding: .utf8)
        return Setup(runtime: runtime, config: config)
    }

    func report(_ result: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    @Test func aDuplicateInAnotherCallIsSuppressedAndCounted() throws {
        let setup = try setup()
        let first = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "Disk full"], environment: setup.environment)
        #expect(first.status == 0)
        #expect(first.standardError == "[info] Disk full\n")
        let second = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "--json", "Disk full"], environment: setup.environment)
        #expect(second.status == 0)
        #expect(second.standardError.isEmpty)  // nothing shown again
        let sink = try #require((try report(second)["sinks"] as? [[String: Any]])?.first)
        #expect(sink["status"] as? String == "suppressed")
        #expect(sink["reason"] as? String == "duplicate")
        #expect(sink["count"] as? Int == 2)
    }

    @Test func theWindowEndsAcrossCalls() throws {
        let setup = try setup()
        var environment = setup.environment
        environment["NOTIFY_ROUTE_TEST_NOW"] = "1800000000"
        #expect(try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "x"], environment: environment).standardError == "[info] x\n")
        environment["NOTIFY_ROUTE_TEST_NOW"] = "1800003599"  // 59m59s later: still inside
        #expect(try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "x"], environment: environment).standardError.isEmpty)
        environment["NOTIFY_ROUTE_TEST_NOW"] = "1800003601"  // past the hour
        #expect(try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "x"], environment: environment).standardError == "[info] x\n")
    }

    @Test func concurrentCallsCountEveryDuplicate() throws {
        // The full 8 x 200 run against the desktop daemon is in DesktopStateCLITests.
        let setup = try setup()
        let script = """
            for p in 1 2 3 4; do
              ( for i in $(seq 25); do "$0" send --config "$1" -k storm "Storm" || echo "send failed: $?" >&2; done ) &
            done
            wait
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path],
            environment: setup.environment, timeLimit: .seconds(300))
        #expect(!result.timedOut)
        // Exactly one delivery was shown; every other call was a counted duplicate.
        #expect(result.standardError == "[info] Storm\n")
        let data = try Data(contentsOf: URL(fileURLWithPath: setup.statePath))
        let state = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let dedup = try #require(state["dedup"] as? [String: [String: Any]])
        #expect(dedup.count == 1)
        #expect(dedup.values.first?["count"] as? Int == 100)
    }

    @Test func sigkillMidWriteLeavesAValidStateFile() throws {
        let setup = try setup()
        // Many distinct keys make every call rewrite a growing file; kill writers at random.
        let script = """
            i=0
            while [ $i -lt 60 ]; do
              i=$((i+1))
              "$0" send --config "$1" -k "key-$i" "Event $i" 2>/dev/null &
              pid=$!
              sleep 0.0$((i % 7))
              kill -9 $pid 2>/dev/null
              wait $pid 2>/dev/null
            done
            exit 0
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path],
            environment: setup.environment, timeLimit: .seconds(120))
        #expect(result.status == 0)
        if FileManager.default.fileExists(atPath: setup.statePath) {
            let data = try Data(contentsOf: URL(fileURLWithPath: setup.statePath))
            #expect((try? JSONSerialization.jsonObject(with: data)) is [String: Any], "state file is not valid JSON")
        }
        #expect(!FileManager.default.fileExists(atPath: setup.statePath + ".corrupt"))
        // And the next call works, seeing the state as it was.
        let next = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "--json", "after"], environment: setup.environment)
        #expect(next.status == 0)
    }

    @Test func aStateDirectoryOwnedBySomeoneElseIsRefusedButTheEventStillGoesOut() throws {
        guard getuid() == 0 else { return }  // only root can give a directory away; CI runs as root
        let setup = try setup()
        let stateDirectory = setup.runtime.appendingPathComponent("notify-route").path
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chown(stateDirectory, 65534, 65534) == 0)
        let result = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "still here"], environment: setup.environment)
        #expect(result.status == 0)
        #expect(result.standardError.contains("notify-route: state: the state directory \(stateDirectory) belongs to uid 65534, not to you"))
        #expect(result.standardError.contains("[info] still here\n"))
    }
}
