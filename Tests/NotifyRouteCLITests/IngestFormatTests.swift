import Foundation
import NotifyRouteTestSupport
import Testing

/// `ingest --format lines` and `--format journal`: what people already have as text.
@Suite struct IngestFormatTests {
    func ingest(_ arguments: [String], input: String) throws -> ProcessResult {
        let directory = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("config.yaml")
        try "sinks:\n  tty: { kind: terminal }\nfallback: [tty]\n".write(to: config, atomically: true, encoding: .utf8)
        return try ProcessRunner.notifyRoute(["ingest", "--config", config.path, "--json"] + arguments, input: input)
    }

    @Test func linesAreTitlesWithTheLevelSourceAndAppGiven() throws {
        let result = try ingest(["--format", "lines", "-l", "err", "-s", "backup", "-a", "cron"], input: "Disk full\r\n\nBackup late\n")
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains(#""title":"Disk full""#) && lines[0].contains(#""level":"error""#), "\(lines[0])")
        #expect(lines[1].contains(#""title":"Backup late""#) && lines[1].contains(#""source":"backup""#) && lines[1].contains(#""app":"cron""#))
    }

    @Test func journalctlJSONLinesMapTheirFields() throws {
        let input = """
            {"MESSAGE":"Disk almost full\\n92% used","PRIORITY":"4","SYSLOG_IDENTIFIER":"diskcheck","_SYSTEMD_UNIT":"diskcheck.service","DISK":"/dev/sda","_PID":"42","__CURSOR":"s=1"}
            {"MESSAGE":[68,105,115,107],"PRIORITY":"3"}
            {"MESSAGE":"Started","PRIORITY":"9"}

            """
        let result = try ingest(["--format", "journal"], input: input)
        #expect(result.status == 65, "two bad lines: \(result.standardError)")
        let first = try #require(result.standardOutput.split(separator: "\n").first)
        for part in [#""title":"Disk almost full""#, #""body":"92% used""#, #""level":"warning""#, #""app":"diskcheck""#,
                     #""source":"diskcheck.service""#, #""DISK":"\/dev\/sda""#] {
            #expect(first.contains(part) || first.contains(part.replacingOccurrences(of: "\\/", with: "/")), "\(part) in \(first)")
        }
        #expect(!first.contains("_PID") && !first.contains("__CURSOR"))
        #expect(result.standardError.contains("stdin:2: the record has no text MESSAGE"))
        #expect(result.standardError.contains("stdin:3: PRIORITY \"9\" is not 0 to 7"))
    }
}
