import Foundation
import NotifyRouteTestSupport
import Testing

/// Dedup and replace decisions that hold across separate `notify-route send` calls.
@Suite struct StateCLITests {
    struct Setup {
        var runtime: URL
        var config: URL
        var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path, "NO_COLOR": "1"] }
        var statePath: String { runtime.path + "/notify-route/state.db" }
    }

    /// The `sqlite3` shell's answer to `sql` on the state database (one line per row,
    /// columns separated by `|`).
    func query(_ setup: Setup, _ sql: String) throws -> String {
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [setup.statePath, sql])
        #expect(result.status == 0, "sqlite3: \(result.standardError)")
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
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
        #expect(try query(setup, "SELECT sink, key, count FROM dedup") == "tty|storm|100")
    }

    /// 16 processes x 100 calls at once, mixing a shared dedup key, keys of their own,
    /// replace keys and `close`, against the desktop daemon (python-dbusmock, which gives
    /// handles to replace and close): every count exact, nothing shown twice, nothing lost.
    @Test(.enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
    func sixteenProcessesMixingKeysAndCloseCountExactly() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let setup = try setup()
        try "sinks: { desktop: { kind: desktop, deadline: 5s } }\nroutes: [ { to: [desktop], dedup: { window: 1h } } ]\n"
            .write(to: setup.config, atomically: true, encoding: .utf8)
        let script = """
            for p in $(seq 16); do
              ( for i in $(seq 100); do
                  case $((i % 4)) in
                    0) "$0" send --config "$1" -k shared "Shared" ;;
                    1) "$0" send --config "$1" -k "own-$p-$i" "Own" ;;
                    2) "$0" send --config "$1" -k "replace-$p-$i" -r "handle-$p" "Replace $p" ;;
                    3) "$0" close --config "$1" -r "handle-$p" >/dev/null ;;
                  esac || echo "call failed: $p $i $?" >&2
                done ) &
            done
            wait
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path],
            environment: setup.environment.merging(daemon.environment) { _, new in new }, timeLimit: .seconds(900))
        #expect(!result.timedOut)
        #expect(result.standardError.isEmpty, "\(result.standardError.prefix(2_000))")
        let calls = try daemon.calls()
        let notify = try daemon.notifyCalls()
        // Shown once as new, then updated in place with its count; each of the others new.
        #expect(notify.filter { $0.summary == "Shared" }.count == 1)
        #expect(notify.filter { $0.summary.hasPrefix("Shared (×") }.allSatisfy { $0.replacesID != 0 })
        #expect(notify.filter { $0.summary == "Own" && $0.replacesID == 0 }.count == 400)
        #expect(notify.filter { $0.summary.hasPrefix("Replace ") && $0.replacesID == 0 }.count == 400, "each replace key was closed before")
        #expect(calls.filter { $0.method == "CloseNotification" }.count == 400)
        #expect(try query(setup, "SELECT count FROM dedup WHERE key = 'shared'") == "400")
        #expect(try query(setup, "SELECT count(*), sum(count) FROM dedup") == "801|1200")
        #expect(try query(setup, "SELECT count(*) FROM handles") == "0", "every handle was closed after it was last shown")
        #expect(try query(setup, "SELECT group_concat(n) FROM (SELECT n FROM counts ORDER BY name)") == "801,0")
        #expect(try query(setup, "PRAGMA integrity_check") == "ok")
    }

    /// 200 calls killed (SIGKILL) at random points of their run, each with a key of its
    /// own: the database opens, is whole, and its counts add up (every row a count of 1,
    /// the row count kept by the triggers equal to the rows); the next call works.
    @Test func twoHundredSIGKILLsLeaveADatabaseThatOpensAndAddsUp() throws {
        let setup = try setup()
        let script = """
            i=0
            while [ $i -lt 200 ]; do
              i=$((i+1))
              "$0" send --config "$1" -k "key-$i" "Event $i" 2>/dev/null &
              pid=$!
              sleep 0.0$(( (i * 7919) % 40 ))
              kill -9 $pid 2>/dev/null
              wait $pid 2>/dev/null
            done
            exit 0
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path],
            environment: setup.environment, timeLimit: .seconds(300))
        #expect(result.status == 0)
        #expect(try query(setup, "PRAGMA integrity_check") == "ok")
        let rows = try query(setup, "SELECT count(*) FROM dedup")
        #expect(try query(setup, "SELECT n FROM counts WHERE name = 'dedup'") == rows)
        #expect(try query(setup, "SELECT count(*) FROM dedup WHERE count != 1") == "0")
        #expect(Int(rows) ?? 0 <= 200)
        print("state: \(rows) of 200 killed calls committed their window")
        #expect(!FileManager.default.fileExists(atPath: setup.statePath + ".corrupt"))
        // And the next call works, seeing the state as it was.
        let next = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "--json", "after"], environment: setup.environment)
        #expect(next.status == 0)
        #expect(next.standardError == "[info] after\n")
        #expect(try query(setup, "SELECT count(*) FROM dedup") == String((Int(rows) ?? 0) + 1))
    }

    /// The state file of earlier versions, there when the new version first runs: its
    /// windows hold (a duplicate of one is suppressed), and it is imported only once.
    @Test func aStateFileOfEarlierVersionsIsImported() throws {
        let setup = try setup()
        let first = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "--json", "Disk full"], environment: setup.environment)
        let key = try query(setup, "SELECT key FROM dedup")
        try FileManager.default.removeItem(atPath: setup.statePath)
        #expect(first.status == 0)
        let now = Int(Date().timeIntervalSince1970)
        let legacy: [String: Any] = [
            "dedup": ["tty\u{1E}\(key)": ["firstSeen": now - 10, "lastSeen": now - 10, "count": 4, "expires": now + 3000]], "handles": [:],
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: legacy), as: UTF8.self)
        try json.write(toFile: setup.runtime.path + "/notify-route/state.json", atomically: true, encoding: .utf8)
        let second = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "Disk full"], environment: setup.environment)
        #expect(second.status == 0)
        #expect(second.standardError.hasPrefix("notify-route: state: imported 1 dedup windows and 0 replace handles from"), "\(second.standardError)")
        #expect(!second.standardError.contains("[info] Disk full"), "a duplicate of the imported window")
        #expect(try query(setup, "SELECT count FROM dedup") == "5")
        #expect(FileManager.default.fileExists(atPath: setup.runtime.path + "/notify-route/state.json.imported"))
    }

    /// A database that is garbage, a FIFO, or another file in its place is set aside with
    /// the reason on stderr; the event goes out at once, and the call after it keeps state.
    @Test(arguments: ["garbage", "fifo"])
    func aStateDatabaseThatIsNotOneIsSetAsideAndTheEventGoesOut(kind: String) throws {
        let setup = try setup()
        try FileManager.default.createDirectory(atPath: setup.runtime.path + "/notify-route", withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        if kind == "fifo" {
            #expect(mkfifo(setup.statePath, 0o600) == 0)
        } else {
            try Data(repeating: 0xA5, count: 50_000).write(to: URL(fileURLWithPath: setup.statePath))
        }
        let result = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "x"], environment: setup.environment, timeLimit: .seconds(10))
        #expect(!result.timedOut && result.status == 0)
        let why = kind == "fifo" ? "is a FIFO, not a regular file" : "file is not a database"
        #expect(result.standardError.contains("state: \(setup.statePath)") && result.standardError.contains(why), "\(result.standardError)")
        #expect(result.standardError.hasSuffix("[info] x\n"))
        #expect(try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "x"], environment: setup.environment).standardError.isEmpty)
    }

    /// A body on standard input (`send TITLE -`) is read up to its cap and one byte more,
    /// never to the end: an endless one (`/dev/zero`) is cut with the body's marker and
    /// delivered at once.
    @Test func anEndlessBodyOnStandardInputIsReadUpToItsCapOnly() throws {
        let setup = try setup()
        let script = "tr '\\0' b </dev/zero | \"$0\" send --config \"$1\" --json Title -"
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path],
            environment: setup.environment, timeLimit: .seconds(20))
        #expect(!result.timedOut && result.status == 0, "\(result.standardError.prefix(300))")
        #expect(result.standardError.hasPrefix("[info] Title: bbbb") && result.standardError.hasSuffix("…\n"))
        #expect(result.standardOutput.contains("bbb…\""), "the body's marker says it was cut")
    }

    /// Another process holds the database's write lock and does not let go (stopped, hung):
    /// a call waits for it at most the busy timeout (2 s), then delivers without state and
    /// says why.
    @Test func aDatabaseLockedByAHungProcessCostsAtMostTheBusyTimeout() throws {
        let setup = try setup()
        #expect(try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "first"], environment: setup.environment).status == 0)
        let script = """
            ( printf 'BEGIN IMMEDIATE;\\n'; sleep 8 ) 2>/dev/null | sqlite3 "$2" >/dev/null 2>&1 &
            holder=$!
            sleep 1
            start=$(date +%s%N)
            "$0" send --config "$1" --json second
            echo "elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))" >&2
            kill $holder
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path, setup.statePath],
            environment: setup.environment, timeLimit: .seconds(30))
        #expect(result.standardError.contains("[info] second\n"), "\(result.standardError)")
        #expect(result.standardOutput.contains("state unavailable") && result.standardOutput.contains("database is locked"), "\(result.standardOutput)")
        let elapsed = result.standardError.split(separator: "=").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? .max
        #expect(elapsed >= 1_900 && elapsed < 4_000, "waited \(elapsed) ms for a lock held 8 s")
    }

    @Test(.enabled(if: TestEnvironment.runsAsRoot, "needs root to give a directory to another user"))
    func aStateDirectoryOwnedBySomeoneElseIsRefusedButTheEventStillGoesOut() throws {
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
