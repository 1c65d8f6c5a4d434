import Foundation
import NotifyRouteTestSupport
import Testing

/// `sources:` of `notify-route serve`, end to end: records written to the private journald
/// of Tests/with-components.sh (with `logger --journald` and `systemd-cat`, which hand them
/// to journald as any program does) are read by the daemon, a real process, and routed to
/// a recording exec sink, whose requests the test reads back.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct SourceTests {
    let directory: URL
    /// Each test's records carry a SYSLOG_IDENTIFIER of their own, so the sources of one
    /// test never see another's (the field `NOTIFY_ROUTE_TEST_RUN` of other suites would be
    /// taken for notify-route's own, which sources skip).
    let identifier: String

    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
        directory = try ExecFixture.trustedDirectory()
        identifier = "srctest-" + PrivateJournal.newRunID().prefix(12)
    }

    var requestsPath: String { directory.appendingPathComponent("requests").path }

    /// A config with a recording exec sink (and more YAML after `sinks:`'s entries).
    func config(sources: String, sinks extra: String = "", routes: String = "fallback: [rec]") throws -> URL {
        let plugin = directory.appendingPathComponent("record.sh").path
        try """
            #!/bin/sh
            while IFS= read -r line; do
              printf '%s\\n' "$line" >> '\(requestsPath)'
              echo '{"status": "delivered"}'
            done
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        chmod(plugin, 0o755)
        let url = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              rec: { kind: exec, command: ['\(plugin)'], deadline: 5s }
            \(extra)
            \(routes)
            sources:
            \(sources)
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// The events the recording sink received, in order.
    func received() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: requestsPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? [String: Any]
        }
    }

    func waitForEvents(_ count: Int, timeLimit: Duration = .seconds(10)) async throws -> [[String: Any]] {
        let end = ContinuousClock.now + timeLimit
        while received().count < count, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        return received()
    }

    /// Waits until the daemon's log says `text` (a source started reading, for instance).
    func waitForLog(_ daemon: DaemonProcess, _ text: String, count: Int = 1) async throws {
        let end = ContinuousClock.now + .seconds(10)
        while daemon.log.components(separatedBy: text).count - 1 < count, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(daemon.log.components(separatedBy: text).count - 1 >= count, "no \"\(text)\" in the daemon's log: \(daemon.log)")
    }

    /// One record through `logger --journald` (KEY=VALUE lines on stdin, sent with sd_journal_sendv).
    func log(_ fields: [String: String]) async throws {
        let logger = try #require(ProcessRunner.which("logger"), "logger (package bsdutils)")
        let input = fields.map { "\($0.key)=\($0.value)" }.joined(separator: "\n") + "\n"
        let result = try await PrivateJournal.offPool {
            try ProcessRunner.run(logger, ["--journald"], input: input)
        }
        try #require(result.status == 0, "logger: \(result.standardError)")
    }

    func message(_ text: String, priority: Int, extra: [String: String] = [:]) async throws {
        try await log(["SYSLOG_IDENTIFIER": identifier, "PRIORITY": String(priority), "MESSAGE": text].merging(extra) { $1 })
    }

    /// A launcher giving every daemon of the test one state directory, as on a real session.
    /// Stops `daemon` as systemd does: it saves its place and exits 0.
    func stopSavingThePlace(_ daemon: DaemonProcess) {
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit()?.status == 0, "\(daemon.log)")
        daemon.stop()
    }

    /// A first daemon that routes the error record "one", then stops with its place saved.
    func readOneRecordAndStop(config: URL, launcher: [String]) async throws {
        let first = try DaemonProcess.start(config: config, launcher: launcher)
        try await waitForLog(first, Self.started)
        try await message("one", priority: 3)
        _ = try await waitForEvents(1)
        stopSavingThePlace(first)
    }

    func sharedRuntime() throws -> [String] {
        let runtime = directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        chmod(runtime.path, 0o700)
        return ["/usr/bin/env", "XDG_RUNTIME_DIR=\(runtime.path)"]
    }

    /// A journal source of this test's errors, with more of its keys in `extra` (one per line).
    func errorsSource(_ extra: [String] = []) -> String {
        (["  errors:", "    kind: journal", "    match: { PRIORITY: \"<=3\", SYSLOG_IDENTIFIER: \"\(identifier)*\" }"]
            + extra.map { "    " + $0 }).joined(separator: "\n")
    }

    static let started = "reading new journal records from now on"

    @Test func matchingRecordsBecomeEventsAndNothingElseDoes() async throws {
        try await PrivateJournal.withAccess {
            // A journal sink in the same config, writing records the source's matcher would take:
            // they carry notify-route's own fields and are never read back.
            let config = try config(
                sources: errorsSource(),
                sinks: "  journal: { kind: journal, identifier: \(identifier)-sink, deadline: 2s }",
                routes: "fallback: [rec, journal]")
            try await message("before the daemon started", priority: 2)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)

            try await message("disk on fire", priority: 3)
            try await message("just a warning", priority: 4)
            try await log(["SYSLOG_IDENTIFIER": "someone-else", "PRIORITY": "0", "MESSAGE": "not ours"])
            try await message("pager alert", priority: 2, extra: ["UNIT_NAME": "x"])
            // systemd-cat: a program's output through journald's stream transport.
            let systemdCat = try #require(ProcessRunner.which("systemd-cat"), "systemd-cat (package systemd)")
            let cat = try await PrivateJournal.offPool {
                try ProcessRunner.run(systemdCat, ["-t", identifier, "-p", "err", "echo", "from a program"])
            }
            #expect(cat.status == 0, "\(cat.standardError)")
            let events = try await waitForEvents(3)
            // Let a loop (the journal sink's records read back) or a late stray show itself.
            try await Task.sleep(for: .seconds(1))
            let all = received()
            #expect(all.count == 3, "\(all)")
            #expect(events.first?["title"] as? String == "\(identifier): disk on fire")
            #expect(events.first?["level"] as? String == "error")
            #expect(events.first?["source"] as? String == "errors")
            #expect(events.first?["app"] as? String == identifier)
            #expect(events.dropFirst().first?["title"] as? String == "\(identifier): pager alert")
            #expect(events.dropFirst().first?["level"] as? String == "error", "PRIORITY=2 at most max_level, error")
            #expect(events.dropFirst(2).first?["title"] as? String == "\(identifier): from a program")
            #expect(events.dropFirst(2).first?["level"] as? String == "error")
            // The journal sink did write them, so the guard was what kept them out.
            let written = try await PrivateJournal.entries(matching: ["SYSLOG_IDENTIFIER=\(identifier)-sink"], count: 3)
            #expect(written.count == 3)
        }
    }

    @Test func templatesLevelAndKeysComeFromTheConfig() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(sources: errorsSource([
                "title: \"{JOB}: {MESSAGE}\"",
                "body: \"missing: [{NO_SUCH_FIELD}] host {HOST|SYSLOG_IDENTIFIER}\"",
                "level: warning",
                "tags: [ops]",
                "replace_key: \"job-{JOB}\"",
            ]))
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("backup failed", priority: 3, extra: ["JOB": "nightly"])
            let event = try #require(try await waitForEvents(1).first)
            #expect(event["title"] as? String == "nightly: backup failed")
            #expect(event["body"] as? String == "missing: [] host \(identifier)")
            #expect(event["level"] as? String == "warning")
            #expect(event["tags"] as? [String] == ["ops"])
            #expect(event["replace_key"] as? String == "job-nightly")
        }
    }

    /// Any local user may log at PRIORITY=2: that gives at most the source's `max_level`,
    /// `error` unless the config says otherwise, so no one can raise a sticky critical
    /// alert (one that breaks through a pause) by logging.
    @Test func aRecordsPriorityGivesAtMostErrorByDefault() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DaemonProcess.start(config: try config(sources: errorsSource()))
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("emergency, says anyone", priority: 0)
            try await message("critical, says anyone", priority: 2)
            let events = try await waitForEvents(2)
            #expect(events.map { $0["level"] as? String } == ["error", "error"], "\(events)")
        }
    }

    @Test func maxLevelCriticalLetsAPriorityGiveCritical() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DaemonProcess.start(config: try config(sources: errorsSource(["max_level: critical"])))
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("critical, says the config", priority: 2)
            try await message("an error stays one", priority: 3)
            let events = try await waitForEvents(2)
            #expect(events.map { $0["level"] as? String } == ["critical", "error"], "\(events)")
        }
    }

    /// A notification server that reads links in the body (`body-hyperlinks`, without
    /// `body-markup`) gets a record's text escaped: no one's log line becomes a link.
    @Test(.enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon and python3-dbusmock"))
    func aRecordsTextIsEscapedForAServerThatReadsLinks() async throws {
        try await PrivateJournal.withAccess {
            let mock = try DBusMockDaemon.start(capabilities: "body body-hyperlinks")
            defer { mock.shutdown() }
            let url = directory.appendingPathComponent("desktop.yaml")
            try """
                sinks:
                  desktop: { kind: desktop, deadline: 2s }
                fallback: [desktop]
                sources:
                \(errorsSource(["body: \"{MESSAGE}\""]))
                """.write(to: url, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess.start(config: url, environment: mock.environment)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            let text = "<a href=\"https://example.invalid/fix\">run the fix</a> & <b>now</b>"
            try await message(text, priority: 3)
            let end = ContinuousClock.now + .seconds(10)
            while try mock.notifyCalls().isEmpty, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }
            let call = try #require(try mock.notifyCalls().first, "\(daemon.log)")
            let escaped = "&lt;a href=\"https://example.invalid/fix\"&gt;run the fix&lt;/a&gt; &amp; &lt;b&gt;now&lt;/b&gt;"
            #expect(call.body == escaped)
            // The summary is plain text to the spec's servers (GNOME Shell, mako escape it
            // themselves): escaping it too would show "&amp;".
            #expect(call.summary == "\(identifier): \(text)")
        }
    }

    @Test func theFirstRecordIsReadWhenNoneMatchedBefore() async throws {
        try await PrivateJournal.withAccess {
            // An exact identifier: journald filters, and nothing before the start matches.
            let config = try config(sources: """
                  mine:
                    kind: journal
                    match: { SYSLOG_IDENTIFIER: "\(identifier)" }
                """)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("the very first", priority: 6)
            let events = try await waitForEvents(1)
            #expect(events.first?["title"] as? String == "\(identifier): the very first", "\(daemon.log)")
            #expect(events.first?["level"] as? String == "info")
        }
    }

    @Test func aRestartNeitherMissesNorRepeatsARecord() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(sources: errorsSource())
            let launcher = try sharedRuntime()

            try await readOneRecordAndStop(config: config, launcher: launcher)

            try await message("two", priority: 3)
            try await message("three", priority: 3)
            let second = try DaemonProcess.start(config: config, launcher: launcher)
            defer { second.stop() }
            try await message("four", priority: 3)
            _ = try await waitForEvents(4)
            try await Task.sleep(for: .milliseconds(500))
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == ["one", "two", "three", "four"].map { "\(identifier): \($0)" }, "\(second.log)")
            #expect(!second.log.contains(Self.started), "the second daemon started over: \(second.log)")
        }
    }

    /// The daemon's anonymous memory (heap), in kB: the journal files it maps are not its own.
    static func anonymousMemory(_ pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("RssAnon:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    /// The cursor the source saved in the daemon's state database.
    static func savedCursor(_ daemon: DaemonProcess, source: String) throws -> String? {
        let database = daemon.directory.appendingPathComponent("runtime/notify-route/state.db").path
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
            import sqlite3, sys
            row = sqlite3.connect(sys.argv[1]).execute("SELECT cursor FROM source_cursors WHERE source = ?", (sys.argv[2],)).fetchone()
            print(row[0] if row else "")
            """, database, source])
        let cursor = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        return cursor.isEmpty ? nil : cursor
    }

    /// A cursor's `i=`: the record's sequence number in its journal (hexadecimal).
    static func sequenceNumber(_ cursor: String) -> UInt64 {
        cursor.split(separator: ";").first { $0.hasPrefix("i=") }.flatMap { UInt64($0.dropFirst(2), radix: 16) } ?? 0
    }

    @Test func aFloodOfAHundredThousandRecordsIsFiveEventsAndASummary() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(sources: """
                  flood:
                    kind: journal
                    match: { SYSLOG_IDENTIFIER: "\(identifier)" }
                    rate: { max: 5, per: 10m }
                """)
            // (A period longer than a debug build takes to read the flood on a loaded machine:
            // the summary then comes once, when the daemon stops.)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            let before = try Self.anonymousMemory(daemon.pid)

            let systemdCat = try #require(ProcessRunner.which("systemd-cat"), "systemd-cat (package systemd)")
            let seq = try #require(ProcessRunner.which("seq"))
            let written = try await PrivateJournal.offPool {
                try ProcessRunner.run(systemdCat, ["-t", identifier, "-p", "err", seq.path, "100000"])
            }
            #expect(written.status == 0, "\(written.standardError)")
            // journald takes the stream at its own pace: wait for the last line, then for the
            // source to have read up to it.
            var last: PrivateJournal.Entry?
            let end = ContinuousClock.now + .seconds(180)
            while ContinuousClock.now < end {
                last = try await PrivateJournal.offPool { [identifier] in
                    try PrivateJournal.read(matching: ["SYSLOG_IDENTIFIER=\(identifier)", "MESSAGE=100000"]).first
                }
                if last != nil { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            let lastCursor = try #require(last?["__CURSOR"], "journald never got the last line")
            // Read up to the last line or past it (journald may log something of its own after it).
            func caughtUp() throws -> Bool {
                guard let saved = try Self.savedCursor(daemon, source: "flood") else { return false }
                return Self.sequenceNumber(saved) >= Self.sequenceNumber(lastCursor)
            }
            var peak = before
            while try !caughtUp(), ContinuousClock.now < end {
                peak = max(peak, try Self.anonymousMemory(daemon.pid))
                try await Task.sleep(for: .milliseconds(200))
            }
            let saved = try Self.savedCursor(daemon, source: "flood")
            #expect(try caughtUp(), "the source did not catch up: \(saved ?? "nothing saved") vs \(lastCursor)")
            let after = try Self.anonymousMemory(daemon.pid)

            // Five events went through; the rest were counted, not routed.
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == (1...5).map { "\(identifier): \($0)" })
            // Flat memory: the records were not kept (allocator slack aside).
            #expect(max(peak, after) - before < 8_000, "anonymous memory \(before) kB before, peak \(peak) kB, \(after) kB after")

            // Stopping sends the summary of what was held.
            daemon.signal(SIGTERM)
            #expect(daemon.waitForExit(timeLimit: .seconds(15))?.status == 0, "\(daemon.log)")
            let summary = try #require(received().dropFirst(5).first)
            #expect(summary["title"] as? String == "99995 more from flood")
            #expect(summary["body"] as? String == "The last: \(identifier): 100000")
            #expect(summary["level"] as? String == "error")
            #expect(received().count == 6)
        }
    }

    @Test func sigtermStopsAWaitingSourcePromptly() async throws {
        let config = try config(sources: errorsSource())
        let daemon = try DaemonProcess.start(config: config)
        defer { daemon.stop() }
        try await waitForLog(daemon, Self.started)
        daemon.signal(SIGTERM)
        let exit = try #require(daemon.waitForExit(timeLimit: .seconds(5)), "still running 5 s after SIGTERM: \(daemon.log)")
        #expect(exit.status == 0)
        #expect(exit.after < .seconds(2), "\(exit.after)")
    }

    @Test func aWrongTemplateIsAConfigErrorWithItsPlace() async throws {
        let config = try config(sources: errorsSource(["title: \"{MESSAGE\""]))
        let result = try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(["config", "check", "--config", config.path])
        }
        #expect(result.status == 78)
        #expect(result.standardError.contains("config.yaml:"), "\(result.standardError)")
        #expect(result.standardError.contains("a { is not closed by }"), "\(result.standardError)")
    }

    @Test func aRotatedJournalIsFollowedAndAVacuumedPlaceStartsAtTheOldest() async throws {
        // Exclusive: vacuuming removes the archived records of every other test.
        try await PrivateJournal.withAccess(exclusive: true) {
            let journalctl = try #require(ProcessRunner.which("journalctl"))
            func journalctlRun(_ arguments: [String]) async throws {
                let result = try await PrivateJournal.offPool { try ProcessRunner.run(journalctl, arguments) }
                try #require(result.status == 0, "journalctl \(arguments): \(result.standardError)")
            }
            let config = try config(sources: errorsSource())
            let launcher = try sharedRuntime()

            let first = try DaemonProcess.start(config: config, launcher: launcher)
            try await waitForLog(first, Self.started)
            try await message("before the rotation", priority: 3)
            _ = try await waitForEvents(1)
            try await journalctlRun(["--rotate"])
            try await message("after the rotation", priority: 3)
            _ = try await waitForEvents(2)
            stopSavingThePlace(first)

            // The file holding the saved place is archived and removed.
            try await journalctlRun(["--rotate"])
            try await Task.sleep(for: .milliseconds(1100))
            try await journalctlRun(["--vacuum-time=1s"])
            try await message("after the vacuum", priority: 3)
            let second = try DaemonProcess.start(config: config, launcher: launcher)
            defer { second.stop() }
            _ = try await waitForEvents(3)
            try await Task.sleep(for: .milliseconds(300))
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == ["before the rotation", "after the rotation", "after the vacuum"].map { "\(identifier): \($0)" }, "\(second.log)")
            #expect(second.log.contains("no longer in the journal"), "\(second.log)")
        }
    }

    @Test func aReloadThatChangesTheSourcesRestartsThem() async throws {
        try await PrivateJournal.withAccess {
            let url = try config(sources: errorsSource(["level: warning"]))
            let daemon = try DaemonProcess.start(config: url)
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            _ = try config(sources: errorsSource(["level: critical"]))
            let socket = daemon.socketPath
            let reload = try await PrivateJournal.offPool { try ProcessRunner.notifyRoute(["reload", "--socket", socket]) }
            #expect(reload.status == 0, "\(reload.standardError)")
            try await waitForLog(daemon, "sources changed on reload")
            try await waitForLog(daemon, "source errors (kind journal) started", count: 2)
            try await message("after the reload", priority: 3)
            let event = try #require(try await waitForEvents(1).first)
            #expect(event["level"] as? String == "critical", "\(daemon.log)")
        }
    }

    // MARK: Faults under a running source

    @Test(arguments: [SIGTERM, SIGKILL])
    func aRestartedJournaldIsFollowed(signal: Int32) async throws {
        // Exclusive: no other test may write while journald is down.
        try await PrivateJournal.withAccess(exclusive: true) {
            let daemon = try DaemonProcess.start(config: config(sources: errorsSource()))
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("before the restart", priority: 3)
            _ = try await waitForEvents(1)
            try await PrivateJournal.restart(signal: signal)
            try await message("after the restart", priority: 3)
            _ = try await waitForEvents(2)
            try await Task.sleep(for: .milliseconds(300))
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == ["before the restart", "after the restart"].map { "\(identifier): \($0)" }, "\(daemon.log)")
        }
    }

    @Test func journalFilesRemovedUnderARunningSourceAreFollowed() async throws {
        // Exclusive: the files of every other test's records go.
        try await PrivateJournal.withAccess(exclusive: true) {
            let daemon = try DaemonProcess.start(config: config(sources: errorsSource()))
            defer { daemon.stop() }
            try await waitForLog(daemon, Self.started)
            try await message("before the removal", priority: 3)
            _ = try await waitForEvents(1)
            // Every journal file, the one the source is reading included, is deleted, and
            // journald (restarted, as after a crash) starts new ones.
            let removal = try await PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/find"), ["/run/log/journal", "-name", "*.journal*", "-delete", "-print"])
            }
            try #require(removal.status == 0 && !removal.standardOutput.isEmpty, "\(removal.standardError)")
            try await PrivateJournal.restart(signal: SIGKILL)
            try await message("after the removal", priority: 3)
            _ = try await waitForEvents(2)
            try await Task.sleep(for: .milliseconds(300))
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == ["before the removal", "after the removal"].map { "\(identifier): \($0)" }, "\(daemon.log)")
        }
    }

    @Test func aSavedPlaceSdJournalCannotReadStartsAtTheOldestAndSaysSo() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(sources: errorsSource())
            let launcher = try sharedRuntime()
            try await readOneRecordAndStop(config: config, launcher: launcher)

            // A damaged state: the saved place is no cursor at all (sd_journal_seek_cursor: EINVAL).
            let database = directory.appendingPathComponent("runtime/notify-route/state.db").path
            let update = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("UPDATE source_cursors SET cursor = 'not a cursor' WHERE source = 'errors'")
                db.commit()
                print(db.total_changes)
                """, database])
            try #require(update.standardOutput.hasPrefix("1"), "\(update.standardOutput) \(update.standardError)")

            try await message("two", priority: 3)
            let second = try DaemonProcess.start(config: config, launcher: launcher)
            defer { second.stop() }
            try await waitForLog(second, "no longer in the journal")
            try await message("three", priority: 3)
            _ = try await waitForEvents(4)
            try await Task.sleep(for: .milliseconds(300))
            // From the oldest record: "one" again (it cannot know it was read), then the rest.
            let titles = received().compactMap { $0["title"] as? String }
            #expect(titles == ["one", "one", "two", "three"].map { "\(identifier): \($0)" }, "\(second.log)")
            #expect(!second.log.contains("opening the journal again"), "\(second.log)")
        }
    }

    // MARK: explain --journal-record

    /// The test's newest record as `journalctl -o json` prints it.
    func recordLine(_ text: String) async throws -> String {
        let journalctl = try #require(ProcessRunner.which("journalctl"))
        let identifier = identifier
        let end = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < end {
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(journalctl, ["--no-pager", "-o", "json", "SYSLOG_IDENTIFIER=\(identifier)", "MESSAGE=\(text)"])
            }
            if let line = result.standardOutput.split(separator: "\n").last { return String(line) }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("journald never got \"\(text)\"")
        return ""
    }

    func explain(_ config: URL, _ line: String, _ extra: [String] = []) async throws -> ProcessResult {
        try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(["explain", "--config", config.path, "--journal-record"] + extra, input: line + "\n")
        }
    }

    @Test func explainTakesAJournalRecordThroughTheSourceThatReadsIt() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(
                sources: """
                  quiet:
                    kind: journal
                    match: { SYSLOG_IDENTIFIER: "\(identifier)", PRIORITY: ">=6" }
                \(errorsSource(["title: \"{SYSLOG_IDENTIFIER} failed: {MESSAGE}\"", "replace_key: \"disk:{DISK}\"", "max_level: critical"]))
                """,
                routes: """
                routes:
                  - match: { level: ">=critical" }
                    to: [rec]
                fallback: []
                """)
            try await message("disk full", priority: 2, extra: ["DISK": "sda"])
            let line = try await recordLine("disk full")
            let result = try await explain(config, line)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.contains("source: errors (kind journal, \(config.path):"), "\(result.standardOutput)")
            #expect(result.standardOutput.contains("route 1: matched (to rec)"), "\(result.standardOutput)")
            #expect(result.standardOutput.contains("level critical"), "\(result.standardOutput)")
            #expect(received().isEmpty, "explain sent something")

            let json = try await explain(config, line, ["--json"])
            #expect(json.status == 0, "\(json.standardError)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            let event = try #require(report["event"] as? [String: Any], "\(json.standardOutput)")
            #expect(event["title"] as? String == "\(identifier) failed: disk full")
            #expect(event["level"] as? String == "critical")
            #expect(event["replace_key"] as? String == "disk:sda")
            #expect(event["source"] as? String == "errors")

            // The first source in the config's order that takes it: an info record is `quiet`'s.
            try await message("all good", priority: 6)
            let info = try await explain(config, try await recordLine("all good"), ["--json"])
            #expect(info.status == 0, "\(info.standardError)")
            #expect(info.standardOutput.contains("\"source\":\"quiet\""), "\(info.standardOutput)")
        }
    }

    @Test func explainRefusesWhatIsNoJournalRecordOrNoSourceTakes() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(sources: errorsSource())
            try await message("only a notice", priority: 5)
            let notice = try await explain(config, try await recordLine("only a notice"))
            #expect(notice.status == 1)
            #expect(notice.standardError.contains("no source takes this record (tried errors)"), "\(notice.standardError)")

            try await message("written by notify-route", priority: 2, extra: ["NOTIFY_ROUTE_SINK": "journal"])
            let own = try await explain(config, try await recordLine("written by notify-route"))
            #expect(own.status == 1)
            #expect(own.standardError.contains("written by notify-route itself"), "\(own.standardError)")

            let broken = try await explain(config, "{\"MESSAGE\": \"cut short")
            #expect(broken.status == 65)
            #expect(broken.standardError.contains("--journal-record: stdin: not JSON"), "\(broken.standardError)")
            let array = try await explain(config, "[1, 2]")
            #expect(array.status == 65)
            #expect(array.standardError.contains("not a JSON object"), "\(array.standardError)")
            let usage = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(["explain", "--config", config.path, "--journal-record", "a title"], input: "{}\n")
            }
            #expect(usage.status == 64, "\(usage.standardError)")
        }
    }
}
