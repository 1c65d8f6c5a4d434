import Foundation
import NotifyRouteTestSupport
import Testing

@testable import NotifyRouteCLI

/// `notify-route run -- CMD`: the command's output and status pass through, and the
/// event it sends is read back from the example exec plugin's log.
@Suite struct RunCommandTests {
    func run(_ fixture: ExecFixture, _ command: [String], options: [String] = [], input: String? = nil) throws -> ProcessResult {
        try ProcessRunner.notifyRoute(
            ["run", "--config", fixture.config.path] + options + ["--"] + command, environment: fixture.environment, input: input,
            timeLimit: .seconds(60))
    }

    func lastEvent(_ fixture: ExecFixture) throws -> [String: Any] {
        try #require(try fixture.requests().last?["event"] as? [String: Any])
    }

    @Test func successPassesOutputThroughAndSendsSuccess() throws {
        let fixture = try ExecFixture()
        let result = try run(fixture, ["/bin/sh", "-c", "cat; echo to-stdout; echo to-stderr >&2"], input: "from stdin\n")
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "from stdin\nto-stdout\n")
        #expect(result.standardError.contains("to-stderr\n"))
        let event = try lastEvent(fixture)
        #expect(event["level"] as? String == "success")
        #expect((event["title"] as? String)?.hasPrefix("/bin/sh -c 'cat; echo to-stdout; echo to-stderr >&2' succeeded in ") == true)
        #expect(event["body"] == nil)
        let fields = try #require(event["fields"] as? [String: String])
        #expect(fields["EXIT_STATUS"] == "0")
        #expect(fields["COMMAND"] == "/bin/sh -c 'cat; echo to-stdout; echo to-stderr >&2'")
        #expect(Int(fields["DURATION_MS"] ?? "") != nil)
        #expect(event["source"] as? String == "run")
    }

    /// The command's arguments are handed over as given, in time that does not grow with
    /// their square: 40,000 of them (50 s before) start the command about as soon as 10,
    /// each intact, `--` among them included. Timed loosely: the benchmarks hold the number.
    @Test func fortyThousandArgumentsStartTheCommandAsSoonAsTen() throws {
        let fixture = try ExecFixture()
        let stamp = fixture.config.deletingLastPathComponent().appendingPathComponent("started").path
        func runTime(_ count: Int) throws -> Duration {
            let arguments = (1...count).map { $0 == 2 ? "--" : String($0) }
            let result = try run(fixture, ["sh", "-c", "echo \"$# $1 $2 ${\(count)}\" > \(stamp)", "sh"] + arguments)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try String(contentsOfFile: stamp, encoding: .utf8) == "\(count) 1 -- \(count)\n", "what the command got")
            return result.duration
        }
        let ten = try runTime(10), many = try runTime(40_000)
        #expect(many - ten < .seconds(2), "10 arguments: \(ten); 40,000: \(many)")
    }

    @Test func failureExitsWithTheStatusAndTheStderrTailIsTheBody() throws {
        let fixture = try ExecFixture()
        let script = "for i in $(seq 1 15); do echo \"line $i\" >&2; done; exit 3"
        let result = try run(fixture, ["sh", "-c", script], options: ["-s", "build"])
        #expect(result.status == 3)
        #expect(result.standardError.contains("line 1\nline 2\n"))  // passed through as it came
        let event = try lastEvent(fixture)
        #expect(event["level"] as? String == "error")
        #expect((event["title"] as? String)?.contains("failed (exit 3) after") == true)
        #expect(event["body"] as? String == (6...15).map { "line \($0)" }.joined(separator: "\n"))
        #expect((event["fields"] as? [String: String])?["EXIT_STATUS"] == "3")
        #expect(event["source"] as? String == "build")  // an explicit flag wins
    }

    @Test func aSignalIsReportedAndExitsWith128PlusIt() throws {
        let fixture = try ExecFixture()
        let result = try run(fixture, ["/bin/sh", "-c", "kill -TERM $$"])
        #expect(result.status == 143)
        let event = try lastEvent(fixture)
        #expect((event["title"] as? String)?.contains("killed by SIGTERM after") == true)
        #expect((event["fields"] as? [String: String])?["SIGNAL"] == "SIGTERM")
        #expect((event["fields"] as? [String: String])?["EXIT_STATUS"] == "143")
    }

    /// Any signal that would end `run` silently goes to the command instead, and `run`
    /// reports how the command ended: SIGTERM as always, SIGUSR1 and the rest too.
    @Test(arguments: [("TERM", 15), ("USR1", 10), ("USR2", 12), ("ALRM", 14)])
    func aSignalSentToRunIsForwardedToTheCommand(signal: String, number: Int) throws {
        let fixture = try ExecFixture()
        let marker = fixture.directory.appendingPathComponent("started").path
        // The command marks that it runs; only then is `run` (not the command) sent the signal.
        let script = """
            "$0" run --config "$1" -- /bin/sh -c 'touch "$0"; exec sleep 30' "$2" &
            pid=$!
            for i in $(seq 600); do [ -e "$2" ] && break; sleep 0.1; done
            kill -\(signal) $pid
            wait $pid
            echo "rc=$?" >&2
            """
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, fixture.config.path, marker],
            environment: fixture.environment, timeLimit: .seconds(90))
        #expect(result.standardError.hasSuffix("rc=\(128 + number)\n"), "\(result.standardError)")
        #expect((try lastEvent(fixture)["title"] as? String)?.contains("killed by SIG\(signal)") == true)
    }

    @Test func aCommandNotFoundExits127AndOneNotExecutable126() throws {
        let fixture = try ExecFixture()
        let missing = try run(fixture, ["no-such-command-for-notify-route", "arg"])
        #expect(missing.status == 127)
        #expect(missing.standardError.contains("notify-route: no-such-command-for-notify-route: command not found"))
        #expect(try lastEvent(fixture)["title"] as? String == "no-such-command-for-notify-route arg: command not found")
        #expect((try lastEvent(fixture)["fields"] as? [String: String])?["EXIT_STATUS"] == "127")

        let file = fixture.directory.appendingPathComponent("not-executable")
        try "echo hi\n".write(to: file, atomically: true, encoding: .utf8)
        let denied = try run(fixture, [file.path])
        #expect(denied.status == 126)
        #expect((try lastEvent(fixture)["title"] as? String)?.hasSuffix(": cannot execute") == true)
    }

    @Test func theReplaceKeyIsTheCommandLineSoAReRunReplaces() throws {
        let fixture = try ExecFixture()
        #expect(try run(fixture, ["/bin/sh", "-c", "exit 1"]).status == 1)
        #expect(try run(fixture, ["/bin/sh", "-c", "exit 0"]).status == 0)
        #expect(try run(fixture, ["/bin/sh", "-c", "exit 1"]).status == 1)
        let requests = try fixture.requests()
        #expect(requests.map { ($0["event"] as? [String: Any])?["replace_key"] as? String }
            == ["run: /bin/sh -c 'exit 1'", "run: /bin/sh -c 'exit 0'", "run: /bin/sh -c 'exit 1'"])
        #expect(requests.map { $0["intent"] as? String } == ["show", "show", "replace"])
        #expect(requests.last?["handle"] as? String == "1")
    }

    @Test func aDeliveryProblemNeverReplacesTheCommandsStatus() throws {
        let fixture = try ExecFixture()
        let text = try String(contentsOf: fixture.config, encoding: .utf8)
            .replacingOccurrences(of: ExecFixture.examplePlugin.path, with: "no-such-notify-route-plugin")
        try text.write(to: fixture.config, atomically: true, encoding: .utf8)
        // Only the plugin, which is not there: nothing is delivered, and run still exits with the command's status.
        let success = try run(fixture, ["/bin/true"], options: ["--sink", "ex"])
        #expect(success.status == 0)
        #expect(success.standardError.contains("the notification was not delivered; the exit status stays the command's (0)"))
        let failure = try run(fixture, ["/bin/sh", "-c", "exit 4"], options: ["--sink", "ex"])
        #expect(failure.status == 4)
    }

    @Test func failuresOnlySendsNothingOnSuccess() throws {
        let fixture = try ExecFixture()
        #expect(try run(fixture, ["/bin/true"], options: ["--failures-only"]).status == 0)
        #expect(try fixture.requests().isEmpty)
        #expect(try run(fixture, ["/bin/false"], options: ["--failures-only"]).status == 1)
        #expect(try fixture.requests().count == 1)
    }

    @Test func aConfigErrorExits78BeforeTheCommandRuns() throws {
        let fixture = try ExecFixture()
        try "sinks: { tty: { kind: terminl } }\nfallback: [tty]\n".write(to: fixture.config, atomically: true, encoding: .utf8)
        let marker = fixture.directory.appendingPathComponent("ran").path
        let result = try run(fixture, ["/usr/bin/touch", marker])
        #expect(result.status == 78)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    /// Rounded to the digit shown, never cut: 497 ms is 0.5s, and a value that rounds up to
    /// the next unit is written in it.
    @Test(arguments: [
        (0, "0.0s"), (49, "0.0s"), (50, "0.1s"), (497, "0.5s"), (1_949, "1.9s"), (1_950, "2.0s"), (3_249, "3.2s"),
        (59_949, "59.9s"), (59_950, "1m00s"), (64_499, "1m04s"), (64_500, "1m05s"), (3_599_499, "59m59s"),
        (3_599_500, "1h00m"), (3_629_999, "1h00m"), (3_630_000, "1h01m"), (36_000_000, "10h00m"),
    ])
    func theDurationIsRounded(milliseconds: Int, shown: String) {
        #expect(RunOutcome.format(.milliseconds(milliseconds)) == shown)
    }

    /// The title's duration is the event's `DURATION_MS` rounded to tenths, end to end.
    @Test func theTitleRoundsTheMeasuredDuration() throws {
        let fixture = try ExecFixture()
        let result = try run(fixture, ["/bin/sh", "-c", "sleep 0.47"])
        #expect(result.status == 0, "\(result.standardError)")
        let event = try lastEvent(fixture)
        let milliseconds = try #require(Int((event["fields"] as? [String: String])?["DURATION_MS"] ?? ""))
        let tenths = (milliseconds + 50) / 100
        #expect(event["title"] as? String == "/bin/sh -c 'sleep 0.47' succeeded in \(tenths / 10).\(tenths % 10)s")
    }

    @Test func usage() throws {
        let fixture = try ExecFixture()
        let result = try ProcessRunner.notifyRoute(["run", "--config", fixture.config.path], environment: fixture.environment)
        #expect(result.status == 64)
        #expect(result.standardError.contains("expected a command after --"))
    }
}
