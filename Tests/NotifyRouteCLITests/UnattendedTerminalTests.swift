import Foundation
import NotifyRouteTestSupport
import Testing

/// The embedded default config where scripts run: with stderr a pipe (cron, a systemd
/// service), the terminal line is a last resort, written only when neither the desktop nor
/// the journal took the event; on a terminal it is written as always.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct UnattendedTerminalTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    /// The embedded config (no config file anywhere), no desktop, a state directory of its own.
    static func environment() throws -> [String: String] {
        let runtime = try TestEnvironment.temporaryDirectory("unattended")
        chmod(runtime.path, 0o700)
        return [
            "XDG_CONFIG_HOME": "/nonexistent-notify-route-test", "XDG_RUNTIME_DIR": runtime.path,
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime.path)/no-bus", "NOTIFY_ROUTE_SOCKET": "\(runtime.path)/no-daemon",
            "NO_COLOR": "1",
        ]
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    static func terminalOutcome(_ report: [String: Any]) throws -> [String: Any] {
        let sinks = try #require(report["sinks"] as? [[String: Any]])
        return try #require(sinks.first { $0["sink"] as? String == "terminal" }, "\(sinks)")
    }

    @Test func stderrNotATerminalAndTheJournalTookIt() async throws {
        try await PrivateJournal.withAccess {
            let environment = try Self.environment()
            let run = PrivateJournal.newRunID()
            for attempt in 1...2 {
                let result = try await PrivateJournal.offPool {
                    try ProcessRunner.notifyRoute(
                        ["send", "--json", "-l", "warning", "-f", "\(PrivateJournal.runField)=\(run)", "Backup failed", "rsync exited 23"],
                        environment: environment)
                }
                #expect(result.status == 0, "\(result.standardError)")
                #expect(result.standardError.isEmpty, "attempt \(attempt): nothing for cron to mail: \(result.standardError)")
                let terminal = try Self.terminalOutcome(try Self.json(result.standardOutput))
                #expect(terminal["status"] as? String == "suppressed")
                #expect(terminal["reason"] as? String == "last-resort", "\(terminal)")
            }
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"])
            #expect(entries.first?["MESSAGE"] == "Backup failed\nrsync exited 23")
            // The second send was the journal's duplicate: taken, so the line stood by again.
            #expect(try PrivateJournal.read(matching: ["\(PrivateJournal.runField)=\(run)"]).count == 1)
        }
    }

    /// Under a pause nobody took the event: it is held, and the last resort is held with it
    /// (said as held, not as "last resort, and journal took it"), in a dry run as in a send.
    @Test(arguments: [true, false])
    func underAPauseTheLastResortIsHeldToo(dryRun: Bool) throws {
        var environment = try Self.environment()
        environment["XDG_STATE_HOME"] = try TestEnvironment.temporaryDirectory("unattended-state").path
        let paused = try ProcessRunner.notifyRoute(["pause", "--for", "10m"], environment: environment)
        #expect(paused.status == 0, "\(paused.standardError)")
        let result = try ProcessRunner.notifyRoute(
            ["send", "--json"] + (dryRun ? ["--dry-run"] : []) + ["-l", "warning", "Backup failed"], environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        let terminal = try Self.terminalOutcome(try Self.json(result.standardOutput))
        #expect(terminal["status"] as? String == "suppressed", "\(terminal)")
        #expect(terminal["reason"] as? String == "paused", "\(terminal)")
    }

    @Test func stderrNotATerminalAndNoOtherSinkPrintsTheLine() async throws {
        let result = try await PrivateJournal.run(
            TestEnvironment.notifyRouteBinary, ["send", "--json", "-l", "warning", "Backup failed", "rsync exited 23"], socket: .absent,
            environment: try Self.environment())
        #expect(result.status == 0, "the terminal delivered: \(result.standardError)")
        #expect(result.standardError == "[warning] Backup failed: rsync exited 23\n")
        #expect(try Self.terminalOutcome(try Self.json(result.standardOutput))["status"] as? String == "delivered")
    }

    @Test func onATerminalTheLineIsPrintedAsAlways() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let environment = try Self.environment()
            let status = try TestEnvironment.temporaryDirectory("unattended-tty").appendingPathComponent("status")
            let session = try TmuxSession(
                command: "'\(TestEnvironment.notifyRouteBinary.path)' send -l warning -f \(PrivateJournal.runField)=\(run) "
                    + "'Backup failed' 'rsync exited 23'; echo $? > '\(status.path)'; sleep 30",
                environment: environment)
            let screen = try session.waitForScreen { $0.contains("Backup failed") }
            #expect(screen.rows.first == "[warning] Backup failed: rsync exited 23", "\(screen)")
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"])
            #expect(entries.count == 1, "the journal took it too")
            try session.waitForScreen { _ in FileManager.default.fileExists(atPath: status.path) }
            #expect((try? String(contentsOf: status, encoding: .utf8)) == "0\n")
        }
    }

    @Test func configShowPrintsTheEmbeddedConfigWithTheOption() throws {
        let shown = try ProcessRunner.notifyRoute(["config", "show"], environment: try Self.environment())
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.hasPrefix("# effective config from <embedded>\n"))
        #expect(shown.standardOutput.contains("    style: \"line\"\n    unattended: \"last-resort\"\n"), "\(shown.standardOutput)")
    }
}

extension String {
    fileprivate var rows: [String] { split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
}
