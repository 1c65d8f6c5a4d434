import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route history`, silences and pause, with the CLI binary and the history
/// database (SQLite) it keeps under XDG_STATE_HOME.
@Suite struct HistoryCLITests {
    struct Setup {
        var root: URL
        var config: URL
        var environment: [String: String] {
            ["XDG_RUNTIME_DIR": root.path + "/runtime", "XDG_STATE_HOME": root.path + "/state", "NO_COLOR": "1"]
        }
        var historyPath: String { root.path + "/state/notify-route/history.db" }

        func run(_ arguments: [String], input: String? = nil) throws -> ProcessResult {
            try ProcessRunner.notifyRoute(arguments, environment: environment, input: input, timeLimit: .seconds(120))
        }

        /// `notify-route send --config C ...`.
        func send(_ arguments: [String]) throws -> ProcessResult { try run(["send", "--config", config.path] + arguments) }

        func history(_ arguments: [String] = []) throws -> [[String: Any]] {
            let result = try run(["history", "--json"] + arguments)
            #expect(result.status == 0, "history: \(result.standardError)")
            return try result.standardOutput.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
            }
        }
    }

    func setup(_ config: String = "sinks: { tty: { kind: terminal } }\nfallback: [tty]\n") throws -> Setup {
        let root = try TestEnvironment.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path + "/runtime", withIntermediateDirectories: true)
        chmod(root.path + "/runtime", 0o700)
        let url = root.appendingPathComponent("c.yaml")
        try config.write(to: url, atomically: true, encoding: .utf8)
        return Setup(root: root, config: url)
    }

    /// Every subcommand takes `--config`, as documented: the history's commands read and
    /// check it like the others (a broken one is exit 78 at file:line:col), and work with a good one.
    @Test func historyPauseAndSilenceTakeTheConfigOption() throws {
        let setup = try setup()
        #expect(try setup.send(["-l", "warning", "Disk full"]).status == 0)
        let listed = try setup.run(["history", "--config", setup.config.path])
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput.contains("Disk full"), "\(listed.standardOutput)")
        let paused = try setup.run(["pause", "--config", setup.config.path, "--for", "1m"])
        #expect(paused.status == 0, "\(paused.standardError)")
        let added = try setup.run(["silence", "add", "--config", setup.config.path, "--for", "1h", "source=backup"])
        #expect(added.status == 0, "\(added.standardError)")
        let silences = try setup.run(["silence", "list", "--config", setup.config.path])
        #expect(silences.status == 0 && silences.standardOutput.contains("source=backup"), "\(silences.standardOutput)\(silences.standardError)")

        let broken = setup.root.appendingPathComponent("broken.yaml")
        try "sinks: { tty: { kind: terminal } }\nfallback: [tty]\nroutes: [ { to: [tty], dedupe: 1m } ]\n".write(to: broken, atomically: true, encoding: .utf8)
        for arguments in [["history"], ["pause"], ["silence", "list"]] {
            let result = try setup.run(arguments + ["--config", broken.path])
            #expect(result.status == 78, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("broken.yaml:3:"), "\(arguments): \(result.standardError)")
        }
    }

    func sqlite(_ setup: Setup, _ sql: String) throws -> String {
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [setup.historyPath, sql])
        #expect(result.status == 0, "sqlite3: \(result.standardError)")
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func event(_ entry: [String: Any]) -> [String: Any] { entry["event"] as? [String: Any] ?? [:] }
    func sinks(_ entry: [String: Any]) -> [[String: Any]] { entry["sinks"] as? [[String: Any]] ?? [] }

    // MARK: History

    @Test func everySendIsRecordedWithEachSinksOutcome() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nroutes: [ { to: [tty], dedup: { window: 1h } } ]\n")
        #expect(try setup.send(["-l", "warning", "-s", "backup", "-g", "ops", "Disk full", "sda1 at 91%"]).status == 0)
        #expect(try setup.send(["-l", "warning", "-s", "backup", "-g", "ops", "Disk full", "sda1 at 91%"]).status == 0)
        let entries = try setup.history()
        try #require(entries.count == 2)
        #expect(event(entries[0])["title"] as? String == "Disk full")
        #expect(event(entries[0])["body"] as? String == "sda1 at 91%")
        #expect(event(entries[0])["level"] as? String == "warning")
        #expect(event(entries[0])["tags"] as? [String] == ["ops"])
        #expect(sinks(entries[0]).first?["sink"] as? String == "tty")
        #expect(sinks(entries[0]).first?["status"] as? String == "delivered")
        #expect(sinks(entries[1]).first?["status"] as? String == "suppressed")
        #expect(sinks(entries[1]).first?["reason"] as? String == "duplicate")
        #expect((entries[0]["time"] as? String)?.hasSuffix("Z") == true)
        // The text form, newest last, and the matchers.
        let text = try setup.run(["history"])
        #expect(text.status == 0)
        let lines = text.standardOutput.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last?.contains("warning [backup] Disk full -> tty suppressed (duplicate") == true)
        #expect(try setup.history(["--limit", "1"]).count == 1)
        #expect(try setup.history(["-l", ">=error"]).isEmpty)
        #expect(try setup.history(["source=back*", "tag=ops"]).count == 2)
        #expect(try setup.history(["--since", "1h"]).count == 2)
    }

    @Test func aBadMatcherIsAUsageErrorNamingThePart() throws {
        let setup = try setup()
        let result = try setup.run(["history", "level>=warnign"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("matcher \"level>=warnign\""))
        let key = try setup.run(["silence", "add", "sorce=backup*"])
        #expect(key.status == 64)
        #expect(key.standardError.contains("unknown key \"sorce\""))
        #expect(key.standardError.contains("did you mean \"source\""))
        let since = try setup.run(["history", "--since", "yesterday"])
        #expect(since.status == 64)
        #expect(since.standardError.contains("--since"))
    }

    @Test func aRuleWithHistoryFalseKeepsTheEventOut() throws {
        let setup = try setup("""
            sinks: { tty: { kind: terminal } }
            rules: [ { match: { tags: [secret] }, set: { history: false } } ]
            fallback: [tty]
            """)
        #expect(try setup.send(["-g", "secret", "token rotated"]).standardError == "[info] token rotated\n")
        #expect(try setup.send(["plain"]).status == 0)
        let entries = try setup.history()
        #expect(entries.map { event($0)["title"] as? String } == ["plain"])
    }

    @Test func theHistoryIsBoundedOldestFirst() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\nhistory: { max_events: 5 }\n")
        let input = (1...8).map { "{\"title\":\"event \($0)\"}" }.joined(separator: "\n") + "\n"
        #expect(try setup.run(["ingest", "--config", setup.config.path], input: input).status == 0)
        #expect(try setup.history().map { event($0)["title"] as? String } == (4...8).map { "event \($0)" })
        #expect(try sqlite(setup, "SELECT count(*) FROM events") == "5")
    }

    /// Past `max_bytes` the oldest go too, and what is kept stays under the bound event after event.
    @Test func theHistoryIsBoundedInBytes() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\nhistory: { max_bytes: 8192 }\n")
        let input = (1...60).map { "{\"title\":\"event \($0)\",\"body\":\"\(String(repeating: "x", count: 200))\"}" }.joined(separator: "\n") + "\n"
        #expect(try setup.run(["ingest", "--config", setup.config.path], input: input).status == 0)
        let bytes = try #require(Int(try sqlite(setup, "SELECT sum(bytes) FROM events")))
        let kept = try setup.history().map { event($0)["title"] as? String }
        #expect(bytes <= 8192 && bytes > 4096, "\(bytes) bytes kept")
        #expect(kept.count > 5 && kept.count < 60)
        #expect(kept == ((61 - kept.count)...60).map { "event \($0)" }, "the newest, without a gap")
    }

    /// A history written by the first schema (triggers keeping counts) is migrated on the
    /// next send: its events are listed as before, and the bounds go on holding.
    @Test func aHistoryOfTheFirstSchemaIsMigrated() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\nhistory: { max_events: 3 }\n")
        try FileManager.default.createDirectory(atPath: setup.root.path + "/state/notify-route", withIntermediateDirectories: true)
        chmod(setup.root.path + "/state", 0o700)
        chmod(setup.root.path + "/state/notify-route", 0o700)
        let record = #"{"event":{"level":"info","title":"old"},"routes":[],"rules":[],"sinks":[{"reason":"duplicate","sink":"tty","status":"suppressed"}],"time":"2026-11-24T07:00:00.000Z"}"#
        let first = """
            PRAGMA journal_mode = WAL;
            CREATE TABLE events(id INTEGER PRIMARY KEY, time REAL NOT NULL, level TEXT NOT NULL, source TEXT, app TEXT,
                title TEXT NOT NULL, body TEXT, category TEXT, tags TEXT NOT NULL, record TEXT NOT NULL, input TEXT NOT NULL,
                bytes INTEGER NOT NULL);
            CREATE INDEX events_by_time ON events(time);
            CREATE TABLE counts(name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO counts VALUES ('events', 0), ('bytes', 0);
            CREATE TRIGGER events_added AFTER INSERT ON events BEGIN
                UPDATE counts SET n = n + 1 WHERE name = 'events'; UPDATE counts SET n = n + new.bytes WHERE name = 'bytes'; END;
            CREATE TRIGGER events_removed AFTER DELETE ON events BEGIN
                UPDATE counts SET n = n - 1 WHERE name = 'events'; UPDATE counts SET n = n - old.bytes WHERE name = 'bytes'; END;
            CREATE TABLE silences(id TEXT PRIMARY KEY, matchers TEXT NOT NULL, starts REAL NOT NULL, ends REAL NOT NULL,
                comment TEXT, created REAL NOT NULL) WITHOUT ROWID;
            CREATE INDEX silences_by_end ON silences(ends);
            CREATE TABLE pause(one INTEGER PRIMARY KEY CHECK (one = 1), below TEXT NOT NULL, since REAL NOT NULL, until REAL);
            CREATE TABLE held(id INTEGER PRIMARY KEY, time REAL NOT NULL, level TEXT NOT NULL, source TEXT, input TEXT NOT NULL);
            INSERT INTO events(time, level, title, tags, record, input, bytes) VALUES
                (strftime('%s','now') - 60, 'info', 'old 1', '', '\(record)', '{"title":"old 1"}', 100),
                (strftime('%s','now') - 50, 'info', 'old 2', '', '\(record)', '{"title":"old 2"}', 100);
            PRAGMA user_version = 1;
            """
        _ = try sqlite(setup, first)
        #expect(try setup.send(["new 1"]).status == 0)
        let text = try setup.run(["history"]).standardOutput.split(separator: "\n")
        #expect(text.count == 3)
        #expect(text.first?.hasSuffix("info old 1 -> tty suppressed (duplicate)") == true, "\(text)")
        #expect(text.last?.hasSuffix("info new 1 -> tty delivered") == true, "\(text)")
        #expect(try setup.send(["new 2"]).status == 0)
        // Reading the history folds what the last send spooled.
        #expect(try setup.history().count == 3)
        #expect(try sqlite(setup, "SELECT title FROM events ORDER BY id") == "old 2\nnew 1\nnew 2")
        #expect(try sqlite(setup, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == "0")
        #expect(try sqlite(setup, "SELECT count(*) FROM sqlite_master WHERE name = 'events_by_time'") == "0")
        #expect(try sqlite(setup, "PRAGMA user_version") == "5")
        // The old rows keep their whole record; the new ones are stored in parts.
        #expect(try sqlite(setup, "SELECT title || ' ' || (timeout IS NULL) FROM events ORDER BY id") == "old 2 1\nnew 1 0\nnew 2 0")
        let json = try setup.run(["history", "--json"]).standardOutput.split(separator: "\n")
        #expect(json.first == Substring(record), "\(json)")
        #expect(json.last?.contains(#""title":"new 2"},"routes":["#) == true, "\(json)")
        #expect(try sqlite(setup, "PRAGMA integrity_check") == "ok")
    }

    /// A one-shot command leaves the log files in place, emptied: the next does not create
    /// them again, and everything committed is in the database file itself. (The second
    /// send, with no silence or pause to read, only appends to the spool; `history` folds it
    /// and removes it.)
    @Test func theLogFilesAreKeptEmptyBetweenCommands() throws {
        let setup = try setup()
        #expect(try setup.send(["one"]).status == 0)
        #expect(try setup.send(["two"]).status == 0)
        let spool = try FileManager.default.attributesOfItem(atPath: setup.historyPath + "-spool")
        #expect((spool[.size] as? NSNumber)?.intValue ?? 0 > 0)
        #expect((spool[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try setup.history().count == 2)
        // Folded: moved aside and removed once committed.
        #expect(!FileManager.default.fileExists(atPath: setup.historyPath + "-spool"))
        #expect(!FileManager.default.fileExists(atPath: setup.historyPath + "-spool.folding"))
        let wal = try FileManager.default.attributesOfItem(atPath: setup.historyPath + "-wal")
        #expect((wal[.size] as? NSNumber)?.intValue == 0)
        #expect(FileManager.default.fileExists(atPath: setup.historyPath + "-shm"))
        #expect((wal[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // Read without the log: the events are in the file.
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), ["file:\(setup.historyPath)?immutable=1", "SELECT title FROM events ORDER BY id"])
        #expect(result.standardOutput == "one\ntwo\n", "\(result.standardError)")
    }

    @Test func textIsSanitisedInTheHistory() throws {
        let setup = try setup()
        #expect(try setup.send(["-s", "evil\u{1B}]0;owned\u{07}", "title \u{1B}[2Jwipe\u{1B}[H"]).status == 0)
        let text = try setup.run(["history"]).standardOutput
        #expect(!text.contains("\u{1B}"))
        #expect(!text.contains("\u{07}"))
        #expect(text.contains("title wipe"))
        let json = try setup.run(["history", "--json"]).standardOutput
        #expect(!json.contains("\u{1B}"))
    }

    /// `send "event P.I" BODY` 25 times from each of eight processes at once (source `pP`).
    func sendFromEightProcesses(_ setup: Setup, bodyBytes: Int = 0) throws {
        let script = """
            body=$(head -c "$2" /dev/zero | tr '\\0' x)
            for p in 1 2 3 4 5 6 7 8; do
              ( for i in $(seq 25); do "$0" send --config "$1" -s "p$p" "event $p.$i" $body 2>/dev/null || echo "send failed: $?" >&2; done ) &
            done
            wait
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path, String(bodyBytes)],
            environment: setup.environment, timeLimit: .seconds(600))
        #expect(!result.timedOut)
        #expect(result.standardError.isEmpty)
    }

    @Test func sendsFromEightConcurrentProcessesAreAllRecorded() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\n")
        try sendFromEightProcesses(setup)
        let entries = try setup.history()
        #expect(entries.count == 200)
        let titles = Set(entries.compactMap { event($0)["title"] as? String })
        #expect(titles == Set((1...8).flatMap { p in (1...25).map { "event \(p).\($0)" } }))
        #expect(entries.allSatisfy { sinks($0).first?["status"] as? String == "delivered" })
        #expect(try sqlite(setup, "PRAGMA integrity_check") == "ok")
    }

    /// Large events from eight processes, so that senders fold the spool into history.db
    /// while others append to it: none is lost or recorded twice.
    @Test func concurrentSendersFoldingTheSpoolLoseNothing() throws {
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\n")
        #expect(try setup.send(["first"]).status == 0)
        try sendFromEightProcesses(setup, bodyBytes: 3000)
        // About 12 KB a line: senders found the spool past its 256 KB bound several times on the way.
        #expect(Int(try sqlite(setup, "SELECT count(*) FROM events")) ?? 0 > 1)
        let titles = try setup.history().compactMap { event($0)["title"] as? String }
        #expect(titles.count == 201)
        #expect(Set(titles) == Set(["first"] + (1...8).flatMap { p in (1...25).map { "event \(p).\($0)" } }))
        #expect(try sqlite(setup, "PRAGMA integrity_check") == "ok")
    }

    /// A writer killed by SIGKILL in the middle of recording loses at most the record it was writing.
    @Test func aSIGKILLMidWriteLosesAtMostThatRecord() throws {
        // Room for all 100,000: a release build records more than the default 10,000 in 1.5 s,
        // and pruning the oldest would leave a history that does not start at the first.
        let setup = try setup("sinks: { tty: { kind: terminal } }\nfallback: [tty]\nhistory: { max_events: 200000, max_bytes: 1073741824 }\n")
        let input = (1...100_000).map { "{\"title\":\"burst \($0)\"}" }.joined(separator: "\n") + "\n"
        let inputFile = setup.root.appendingPathComponent("in.jsonl")
        try input.write(to: inputFile, atomically: true, encoding: .utf8)
        let reports = setup.root.appendingPathComponent("reports.jsonl")
        // The terminal sink's lines: what was delivered before the kill.
        let shown = setup.root.appendingPathComponent("shown.txt")
        // ingest prints each event's report after recording it (its output may lag behind); killed mid-stream.
        let script = """
            "$0" ingest --config "$1" --json < "$2" > "$3" 2> "$4" &
            pid=$!
            sleep 1.5
            kill -KILL $pid
            wait $pid 2>/dev/null
            exit 0
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", script, TestEnvironment.notifyRouteBinary.path, setup.config.path, inputFile.path, reports.path, shown.path],
            environment: setup.environment, timeLimit: .seconds(120))
        #expect(!result.timedOut)
        let printed = try String(contentsOf: reports, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        // The last line may be cut short by the kill.
        let complete = printed.filter { $0.hasSuffix("}") }.count
        try #require(complete > 0, "ingest printed nothing in 1.5 s")
        #expect(complete < 100_000, "the kill came after the end")
        #expect(try sqlite(setup, "PRAGMA integrity_check") == "ok")
        let entries = try setup.history()
        // Every event whose report was printed is recorded, and what is recorded is whole and
        // without a gap: only the record being written when the kill came may be missing.
        #expect(entries.count >= complete)
        #expect(entries.map { event($0)["title"] as? String } == (1...entries.count).map { "burst \($0)" })
        // Of the events a sink delivered, at most the one being recorded at the kill is missing.
        let delivered = try String(contentsOf: shown, encoding: .utf8).split(separator: "\n").filter { $0.contains("burst ") }.count
        #expect(delivered > 0 && entries.count >= delivered - 1, "\(delivered) delivered, \(entries.count) recorded")
        // And the history goes on.
        #expect(try setup.send(["after"]).status == 0)
        #expect(event(try setup.history(["--limit", "1"])[0])["title"] as? String == "after")
    }

    /// Without a daemon, `status` still shows what the shared state holds, and exits 69.
    @Test func statusWithoutADaemonShowsTheSharedState() throws {
        let setup = try setup("""
            sinks: { tty: { kind: terminal } }
            routes: [ { to: [tty], rate: { max: 1, per: 1h } } ]
            inhibit: [ { source: { level: critical }, target: { level: "<=warning" }, equal: [source] } ]
            """)
        #expect(try setup.run(["silence", "add", "--for", "1h", "source=noisy"]).status == 0)
        #expect(try setup.send(["-l", "critical", "-s", "db", "-r", "db-down", "Database down"]).status == 0)
        for title in ["first", "second", "third"] { _ = try setup.send(["-l", "error", "-s", "app", title]) }

        let text = try setup.run(["status", "--config", setup.config.path])
        #expect(text.status == 69)
        #expect(text.standardError.contains("no daemon"), "\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("daemon pid") }, "\(lines)")
        // The critical event took the period's one delivery; the three after it are held.
        #expect(lines.contains { $0.hasPrefix("  tty via route 1: 3 by rate") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("  rule 1 holds back level<=warning with source=db until ") }, "\(lines)")
        #expect(lines.contains { $0.contains(": source=noisy") }, "\(lines)")

        let json = try setup.run(["status", "--json", "--config", setup.config.path])
        #expect(json.status == 69)
        let status = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect(status["pid"] as? Int == 0)
        #expect((status["held"] as? [[String: Any]])?.first?["held"] as? Int == 3, "\(json.standardOutput)")
    }

    // MARK: Silences

    @Test func aSilenceFromOneProcessHoldsEventsOfAnotherUntilItExpires() throws {
        let setup = try setup()
        let add = try setup.run(["silence", "add", "--for", "1h", "--comment", "maintenance", "level<=warning", "source=backup*"])
        #expect(add.status == 0, "\(add.standardError)")
        let id = add.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 8)
        let silenced = try setup.send(["--json", "-l", "warning", "-s", "backup.nightly", "Backup slow"])
        #expect(silenced.status == 0)
        #expect(silenced.standardError.isEmpty)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(silenced.standardOutput.utf8)) as? [String: Any])
        let sink = try #require((report["sinks"] as? [[String: Any]])?.first)
        #expect(sink["status"] as? String == "suppressed")
        #expect(sink["reason"] as? String == "silenced")
        // Not matched: another source, or a level above the silence's.
        #expect(try setup.send(["-l", "warning", "-s", "db", "DB slow"]).standardError == "[warning] DB slow\n")
        #expect(try setup.send(["-l", "error", "-s", "backup", "Backup failed"]).standardError == "[error] Backup failed\n")
        // explain says so too.
        let explain = try setup.run(["explain", "--config", setup.config.path, "-l", "info", "-s", "backup", "x"])
        #expect(explain.standardOutput.contains("silenced by \(id)"))
        // The history keeps the silence's id.
        let recorded = try setup.history(["title=Backup slow"])
        #expect(sinks(try #require(recorded.first)).first?["silence"] as? String == id)
        // list, expire, and the event goes through again.
        let list = try setup.run(["silence", "list"])
        #expect(list.standardOutput.contains("\(id) until"))
        #expect(list.standardOutput.contains("level<=warning source=backup* # maintenance"))
        #expect(try setup.run(["silence", "expire", id]).status == 0)
        #expect(try setup.run(["silence", "list"]).standardOutput.isEmpty)
        #expect(try setup.run(["silence", "list", "--expired"]).standardOutput.contains("\(id) ended"))
        #expect(try setup.send(["-l", "warning", "-s", "backup.nightly", "Backup slow"]).standardError == "[warning] Backup slow\n")
        #expect(try setup.run(["silence", "expire", id]).status == 64)
    }

    /// Sends recorded first, so that `history.db-nocontrols` says none is stored: a silence
    /// or a pause from another process still holds the very next send, and ending it lets
    /// the one after through.
    @Test func controlsAddedAfterSendsHoldTheVeryNextSend() throws {
        let setup = try setup()
        #expect(try setup.send(["first"]).standardError == "[info] first\n")
        #expect(FileManager.default.fileExists(atPath: setup.historyPath + "-nocontrols"))
        let add = try setup.run(["silence", "add", "--for", "1h", "tag=ops"])
        #expect(add.status == 0, "\(add.standardError)")
        #expect(try setup.send(["-g", "ops", "held"]).standardError.isEmpty)
        #expect(try setup.send(["other"]).standardError == "[info] other\n")
        #expect(try setup.run(["silence", "expire", add.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)]).status == 0)
        #expect(try setup.send(["-g", "ops", "through"]).standardError == "[info] through\n")
        #expect(FileManager.default.fileExists(atPath: setup.historyPath + "-nocontrols"))
        #expect(try setup.run(["pause", "--level", "error"]).status == 0)
        #expect(try setup.send(["paused"]).standardError.isEmpty)
        let resume = try setup.run(["resume", "--config", setup.config.path])
        #expect(resume.standardError.contains("[info] paused\n"), "\(resume.standardError)")
        #expect(try setup.send(["after"]).standardError == "[info] after\n")
    }

    @Test func aSilenceEndsByItself() throws {
        let setup = try setup()
        #expect(try setup.run(["silence", "add", "--for", "1s", "tag=ops"]).status == 0)
        #expect(try setup.send(["-g", "ops", "held"]).standardError.isEmpty)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try setup.send(["-g", "ops", "through"]).standardError == "[info] through\n")
    }

    // MARK: Pause

    @Test func pauseHoldsBelowTheLevelAndResumeDeliversOneSummary() throws {
        let setup = try setup()
        #expect(try setup.run(["pause"]).status == 0)
        for (source, count) in [("backup", 3), ("db", 2)] {
            for index in 1...count {
                #expect(try setup.send(["-l", "warning", "-s", source, "\(source) \(index)"]).standardError.isEmpty)
            }
        }
        // Critical goes through a pause.
        #expect(try setup.send(["-l", "critical", "-s", "db", "DB down"]).standardError.contains("DB down"))
        let resume = try setup.run(["resume", "--config", setup.config.path])
        #expect(resume.status == 0, "\(resume.standardError)")
        #expect(resume.standardError.contains("[warning] +5 held while paused: backup 3, db 2"))
        // After resume, nothing is held.
        #expect(try setup.send(["after"]).standardError == "[info] after\n")
        let held = try setup.history(["title=backup 1"])
        #expect(sinks(try #require(held.first)).first?["reason"] as? String == "paused")
    }

    @Test func fewHeldEventsAreDeliveredOneByOneAndAnEndedPauseReleasesWithTheNextCommand() throws {
        let setup = try setup()
        #expect(try setup.run(["pause", "--level", "error", "--for", "1s"]).status == 0)
        #expect(try setup.send(["-l", "warning", "first"]).standardError.isEmpty)
        #expect(try setup.send(["-l", "error", "urgent"]).standardError == "[error] urgent\n")
        #expect(try setup.send(["-l", "info", "second"]).standardError.isEmpty)
        Thread.sleep(forTimeInterval: 1.2)
        let next = try setup.send(["third"])
        #expect(next.standardError == "[warning] first\n[info] second\n[info] third\n")
    }

    // MARK: Replay

    /// A recorded day replayed through a config that sends errors elsewhere and dedups
    /// warnings: exactly the changed events are reported, at their original times.
    @Test func replayReportsExactlyTheEventsANewConfigWouldChange() throws {
        let setup = try setup("sinks: { tty: { kind: terminal }, pager: { kind: terminal } }\nfallback: [tty]\n")
        let start = 1_800_000_000
        let day: [(Int, String, String)] = [
            (0, "info", "a"), (60, "error", "disk"), (120, "warning", "w"), (300, "warning", "w"),
            (2000, "warning", "w"), (3000, "critical", "down"), (4000, "info", "b"),
        ]
        for (offset, level, title) in day {
            var environment = setup.environment
            environment["NOTIFY_ROUTE_TEST_NOW"] = String(start + offset)
            let sent = try ProcessRunner.notifyRoute(["send", "--config", setup.config.path, "-l", level, title], environment: environment)
            #expect(sent.status == 0, "\(sent.standardError)")
        }
        let new = setup.root.appendingPathComponent("new.yaml")
        try """
            sinks: { tty: { kind: terminal }, pager: { kind: terminal } }
            routes:
              - { match: { level: ">=error" }, to: [pager] }
              - { match: { level: warning }, to: [tty], dedup: { window: 10m } }
            fallback: [tty]
            """.write(to: new, atomically: true, encoding: .utf8)
        let replay = try setup.run(["replay", "--config", new.path, "--json"])
        #expect(replay.status == 0, "\(replay.standardError)")
        let lines = try replay.standardOutput.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        try #require(lines.count == 4, "\(replay.standardOutput)")
        #expect(lines.dropLast().map { $0["title"] as? String } == ["disk", "w", "down"])
        #expect(lines[0]["before"] as? [String: String] == ["tty": "delivered"])
        #expect(lines[0]["after"] as? [String: String] == ["pager": "delivered"])
        #expect(lines[1]["time"] as? String == "2027-01-15T08:05:00.000Z")
        #expect(lines[1]["after"] as? [String: String] == ["tty": "suppressed: duplicate"])
        let summary = lines[3]
        #expect(summary["events"] as? Int == 7)
        #expect(summary["changed"] as? Int == 3)
        #expect(summary["delivered"] as? [String: [String: Int]] == ["tty": ["before": 7, "after": 4], "pager": ["before": 0, "after": 2]])
        #expect(summary["suppressed"] as? [String: Int] == ["before": 0, "after": 1])
        // The text form, and nothing was delivered by the replay.
        let text = try setup.run(["replay", "--config", new.path])
        #expect(text.standardError.isEmpty)
        #expect(text.standardOutput.contains("error disk: tty delivered -> pager delivered"))
        #expect(text.standardOutput.contains("replayed 7 events; 3 would change"))
        #expect(try setup.history().count == 7)
        // A broken NEW is a config error, with file:line:col.
        try "routes: [ { to: [nowhere] } ]\n".write(to: new, atomically: true, encoding: .utf8)
        let broken = try setup.run(["replay", "--config", new.path])
        #expect(broken.status == 78)
        #expect(broken.standardError.contains("new.yaml:1:"))
    }
}
