import Foundation
import NotifyRouteTestSupport
import Testing

/// `style: banner` through the real CLI in a real terminal (tmux), read back with
/// `capture-pane -e`, so colours, positions, the scroll region and the cursor are the
/// terminal's own account, not ours.
extension BannerTerminalTests {
@Suite struct BannerScreenTests {
    @Test func bannerOnTopPushesOutputDownAndGoesAfterItsTimeout() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            s=$(date +%s%N)
            "$B" send --config "$C" -l warning -t 800ms Disk '90% full'
            echo "$? $(( ($(date +%s%N) - s) / 1000000 ))" > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        let cursorBefore = try session.cursor()
        let started = ContinuousClock.now
        try session.sendKeys("Enter")

        let screen = try session.waitForScreen(attributes: true) { $0.contains("Disk") }
        let appeared = ContinuousClock.now - started
        let rows = screen.rows
        // Row 1: the title in bold black on yellow, as tmux re-encodes it; row 2 the body.
        #expect(rows[0].hasPrefix("\u{1B}[1m\u{1B}[30m\u{1B}[43m ⚠ Disk"), "\(rows[0].debugDescription)")
        #expect(rows[1].hasPrefix("\u{1B}[0m\u{1B}[30m\u{1B}[43m   90% full"), "\(rows[1].debugDescription)")
        // The earlier output moved down two rows, whole.
        #expect(Array(screen.withoutSGR.rows[2...6]) == earlierOutput)
        #expect(try session.scrollRegion() == (2, 23))
        #expect(try session.cursor() == (cursorBefore.x, cursorBefore.y + 2))

        let status = try #require(fixture.waitForFile("status"))
        let parts = status.split(separator: " ").compactMap { Int($0) }
        #expect(parts.first == 0)
        let elapsed = try #require(parts.last)
        #expect(elapsed >= 800 && elapsed < 5_000, "send returned after \(elapsed) ms")
        // Gone, and the terminal exactly as it was: text, colours, cursor, scroll region.
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.cursor() == cursorBefore)
        #expect(try session.scrollRegion() == (0, 23))
        print("banner: appeared \(appeared) after the key press; send returned after \(elapsed) ms with an 800ms timeout")
    }

    @Test(arguments: [
        (["TERM": "xterm-256color"], "\u{1B}[38;5;231m\u{1B}[48;5;124m"),
        (["COLORTERM": "truecolor"], "\u{1B}[38;2;255;255;255m\u{1B}[48;2;190;30;30m"),
        (["COLORTERM": "24bit", "TERM": "xterm-256color"], "\u{1B}[38;2;255;255;255m\u{1B}[48;2;190;30;30m"),
        (["NO_COLOR": "1", "COLORTERM": "truecolor"], "\u{1B}[1;7m"),
    ])
    func coloursFollowTheTerminal(environment: [String: String], expected: String) throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            "$B" send --config "$C" -l error -t 2s Failed
            echo $? > "$D/status"
            """, environment: environment))
        let screen = try session.waitForScreen(attributes: true) { $0.contains("Failed") }
        let first = try #require(screen.rows.first)
        #expect(first.contains(expected), "\(environment): \(first.debugDescription)")
        #expect(first.withoutSGR.hasPrefix(" ✖ Failed"))
        #expect(fixture.waitForFile("status") == "0")
    }

    @Test func dumbTerminalGetsALine() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            "$B" send --config "$C" --json -l warning -t 300ms Disk '90% full' > "$D/report"
            echo $? > "$D/status"
            """, environment: ["TERM": "dumb"]))
        #expect(fixture.waitForFile("status") == "0")
        let rows = try session.capture(attributes: true).rows
        // No cursor addressing: the line follows the earlier output, no colour, nothing pushed.
        #expect(Array(rows[0...5]) == earlierOutput + ["[warning] Disk: 90% full"])
        #expect(try String(contentsOf: fixture.url("report"), encoding: .utf8).contains("TERM=dumb: drawn as a line"))
    }

    @Test func compactAtFiftyColumns() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            "$B" send --config "$C" -l error -t 600ms 'Backup of /srv/data failed on host alpha' 'rsync exited 23: some files vanished'
            "$B" send --config "$C" -l info -t 600ms 'バックアップが完了しました：ディスクの残りは少しです' '磁盘已满，请清理备份目录 🔥🔥'
            echo $? > "$D/status"
            """), width: 50)
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")

        let latin = try session.waitForScreen { $0.contains("Backup of") }.rows
        #expect(latin[0] == " ✖ Backup of /srv/data failed on host alpha — rs…", "\(latin[0].debugDescription)")
        #expect(Array(latin[1...5]) == earlierOutput)  // one row only: pushed down by one

        let wide = try session.waitForScreen { $0.contains("バックアップ") }.rows
        // Measured by display width: the row ends in the ellipsis within 50 columns and
        // nothing spilled onto the row below.
        #expect(wide[0].hasPrefix(" ℹ バックアップが完了しました"))
        #expect(wide[0].hasSuffix("…"))
        #expect(Array(wide[1...5]) == earlierOutput)

        #expect(fixture.waitForFile("status") == "0")
        #expect(try session.capture(attributes: true) == before)
    }

    @Test func resizeRelaysOutAndInterruptRestores() throws {
        let fixture = try BannerFixture()
        // The script survives ^C (a trap, not an ignore, so the child keeps the default).
        let session = try TmuxSession(command: try fixture.script("""
            trap ':' INT
            read go
            "$B" send --config "$C" -l critical Sticky 'until interrupted, whatever the width'
            echo $? > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")

        var rows = try session.waitForScreen { $0.contains("Sticky") }.rows
        #expect(rows[0] == " ‼ Sticky")
        #expect(rows[1] == "   until interrupted, whatever the width")
        #expect(rows[2] == "line 1")

        try session.resize(width: 50, height: 24)
        rows = try session.waitForScreen { $0.rows.first?.contains(" — ") == true }.rows
        #expect(rows[0] == " ‼ Sticky — until interrupted, whatever the width")
        #expect(rows[1] == "line 1")  // compact: the output moved back up a row
        #expect(try session.scrollRegion() == (1, 23))

        try session.resize(width: 80, height: 24)
        rows = try session.waitForScreen { $0.rows[1].contains("until") }.rows
        #expect(rows[0] == " ‼ Sticky")
        #expect(rows[2] == "line 1")
        #expect(try session.scrollRegion() == (2, 23))

        try session.sendKeys("C-c")
        #expect(fixture.waitForFile("status") == "130")  // died of SIGINT, re-raised
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.scrollRegion() == (0, 23))
    }

    @Test(arguments: [(SIGTERM, "143", "Terminated"), (SIGHUP, "129", "Hangup")])
    func terminationSignalsRestore(signal: Int32, status: String, shellMessage: String) throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            "$B" send --config "$C" -l error -t never Sticky body & echo $! > "$D/pid"
            wait $!
            echo $? > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")
        try session.waitForScreen { $0.contains("Sticky") }
        let pid = try #require(fixture.waitForFile("pid").flatMap { pid_t($0) })
        #expect(kill(pid, signal) == 0)
        #expect(fixture.waitForFile("status") == status)
        try expectRestored(session, to: before, but: shellMessage)
    }

    @Test func waitPrintsHowTheBannerWent() throws {
        let fixture = try BannerFixture()
        // Kept alive to the end: its deinit kills the tmux server, and the command with it.
        let session = try TmuxSession(command: try fixture.script("""
            "$B" send --config "$C" --wait -t 300ms Hello > "$D/out"
            echo $? > "$D/status"
            """))
        withExtendedLifetime(session) {
            #expect(fixture.waitForFile("status") == "0")
        }
        #expect(try String(contentsOf: fixture.url("out"), encoding: .utf8) == "expired\n")
    }

    @Test func noTerminalMeansALineOnStderr() throws {
        // setsid: a new session has no controlling terminal, so /dev/tty cannot open.
        let setsid = try #require(ProcessRunner.which("setsid"))
        let fixture = try BannerFixture()
        let result = try ProcessRunner.run(
            setsid, ["-w", fixture.binary, "send", "--config", try fixture.config(), "--json", "-l", "success", "-t", "5s", "Backup done"],
            environment: ["NO_COLOR": "1", "TERM": "xterm", "XDG_RUNTIME_DIR": fixture.url("run").path])
        #expect(result.status == 0)
        #expect(result.standardError.contains("[success] Backup done"))
        #expect(result.standardOutput.contains("no controlling terminal (/dev/tty: "))
        #expect(result.standardOutput.contains("banner drawn as a line on stderr"))
        #expect(result.duration < .seconds(3))  // nothing shows, so nothing to wait for
    }

    // MARK: Injection

    /// The detectors work: raw sequences do set the title, fill a buffer and ring.
    @Test func tmuxNoticesRawInjection() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(
            command: try fixture.script(#"printf '\033]2;pwned\007\033]52;c;ZXZpbA==\007\007'; echo done > "$D/status""#),
            configuration: fixture.tmuxConfiguration)
        #expect(fixture.waitForFile("status") == "done")
        try session.waitForScreen { _ in fixture.exists("bell") }
        #expect(try session.display("#{pane_title}") == "pwned")
        #expect(try session.buffers().contains("evil"))
        #expect(fixture.exists("bell"))
    }

    @Test func injectionCorpusThroughArgvLeavesTheTerminalAlone() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script(Self.corpusScript("-t 60ms")), configuration: fixture.tmuxConfiguration)
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        let title = try session.display("#{pane_title}")
        let cursor = try session.cursor()
        try session.sendKeys("Enter")

        try Self.expectCorpusSent(fixture)
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.cursor() == cursor)
        #expect(try session.scrollRegion() == (0, 23))
        try Self.expectNoSideEffects(session, fixture, title: title)
    }

    /// The line style, fed the same corpus: each event one line, in order, and nothing
    /// but text reached the terminal.
    @Test func injectionCorpusAsLinesLeavesTheTerminalAlone() throws {
        let fixture = try BannerFixture()
        let height = InjectionCorpus.cases.count + 10
        let session = try TmuxSession(
            command: try fixture.script(Self.corpusScript(), sink: "{ kind: terminal }", environment: ["NO_COLOR": "1"]),
            width: 200, height: height, configuration: fixture.tmuxConfiguration)
        try session.waitForScreen { $0.contains("line 5") }
        let title = try session.display("#{pane_title}")
        try session.sendKeys("Enter")

        try Self.expectCorpusSent(fixture)
        let screen = try session.capture()
        let rows = screen.rows
        #expect(Array(rows[0...4]) == earlierOutput)
        for (index, item) in InjectionCorpus.cases.enumerated() {
            // Nothing moved the cursor or cleared: each line where it was written.
            #expect(rows[5 + index].hasPrefix("[info] T\(index) "), "\(item.name): \(rows[5 + index].debugDescription)")
            if item.name == "line-paragraph-separators" {
                #expect(rows[5 + index] == "[info] T\(index) one two three end: one ⏎ two ⏎ three ⏎ one ⏎ two ⏎ three")
            }
        }
        #expect(InjectionCorpus.leftovers(in: screen).isEmpty, "\(InjectionCorpus.leftovers(in: screen))")
        #expect(try session.cursor() == (0, 5 + InjectionCorpus.cases.count))
        #expect(try session.scrollRegion() == (0, height - 1))
        try Self.expectNoSideEffects(session, fixture, title: title)
    }

    /// After Enter, one `send` per corpus case, the case in its title and twice in its
    /// body; the exit codes (and anything on stdout) go to `codes`.
    static func corpusScript(_ options: String = "") -> String {
        var body = "read go\n"
        for (index, item) in InjectionCorpus.cases.enumerated() {
            let title = printfFormat(Array("T\(index) ".utf8) + item.bytes + Array(" end".utf8))
            let text = printfFormat(item.bytes + Array("\n".utf8) + item.bytes)
            body += #""$B" send --config "$C" \#(options) "$(printf '\#(title)')" "$(printf '\#(text)')" >> "$D/codes"; echo $? >> "$D/codes""# + "\n"
        }
        return body + #"echo done > "$D/status""#
    }

    static func expectCorpusSent(_ fixture: BannerFixture) throws {
        #expect(fixture.waitForFile("status", timeout: .seconds(60)) == "done")
        let codes = try String(contentsOf: fixture.url("codes"), encoding: .utf8).split(separator: "\n")
        #expect(codes.count == InjectionCorpus.cases.count && codes.allSatisfy { $0 == "0" }, "\(codes)")
    }

    /// No title set, no alternate screen, no clipboard write, no bell.
    static func expectNoSideEffects(_ session: TmuxSession, _ fixture: BannerFixture, title: String) throws {
        #expect(try session.display("#{pane_title}") == title)
        #expect(try session.display("#{alternate_on}") == "0")
        #expect(try session.buffers().isEmpty)
        #expect(!fixture.exists("bell"))
    }

    /// A printf format that reproduces `bytes` exactly: everything but plain ASCII letters,
    /// digits and a few safe marks as octal escapes.
    static func printfFormat(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let character = Character(Unicode.Scalar(byte))
            if byte < 0x80, character.isLetter || character.isNumber || " .,;:=/-_".contains(character) {
                return String(character)
            }
            return "\\" + String(byte, radix: 8).leftPadded(to: 3)
        }.joined()
    }
}
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
