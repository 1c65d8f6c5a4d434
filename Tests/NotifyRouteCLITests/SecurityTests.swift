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
        let plugin = path("plugin.sh")
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
