import ArgumentParser
import Foundation
import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteTestSupport
import Testing

@testable import NotifyRouteCLI

/// `send --progress N`: parsed alike by both parsers, refused out of range with the
/// documented exit codes, and carried as the same field by `notify-send -h int:value:N`.
@Suite struct ProgressArgumentTests {
    func argumentParser(_ arguments: [String]) -> SendRequest? {
        guard let command = try? SendCommand.parseAsRoot(arguments) as? SendCommand else { return nil }
        return command.request
    }

    @Test(arguments: [
        (["--progress", "40", "-r", "copy", "Copying"], 40), (["--progress=0", "t"], 0), (["t", "--progress", "100"], 100),
        (["--progress", "40%", "t"], 40), (["--progress=100%", "t"], 100),
    ])
    func theFastPathReadsProgressAsArgumentParserDoes(_ arguments: [String], _ progress: Int) throws {
        let fast = try #require(FastSendParser.parse(arguments), "the fast parser should accept \(arguments)")
        #expect(fast.flags.progress == progress)
        #expect(fast == argumentParser(arguments))
    }

    @Test(arguments: [
        ["--progress", "101", "t"], ["--progress", "-1", "t"], ["--progress", "half", "t"], ["--progress=", "t"], ["--progress", "101%", "t"],
        ["--progress", "%", "t"], ["--progress", "4%%", "t"],
    ])
    func whatIsNotAPercentageIsLeftToArgumentParserWhichRefusesIt(_ arguments: [String]) {
        #expect(FastSendParser.parse(arguments) == nil)
        #expect(argumentParser(arguments) == nil)
    }

    @Test func aRepeatedProgressIsArgumentParsersToRead() {
        #expect(FastSendParser.parse(["--progress", "4", "--progress", "5", "t"]) == nil)
        #expect(argumentParser(["--progress", "4", "--progress", "5", "t"])?.flags.progress == 5, "the last, as for every option")
    }

    @Test func outOfRangeIsAUsageErrorNamingTheValue() throws {
        for arguments in [["send", "--progress", "150", "Copying"], ["send", "--dry-run", "--progress=101", "t"]] {
            let result = try ProcessRunner.notifyRoute(arguments, environment: ["NOTIFY_ROUTE_SOCKET": "/nonexistent"])
            #expect(result.status == 64, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("--progress 1"), "\(result.standardError)")
            #expect(result.standardError.contains("0 to 100"), "\(result.standardError)")
        }
    }

    @Test func ingestRefusesAProgressThatIsNoPercentageAsBadData() throws {
        let input = """
            {"title":"a","progress":101}
            {"title":"b","progress":"50"}
            {"title":"c","progress":2.5}
            {"title":"d","progress":-3}

            """
        let config = try TestEnvironment.temporaryDirectory("progress-ingest").appendingPathComponent("c.yaml")
        try "sinks: { out: { kind: terminal, output: stdout, color: never } }\nfallback: [out]\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let ingest = try ProcessRunner.notifyRoute(["ingest", "--no-daemon", "--config", config.path], input: input + "{\"title\":\"e\",\"progress\":50.0}\n")
        #expect(ingest.status == 65, "\(ingest.standardError)")
        #expect(ingest.standardError.contains("stdin:1: \"progress\": 101 is not a whole number from 0 to 100"), "\(ingest.standardError)")
        #expect(ingest.standardError.contains("stdin:2: \"progress\": expected a whole number from 0 to 100, found a string"))
        #expect(ingest.standardError.contains("stdin:3: \"progress\": 2.5 is not"))
        #expect(ingest.standardError.contains("stdin:4: \"progress\": -3 is not"))
        #expect(ingest.standardOutput == "[info] e [50%]\n", "the good line is delivered: \(ingest.standardOutput)")
    }

    @Test func notifySendsValueHintIsTheProgress() throws {
        let parsed = try NotifySendArguments.parse(["-h", "int:value:50", "Copying"]).get()
        #expect(parsed.request.flags.progress == 50)
        #expect(parsed.desktopHints["value"] == nil, "sent once, by the desktop sink, from the event's progress")
        // Out of 0-100 it stays the hint notify-send would pass on; a string hint is no progress.
        let over = try NotifySendArguments.parse(["-h", "int:value:150", "t"]).get()
        #expect(over.request.flags.progress == nil)
        #expect(over.desktopHints["value"] == .int32(150))
        #expect(try NotifySendArguments.parse(["-h", "string:value:50", "t"]).get().request.flags.progress == nil)
    }
}
