import Foundation
import NotifyRouteTestSupport
import Testing

/// `run` and `ingest` hand their events to `notify-route serve` as `send` does, and route
/// them here when it is not there; the private journald's trusted `_PID` says who wrote each.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct DaemonHandOffTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    @Test func ingestHandsEachLineToTheDaemonAndReadsAsALocalIngest() async throws {
        try await PrivateJournal.withAccess {
            let config = try DaemonTests.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let input = """
                {"title":"first","fields":{"\(PrivateJournal.runField)":"\(run)","WHO":"one"}}
                {"title":"","fields":{}}

                {"title":"third","level":"error","fields":{"\(PrivateJournal.runField)":"\(run)","WHO":"three"}}
                not json

                """
            let handed = try await DaemonTests.run(["ingest", "--json"], daemon, input: input)
            let local = try await DaemonTests.run(["ingest", "--json", "--no-daemon"], daemon, input: input)
            #expect(handed.status == 65 && local.status == 65, "\(handed.standardError)")
            // Bad lines are reported here, with their line numbers, exactly as a local ingest does.
            #expect(handed.standardError == local.standardError)
            #expect(handed.standardError.contains("stdin:2:") && handed.standardError.contains("stdin:5:"), "\(handed.standardError)")
            let handedLines = try handed.standardOutput.split(separator: "\n").map { try DaemonTests.json(String($0)) }
            let localLines = try local.standardOutput.split(separator: "\n").map { try DaemonTests.json(String($0)) }
            #expect(handedLines.map { $0["line"] as? Int } == [1, 2, 4, 5])
            #expect(localLines.map { $0["line"] as? Int } == [1, 2, 4, 5])
            #expect(handedLines.compactMap { $0["via"] as? String } == ["daemon", "daemon"])
            #expect(localLines.compactMap { $0["via"] as? String } == ["local", "local"])
            #expect(handedLines.compactMap { $0["summary"] as? String } == ["delivered", "delivered"])

            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 4)
            #expect(entries.count == 4)
            let byDaemon = entries.filter { $0["_PID"] == String(daemon.pid) }
            #expect(byDaemon.count == 2, "the daemon wrote the handed-over pair, the local ingest the other")
            #expect(Set(byDaemon.compactMap { $0["WHO"] }) == ["one", "three"])

            let unknown = try await DaemonTests.run(["ingest", "--sink", "nope"], daemon, input: "{\"title\":\"x\"}\n")
            let unknownLocal = try await DaemonTests.run(["ingest", "--sink", "nope", "--no-daemon"], daemon, input: "{\"title\":\"x\"}\n")
            #expect(unknown.status == 64 && unknownLocal.status == 64)
            #expect(unknown.standardError == unknownLocal.standardError)
        }
    }

    /// A sink only the client can draw (the embedded default's terminal line, a last resort
    /// when stderr is not a terminal): the daemon routes and records the event once, and the
    /// client draws the line where a local send would: only when no other sink took it.
    @Test func theClientDrawsItsShareOnlyWhereALocalSendWould() async throws {
        try await PrivateJournal.withAccess {
            let config = try TestEnvironment.temporaryDirectory("daemon-share").appendingPathComponent("config.yaml")
            try """
                sinks:
                  terminal: { kind: terminal, style: line, unattended: last-resort }
                  journal: { kind: journal, deadline: 500ms, identifier: daemon-share }
                  broken: { kind: exec, command: [/bin/false], deadline: 2s }
                routes:
                  - { name: logged, match: { source: logged }, to: [terminal, journal] }
                  - { name: lost, match: { source: lost }, to: [terminal, broken] }
                """.write(to: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()

            let logged = try await DaemonTests.run(["send", "--json", "-s", "logged", "-f", "\(PrivateJournal.runField)=\(run)", "Backup done"], daemon)
            #expect(logged.status == 0, "\(logged.standardError)")
            #expect(logged.standardError.isEmpty, "the journal took it, the line stands by: \(logged.standardError)")
            let loggedReport = try DaemonTests.json(logged.standardOutput)
            #expect(loggedReport["via"] as? String == "daemon" && loggedReport["summary"] as? String == "delivered", "\(loggedReport)")
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"])
            #expect(entries.first?["_PID"] == String(daemon.pid))

            let lost = try await DaemonTests.run(["send", "--json", "-s", "lost", "Backup failed"], daemon)
            #expect(lost.status == 0, "the line this process drew was delivered: \(lost.standardError)")
            #expect(lost.standardError == "[info] Backup failed\n", "\(lost.standardError)")
            let lostReport = try DaemonTests.json(lost.standardOutput)
            #expect(lostReport["via"] as? String == "daemon" && lostReport["summary"] as? String == "delivered", "\(lostReport)")
            let sinks = try #require(lostReport["sinks"] as? [[String: Any]])
            #expect(sinks.first { $0["sink"] as? String == "terminal" }?["status"] as? String == "delivered", "\(sinks)")
            #expect(sinks.first { $0["sink"] as? String == "broken" }?["status"] as? String == "failed", "\(sinks)")

            // Without --json, the daemon's problems as a local send prints them, after the line.
            let plain = try await DaemonTests.run(["send", "-s", "lost", "Plain"], daemon)
            #expect(plain.status == 0, "\(plain.standardError)")
            let lines = plain.standardError.split(separator: "\n")
            #expect(lines.first == "[info] Plain" && lines.dropFirst().allSatisfy { $0.hasPrefix("notify-route: broken: failed") } && lines.count == 2,
                    "\(plain.standardError)")

            // Each recorded once, by the daemon.
            let history = try await DaemonTests.run(["history", "--json"], daemon)
            let titles = history.standardOutput.split(separator: "\n").compactMap {
                ((try? DaemonTests.json(String($0)))?["event"] as? [String: Any])?["title"] as? String
            }
            #expect(titles.sorted() == ["Backup done", "Backup failed", "Plain"], "\(history.standardOutput)")
        }
    }

    @Test func runHandsItsEventToTheDaemon() async throws {
        try await PrivateJournal.withAccess {
            let config = try DaemonTests.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let failed = try await DaemonTests.run(
                ["run", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=daemon", "--", "sh", "-c", "echo broke >&2; exit 3"], daemon)
            #expect(failed.status == 3, "the command's own status: \(failed.standardError)")
            let here = try await DaemonTests.run(
                ["run", "--no-daemon", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=local", "--", "true"], daemon)
            #expect(here.status == 0, "\(here.standardError)")
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            let byDaemon = try #require(entries.first { $0["WHO"] == "daemon" })
            let byClient = try #require(entries.first { $0["WHO"] == "local" })
            #expect(byDaemon["_PID"] == String(daemon.pid))
            #expect(byClient["_PID"] != String(daemon.pid))
            #expect(byDaemon["MESSAGE"]?.contains("broke") == true, "the end of its stderr is the body: \(byDaemon)")
            #expect(byDaemon["PRIORITY"] == "3")

            let unknown = try await DaemonTests.run(["run", "--sink", "nope", "--", "touch", daemon.directory.appendingPathComponent("ran").path], daemon)
            #expect(unknown.status == 64, "\(unknown.standardError)")
            #expect(!FileManager.default.fileExists(atPath: daemon.directory.appendingPathComponent("ran").path), "a usage error stops run before the command")
        }
    }

    @Test func aDaemonGoneMidIngestLosesNoLine() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DaemonProcess.start(config: try DaemonTests.config())
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let lines = 3000
            let input = (0..<lines).map { "{\"title\":\"line \($0)\",\"fields\":{\"\(PrivateJournal.runField)\":\"\(run)\",\"SEQ\":\"\($0)\"}}" }
                .joined(separator: "\n") + "\n"
            let file = daemon.directory.appendingPathComponent("lines.jsonl"), gone = daemon.directory.appendingPathComponent("gone").path
            try input.write(to: file, atomically: true, encoding: .utf8)
            // The first 500 lines, then the rest once the daemon is gone: the kill lands mid-stream
            // however fast the daemon routes, and however slow the machine is today.
            let script = """
                { head -n 500 "$1"; while [ ! -e "$2" ]; do sleep 0.02; done; tail -n +501 "$1"; } | "$0" ingest --json
                """
            let environment = daemon.environment
            async let result = PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, file.path, gone],
                                      environment: environment, timeLimit: .seconds(120))
            }
            try await DaemonFaultTests.waitUntilDelivered(100, by: daemon)
            daemon.signal(SIGKILL)
            _ = daemon.waitForExit(timeLimit: .seconds(5))
            _ = FileManager.default.createFile(atPath: gone, contents: nil)
            let ingest = try await result
            #expect(ingest.status == 0, "\(ingest.standardError)")
            let vias = ingest.standardOutput.split(separator: "\n").compactMap { try? DaemonTests.json(String($0))["via"] as? String }
            #expect(vias.count == lines)
            #expect(vias.contains("daemon") && vias.contains("local"), "some by the daemon, the rest here: \(Set(vias))")
            #expect(ingest.standardError.contains("routing here"), "says that it changed: \(ingest.standardError)")
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: lines, timeout: .seconds(10))
            #expect(Set(entries.compactMap { $0["SEQ"] }).count == lines)
        }
    }

    @Test func statusShowsQueuesAndWhatIsHeld() async throws {
        let directory = try TestEnvironment.temporaryDirectory("daemon-status")
        let config = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              journal: { kind: journal, deadline: 500ms, identifier: daemon-status }
            routes:
              - name: limited
                to: [journal]
                rate: { max: 1, per: 1h }
            """.write(to: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.start(config: config)
        defer { daemon.stop() }
        for source in ["backup", "backup", "cron"] {
            let sent = try await DaemonTests.run(["send", "--source", source, "Nightly"], daemon)
            #expect(sent.status == 0, "\(sent.standardError)")
        }
        let json = try await DaemonTests.run(["status", "--json"], daemon)
        #expect(json.status == 0, "\(json.standardError)")
        let status = try DaemonTests.json(json.standardOutput)
        let held = try #require(status["held"] as? [[String: Any]])
        #expect(held.count == 1)
        #expect(held.first?["sink"] as? String == "journal")
        #expect(held.first?["kind"] as? String == "rate")
        #expect(held.first?["held"] as? Int == 2)
        #expect(held.first?["sources"] as? [String: Int] == ["backup": 1, "cron": 1])
        let queue = try #require((status["queues"] as? [String: Any])?["journal"] as? [String: Any])
        #expect(queue["depth"] as? Int == 0)
        #expect(queue["pending"] as? Bool == false)

        let text = try await DaemonTests.run(["status"], daemon)
        #expect(text.standardOutput.contains("journal: delivered 1,"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("; 0 queued now"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("held for a summary:\n  journal via route 1 \"limited\": 2 by rate (highest info; backup 1, cron 1)"),
                "\(text.standardOutput)")
    }
}
