import Foundation
import NotifyRouteTestSupport
import Testing

/// The terminal sink in a real terminal (tmux), read back from the screen.
@Suite(.enabled(if: TmuxSession.isAvailable || TestEnvironment.componentsRequired, "needs tmux"))
struct TerminalScreenTests {
    let binary = TestEnvironment.notifyRouteBinary.path

    func config(_ sink: String = "{ kind: terminal }") throws -> String {
        let url = try TestEnvironment.temporaryDirectory().appendingPathComponent("c.yaml")
        try "sinks: { tty: \(sink) }\nfallback: [tty]\n".write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test func aTintedLineOnATerminal() throws {
        let session = try TmuxSession(
            command: "'\(binary)' send --config '\(try config())' -l warning Disk '90% full'; sleep 30",
            environment: ["TERM": "xterm-256color", "NO_COLOR": ""])
        let screen = try session.waitForScreen(attributes: true) { $0.contains("Disk") }
        let line = try #require(screen.split(separator: "\n").first { $0.contains("Disk") })
        // tmux re-encodes the yellow foreground as SGR 33 around the glyph and level.
        #expect(line.contains("\u{1B}[33m⚠ warning"), "\(line.debugDescription)")
        #expect(line.hasSuffix("Disk: 90% full"))
    }

    @Test func noColorIsPlainOnATerminal() throws {
        let session = try TmuxSession(
            command: "'\(binary)' send --config '\(try config())' -l error Disk full; sleep 30",
            environment: ["TERM": "xterm-256color", "NO_COLOR": "1"])
        let screen = try session.waitForScreen(attributes: true) { $0.contains("Disk") }
        let line = try #require(screen.split(separator: "\n").first { $0.contains("Disk") })
        #expect(line == "[error] Disk: full")
    }

    @Test func eventTextCannotDriveTheTerminal() throws {
        let title = "A\u{1B}[2J\u{1B}[H\u{1B}]0;pwned\u{07}\u{1B}]52;c;ZXZpbA==\u{07}\u{07}B"
        let script = try TestEnvironment.temporaryDirectory().appendingPathComponent("run.sh")
        try """
            echo BEFORE-LINE
            '\(binary)' send --config '\(try config())' "$(printf '%s' "$1")" "body"
            echo AFTER-LINE
            sleep 30
            """.write(to: script, atomically: true, encoding: .utf8)
        let session = try TmuxSession(command: "sh '\(script.path)' '\(title)'", environment: ["NO_COLOR": "1"])
        let screen = try session.waitForScreen { $0.contains("AFTER-LINE") }
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Not cleared, not moved: the lines follow each other from the top.
        #expect(Array(lines.prefix(3)) == ["BEFORE-LINE", "[info] AB: body", "AFTER-LINE"])
        #expect(try session.display("#{pane_title}") != "pwned")
    }

    @Test func ttyOutputBypassesRedirectedStderr() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let captured = directory.appendingPathComponent("stderr.txt")
        let session = try TmuxSession(
            command: "'\(binary)' send --config '\(try config("{ kind: terminal, output: tty }"))' 'To the tty' 2>'\(captured.path)'; sleep 30",
            environment: ["NO_COLOR": "1"])
        let screen = try session.waitForScreen { $0.contains("To the tty") }
        #expect(screen.contains("[info] To the tty"))
        #expect(try String(contentsOf: captured, encoding: .utf8).isEmpty)
    }
}
