import Foundation
import NotifyRouteTestSupport
import Testing

/// End-to-end: `notify-route send` to a journal sink, against the private journald of
/// Tests/with-components.sh (and, for the faults, a nested namespace without it).
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct JournalCLITests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    static func config(_ options: String = "", _ extra: String = "fallback: [journal]") throws -> URL {
        let url = try TestEnvironment.temporaryDirectory("journal-cli").appendingPathComponent("config.yaml")
        try """
            sinks:
              journal: { kind: journal, deadline: 500ms, identifier: cli-test, fields: { ROLE: cli }\(options) }
              tty: { kind: terminal }
            \(extra)
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// The built binary, run off Swift's cooperative pool (see ``PrivateJournal/offPool(_:)``).
    static func notifyRoute(
        _ arguments: [String], environment: [String: String]? = nil, input: String? = nil, timeLimit: Duration = .seconds(30)
    ) async throws -> ProcessResult {
        try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(arguments, environment: environment, input: input, timeLimit: timeLimit)
        }
    }

    /// The one sink outcome of `send --json`.
    static func outcome(_ result: ProcessResult) throws -> [String: Any] {
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        let sinks = try #require(report?["sinks"] as? [[String: Any]], "\(result.standardOutput) \(result.standardError)")
        return try #require(sinks.first { $0["sink"] as? String == "journal" })
    }

    @Test func everyOptionBecomesAField() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let result = try await Self.notifyRoute([
                "send", "--config", try Self.config().path, "-l", "error", "-a", "backupd", "-s", "backup.nightly",
                "-g", "ops", "-g", "nightly", "-k", "backup-\(run)", "-r", "backup-status",
                "-f", "\(PrivateJournal.runField)=\(run)", "-f", "disk.path=/dev/sda", "-f", "MULTI=a\nb\n", "-f", "EQ=x=y",
                "Backup failed", "-",
            ], input: "rsync exited 23\nsee /var/log/backup.log\n")
            #expect(result.status == 0, "\(result.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry["MESSAGE"] == "Backup failed\nrsync exited 23\nsee /var/log/backup.log")
            #expect(entry["PRIORITY"] == "3")
            #expect(entry["SYSLOG_IDENTIFIER"] == "cli-test")
            #expect(entry["NOTIFY_ROUTE_APP"] == "backupd")
            #expect(entry["NOTIFY_ROUTE_LEVEL"] == "error")
            #expect(entry["NOTIFY_ROUTE_SOURCE"] == "backup.nightly")
            // journald keeps the values of a repeated field, not their order.
            #expect(Set(entry.values("NOTIFY_ROUTE_TAGS")) == ["nightly", "ops"])
            #expect(entry["NOTIFY_ROUTE_DEDUP_KEY"] == "backup-\(run)")
            #expect(entry["NOTIFY_ROUTE_REPLACE_KEY"] == "backup-status")
            #expect(entry["NOTIFY_ROUTE_SINK"] == "journal")
            #expect(entry["ROLE"] == "cli")
            #expect(entry["DISK_PATH"] == "/dev/sda")
            #expect(entry.values("NOTIFY_ROUTE_FIELD_NAME") == ["DISK_PATH=disk.path"])
            #expect(entry["MULTI"] == "a\nb\n")
            #expect(entry["EQ"] == "x=y")
            #expect(entry["CODE_FILE"] == nil, "the CLI has no library call site")
        }
    }

    @Test func aRuleSetsTheMessageID() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let config = try Self.config("", """
                rules:
                  - match: { source: "disk*" }
                    set: { message_id: 3F0A7C35D5B84E5A9C21B0E8C3F1A2B4 }
                fallback: [journal]
                """)
            let result = try await Self.notifyRoute(
                ["send", "--config", config.path, "-s", "disk.sda", "-f", "\(PrivateJournal.runField)=\(run)", "Disk full"])
            #expect(result.status == 0, "\(result.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry["MESSAGE_ID"] == "3f0a7c35d5b84e5a9c21b0e8c3f1a2b4")
        }
    }

    @Test func sinksListsTheJournalAsAvailable() async throws {
        try await PrivateJournal.withAccess {
            let result = try await Self.notifyRoute(["sinks", "--config", try Self.config().path])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.contains("journal"), "\(result.standardOutput)")
        }
    }

    /// libsystemd is loaded with dlopen only when a record needs `sd_journal_sendv`: neither
    /// `--version` nor a send written on the fast path maps it (the dynamic loader's own
    /// log, LD_DEBUG=files, names every object it loads, dlopen included).
    @Test func libsystemdIsNotLoadedUntilARecordNeedsIt() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let version = try await Self.notifyRoute(["--version"], environment: ["LD_DEBUG": "files"])
            #expect(version.status == 0, "\(version.standardError)")
            #expect(version.standardError.contains("file="), "the loader's log is there to read")
            #expect(!version.standardError.contains("libsystemd"), "\(version.standardError)")

            let send = try await Self.notifyRoute(
                ["send", "--config", try Self.config().path, "-f", "\(PrivateJournal.runField)=\(run)", "fast path"],
                environment: ["LD_DEBUG": "files"])
            #expect(send.status == 0, "\(send.standardError)")
            #expect(!send.standardError.contains("libsystemd"), "\(send.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry["MESSAGE"] == "fast path")
        }
    }

    // MARK: Faults

    @Test func anAbsentSocketIsUnavailableWithTheReason() async throws {
        try await PrivateJournal.withAccess {
            let config = try Self.config()
            let result = try await PrivateJournal.run(
                TestEnvironment.notifyRouteBinary, ["send", "--config", config.path, "--json", "nobody hears this"], socket: .absent)
            #expect(result.status == 69, "no sink available: \(result.standardError)")
            let outcome = try Self.outcome(result)
            #expect(outcome["status"] as? String == "unavailable")
            #expect((outcome["reason"] as? String)?.contains("/run/systemd/journal/socket is absent") == true, "\(outcome)")

            let sinks = try await PrivateJournal.run(TestEnvironment.notifyRouteBinary, ["sinks", "--config", config.path], socket: .absent)
            #expect(sinks.standardOutput.contains("is absent"), "\(sinks.standardOutput)")

            // With a failover, the terminal gets the event and the send succeeds.
            let failover = try Self.config("", """
                routes:
                  - { match: {}, to: [journal], failover: [tty] }
                fallback: [journal]
                """)
            let rescued = try await PrivateJournal.run(
                TestEnvironment.notifyRouteBinary, ["send", "--config", failover.path, "rescued"], socket: .absent,
                environment: ["NO_COLOR": "1"])
            #expect(rescued.status == 0, "\(rescued.standardError)")
            #expect(rescued.standardError.contains("[info] rescued"))
        }
    }

    @Test func aStaleSocketIsAFailureWithTheReason() async throws {
        try await PrivateJournal.withAccess {
            let result = try await PrivateJournal.run(
                TestEnvironment.notifyRouteBinary, ["send", "--config", try Self.config().path, "--json", "refused"], socket: .stale)
            #expect(result.status == 1, "no sink delivered: \(result.standardError)")
            let outcome = try Self.outcome(result)
            #expect(outcome["status"] as? String == "failed")
            #expect((outcome["error"] as? String)?.contains("connection refused") == true, "\(outcome)")
            #expect(outcome["retryable"] as? Bool == true)
        }
    }

    /// journald stopped with its socket queue full: `send` returns by the sink's deadline with a
    /// retryable time-out (a one-shot process does not queue), and a failover sink takes over.
    @Test func aHungJournaldDoesNotHangSend() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let config = try Self.config()
            let failover = try Self.config("", """
                routes:
                  - { match: {}, to: [journal], failover: [tty] }
                fallback: [journal]
                """)
            let (alone, rescued) = try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                let alone = try await Self.notifyRoute(
                    ["send", "--config", config.path, "--json", "-f", "\(PrivateJournal.runField)=\(run)", "hung"], timeLimit: .seconds(10))
                let rescued = try await Self.notifyRoute(
                    ["send", "--config", failover.path, "-f", "\(PrivateJournal.runField)=\(run)", "rescued"],
                    environment: ["NO_COLOR": "1"], timeLimit: .seconds(10))
                return (alone, rescued)
            }
            print("journal: notify-route send with journald stopped exited after \(alone.duration) (sink deadline 500ms)")
            #expect(!alone.timedOut)
            #expect(alone.duration < .seconds(2), "the process returns by the deadline, plus start-up")
            #expect(alone.status == 1, "\(alone.standardError)")
            let outcome = try Self.outcome(alone)
            #expect(outcome["status"] as? String == "failed")
            #expect(outcome["reason"] as? String == "timed-out")
            #expect((outcome["error"] as? String)?.contains("not queued") == true, "\(outcome)")

            #expect(rescued.status == 0, "\(rescued.standardError)")
            #expect(rescued.standardError.contains("[info] rescued"))
            #expect(rescued.duration < .seconds(2))
        }
    }

    /// A regular file where journald's socket should be is named as such: connect(2) on it
    /// says "connection refused", which must not pass for a stale socket. In a nested mount
    /// namespace, so journald's real socket stays where it is for every other test.
    @Test func aRegularFileAtTheSocketPathIsReportedAsSuch() async throws {
        try await PrivateJournal.withAccess {
            let config = try Self.config()
            let directory = (PrivateJournal.socketPath as NSString).deletingLastPathComponent
            let script = "set -e; mount -t tmpfs tmpfs \(directory); echo not-a-socket > \(PrivateJournal.socketPath); "
                + "\"$0\" send --config \"$1\" --json 'nobody hears this'; echo; \"$0\" sinks --config \"$1\""
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(
                    URL(fileURLWithPath: "/usr/bin/unshare"),
                    ["-m", "--propagation", "private", "/bin/sh", "-c", script, TestEnvironment.notifyRouteBinary.path, config.path],
                    timeLimit: .seconds(30))
            }
            let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: true)
            let report = try #require(lines.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                                      "\(result.standardOutput) \(result.standardError)")
            let outcome = try #require((report["sinks"] as? [[String: Any]])?.first { $0["sink"] as? String == "journal" })
            let expected = "/run/systemd/journal/socket is a regular file, not a socket"
            #expect(outcome["status"] as? String == "unavailable", "\(outcome)")
            #expect((outcome["reason"] as? String)?.contains(expected) == true, "\(outcome)")
            #expect(!result.standardOutput.contains("stale"), "\(result.standardOutput)")
            #expect(result.standardOutput.contains(expected), "sinks says it too: \(result.standardOutput)")
        }
    }

    /// Event fields cannot make a record pass for another unit's, process's, facility's or call
    /// site's: `journalctl -u sshd.service` (which also matches `OBJECT_SYSTEMD_UNIT` of root's
    /// records, and `COREDUMP_UNIT` of crash records) never shows it, and neither does a match
    /// on the forged field itself.
    @Test func eventFieldsCannotForgeAnotherUnitsRecords() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let forged = [
                "OBJECT_SYSTEMD_UNIT=sshd.service", "OBJECT_PID=1", "OBJECT_COMM=sshd", "SYSLOG_FACILITY=4", "SYSLOG_PID=1",
                "SYSLOG_TIMESTAMP=Jan  1 00:00:00", "CODE_FILE=sshd.c", "CODE_LINE=1", "CODE_FUNC=main", "UNIT=sshd.service",
                "USER_UNIT=sshd.service", "COREDUMP_UNIT=sshd.service", "INVOCATION_ID=0123456789abcdef0123456789abcdef",
                "object.systemd.unit=sshd.service",
            ]
            var fields = [PrivateJournal.runField: run]
            for pair in forged {
                let parts = pair.split(separator: "=", maxSplits: 1)
                fields[String(parts[0])] = String(parts[1])
            }
            // With systemd-coredump's MESSAGE_ID, as a crash record of sshd would have it.
            let line = try JSONSerialization.data(withJSONObject: [
                "title": "forged", "message_id": "fc2e22bc6ee647b6b90729ab34a250b1", "fields": fields,
            ])
            let result = try await Self.notifyRoute(
                ["ingest", "--config", try Self.config().path], input: String(decoding: line, as: UTF8.self) + "\n")
            #expect(result.status == 0, "\(result.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            for name in ["OBJECT_SYSTEMD_UNIT", "OBJECT_PID", "OBJECT_COMM", "SYSLOG_PID", "SYSLOG_TIMESTAMP", "UNIT",
                         "USER_UNIT", "COREDUMP_UNIT", "INVOCATION_ID", "CODE_FILE", "CODE_LINE", "CODE_FUNC"] {
                #expect(entry[name] == nil, "\(name) = \(entry[name] ?? "")")
            }
            #expect(entry["SYSLOG_FACILITY"] == nil)
            #expect(entry["USER_OBJECT_SYSTEMD_UNIT"] == "sshd.service")
            #expect(entry["USER_OBJECT_PID"] == "1")
            #expect(entry["USER_SYSLOG_FACILITY"] == "4")
            #expect(entry["USER_CODE_FILE"] == "sshd.c")
            #expect(entry["USER_USER_UNIT"] == "sshd.service", "UNIT and USER_UNIT both renamed away from USER_UNIT")
            #expect(Set(entry.values("NOTIFY_ROUTE_FIELD_NAME")).contains("USER_OBJECT_SYSTEMD_UNIT=OBJECT_SYSTEMD_UNIT"))
            #expect(entry["_SYSTEMD_UNIT"] != "sshd.service")

            // What an administrator looking for sshd's records runs finds none of ours.
            for query in [["-u", "sshd.service"], ["OBJECT_SYSTEMD_UNIT=sshd.service"], ["OBJECT_PID=1"],
                          ["SYSLOG_FACILITY=4"], ["COREDUMP_UNIT=sshd.service"], ["UNIT=sshd.service"]] {
                let found = try await PrivateJournal.offPool { try PrivateJournal.read(matching: query) }
                #expect(!found.contains { $0[PrivateJournal.runField] == run }, "journalctl \(query.joined(separator: " ")) shows the forged record")
            }
        }
    }

    // MARK: Queued records at the end

    /// The reports of `ingest --json`, and how many said the journal queued the event.
    static func queuedCount(_ reports: String) -> Int {
        reports.split(separator: "\n").filter { line in
            guard let report = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let sinks = report["sinks"] as? [[String: Any]]
            else { return false }
            return sinks.contains { $0["sink"] as? String == "journal" && $0["status"] as? String == "queued" }
        }.count
    }

    /// The count in "sink "journal": N queued record(s) dropped", or nil.
    static func droppedCount(_ standardError: String) -> Int? {
        guard let range = standardError.range(of: "sink \"journal\": ") else { return nil }
        return Int(standardError[range.upperBound...].prefix { $0.isNumber })
    }

    static let queueConfig = """
        routes:
          - { match: {}, to: [journal], failover: [tty] }
        fallback: [journal]
        """

    /// journald stopped at the end of input: `ingest` waits for its queue a bounded time
    /// (5 s, not an hour), says what it waits for, and reports every record it had to drop;
    /// `--no-wait` does not wait, and reports them the same way.
    @Test(arguments: [false, true])
    func atTheEndOfInputQueuedRecordsGetABoundedWaitAndWhatIsLostIsReported(noWait: Bool) async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let config = try Self.config(", queue_size: 100", Self.queueConfig)
            let input = (0..<20).map { #"{"title":"queued \#($0)","fields":{"\#(PrivateJournal.runField)":"\#(run)"}}"# }
                .joined(separator: "\n") + "\n"
            let result = try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                return try await Self.notifyRoute(
                    ["ingest", "--config", config.path, "--json"] + (noWait ? ["--no-wait"] : []), input: input, timeLimit: .seconds(40))
            }
            print("journal: ingest with journald stopped\(noWait ? " (--no-wait)" : ""): exit \(result.status) after \(result.duration)")
            #expect(!result.timedOut, "it waited past 40 s")
            let queued = Self.queuedCount(result.standardOutput)
            #expect(queued >= 10, "most events were reported queued: \(result.standardOutput)")
            if noWait {
                #expect(!result.standardError.contains("waiting up to"), "\(result.standardError)")
                #expect(result.standardError.contains("queued record(s) dropped, never taken by journald: --no-wait"), "\(result.standardError)")
            } else {
                #expect(result.duration < .seconds(20), "5 s for the queue, 20 events at most a deadline each")
                #expect(result.standardError.contains("waiting up to 5s for journald to take \(queued) record(s) queued by sink \"journal\""),
                        "\(result.standardError)")
                #expect(result.standardError.contains("queued record(s) dropped, never taken by journald: the 5s wait ended"),
                        "\(result.standardError)")
            }
            #expect(Self.droppedCount(result.standardError) == queued, "every record reported queued is accounted for: \(result.standardError)")
            #expect(result.status == 1, "events reported queued reached no sink after all")
        }
    }

    /// Runs a bash `script` (arguments: the binary, `config`, its directory) while the private
    /// journald is stopped with its socket queue full; the result, and `files` of that
    /// directory as the script left them.
    static func runWhileJournaldStopped(
        _ script: String, config: URL, run: String, files: [String], timeLimit: Duration
    ) async throws -> (ProcessResult, [String: String]) {
        let directory = config.deletingLastPathComponent()
        let result = try await PrivateJournal.whileStopped {
            try PrivateJournal.fillSocketQueue(run: run)
            return try await PrivateJournal.offPool {
                try ProcessRunner.run(
                    URL(fileURLWithPath: "/bin/bash"), ["-c", script, "bash", TestEnvironment.notifyRouteBinary.path, config.path, directory.path],
                    timeLimit: timeLimit)
            }
        }
        var contents: [String: String] = [:]
        for file in files {
            contents[file] = (try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)) ?? ""
        }
        return (result, contents)
    }

    /// SIGTERM (or SIGINT) to `ingest` while journald is stopped: nothing reported queued
    /// vanishes uncounted; the process dies of the signal after reporting the drops.
    @Test(arguments: ["TERM", "INT", "TERM TERM"])
    func aSignalDuringIngestReportsWhatItDrops(signals: String) async throws {
        // Twice: the second ends the wait at once.
        let signal = String(signals.split(separator: " ")[0])
        let twice = signals.contains(" ")
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let config = try Self.config(", queue_size: 100", Self.queueConfig)
            let script = """
                B=$1; C=$2; D=$3
                set -m  # job control: a background job's SIGINT is not ignored
                # The input is a FIFO the script keeps open: ingest waits for more when the signal comes.
                mkfifo "$D/input"
                "$B" ingest --config "$C" --json < "$D/input" > "$D/reports" 2> "$D/stderr" &
                pid=$!
                exec 3> "$D/input"
                for i in $(seq 40); do echo '{"title":"event '$i'","fields":{"\(PrivateJournal.runField)":"\(run)"}}' >&3; done
                for _ in $(seq 400); do [ "$(wc -l < "$D/reports")" -ge 40 ] && break; sleep 0.05; done
                kill -\(signal) $pid
                start=$(date +%s%N)
                \(twice ? "sleep 0.5; kill -\(signal) $pid" : "")
                wait $pid; echo "rc=$? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
                exec 3>&-
                """
            let (result, files) = try await Self.runWhileJournaldStopped(
                script, config: config, run: run, files: ["reports", "stderr"], timeLimit: .seconds(60))
            let (reports, stderr) = (files["reports"] ?? "", files["stderr"] ?? "")
            print("journal: SIG\(signals) to ingest with journald stopped: \(result.standardOutput)")
            let status = signal == "TERM" ? 143 : 130
            #expect(result.standardOutput.hasPrefix("rc=\(status) "), "dies of the signal: \(result.standardOutput) \(stderr)")
            let queued = Self.queuedCount(reports)
            #expect(queued >= 20, "\(reports)")
            #expect(stderr.contains("SIG\(signal): waiting up to 5s for journald to take \(queued) record(s)"), "\(stderr)")
            #expect(Self.droppedCount(stderr) == queued, "every record reported queued is accounted for: \(stderr)")
            if twice {
                #expect(stderr.contains("SIGTERM twice: stopped waiting"), "\(stderr)")
                let milliseconds = Int(result.standardOutput.split(separator: " ").dropFirst(2).first ?? "") ?? .max
                #expect(milliseconds < 2_500, "the second signal ends the 5 s wait: \(result.standardOutput)")
            }
        }
    }

    /// `send` with a queue (`queue_size` set) and journald stopped: the event is reported
    /// queued, the end waits 5 s at most, and SIGTERM during that wait ends it at once with
    /// the record reported dropped.
    @Test(arguments: [false, true])
    func sendWithAQueueWaitsBoundedAndReportsTheDrop(terminated: Bool) async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let config = try Self.config(", queue_size: 10", Self.queueConfig)
            let script = """
                B=$1; C=$2; D=$3
                "$B" send --config "$C" --json -f \(PrivateJournal.runField)=\(run) queued > "$D/report" 2> "$D/stderr" &
                pid=$!
                for _ in $(seq 200); do grep -q "waiting up to" "$D/stderr" && break; sleep 0.05; done
                \(terminated ? "kill -TERM $pid" : "")
                start=$(date +%s%N)
                wait $pid; echo "rc=$? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
                """
            let (result, files) = try await Self.runWhileJournaldStopped(
                script, config: config, run: run, files: ["report", "stderr"], timeLimit: .seconds(30))
            let (report, stderr) = (files["report"] ?? "", files["stderr"] ?? "")
            print("journal: send with a queue, journald stopped\(terminated ? ", SIGTERM while it waits" : ""): \(result.standardOutput)")
            #expect(!result.timedOut)
            #expect(Self.queuedCount(report) == 1, "\(report)")
            #expect(stderr.contains("waiting up to 5s for journald to take 1 record(s) queued by sink \"journal\""), "\(stderr)")
            #expect(Self.droppedCount(stderr) == 1, "\(stderr)")
            #expect(result.standardOutput.hasPrefix(terminated ? "rc=143 " : "rc=0 "), "\(result.standardOutput) \(stderr)")
        }
    }

    @Test func badJournalOptionsAreConfigErrors() async throws {
        for (options, message) in [
            ("fields: { disk.path: x }", "\"disk.path\" is not a journal field name"),
            ("fields: { MESSAGE: x }", "MESSAGE is written by the journal sink itself"),
            ("fields: { OBJECT_SYSTEMD_UNIT: sshd.service }", "OBJECT_SYSTEMD_UNIT would make the record claim another process, unit"),
            ("queue_size: -1", "queue_size"),
            ("identifer: x", "identifier"),
        ] {
            let config = try TestEnvironment.temporaryDirectory("journal-cli").appendingPathComponent("config.yaml")
            try "sinks:\n  journal: { kind: journal, \(options) }\nfallback: [journal]\n".write(to: config, atomically: true, encoding: .utf8)
            let result = try await Self.notifyRoute(["config", "check", config.path])
            #expect(result.status == 78, "\(options): \(result.standardError)")
            #expect(result.standardError.contains("\(config.path):2:"), "\(result.standardError)")
            #expect(result.standardError.contains(message), "\(result.standardError)")
        }
    }
}
