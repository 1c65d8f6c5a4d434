import Foundation
import NotifyRouteTestSupport
import Testing

@testable import NotifyRouteCLI

/// End-to-end: the built `notify-route` binary, its output and its exit codes.
@Suite struct SendCommandTests {
    /// A config with only a terminal sink, so these tests depend on nothing else.
    static func terminalConfig(_ extra: String = "") throws -> URL {
        let directory = try TestEnvironment.temporaryDirectory()
        let url = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              tty: { kind: terminal }
            \(extra)
            fallback: [tty]
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func sendsOnTheEmbeddedDefault() throws {
        let result = try ProcessRunner.notifyRoute(["send", "--json", "-l", "warning", "Disk", "90% full"], environment: ["NO_COLOR": "1"])
        #expect(result.status == 0, "\(result.standardError)")
        // stderr is a pipe here: the line is the default's last resort, printed unless the
        // desktop or the journal took the event (UnattendedTerminalTests tests both ways).
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let sinks = try #require(report["sinks"] as? [[String: Any]])
        let terminal = try #require(sinks.first { $0["sink"] as? String == "terminal" })
        if terminal["status"] as? String == "delivered" {
            #expect(result.standardError.contains("[warning] Disk: 90% full\n"))
        } else {
            #expect(terminal["reason"] as? String == "last-resort", "\(terminal)")
            #expect(result.standardError.isEmpty)
        }
    }

    @Test func jsonReportOnStdout() throws {
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "-l", "error", "-s", "backup", "-g", "ops", "-k", "k1", "-r", "r1",
             "-f", "DISK=/dev/sda", "Backup failed", "exit 3"],
            environment: ["NO_COLOR": "1"])
        #expect(result.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["summary"] as? String == "delivered")
        let event = try #require(report["event"] as? [String: Any])
        #expect(event["title"] as? String == "Backup failed")
        #expect(event["body"] as? String == "exit 3")
        #expect(event["level"] as? String == "error")
        #expect(event["timeout"] as? String == "15s")
        #expect(event["source"] as? String == "backup")
        #expect(event["tags"] as? [String] == ["ops"])
        #expect(event["dedup_key"] as? String == "k1")
        #expect(event["replace_key"] as? String == "r1")
        #expect(event["fields"] as? [String: String] == ["DISK": "/dev/sda"])
        let sinks = try #require(report["sinks"] as? [[String: Any]])
        #expect(sinks.count == 1)
        #expect(sinks.first?["sink"] as? String == "tty")
        #expect(sinks.first?["status"] as? String == "delivered")
        #expect(sinks.first?["route"] as? String == "fallback")
    }

    @Test func bodyFromStandardInput() throws {
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "Log tail", "-"], environment: ["NO_COLOR": "1"], input: "line one\nline two\n")
        #expect(result.status == 0)
        #expect(result.standardError == "[info] Log tail: line one ⏎ line two\n")
    }

    @Test func controlSequencesNeverReachTheTerminal() throws {
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "evil\u{1B}]0;pwned\u{07}\u{1B}[2J title", "clip\u{1B}]52;c;ZXZpbA==\u{07}board\u{0}"],
            environment: ["NO_COLOR": "1"])
        #expect(result.status == 0)
        #expect(result.standardError == "[info] evil title: clipboard\n")
    }

    @Test func colourOnlyWhenAsked() throws {
        let config = try Self.terminalConfig()
        // stderr is a pipe here: plain by default...
        let plain = try ProcessRunner.notifyRoute(["send", "--config", config.path, "-l", "error", "x"])
        #expect(!plain.standardError.contains("\u{1B}"))
        // ...tinted when forced, and NO_COLOR does not stop `always`.
        let forced = try Self.terminalConfig().deletingLastPathComponent().appendingPathComponent("forced.yaml")
        try "sinks: { tty: { kind: terminal, color: always } }\nfallback: [tty]\n".write(to: forced, atomically: true, encoding: .utf8)
        let tinted = try ProcessRunner.notifyRoute(["send", "--config", forced.path, "-l", "error", "x"])
        #expect(tinted.standardError == "\u{1B}[31m✖ error\u{1B}[0m  x\n")
    }

    @Test func usageErrorsExit64() throws {
        for arguments in [["send", "-t", "5", "x"], ["send", "-A", "nolabel", "x"], ["send", "-f", "novalue", "x"],
                          ["send", "-l", "loud", "x"], ["send"], ["send", "--sink", "nosuch", "x"]] {
            let result = try ProcessRunner.notifyRoute(arguments, environment: ["NO_COLOR": "1"])
            #expect(result.status == 64, "\(arguments): \(result.standardError)")
            #expect(!result.standardError.isEmpty)
        }
    }

    @Test func anEmptyTitleIsBadEventData() throws {
        let result = try ProcessRunner.notifyRoute(["send", " \u{1B}[2J "], environment: ["NO_COLOR": "1"])
        #expect(result.status == 65)
        #expect(result.standardError == "notify-route: bad event: the title is empty; an event needs a one-line title\n")
    }

    @Test func noSinkAvailableExits69() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let config = directory.appendingPathComponent("c.yaml")
        try "sinks: { desk: { kind: desktop } }\nfallback: [desk]\n".write(to: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", config.path, "--json", "x"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path)/no-such-bus", "DISPLAY": ""])
        #expect(result.status == 69, "\(result.standardError)")
        #expect(result.standardOutput.contains("\"status\":\"unavailable\""))
    }

    @Test func aFailedSinkExits1() throws {
        // stdout is a pipe whose reader has gone: the write fails with EPIPE.
        let directory = try TestEnvironment.temporaryDirectory()
        let config = directory.appendingPathComponent("c.yaml")
        try "sinks: { out: { kind: terminal, output: stdout } }\nfallback: [out]\n".write(to: config, atomically: true, encoding: .utf8)
        let script = "(sleep 0.3; \"$0\" send --config \"$1\" x; echo \"rc=$?\" >&2) | true"
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, config.path])
        #expect(result.standardError.contains("notify-route: out: failed: stdout is a closed pipe (EPIPE)"))
        #expect(result.standardError.hasSuffix("rc=1\n"))
    }

    @Test func dryRunSendsNothing() throws {
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--dry-run", "quiet please"], environment: ["NO_COLOR": "1"])
        #expect(result.status == 0)
        #expect(result.standardError.isEmpty)
        #expect(result.standardOutput.contains("tty (terminal) via fallback: would show"))
    }

    /// What would happen, in words that say so: a sink that would deliver is not a failure.
    @Test func dryRunReportsAPlanNotAFailure() throws {
        let config = try Self.terminalConfig()
        let text = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--dry-run", "Disk", "full"], environment: ["NO_COLOR": "1"])
        #expect(text.status == 0)
        #expect(text.standardOutput == "planned: [info] Disk\n  tty (terminal) via fallback: would show\n")
        #expect(!text.standardOutput.contains("failed"))
        let json = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--dry-run", "--json", "Disk"], environment: ["NO_COLOR": "1"])
        #expect(json.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect(report["summary"] as? String == "planned")
        #expect((report["sinks"] as? [[String: Any]])?.first?["status"] as? String == "planned")
        #expect(!json.standardOutput.contains("failed"))
    }

    /// `-h` is what notify-send users type for a hint: a usage error that says what to use,
    /// never the help with exit 0 and nothing sent. The fast parser leaves every form to
    /// ArgumentParser's path, where the check is.
    @Test(arguments: [
        ["-h", "int:value:50", "Title"], ["-h", "int:value:50", "Title", "Body"], ["-h"], ["Title", "-h"],
        ["-vh", "Title"], ["-hint:value:50", "Title"], ["--dry-run", "-h", "x", "Title"], ["-l", "info", "-h", "string:x-y:z", "T"],
    ])
    func dashHIsAUsageErrorNotHelp(_ arguments: [String]) throws {
        #expect(FastSendParser.parse(arguments) == nil)
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(["send", "--config", config.path] + arguments, environment: ["NO_COLOR": "1"])
        #expect(result.status == 64)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains("send has no -h; it is not help (use --help)"), "\(result.standardError)")
        #expect(result.standardError.contains("are `notify-route notify-send`'s"), "\(result.standardError)")
        #expect(result.standardError.contains("Usage: notify-route send [<options>] <title> [<body>]"))
        #expect(!result.standardError.contains("[info]"), "nothing may be sent")
    }

    /// No combination of options exits 0 having sent nothing and said nothing: each either
    /// delivers (the terminal line on stderr), prints (help, a plan, a report), or fails.
    @Test func noCombinationExitsZeroSilently() throws {
        let config = try Self.terminalConfig()
        let combinations: [[String]] = [
            ["--help"], ["help"], ["--version"], ["-h"], ["-h", "x", "T"], ["-vh", "T"], ["-wh", "T"], ["--dry-run", "T"],
            ["--json", "T"], ["--no-wait", "T"], ["--dry-run", "--json", "T"], ["--json", "--no-wait", "T"], ["-w", "--dry-run", "T"],
            ["T", "--help"], ["--", "-h"], ["-v", "T"], ["T", "-"], ["--sink", "tty", "T"], ["-l", "debug", "T"],
            ["--experimental-dump-help"], ["-k", "k", "-r", "r", "T"],
        ]
        for arguments in combinations {
            let result = try ProcessRunner.notifyRoute(["send", "--config", config.path] + arguments, environment: ["NO_COLOR": "1"], input: "")
            if result.status == 0 {
                #expect(!(result.standardOutput + result.standardError).isEmpty, "\(arguments) exited 0 saying nothing")
            }
        }
    }

    @Test func waitWithoutAnInteractiveSinkSaysWhy() throws {
        let config = try Self.terminalConfig()
        let result = try ProcessRunner.notifyRoute(["send", "--config", config.path, "--wait", "x"], environment: ["NO_COLOR": "1"], timeLimit: .seconds(10))
        #expect(result.status == 0)
        #expect(result.standardError.contains("--wait: no sink that delivered this event reports actions or dismissal"))
    }
}

/// Help and usage name the tool and the subcommand as typed (`notify-route send`), for
/// every subcommand, whether ArgumentParser parsed it alone or in the whole tree.
@Suite struct UsageLineTests {
    static let subcommands = ["send", "close", "run", "ingest", "explain", "sinks", "config", "config check", "config show"]

    @Test(arguments: subcommands)
    func helpAndUsageErrorsShowTheFullCommand(_ subcommand: String) throws {
        let words = subcommand.split(separator: " ").map(String.init)
        for help in [words + ["--help"], ["help"] + words] {
            let result = try ProcessRunner.notifyRoute(help)
            #expect(result.status == 0)
            #expect(result.standardOutput.contains("USAGE: notify-route \(subcommand) "), "\(help): \(result.standardOutput)")
        }
        let error = try ProcessRunner.notifyRoute(words + ["--no-such-option"])
        #expect(error.status == 64)
        #expect(error.standardError.contains("Usage: notify-route \(subcommand) "), "\(error.standardError)")
        #expect(error.standardError.contains("See 'notify-route \(subcommand) --help'"))
    }

    /// A value the command refuses after parsing (`-A`, `run` without a command) too.
    @Test(arguments: [["send", "-A", "nolabel", "x"], ["explain", "-t", "soon", "x"], ["run", "--"], ["send"], ["close"]])
    func validationErrorsShowTheFullCommand(_ arguments: [String]) throws {
        let result = try ProcessRunner.notifyRoute(arguments)
        #expect(result.status == 64)
        #expect(result.standardError.contains("Usage: notify-route \(arguments[0]) "), "\(result.standardError)")
    }
}

@Suite struct ConfigCommandTests {
    @Test func lookupOrder() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let xdg = directory.appendingPathComponent("xdg/notify-route")
        try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true)
        let body = "sinks: { tty: { kind: terminal } }\nfallback: [tty]\n"
        try body.write(to: xdg.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
        let fromEnv = directory.appendingPathComponent("env.yaml")
        try body.write(to: fromEnv, atomically: true, encoding: .utf8)
        let explicit = directory.appendingPathComponent("explicit.yaml")
        try body.write(to: explicit, atomically: true, encoding: .utf8)

        let xdgHome = ["XDG_CONFIG_HOME": directory.appendingPathComponent("xdg").path]
        #expect(try ProcessRunner.notifyRoute(["config", "check"], environment: xdgHome).standardOutput
            .hasPrefix("\(xdg.path)/config.yaml: ok"))
        var both = xdgHome
        both["NOTIFY_ROUTE_CONFIG"] = fromEnv.path
        #expect(try ProcessRunner.notifyRoute(["config", "check"], environment: both).standardOutput.hasPrefix("\(fromEnv.path): ok"))
        #expect(try ProcessRunner.notifyRoute(["config", "check", "--config", explicit.path], environment: both).standardOutput
            .hasPrefix("\(explicit.path): ok"))
        // Nothing found: the embedded default.
        #expect(try ProcessRunner.notifyRoute(["config", "check"], environment: ["XDG_CONFIG_HOME": directory.appendingPathComponent("none").path])
            .standardOutput.hasPrefix("<embedded>: ok (3 sinks, 0 rules, 1 route)"))
        // An explicit file that does not exist is an error, not a silent fallback.
        let missing = try ProcessRunner.notifyRoute(["send", "--config", "/nonexistent.yaml", "x"])
        #expect(missing.status == 78)
        #expect(missing.standardError == "notify-route: /nonexistent.yaml:1:1: cannot read the config file: no such file\n")
    }

    @Test func showPrintsAnEffectiveConfigThatLoadsBack() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let source = directory.appendingPathComponent("in.yaml")
        try """
            defaults: { app: backupd, timeout: 6s }
            levels: { critical: { timeout: never } }
            sinks:
              desktop: { kind: desktop }
              tty: { kind: terminal, style: banner, min_level: info }
            rules:
              - name: tag backups
                match: { source: "backup*", level: ">=warning" }
                set: { tags: [ops], replace_key: "backup-{source}" }
            routes:
              - match: { level: ">=warning" }
                to: [desktop]
                dedup: { window: 10m }
                failover: [tty]
              - match: { tags: [ops] }
                to: [tty]
                continue: true
            fallback: [tty]
            """.write(to: source, atomically: true, encoding: .utf8)
        let shown = try ProcessRunner.notifyRoute(["config", "show", "--config", source.path])
        #expect(shown.status == 0, "\(shown.standardError)")
        for line in ["  timeout: 6s", "  app: backupd", "  deadline: 2s", "  warning: {timeout: 6s, priority: 4, urgency: normal, tint: yellow}",
                     "  critical: {timeout: never, priority: 2, urgency: critical, tint: white-on-red}", "  dedup: {window: 10m}",
                     "  failover: [tty]", "  continue: true"] {
            #expect(shown.standardOutput.contains(line + "\n"), "missing \(line)")
        }
        let roundTrip = directory.appendingPathComponent("shown.yaml")
        try shown.standardOutput.write(to: roundTrip, atomically: true, encoding: .utf8)
        let again = try ProcessRunner.notifyRoute(["config", "show", "--config", roundTrip.path])
        #expect(again.status == 0, "\(again.standardError)")
        // Showing the shown config gives the same config (only the origin comment differs).
        #expect(again.standardOutput.split(separator: "\n").dropFirst() == shown.standardOutput.split(separator: "\n").dropFirst())
    }

    @Test func configErrorsInSubcommandsExit78() throws {
        let broken = BrokenConfigTests.directory.appendingPathComponent("unknown-sink-in-route.yaml").path
        for arguments in [["explain", "--config", broken, "x"], ["sinks", "--config", broken], ["close", "--config", broken, "-r", "k"],
                          ["config", "show", "--config", broken]] {
            let result = try ProcessRunner.notifyRoute(arguments)
            #expect(result.status == 78, "\(arguments)")
            #expect(result.standardError.hasPrefix("notify-route: \(broken):7:19: unknown sink \"destkop\""))
        }
    }
}

@Suite struct OtherCommandTests {
    @Test func explainShowsRulesRoutesAndSinks() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let config = directory.appendingPathComponent("c.yaml")
        try """
            sinks: { tty: { kind: terminal }, log: { kind: terminal, output: stdout } }
            rules:
              - match: { source: "backup*" }
                set: { tags: [ops] }
            routes:
              - match: { level: ">=error" }
                to: [tty]
              - match: { tags: [ops] }
                to: [log]
            fallback: [tty]
            """.write(to: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.notifyRoute(["explain", "--config", config.path, "-s", "backup.nightly", "-l", "warning", "Backup slow"])
        #expect(result.status == 0)
        let expected = """
            rules:
              rule 1: matched — set tags +ops
                  source "backup.nightly" matches "backup*"
            routes:
              route 1: no match (to tty)
                  level warning is not >=error
              route 2: matched (to log)
                  tags include ops
            sinks:
              log (terminal) via route 2: would show
            """
        #expect(result.standardOutput.contains(expected), "\(result.standardOutput)")
        #expect(result.standardError.isEmpty)  // nothing was sent
    }

    /// The event line shows the rules' values; a sink whose route or own declaration sets a
    /// timeout, app or icon over them says what it gets.
    @Test func explainShowsTheValuesEachSinkGets() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let config = directory.appendingPathComponent("c.yaml")
        try """
            defaults: { timeout: 5s }
            sinks:
              tty: { kind: terminal, timeout: 2s }
              log: { kind: terminal, output: stdout, app: logger }
              plain: { kind: terminal }
            routes:
              - to: [tty, log, plain]
                set: { timeout: 9s, icon: dialog-warning }
              - to: [plain]
            """.write(to: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.notifyRoute(["explain", "--config", config.path, "-l", "warning", "Disk"])
        #expect(result.status == 0, "\(result.standardError)")
        let expected = """
              app notify-route, source (none), timeout 5s, tags (none)
            """
        #expect(result.standardOutput.contains(expected), "\(result.standardOutput)")
        let sinks = """
            sinks:
              tty (terminal) via route 1: would show
                  as delivered here: timeout 2s, icon dialog-warning
              log (terminal) via route 1: would show
                  as delivered here: timeout 9s, app logger, icon dialog-warning
              plain (terminal) via route 1: would show
                  as delivered here: timeout 9s, icon dialog-warning
            """
        #expect(result.standardOutput.contains(sinks), "\(result.standardOutput)")
    }

    @Test func sinksListsKindsAndAvailability() throws {
        let result = try ProcessRunner.notifyRoute(["sinks", "--json"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        #expect(result.status == 0)
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(listing["kinds"] as? [String] == ["terminal", "desktop", "journal", "exec", "alertmanager", "webhook"])
        let sinks = try #require(listing["sinks"] as? [[String: Any]])
        #expect(sinks.map { $0["name"] as? String } == ["terminal", "desktop", "journal"])
        let desktop = try #require(sinks.first { $0["name"] as? String == "desktop" })
        #expect(desktop["available"] as? Bool == false)
        #expect((desktop["reason"] as? String)?.isEmpty == false)
    }

    @Test func versionAndCompletion() throws {
        let version = try ProcessRunner.notifyRoute(["--version"])
        #expect(version.status == 0)
        #expect(version.standardOutput.split(separator: ".").count == 3)
        for shell in ["bash", "zsh", "fish"] {
            let completion = try ProcessRunner.notifyRoute(["--generate-completion-script", shell])
            #expect(completion.status == 0)
            #expect(completion.standardOutput.contains("send"))
        }
    }

    @Test func closeWithoutAKnownNotificationExits1() throws {
        let result = try ProcessRunner.notifyRoute(["close", "-r", "nothing-here"], environment: ["NO_COLOR": "1"])
        #expect(result.status == 1)
        #expect(result.standardError == "notify-route: no notification is known for replace key \"nothing-here\"\n")
    }
}

/// The configs we ship must stay valid as the code changes.
@Suite struct ShippedConfigTests {
    static let configDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("config")

    static var files: [String] {
        let examples = (try? FileManager.default.contentsOfDirectory(atPath: configDirectory.appendingPathComponent("examples").path)) ?? []
        return ["notify-route.yaml"] + examples.filter { $0.hasSuffix(".yaml") }.sorted().map { "examples/\($0)" }
    }

    @Test func thereAreAtLeastTwoExamples() {
        #expect(Self.files.count >= 3)
    }

    @Test(arguments: files)
    func shippedConfigChecks(file: String) throws {
        let path = Self.configDirectory.appendingPathComponent(file).path
        let result = try ProcessRunner.notifyRoute(["config", "check", path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasPrefix("\(path): ok"))
    }
}
