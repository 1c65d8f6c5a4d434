import Foundation
import NotifyRouteTestSupport
import Testing

/// Every banner test in a real terminal, one at a time: banners live for fractions of a
/// second, and tests that poll tmux from a thread of the cooperative pool would starve
/// each other's timing if they ran side by side.
@Suite(.serialized, .enabled(if: TmuxSession.isAvailable || TestEnvironment.componentsRequired, "needs tmux"))
struct BannerTerminalTests {}

/// A scratch directory, a banner config and shell scripts for the pane, for tests that
/// run the real `notify-route` inside tmux.
struct BannerFixture {
    let directory: URL
    let binary = TestEnvironment.notifyRouteBinary.path
    /// tmux config: OSC 52 creates a paste buffer (so an empty buffer list proves none
    /// arrived) and a bell runs a hook that leaves a file.
    var tmuxConfiguration: String {
        """
        set -g set-clipboard on
        set -g monitor-bell on
        set -g bell-action any
        set-hook -g alert-bell "run-shell \\"touch '\(url("bell").path)'\\""
        """
    }

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-banner")
        try FileManager.default.createDirectory(
            at: url("run"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    func config(_ sink: String = "{ kind: terminal, style: banner }") throws -> String {
        let url = url("config.yaml")
        try "sinks: { tty: \(sink) }\nfallback: [tty]\n".write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// A script for the pane: a fixed environment, five numbered lines of earlier output,
    /// then `body` (with `$B` the binary, `$C` the config, `$D` the scratch directory).
    /// Input echo is off, so pressing Enter to go on leaves no trace on the screen.
    func script(_ body: String, sink: String = "{ kind: terminal, style: banner }", environment: [String: String] = [:]) throws -> String {
        var env = ["TERM": "xterm", "XDG_RUNTIME_DIR": url("run").path, "XDG_CONFIG_HOME": "/nonexistent-notify-route-test"]
        env.merge(environment) { _, new in new }
        let exports = env.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value)'" }.joined(separator: "\n")
        let text = """
            unset NO_COLOR COLORTERM
            \(exports)
            B='\(binary)'; C='\(try config(sink))'; D='\(directory.path)'
            stty -echo
            i=1; while [ $i -le 5 ]; do echo "line $i"; i=$((i+1)); done
            \(body)
            sleep 60
            """
        let url = url("run.sh")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return "sh '\(url.path)'"
    }

    /// Polls for a file the script writes, and returns its text.
    func waitForFile(_ name: String, timeout: Duration = .seconds(15)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOf: url(name), encoding: .utf8), text.hasSuffix("\n") {
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            usleep(10_000)
        }
        return nil
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: url(name).path) }
}

extension String {
    /// The screen's rows.
    var rows: [String] { split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }

    /// Text with SGR sequences taken out.
    var withoutSGR: String {
        replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }
}

/// Expects the screen `before` again, text and colours, but for the shell's own report
/// of how a job ended (`Killed`, `Terminated`), and the scroll region reset.
func expectRestored(_ session: TmuxSession, to before: String, but shellMessage: String) throws {
    let after = try session.capture(attributes: true).rows.filter { !$0.isEmpty && $0 != shellMessage }
    #expect(after == before.rows.filter { !$0.isEmpty }, "\(after)")
    #expect(try session.scrollRegion() == (0, 23))
}

extension InjectionCorpus {
    /// Scalars that must never reach a terminal from an event: controls, the bidi
    /// overrides, isolates and marks and line separators that reorder or break text, and
    /// the characters that show nothing and can hide text between what a reader sees.
    static func leftovers(in screen: String) -> [Unicode.Scalar] {
        screen.unicodeScalars.filter { scalar in
            switch scalar.value {
            case 0x0A: false
            case 0x00...0x1F, 0x7F...0x9F: true
            case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
            case 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E, 0xE0000...0xE007F: true
            default: false
            }
        }
    }
}

/// The five lines every fixture script prints before the banner.
let earlierOutput = (1...5).map { "line \($0)" }
