import Foundation
import NotifyRouteTestSupport
import Testing

/// Silences, pause and history with `notify-route serve` routing: what one CLI process
/// sets holds for the daemon, and the daemon records what it routes. The private journald
/// of Tests/with-components.sh shows what was delivered.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct HistoryDaemonTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    /// A journal sink whose identifier is this test's alone.
    static func config() throws -> (URL, String) {
        let identifier = "history-\(PrivateJournal.newRunID())"
        let url = try TestEnvironment.temporaryDirectory("history-daemon").appendingPathComponent("config.yaml")
        try "sinks:\n  journal: { kind: journal, deadline: 500ms, identifier: \(identifier) }\nfallback: [journal]\n"
            .write(to: url, atomically: true, encoding: .utf8)
        return (url, identifier)
    }

    static func run(_ arguments: [String], _ daemon: DaemonProcess) async throws -> ProcessResult {
        let environment = daemon.environment
        return try await PrivateJournal.offPool { try ProcessRunner.notifyRoute(arguments, environment: environment) }
    }

    static func report(_ result: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "not JSON: \(result.standardOutput)")
    }

    @Test func aSilenceFromAnotherProcessHoldsTheDaemonsEventsUntilItExpires() async throws {
        try await PrivateJournal.withAccess {
            let (config, identifier) = try Self.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let add = try await Self.run(["silence", "add", "source=backup*"], daemon)
            #expect(add.status == 0, "\(add.standardError)")
            let id = add.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)

            let held = try await Self.run(["send", "--json", "-s", "backup", "-l", "error", "Backup failed"], daemon)
            let report = try Self.report(held)
            #expect(report["via"] as? String == "daemon")
            let sink = try #require((report["sinks"] as? [[String: Any]])?.first)
            #expect(sink["reason"] as? String == "silenced")
            // The daemon recorded it, with the silence's id.
            let history = try await Self.run(["history", "--json", "title=Backup failed"], daemon)
            #expect(history.standardOutput.contains("\"silence\":\"\(id)\""))

            let status = try await Self.run(["status", "--socket", daemon.socketPath], daemon)
            #expect(status.standardOutput.contains("\(id) until"))
            #expect(try await Self.run(["silence", "expire", id], daemon).status == 0)
            let through = try await Self.run(["send", "--json", "-s", "backup", "-l", "error", "Backup failed again"], daemon)
            #expect(try Self.report(through)["summary"] as? String == "delivered")
            let entries = try await PrivateJournal.entries(matching: ["SYSLOG_IDENTIFIER=\(identifier)"], count: 1)
            #expect(entries.map { $0["MESSAGE"] } == ["Backup failed again"])
            #expect(entries.first?["_PID"] == String(daemon.pid))
        }
    }

    @Test func pauseSurvivesARestartAndResumeDeliversTheSummaryThroughTheDaemon() async throws {
        try await PrivateJournal.withAccess {
            let (config, identifier) = try Self.config()
            // The history outlives both daemons (a daemon's own directory goes with it).
            let stateHome = try TestEnvironment.temporaryDirectory("history-state").path
            let first = try DaemonProcess.start(config: config, environment: ["XDG_STATE_HOME": stateHome])
            #expect(try await Self.run(["pause", "--level", "error"], first).status == 0)
            for (source, index) in [("backup", 1), ("backup", 2), ("db", 3), ("backup", 4)] {
                let sent = try await Self.run(["send", "--json", "-s", source, "-l", "warning", "event \(index)"], first)
                #expect(try Self.report(sent)["via"] as? String == "daemon")
                #expect((try Self.report(sent)["sinks"] as? [[String: Any]])?.first?["reason"] as? String == "paused")
            }
            first.stop()
            // A new daemon on the same history still holds.
            let daemon = try DaemonProcess.start(config: config, environment: ["XDG_STATE_HOME": stateHome])
            defer { daemon.stop() }
            let sent = try await Self.run(["send", "--json", "-s", "db", "-l", "info", "event 5"], daemon)
            #expect((try Self.report(sent)["sinks"] as? [[String: Any]])?.first?["reason"] as? String == "paused")
            let status = try await Self.run(["status", "--socket", daemon.socketPath], daemon)
            #expect(status.standardOutput.contains("paused: events below error"))
            #expect(status.standardOutput.contains("5 held"))
            #expect(try await PrivateJournal.entries(matching: ["SYSLOG_IDENTIFIER=\(identifier)"], count: 1, timeout: .milliseconds(200)).isEmpty)

            let resume = try await Self.run(["resume"], daemon)
            #expect(resume.status == 0, "\(resume.standardError)")
            #expect(resume.standardError.contains("delivered 5 held events as one summary"))
            let resumed = ContinuousClock.now
            let entries = try await PrivateJournal.entries(matching: ["SYSLOG_IDENTIFIER=\(identifier)"], count: 1, timeout: .seconds(1))
            #expect(ContinuousClock.now - resumed < .seconds(1))
            let summary = try #require(entries.first)
            #expect(summary["MESSAGE"]?.hasPrefix("+5 held while paused: backup 3, db 2") == true)
            #expect(summary["_PID"] == String(daemon.pid))
            #expect(summary["PRIORITY"] == "4")  // the highest level held: warning
        }
    }

    /// The daemon appends its records to the history's spool and folds them in batches:
    /// `history` beside the running daemon lists every answered event in order, and a
    /// daemon killed by SIGKILL right after its answers has lost none of them.
    @Test func theDaemonsRecordsSurviveASIGKILLRightAfterTheirAnswers() async throws {
        try await PrivateJournal.withAccess {
            let (config, _) = try Self.config()
            let stateHome = try TestEnvironment.temporaryDirectory("history-state").path
            let daemon = try DaemonProcess.start(config: config, environment: ["XDG_STATE_HOME": stateHome])
            defer { daemon.stop() }
            let environment = daemon.environment
            func ingest(_ titles: [String]) async throws {
                let input = titles.map { "{\"title\":\"\($0)\",\"source\":\"spooled\"}" }.joined(separator: "\n") + "\n"
                let result = try await PrivateJournal.offPool {
                    try ProcessRunner.notifyRoute(["ingest", "--json"], environment: environment, input: input)
                }
                #expect(result.status == 0, "\(result.standardError)")
                let answers = result.standardOutput.split(separator: "\n")
                #expect(answers.count == titles.count && answers.allSatisfy { $0.contains(#""via":"daemon""#) }, "\(result.standardOutput)")
            }
            func history() async throws -> [String] {
                let result = try await PrivateJournal.offPool {
                    try ProcessRunner.notifyRoute(["history", "--json", "source=spooled"], environment: environment)
                }
                #expect(result.status == 0, "\(result.standardError)")
                return try result.standardOutput.split(separator: "\n").map { line in
                    let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    return try #require((record["event"] as? [String: Any])?["title"] as? String)
                }
            }
            let first = (1...100).map { "event \($0)" }
            try await ingest(first)
            #expect(try await history() == first)
            let second = (101...300).map { "event \($0)" }
            try await ingest(second)
            daemon.signal(SIGKILL)
            #expect(daemon.waitForExit()?.status == 128 + SIGKILL)
            #expect(try await history() == first + second)
        }
    }

    /// `pause --for`: the daemon delivers what the pause held when it ends, without
    /// waiting for another event.
    @Test func aPauseThatEndsIsReleasedByTheDaemonOnTime() async throws {
        try await PrivateJournal.withAccess {
            let (config, identifier) = try Self.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let paused = try await Self.run(["pause", "--for", "3s"], daemon)
            #expect(paused.status == 0, "\(paused.standardError)")
            let ends = Date().addingTimeInterval(3)
            for index in 1...2 {
                let sent = try await Self.run(["send", "--json", "-s", "backup", "-l", "warning", "held \(index)"], daemon)
                #expect((try Self.report(sent)["sinks"] as? [[String: Any]])?.first?["reason"] as? String == "paused", "\(sent.standardOutput)")
            }
            let entries = try await PrivateJournal.entries(matching: ["SYSLOG_IDENTIFIER=\(identifier)"], count: 2, timeout: .seconds(8))
            let seen = Date()
            #expect(entries.compactMap { $0["MESSAGE"] } == ["held 1", "held 2"], "one by one, being few: \(entries) \(daemon.log)")
            #expect(entries.allSatisfy { $0["_PID"] == String(daemon.pid) })
            let late = seen.timeIntervalSince(ends)
            #expect(late > -0.1 && late < 1.5, "released \(late) s after the pause's end")
        }
    }
}
