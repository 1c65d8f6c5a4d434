import Foundation
import NotifyRouteTestSupport
import Testing

/// Issue 8, bad input: configs too big, too deep or not text (beyond the files in
/// BrokenConfigs/, which BrokenConfigTests checks one by one), and events with invalid
/// UTF-8, NUL bytes, 10 MB bodies, control sequences and thousands of fields, each with
/// the treatment a user can rely on, through `send` and through `ingest`.
@Suite struct BadInputTests {
    let directory: URL
    let config: String

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-bad-input")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("runtime"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        config = directory.appendingPathComponent("config.yaml").path
        try "sinks: { tty: { kind: terminal, color: never } }\nfallback: [tty]\n".write(toFile: config, atomically: true, encoding: .utf8)
    }

    var environment: [String: String] { ["NO_COLOR": "1", "XDG_RUNTIME_DIR": directory.appendingPathComponent("runtime").path] }

    /// Runs a shell snippet with `$B` the binary and `$C` the terminal config, for bytes argv cannot carry.
    func shell(_ script: String, timeLimit: Duration = .seconds(60)) throws -> ProcessResult {
        try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "B=\"$0\"; C=\"$1\"; " + script, TestEnvironment.notifyRouteBinary.path, config],
                              environment: environment, timeLimit: timeLimit)
    }

    // MARK: Configs

    @Test func theBrokenConfigCorpusCoversTheIssuesList() throws {
        let names = BrokenConfigTests.files
        #expect(names.count >= 30)
        for kind in ["alias-bomb", "deep-nesting", "not-utf8", "duplicate-key", "wrong-type", "nul-byte", "utf16"] {
            #expect(names.contains { $0.contains(kind) }, "no broken config for \(kind)")
        }
    }

    /// The counts of the test corpora in the README and the Reliability article are the corpora's sizes.
    @Test(arguments: ["README.md", "Sources/NotifyRoute/NotifyRoute.docc/Reliability.md"])
    func theDocsCountTheBrokenConfigsThereAre(document: String) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
        let counts = text.matches(of: /holds (\d+)\s+broken\s+configs/).map { Int($0.output.1) }
        #expect(!counts.isEmpty)
        #expect(counts.allSatisfy { $0 == BrokenConfigTests.files.count }, "\(document) says \(counts); there are \(BrokenConfigTests.files.count)")
    }

    @Test func aConfigOverOneMebibyteIsRefusedUnread() throws {
        let url = directory.appendingPathComponent("huge.yaml")
        try Data(repeating: UInt8(ascii: "#"), count: (1 << 20) + 1).write(to: url)
        let result = try ProcessRunner.notifyRoute(["config", "check", url.path])
        #expect(result.status == 78)
        #expect(result.standardError == "notify-route: \(url.path):1:1: the config file is larger than 1024 KiB; refusing to parse it\n")
        #expect(result.duration < .seconds(2))
    }

    /// Just under the size limit, a million `[`: refused by the nesting limit, no stack overflow.
    @Test func aMillionOpenBracketsAreRefused() throws {
        let url = directory.appendingPathComponent("brackets.yaml")
        try Data(repeating: UInt8(ascii: "["), count: 1_000_000).write(to: url)
        let result = try ProcessRunner.notifyRoute(["config", "check", url.path])
        #expect(result.status == 78, "\(result.standardError)")
        #expect(result.standardError.contains("config is nested more than 64 levels deep"), "\(result.standardError)")
        #expect(result.duration < .seconds(5))
    }

    // MARK: Events through `send`

    @Test func invalidUTF8InArgumentsIsRepaired() throws {
        let result = try shell(#""$B" send --config "$C" "$(printf 'caf\351 \377')" "$(printf 'body \300\257')""#)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError == "[info] caf\u{FFFD} \u{FFFD}: body \u{FFFD}\u{FFFD}\n")
    }

    @Test func nulAndControlBytesInABodyFromStdinAreStripped() throws {
        let result = try shell(#"printf 'a\000b\001c\033[2Jd\033]0;pwned\007e\302\233' | "$B" send --config "$C" --json T -"#)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError == "[info] T: abcde\n")
        #expect(result.standardOutput.contains(#""body":"abcde""#), "\(result.standardOutput)")
    }

    /// A 10 MB body is read, capped at 64 KiB with a marker, and delivered; the terminal
    /// line is capped shorter still. Memory stays far below the input's size times a few.
    @Test func aTenMegabyteBodyIsCappedAndDelivered() throws {
        let result = try shell(#"head -c 10000000 /dev/zero | tr '\0' 'b' | "$B" send --config "$C" --json big -"#)
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let body = try #require((report["event"] as? [String: Any])?["body"] as? String)
        #expect(body.hasSuffix("…"))
        #expect(body.utf8.count <= 65_536 + 3, "\(body.utf8.count) bytes")
        #expect(result.standardError.hasPrefix("[info] big: bbbb"))
        #expect(result.standardError.hasSuffix("…\n"))
        #expect(result.standardError.utf8.count < 4096)
    }

    /// A value that starts with a minus is still the option's value: refused for what it
    /// is (64, in words), not as a missing value.
    @Test(arguments: [
        (["-t", "-5s"], "--timeout: invalid duration \"-5s\""), (["--timeout", "-1ms"], "--timeout: invalid duration \"-1ms\""),
        (["--progress", "-5"], "--progress -5: expected a whole number from 0 to 100"),
    ])
    func aNegativeValueIsRefusedInWords(options: [String], message: String) throws {
        let result = try ProcessRunner.notifyRoute(["send", "--config", config] + options + ["T"], environment: environment)
        #expect(result.status == 64)
        #expect(result.standardError.contains(message) && !result.standardError.contains("Missing value"), "\(result.standardError)")
    }

    @Test func controlSequencesInEveryTextOptionNeverReachTheTerminal() throws {
        let nasty = "\u{1B}]0;title\u{07}\u{1B}]52;c;ZXZpbA==\u{07}\u{1B}[2J\u{1B}[31m\u{9B}1;1H\u{1B}P1$qm\u{1B}\\\u{202E}\u{7}x"
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config, "-a", nasty, "-s", nasty, "-g", nasty, "-c", nasty, "-A", "id=\(nasty)", "-f", "K=\(nasty)",
             "T" + nasty, "B" + nasty],
            environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError == "[info] Tx: Bx\n")
        // Color forced on: only the sink's own SGR reaches the terminal, nothing from the event.
        let colorConfig = directory.appendingPathComponent("color.yaml").path
        try "sinks: { tty: { kind: terminal, color: always } }\nfallback: [tty]\n".write(toFile: colorConfig, atomically: true, encoding: .utf8)
        let colored = try ProcessRunner.notifyRoute(
            ["send", "--config", colorConfig, "T" + nasty], environment: ["XDG_RUNTIME_DIR": environment["XDG_RUNTIME_DIR"]!])
        #expect(colored.standardError.contains("\u{1B}["), "colour is on")
        #expect(!colored.standardError.contains("\u{1B}]"))
        #expect(!colored.standardError.contains("\u{1B}[2J"))
        #expect(!colored.standardError.unicodeScalars.contains { $0.value == 0x07 || (0x80...0x9F).contains($0.value) || $0 == "\u{202E}" })
    }

    /// A title with nothing to see (zero-width spaces, bidi marks, a lone combining mark) is
    /// bad event data, like an empty one.
    @Test func aTitleWithNothingVisibleIsBadEventData() throws {
        for title in ["\u{200B}\u{200B}", "\u{200F}\u{061C}\u{2060}", "\u{301}\u{301}", "\u{3164}"] {
            let result = try ProcessRunner.notifyRoute(["send", "--config", config, title, "body"], environment: environment)
            #expect(result.status == 65, "\(title.unicodeScalars.map(\.value))")
            #expect(result.standardError.hasPrefix("notify-route: bad event: the title has nothing visible"))
        }
        let ingest = try ProcessRunner.notifyRoute(
            ["ingest", "--config", config], environment: environment,
            input: #"{"title":"\u200b\u0301"}"# + "\n" + #"{"title":"seen"}"# + "\n")
        #expect(ingest.status == 65)
        #expect(ingest.standardError.contains("notify-route: stdin:1: the title has nothing visible"))
        #expect(ingest.standardError.contains("[info] seen\n"))
    }

    /// The title cap counts what a terminal and a daemon get: one letter under 300,000
    /// combining marks (600 KB) is capped, not taken as one character.
    @Test func aTitleOfCombiningMarksIsCapped() throws {
        let title = "a" + String(repeating: "\u{301}", count: 300_000)
        let ingest = try ProcessRunner.notifyRoute(
            ["ingest", "--config", config, "--json"], environment: environment, input: #"{"title":""# + title + "\"}\n")
        #expect(ingest.status == 0, "\(ingest.standardError.prefix(200))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(ingest.standardOutput.utf8)) as? [String: Any])
        let shown = try #require((report["event"] as? [String: Any])?["title"] as? String)
        #expect(shown.unicodeScalars.count == 1_024)
        #expect(shown.hasSuffix("…"))
        // Through argv too (at most 128 KiB an argument): 60,000 marks.
        let send = try ProcessRunner.notifyRoute(
            ["send", "--config", config, "--json", "b" + String(repeating: "\u{301}", count: 60_000)], environment: environment)
        let sent = try #require(try JSONSerialization.jsonObject(with: Data(send.standardOutput.utf8)) as? [String: Any])
        #expect(((sent["event"] as? [String: Any])?["title"] as? String)?.unicodeScalars.count == 1_024)
    }

    /// Past 256 fields an event is bad data. (Thousands of `-f` options on a command line
    /// are slow to parse in swift-argument-parser itself, seconds for 2,000 in a debug
    /// build, so this stays at 300; `ingest` below takes 5,000 at once.)
    @Test func thousandsOfFieldsAreRefusedAsBadEventData() throws {
        let fields = (0..<300).flatMap { ["-f", "F\($0)=v"] }
        let result = try ProcessRunner.notifyRoute(["send", "--config", config] + fields + ["many"], environment: environment)
        #expect(result.status == 65)
        #expect(result.standardError == "notify-route: bad event: the event has 300 fields; at most 256 are accepted\n")
    }

    // MARK: Events through `ingest`

    @Test func ingestTreatsEachBadLineAndDeliversTheRest() throws {
        let manyFields = "{\"title\":\"many\",\"fields\":{" + (0..<5000).map { "\"F\($0)\":\"v\"" }.joined(separator: ",") + "}}"
        let deep = "{\"title\":\"deep\",\"fields\":{\"a\":" + String(repeating: "[", count: 100_000) + "}}"
        let input = [
            #"{"title":"nul\u0000 title","body":"b\u0000ody"}"#,      // 1: NUL stripped
            #"{"title":"\u001b]0;pwned\u0007esc\u001b[2J","body":"\u009b31mx"}"#,  // 2: sequences stripped
            manyFields,                                                // 3: bad: too many fields
            deep,                                                      // 4: bad: nested too deep
            "{\"title\":\"" + String(repeating: "T", count: 500_000) + "\"}",  // 5: capped
            #"{"title":"last"}"#,                                      // 6
        ].joined(separator: "\n") + "\n"
        let result = try ProcessRunner.notifyRoute(["ingest", "--config", config, "--json"], environment: environment, input: input)
        #expect(result.status == 65, "\(result.standardError)")
        let lines = try result.standardOutput.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.map { $0["line"] as? Int } == [1, 2, 3, 4, 5, 6])
        #expect(lines.map { $0["summary"] as? String } == ["delivered", "delivered", nil, nil, "delivered", "delivered"])
        #expect(lines[2]["error"] as? String == "the event has 5000 fields; at most 256 are accepted")
        #expect((lines[3]["error"] as? String)?.contains("nested more than 32 levels deep") == true)
        let stderr = result.standardError.split(separator: "\n")
        #expect(stderr.contains("[info] nul title: body"))
        #expect(stderr.contains("[info] esc: x"))
        #expect(stderr.contains("[info] last"))
        let capped = try #require(((lines[4]["event"] as? [String: Any])?["title"] as? String))
        #expect(capped.count == 1024 && capped.hasSuffix("…"))
        #expect(!result.standardError.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0 })
    }

    /// Invalid UTF-8 is repaired; a 10 MB line is skipped with its number, unread past 1 MiB,
    /// and the next line is still delivered.
    @Test func ingestRepairsInvalidUTF8AndSkipsATenMegabyteLine() throws {
        let result = try shell(
            #"{ printf '{"title":"caf\351"}\n{"title":"x","body":"'; head -c 10000000 /dev/zero | tr '\0' 'b'; printf '"}\n{"title":"after"}\n'; } | "$B" ingest --config "$C""#)
        #expect(result.status == 65, "\(result.standardError)")
        #expect(result.standardError.contains("[info] caf\u{FFFD}\n"))
        #expect(result.standardError.contains("notify-route: stdin:2: the line is 10000023 bytes long; at most 1048576 are read"))
        #expect(result.standardError.contains("[info] after\n"))
    }
}
