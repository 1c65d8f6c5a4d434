import Foundation
import NotifyRouteTestSupport
import Testing

/// Issue 8, security, end to end with the built binary:
///
/// - exec plugins run with argv, never through a shell: `;`, `$( )`, backquotes and
///   spaces in the configured command and in the event stay literal;
/// - (configs writable by others that name an exec sink are refused: ExecSinkCLITests)
/// - the state directory's mode and kind are checked (owner: StateCLITests);
/// - no event text reaches a terminal unsanitised (BadInputTests, BannerScreenTests);
/// - nothing in an event makes a sink open a file, a URL or a command. What "open" means
///   per sink: desktop: the icon is a string handed to the daemon, which alone decides
///   what to do with it (notify-route never opens the path or URL); journal: event fields
///   cannot write the sink's own or journald's trusted fields, nor inject a second field
///   through a newline or `=` in a name; terminal: the event cannot choose the device or the
///   output (config only); exec: the event is one JSON line on the plugin's stdin, and never
///   part of its argv or environment.
@Suite(.serialized) struct SecurityTests {
    let directory: URL

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-security")
        chmod(directory.path, 0o755)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A plugin that writes its argv (one per line) and the requests it gets, and delivers.
    func recordingPlugin() throws -> String {
        let plugin = try ExecFixture.trustedDirectory().appendingPathComponent("plugin.sh").path
        try """
            #!/bin/sh
            for a in "$@"; do printf '%s\\n' "$a"; done > '\(path("argv"))'
            while IFS= read -r line; do
              printf '%s\\n' "$line" >> '\(path("requests"))'
              echo '{"status": "delivered"}'
            done
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        chmod(plugin, 0o755)
        return plugin
    }

    func runtime() throws -> String {
        let runtime = path("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return runtime
    }

    @Test func execArgumentsStayLiteral() throws {
        let plugin = try recordingPlugin()
        let pwned = path("pwned")
        let arguments = ["; touch \(pwned)1", "$(touch \(pwned)2)", "`touch \(pwned)3`", "a b | touch \(pwned)4", "$HOME", "*"]
        let yamlList = arguments.map { "'\($0)'" }.joined(separator: ", ")
        let config = path("config.yaml")
        try """
            sinks:
              ex: { kind: exec, command: ['\(plugin)', \(yamlList)], deadline: 5s }
            fallback: [ex]
            """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        let title = "$(touch \(pwned)5); `touch \(pwned)6` | touch \(pwned)7"
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config, "--json", "-f", "CMD=$(touch \(pwned)8)", title],
            environment: ["XDG_RUNTIME_DIR": try runtime()])
        #expect(result.status == 0, "\(result.standardError)")
        let argv = try String(contentsOfFile: path("argv"), encoding: .utf8)
        #expect(argv == arguments.joined(separator: "\n") + "\n", "each argument arrives as written, unexpanded")
        let request = try String(contentsOfFile: path("requests"), encoding: .utf8)
        #expect(request.contains("touch \(pwned)5"), "the title reaches the plugin as data")
        for n in 1...8 { #expect(!FileManager.default.fileExists(atPath: "\(pwned)\(n)"), "pwned\(n) exists: something ran a shell") }
    }

    @Test(arguments: ["0777", "0757", "symlink"])
    func aStateDirectoryOpenToOthersOrASymlinkIsRefusedAndTheEventStillGoesOut(kind: String) throws {
        let runtime = path("runtime-\(kind)")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let state = runtime + "/notify-route"
        if kind == "symlink" {
            let elsewhere = path("elsewhere")
            try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.createSymbolicLink(atPath: state, withDestinationPath: elsewhere)
        } else {
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            chmod(state, mode_t(kind, radix: 8)!)
        }
        let config = path("tty.yaml")
        try "sinks: { tty: { kind: terminal } }\nroutes: [ { to: [tty], dedup: { window: 1h } } ]\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.notifyRoute(["send", "--config", config, "Hello"], environment: ["XDG_RUNTIME_DIR": runtime, "NO_COLOR": "1"])
        #expect(result.status == 0)
        #expect(result.standardError.contains("[info] Hello"))
        let why = kind == "symlink" ? "is not a directory (a symbolic link or a file is refused)" : "is writable by others (mode \(kind.dropFirst()))"
        #expect(result.standardError.contains("state: the state directory \(state) \(why)"), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: state + "/state.db"), "nothing written there")
        #expect(!FileManager.default.fileExists(atPath: path("elsewhere") + "/state.db"))
    }

    /// The icon is only a string for the daemon: a FIFO as the icon would block any reader
    /// that opened it, and `send` returns at once with the path passed on untouched; the same
    /// for a `file://` URL and a `$(...)`.
    @Test func anIconIsPassedToTheDaemonNeverOpened() throws {
        guard DBusMockDaemon.shouldRun else { return }
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let fifo = path("icon.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let config = path("desktop.yaml")
        try "sinks: { desktop: { kind: desktop, deadline: 1s } }\nfallback: [desktop]\n".write(toFile: config, atomically: true, encoding: .utf8)
        let icons = [fifo, "file://\(fifo)", "/etc/shadow", "$(touch \(path("pwned")))"]
        for icon in icons {
            var environment = daemon.environment
            environment["XDG_RUNTIME_DIR"] = try runtime()
            let result = try ProcessRunner.notifyRoute(["send", "--config", config, "-i", icon, "icon test"], environment: environment,
                                                       timeLimit: .seconds(10))
            #expect(result.status == 0, "\(icon): \(result.standardError)")
            #expect(result.duration < .seconds(3), "nothing opened the FIFO")
        }
        let calls = try daemon.notifyCalls()
        let sent = calls.map { call in [call.appIcon, call.hints["image-path"]?.text ?? ""].first { !$0.isEmpty } ?? "" }
        #expect(sent == icons)
        #expect(!FileManager.default.fileExists(atPath: path("pwned")))
    }

    /// Event fields cannot write what the journal sink or journald itself sets: reserved names
    /// are renamed, trusted `_` fields lose their underscore, a newline or `=` in a name
    /// cannot start a second field.
    @Test func eventFieldsCannotRedirectTheJournal() async throws {
        guard PrivateJournal.isAvailable || TestEnvironment.componentsRequired else { return }
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let config = path("journal.yaml")
            try "sinks: { journal: { kind: journal, identifier: real-app } }\nfallback: [journal]\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let arguments = [
                "send", "--config", config, "-l", "info", "-f", "\(PrivateJournal.runField)=\(run)",
                "-f", "MESSAGE=forged", "-f", "PRIORITY=0", "-f", "SYSLOG_IDENTIFIER=sshd", "-f", "_SYSTEMD_UNIT=sshd.service",
                "-f", "_PID=1", "-f", "A\nMESSAGE=second=x", "-f", "B=1\nPRIORITY=0", "real title",
            ]
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(arguments, environment: ["XDG_RUNTIME_DIR": try runtime()])
            }
            #expect(result.status == 0, "\(result.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry.values("MESSAGE") == ["real title"])
            #expect(entry.values("PRIORITY") == ["6"])
            #expect(entry.values("SYSLOG_IDENTIFIER") == ["real-app"])
            #expect(entry["_SYSTEMD_UNIT"] != "sshd.service")
            #expect(entry["_PID"] != "1")
            #expect(entry["USER_MESSAGE"] == "forged")
            #expect(entry["USER_PRIORITY"] == "0")
            #expect(entry["B"] == "1\nPRIORITY=0", "a newline in a value stays in the value")
        }
    }

    /// The terminal sink writes where the config says; the event has no say in the device.
    @Test func anEventCannotChooseTheTerminalDevice() throws {
        let decoy = path("decoy")
        let config = path("tty.yaml")
        try "sinks: { tty: { kind: terminal } }\nfallback: [tty]\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.notifyRoute(
            ["ingest", "--config", config],
            environment: ["XDG_RUNTIME_DIR": try runtime(), "NO_COLOR": "1"],
            input: #"{"title":"t","device":"\#(decoy)","output":"\#(decoy)"}"# + "\n" + #"{"title":"u","fields":{"device":"\#(decoy)","output":"\#(decoy)"}}"# + "\n")
        #expect(result.standardError.contains("unknown key \"device\""))
        #expect(result.standardError.contains("[info] u\n"))
        #expect(!FileManager.default.fileExists(atPath: decoy))
    }
}

/// Issue 19: messages quote input (a JSON key, a level, a timeout, a message id, an action,
/// a field name, `-l`, `--sink`, `-A`, `-t`, a sink name in a config, an exec plugin's
/// error and stderr), and none of it may drive the terminal they are read on.
/// Every case of the injection corpus goes through every one of those paths, once into
/// pipes (the bytes are checked) and once into a real terminal (tmux: the title, the
/// clipboard, the alternate screen, the scroll region and the cursor are checked).
@Suite(.serialized) struct QuotedInputTests {
    let directory: URL
    let cases = InjectionCorpus.cases

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-quoted")
        chmod(directory.path, 0o755)
        let runtime = directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The bytes inside a JSON string: controls, `"` and `\` escaped, the rest as they are
    /// (invalid UTF-8 included: `ingest` repairs it).
    static func json(_ bytes: [UInt8]) -> [UInt8] {
        bytes.flatMap { byte -> [UInt8] in
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F else { return [byte] }
            let hex = String(byte, radix: 16)
            return Array(("\\u00" + (hex.count < 2 ? "0" : "") + hex).utf8)
        }
    }

    /// A YAML double-quoted scalar's content: everything outside printable ASCII escaped.
    static func yaml(_ text: String) -> String {
        text.unicodeScalars.map { scalar -> String in
            if scalar == "\"" || scalar == "\\" { return "\\" + String(scalar) }
            if (0x20...0x7E).contains(scalar.value) { return String(scalar) }
            let hex = String(scalar.value, radix: 16)
            return scalar.value <= 0xFFFF ? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                : "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
        }.joined()
    }

    /// The error paths, one line of JSON or one command each, with what each must print.
    static let ingestLines: [(String, String)] = [
        (#"{"title":"t","P":1}"#, "unknown key \""),
        (#"{"title":"t","level":"P"}"#, "\"level\": unknown level \""),
        (#"{"title":"t","timeout":"P"}"#, "\"timeout\": invalid duration \""),
        (#"{"title":"t","message_id":"P"}"#, "message id \""),
        (#"{"title":"t","actions":["=P"]}"#, "\"actions\"[0]: expected \"id=Label\", found \"="),
        (#"{"title":"t","actions":[{"id":"a","label":"b","P":1}]}"#, "\"actions\"[0]: unknown key \""),
        (#"{"title":"t","fields":{"P":[1]}}"#, "\"fields\".\""),
        (#"{"title":"t","P":1,"P":2}"#, "duplicate key \""),
    ]
    static let commands: [(String, String)] = [
        (#""$B" send --config tty.yaml -l "$P" T"#, "is invalid for '-l <level>'"),
        (#""$B" send --config tty.yaml --sink "$P" T"#, "notify-route: --sink \""),
        (#""$B" send --config tty.yaml -A "=$P" T"#, "--action \"="),
        (#""$B" send --config tty.yaml -t "$P" T"#, "--timeout: invalid duration \""),
        (#""$B" config check "y$N.yaml""#, "unknown sink \""),
        (#""$B" send --config "x$N.yaml" -v T"#, "ex (exec) via fallback: failed: "),
    ]

    /// Writes the inputs of every case and a script that runs every path for each, between
    /// `BEFORE-N` and `AFTER-N` lines.
    func makeScript() throws -> String {
        try "sinks: { tty: { kind: terminal } }\nfallback: [tty]\n".write(toFile: path("tty.yaml"), atomically: true, encoding: .utf8)
        // An exec plugin that writes the case to its stderr and answers every event with it as the error.
        try "cat \"$1\" >&2\nwhile IFS= read -r line; do cat \"$2\"; done\n".write(toFile: path("plugin.sh"), atomically: true, encoding: .utf8)
        var script = "cd '\(directory.path)'\nB='\(TestEnvironment.notifyRouteBinary.path)'\n"
        for (number, item) in cases.enumerated() {
            try Data(item.bytes).write(to: URL(fileURLWithPath: path("p\(number)")))
            let escaped = Self.json(item.bytes)
            var lines: [UInt8] = []
            for (line, _) in Self.ingestLines {
                let parts = line.split(separator: "P", omittingEmptySubsequences: false)
                lines += Array(parts[0].utf8)
                for part in parts.dropFirst() { lines += escaped + Array(part.utf8) }
                lines.append(0x0A)
            }
            try Data(lines).write(to: URL(fileURLWithPath: path("j\(number).jsonl")))
            try "sinks: { tty: { kind: terminal } }\nfallback: [\"\(Self.yaml(item.text))\"]\n"
                .write(toFile: path("y\(number).yaml"), atomically: true, encoding: .utf8)
            try Data(Array(#"{"status":"failed","error":""#.utf8) + escaped + Array("\"}\n".utf8))
                .write(to: URL(fileURLWithPath: path("a\(number).json")))
            try "sinks: { ex: { kind: exec, command: [/bin/sh, '\(path("plugin.sh"))', '\(path("p\(number)"))', '\(path("a\(number).json"))'], deadline: 5s } }\nfallback: [ex]\n"
                .write(toFile: path("x\(number).yaml"), atomically: true, encoding: .utf8)
            script += "N=\(number); P=\"$(cat p\(number))\"\necho BEFORE-\(number)\n"
            script += "\"$B\" ingest --config tty.yaml < j\(number).jsonl\n"
            script += Self.commands.map(\.0).joined(separator: "\n") + "\necho AFTER-\(number)\n"
        }
        return script + "echo ALL-DONE\n"
    }

    var environment: [String: String] { ["NO_COLOR": "1", "XDG_RUNTIME_DIR": path("runtime"), "COLUMNS": "80"] }

    /// What is left to compare of a line: swift-log's timestamp (`-v`) differs between runs.
    static func comparable(_ line: Substring) -> String {
        var line = String(line)
        if let space = line.firstIndex(of: " "), line.first?.isNumber == true, line[..<space].contains("T") {
            line = String(line[line.index(after: space)...])
        }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// The lines between `BEFORE-N` and `AFTER-N`, sorted (messages from threads may come
    /// in either order), for each case. Without the exec plugin's stderr, which the process
    /// may end before it has read.
    static func blocks(_ text: String) -> [[String]] {
        var blocks: [[String]] = [], current: [String]? = nil
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("BEFORE-") { current = []; continue }
            if line.hasPrefix("AFTER-") { blocks.append((current ?? []).sorted()); current = nil; continue }
            let kept = comparable(line)
            if !kept.isEmpty && !kept.hasPrefix("notify-route: sink \"ex\":") { current?.append(kept) }
        }
        return blocks
    }

    /// Into pipes first: no control in the bytes, every path's message there for every case.
    /// Then into tmux: the terminal's state is untouched, and it shows line for line what
    /// the pipes got (nothing moved, overwrote or cleared).
    @Test func theCorpusThroughEveryMessageLeavesTheTerminalAlone() throws {
        let script = try makeScript()
        let piped = try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "exec 2>&1\n" + script], environment: environment,
                                          timeLimit: .seconds(600))
        let output = piped.standardOutput
        #expect(output.hasSuffix("ALL-DONE\n"), "\(piped.standardError)")
        let bad = output.unicodeScalars.filter { scalar in
            (scalar.value < 0x20 && scalar != "\n" && scalar != "\t") || (0x7F...0x9F).contains(scalar.value)
                || scalar.properties.generalCategory == .format || scalar == "\u{2028}" || scalar == "\u{2029}"
        }
        #expect(bad.isEmpty, "\(bad.map { String($0.value, radix: 16) })")
        let inPipe = Self.blocks(output)
        #expect(inPipe.count == cases.count)
        for (index, block) in inPipe.enumerated() {
            for (_, marker) in Self.ingestLines + Self.commands {
                #expect(block.contains { $0.contains(marker) }, "\(cases[index].name): no \"\(marker)\"")
            }
        }
        // What came in is shown, escaped: the OSC 52 case's ESC and BEL, as \u001B and \u0007.
        #expect(output.contains(#"unknown key "\u001B]52;c;ZXZpbA==\u0007""#))

        guard TmuxSession.isAvailable || TestEnvironment.componentsRequired else { return }
        try ("printf '\\033]2;%s\\033\\\\' nr-title-before\n" + script).write(toFile: path("run.sh"), atomically: true, encoding: .utf8)
        let session = try TmuxSession(
            command: "sh '\(path("run.sh"))' 2>&1; sleep 900", environment: environment,
            configuration: "set -g set-clipboard on\nset -g history-limit 100000\n")
        try session.waitForScreen(timeout: .seconds(600)) { $0.contains("ALL-DONE") }
        #expect(try session.display("#{pane_title}") == "nr-title-before")
        #expect(try session.buffers().isEmpty, "no OSC 52 reached the clipboard")
        #expect(try session.display("#{alternate_on}") == "0")
        #expect(try session.scrollRegion() == (0, 23))
        let cursor = try session.cursor()
        let screen = try session.capture().split(separator: "\n", omittingEmptySubsequences: false)
        #expect(cursor.x == 0 && cursor.y > 0 && cursor.y <= screen.count && screen[cursor.y - 1] == "ALL-DONE",
                "the cursor is below the last line: \(cursor)")
        let history = try session.command(["capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", session.target])
        let onScreen = Self.blocks(history)
        #expect(onScreen.count == cases.count)
        for (index, (screen, pipe)) in zip(onScreen, inPipe).enumerated() {
            #expect(screen == pipe, "\(cases[index].name)")
        }
    }
}

/// Issue 55, item 7: without XDG_RUNTIME_DIR (cron, `sudo -i`, ssh without pam_systemd), the
/// state went to `notify-route-UID` under the temporary directory, a name another user could
/// make first: dedup, rate limits and the daemon were then switched off for this user.
extension SecurityTests {
    @Test(.enabled(if: TestEnvironment.runsAsRoot || TestEnvironment.componentsRequired, "needs root to act as another user (setpriv)"))
    func anotherUserCannotSquatTheStateDirectoryWithoutARuntimeDirectory() async throws {
        let setpriv = try #require(ProcessRunner.which("setpriv"))
        let temporary = try TestEnvironment.temporaryDirectory("nr-tmp")
        chmod(temporary.path, 0o1777)
        // The name the state used to take there, made first by uid 65534.
        let squatted = temporary.path + "/notify-route-\(getuid())"
        let made = try ProcessRunner.run(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0700", squatted])
        try #require(made.status == 0, "\(made.standardError)")
        // Short: the daemon's socket is in there, and a socket's path has at most 107 bytes.
        let home = try TestEnvironment.temporaryDirectory("h")
        let state = home.path + "/.local/state/notify-route/runtime"
        let config = path("cron.yaml")
        try "sinks: { tty: { kind: terminal } }\nroutes: [ { to: [tty], dedup: { window: 1h } } ]\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        // As cron has it: a HOME, no runtime directory (empty counts as unset).
        let environment = ["XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": "", "HOME": home.path, "TMPDIR": temporary.path,
                           "NOTIFY_ROUTE_SOCKET": "", "NO_COLOR": "1"]

        let first = try ProcessRunner.notifyRoute(["send", "--config", config, "Disk full"], environment: environment)
        #expect(first.status == 0)
        #expect(first.standardError == "[info] Disk full\n", "no state refused: \(first.standardError)")
        let second = try ProcessRunner.notifyRoute(["send", "--config", config, "--json", "Disk full"], environment: environment)
        let sink = (try DaemonTests.json(second.standardOutput)["sinks"] as? [[String: Any]])?.first
        #expect(sink?["status"] as? String == "suppressed" && sink?["reason"] as? String == "duplicate",
                "dedup holds across calls: \(second.standardOutput) \(second.standardError)")
        var info = stat()
        #expect(stat(state, &info) == 0 && info.st_uid == getuid() && info.st_mode & 0o777 == 0o700, "a directory of ours, 0700")
        #expect(FileManager.default.fileExists(atPath: state + "/state.db"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: squatted).isEmpty, "nothing of ours in theirs")

        // The daemon finds its socket there too, and `status` says where the state is.
        let daemon = try DaemonProcess.start(
            config: URL(fileURLWithPath: config), environment: environment, socket: state + "/socket", namingSocket: false)
        defer { daemon.stop() }
        let status = try ProcessRunner.notifyRoute(["status"], environment: environment)
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("daemon pid \(daemon.pid)"))
        #expect(status.standardOutput.contains("state in \(state)\n"), "\(status.standardOutput)")
        let planned = try ProcessRunner.notifyRoute(["send", "--config", config, "--dry-run", "--json", "Disk full"], environment: environment)
        #expect(try DaemonTests.json(planned.standardOutput)["via"] as? String == "daemon", "\(planned.standardError)")
    }
}
