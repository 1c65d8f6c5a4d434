import Foundation
import NotifyRouteTestSupport
import Testing

/// A config that sends to the example exec plugin (config/examples/notify-route-sink-example),
/// which appends every request it gets to a log file: what the plugin saw can be read back.
struct ExecFixture {
    var directory: URL
    var config: URL
    var log: URL { directory.appendingPathComponent("plugin.log") }
    var runtime: URL { directory.appendingPathComponent("runtime") }
    var environment: [String: String] { ["NO_COLOR": "1", "XDG_RUNTIME_DIR": runtime.path] }

    /// The shipped example, copied once into a ``trustedDirectory()``: exec trust refuses a
    /// program under a directory others can write, which the checkout may be in (a clone in /tmp).
    static let examplePlugin: URL = {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/examples/notify-route-sink-example")
        guard let directory = try? trustedDirectory() else { return shipped }
        let copy = directory.appendingPathComponent("notify-route-sink-example")
        guard (try? FileManager.default.copyItem(at: shipped, to: copy)) != nil else { return shipped }
        chmod(copy.path, 0o755)
        return copy
    }()

    /// `sinks:` holds `tty` (terminal) and `ex` (the example plugin, or `kind` when given);
    /// every event goes to `ex` with `tty` as its failover.
    init(kind: String? = nil, deadline: String = "10s", faults: Bool = false, options: String = "") throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-exec")
        chmod(directory.path, 0o755)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("runtime"), withIntermediateDirectories: true)
        chmod(directory.appendingPathComponent("runtime").path, 0o700)
        config = directory.appendingPathComponent("config.yaml")
        let plugin = kind.map { "kind: \($0)" } ?? "kind: exec\n    command: [\(Self.examplePlugin.path)]"
        try """
            sinks:
              tty: { kind: terminal }
              ex:
                \(plugin)
                env: { NOTIFY_ROUTE_EXAMPLE_LOG: \(directory.path)/plugin.log, NOTIFY_ROUTE_EXAMPLE_FAULTS: "\(faults ? 1 : 0)" }
                deadline: \(deadline)
            \(options)
            routes:
              - to: [ex]
                failover: [tty]
            fallback: [tty]
            """.write(to: config, atomically: true, encoding: .utf8)
        chmod(config.path, 0o644)
    }

    /// A fresh directory for programs an exec sink may run: not under /tmp, which others can
    /// write (sticky or not, a program there is refused), but next to the built binary, in
    /// directories only the user or root can write.
    static func trustedDirectory() throws -> URL {
        // Beside the binary, unless the checkout sits under a directory others can write
        // (a clone in /tmp): then in the user's cache, which exec trust accepts.
        let candidates = [
            TestEnvironment.notifyRouteBinary.deletingLastPathComponent(),
            URL(fileURLWithPath: ProcessInfo.processInfo.environment["HOME"] ?? "/root").appendingPathComponent(".cache"),
            URL(fileURLWithPath: "/var/cache"),
        ]
        let base = try #require(candidates.first(where: nobodyElseCanWrite), "no directory free of world-writable parents for test programs")
        let url = base.appendingPathComponent("notify-route-exec-test-programs").appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for directory in [url, url.deletingLastPathComponent()] { chmod(directory.path, 0o755) }
        return url
    }

    /// True when `directory` and every directory above it are closed to writes by others.
    static func nobodyElseCanWrite(_ directory: URL) -> Bool {
        var path = directory.resolvingSymlinksInPath().path
        while true {
            var info = stat()
            if stat(path, &info) == 0 && info.st_mode & 0o002 != 0 { return false }
            if path == "/" || path.isEmpty { return true }
            path = (path as NSString).deletingLastPathComponent
        }
    }

    /// A copy of the example plugin in `directory`, with `mode`.
    static func copyOfExamplePlugin(in directory: URL, mode: mode_t = 0o755) throws -> URL {
        let copy = directory.appendingPathComponent("notify-route-sink-copy")
        try FileManager.default.copyItem(at: examplePlugin, to: copy)
        chmod(copy.path, mode)
        return copy
    }

    /// The config with the exec sink's command set to `program`.
    func pointing(at program: String) throws {
        let lines = try String(contentsOf: config, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasPrefix("    command: [") ? "    command: [\(program)]" : String($0)
        }
        try lines.joined(separator: "\n").write(to: config, atomically: true, encoding: .utf8)
        chmod(config.path, 0o644)
    }

    /// The requests the plugin logged, in order.
    func requests() throws -> [[String: Any]] {
        guard FileManager.default.fileExists(atPath: log.path) else { return [] }
        return try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func reports(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func sink(_ report: [String: Any], _ name: String) -> [String: Any]? {
        (report["sinks"] as? [[String: Any]])?.first { $0["sink"] as? String == name }
    }
}

@Suite struct ExecSinkCLITests {
    @Test func deliversThroughTheExamplePlugin() throws {
        let fixture = try ExecFixture()
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", fixture.config.path, "--json", "-l", "warning", "-g", "ops", "-f", "DISK=/dev/sda", "-A", "ack=Acknowledge",
             "Disk full", "92% used"],
            environment: fixture.environment, timeLimit: .seconds(60))
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try ExecFixture.reports(result.standardOutput).first)
        let sink = try #require(ExecFixture.sink(report, "ex"))
        #expect(sink["status"] as? String == "delivered")
        #expect(sink["kind"] as? String == "exec")
        #expect(sink["handle"] as? String == "1")
        #expect(ExecFixture.sink(report, "tty") == nil)  // no failover needed

        let request = try #require(try fixture.requests().first)
        #expect(request["type"] as? String == "deliver")
        #expect(request["intent"] as? String == "show")
        #expect(request["sink"] as? String == "ex")
        let event = try #require(request["event"] as? [String: Any])
        #expect(event["title"] as? String == "Disk full")
        #expect(event["body"] as? String == "92% used")
        #expect(event["level"] as? String == "warning")
        #expect(event["timeout"] as? String == "8s")
        #expect(event["tags"] as? [String] == ["ops"])
        #expect(event["fields"] as? [String: String] == ["DISK": "/dev/sda"])
        #expect((event["actions"] as? [[String: String]])?.first == ["id": "ack", "label": "Acknowledge"])
        #expect(event["priority"] as? Int == 4)
    }

    @Test func aReplaceKeyReachesThePluginAsReplaceWithItsHandle() throws {
        let fixture = try ExecFixture()
        for title in ["Deploy started", "Deploy done"] {
            let result = try ProcessRunner.notifyRoute(
                ["send", "--config", fixture.config.path, "-r", "deploy", title], environment: fixture.environment, timeLimit: .seconds(60))
            #expect(result.status == 0, "\(result.standardError)")
        }
        let requests = try fixture.requests()
        #expect(requests.map { $0["intent"] as? String } == ["show", "replace"])
        #expect(requests.last?["handle"] as? String == "1")
    }

    @Test func aPluginNamedOnPathIsFoundByItsKind() throws {
        let fixture = try ExecFixture(kind: "demo")
        let bin = try ExecFixture.trustedDirectory().appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: bin.appendingPathComponent("notify-route-sink-demo"), withDestinationURL: ExecFixture.examplePlugin)
        var environment = fixture.environment
        environment["PATH"] = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try ProcessRunner.notifyRoute(
            ["send", "--config", fixture.config.path, "--json", "Found on PATH"], environment: environment, timeLimit: .seconds(60))
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try ExecFixture.reports(result.standardOutput).first)
        #expect(ExecFixture.sink(report, "ex")?["status"] as? String == "delivered")
        #expect(ExecFixture.sink(report, "ex")?["kind"] as? String == "demo")
        #expect((try fixture.requests().first?["event"] as? [String: Any])?["title"] as? String == "Found on PATH")

        // Without it on PATH the kind is unknown: a config error that says where a plugin would come from.
        let missing = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "x"], environment: fixture.environment)
        #expect(missing.status == 78)
        #expect(missing.standardError.contains("unknown sink kind \"demo\""))
        #expect(missing.standardError.contains("notify-route-sink-KIND on PATH"))
    }

    @Test func aPluginThatDiesFailsThatDeliveryAndIsRestartedForTheNext() throws {
        let fixture = try ExecFixture(faults: true)
        let result = try ProcessRunner.notifyRoute(
            ["ingest", "--config", fixture.config.path, "--json"], environment: fixture.environment,
            input: "{\"title\":\"one\"}\n{\"title\":\"example: die\"}\n{\"title\":\"three\"}\n", timeLimit: .seconds(60))
        #expect(result.status == 0, "\(result.standardError)")  // the failover delivered the second
        let reports = try ExecFixture.reports(result.standardOutput)
        try #require(reports.count == 3)
        #expect(reports.map { ExecFixture.sink($0, "ex")?["status"] as? String } == ["delivered", "failed", "delivered"])
        let failure = try #require(ExecFixture.sink(reports[1], "ex"))
        #expect((failure["error"] as? String)?.contains("exited with status 3") == true, "\(failure)")
        #expect((failure["error"] as? String)?.contains("dying on request") == true)
        #expect(ExecFixture.sink(reports[1], "tty")?["failover_for"] as? String == "ex")
        #expect(result.standardError.contains("notify-route: sink \"ex\": dying on request"))  // its stderr, prefixed
        #expect(result.standardError.contains("notify-route: sink \"ex\": restarting the plugin"))
        let pids = try fixture.requests().map { $0["pid"] as? Int }
        try #require(pids.count == 3)
        #expect(pids[0] == pids[1] && pids[1] != pids[2])
    }

    @Test func aPluginThatHangsIsKilledPastItsDeadlineAndTheFailoverDelivers() throws {
        let fixture = try ExecFixture(deadline: "1s", faults: true)
        let result = try ProcessRunner.notifyRoute(
            ["ingest", "--config", fixture.config.path, "--json"], environment: fixture.environment,
            input: "{\"title\":\"example: hang\"}\n{\"title\":\"after\"}\n", timeLimit: .seconds(60))
        #expect(result.status == 0, "\(result.standardError)")
        let reports = try ExecFixture.reports(result.standardOutput)
        try #require(reports.count == 2)
        let hung = try #require(ExecFixture.sink(reports[0], "ex"))
        #expect(hung["status"] as? String == "failed")
        #expect(hung["reason"] as? String == "timed-out")
        #expect(ExecFixture.sink(reports[0], "tty")?["status"] as? String == "delivered")
        #expect(ExecFixture.sink(reports[1], "ex")?["status"] as? String == "delivered")
        #expect(result.standardError.contains("killed the plugin"))
        let pids = try fixture.requests().compactMap { $0["pid"] as? Int32 }
        try #require(pids.count == 2)
        #expect(pids[0] != pids[1])
        // The hung plugin is gone, not left behind.
        #expect(kill(pids[0], 0) != 0 && errno == ESRCH)
    }

    @Test func aConfigOthersCanWriteIsRefused() throws {
        let fixture = try ExecFixture()
        chmod(fixture.config.path, 0o666)
        let result = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "x"], environment: fixture.environment)
        #expect(result.status == 78)
        #expect(result.standardError.contains("config.yaml:3:3: refusing it: sink \"ex\" runs an external program"), "\(result.standardError)")
        #expect(result.standardError.contains("writable by group and others (mode 0666); run: chmod go-w"))
        #expect(try fixture.requests().isEmpty)  // nothing was started

        chmod(fixture.config.path, 0o620)
        let group = try ProcessRunner.notifyRoute(["config", "check", fixture.config.path], environment: fixture.environment)
        #expect(group.status == 78)
        #expect(group.standardError.contains("writable by its group"))

        chmod(fixture.config.path, 0o644)
        chmod(fixture.directory.path, 0o777)
        defer { chmod(fixture.directory.path, 0o755) }
        let directory = try ProcessRunner.notifyRoute(["config", "check", fixture.config.path], environment: fixture.environment)
        #expect(directory.status == 78)
        #expect(directory.standardError.contains("so the file could be replaced"))
    }

    /// The program is held to the config's rules, and more: no directory above it may be
    /// writable by others, sticky or not (README, exec).
    @Test func aProgramOthersCouldReplaceIsRefused() throws {
        let fixture = try ExecFixture()
        let trusted = try ExecFixture.trustedDirectory()
        func check(_ program: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try fixture.pointing(at: program)
            let result = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "x"], environment: fixture.environment)
            #expect(result.status == 78, "\(program): \(result.standardError)", sourceLocation: sourceLocation)
            #expect(result.standardError.contains("config.yaml:3:3: refusing it: sink \"ex\" runs an external program (\(program))"),
                    "\(result.standardError)", sourceLocation: sourceLocation)
            #expect(result.standardError.contains(expected), "\(result.standardError)", sourceLocation: sourceLocation)
            #expect(try fixture.requests().isEmpty, "nothing was started", sourceLocation: sourceLocation)
        }

        // The file itself: writable by its group, by others.
        let program = try ExecFixture.copyOfExamplePlugin(in: trusted, mode: 0o775)
        try check(program.path, "the program \(program.path) is writable by its group (mode 0775); run: chmod go-w \(program.path)")
        chmod(program.path, 0o757)
        try check(program.path, "is writable by others (mode 0757)")
        chmod(program.path, 0o755)

        // Its directory, or one further up: writable by others, sticky (as /tmp) or not.
        let open = trusted.appendingPathComponent("open/deeper")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        let nested = try ExecFixture.copyOfExamplePlugin(in: open)
        chmod(open.path, 0o777)
        try check(nested.path, "the directory \(open.path) above the program \(nested.path) is writable by group and others (mode 0777)")
        chmod(open.path, 0o755)
        chmod(open.deletingLastPathComponent().path, 0o1777)
        try check(nested.path, "the directory \(open.deletingLastPathComponent().path) above the program \(nested.path) is writable by group and others (mode 01777, sticky)")
        chmod(open.deletingLastPathComponent().path, 0o755)

        // Under /tmp (the fixture's directory): /tmp is sticky and writable by all.
        let underTmp = try ExecFixture.copyOfExamplePlugin(in: fixture.directory)
        try check(underTmp.path, "is writable by group and others (mode 01777, sticky): anyone could have put a program there first")

        // A symbolic link in a trusted directory to a program in an open one: checked where it really is.
        let link = trusted.appendingPathComponent("link-to-tmp")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: underTmp)
        try check(link.path, "above the program \(link.path) is writable by group and others (mode 01777, sticky)")

        // And the same copy where only root can write runs.
        try fixture.pointing(at: nested.path)
        let fine = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "--json", "fine"], environment: fixture.environment)
        #expect(fine.status == 0, "\(fine.standardError)")
        #expect(try fixture.requests().count == 1)
    }

    /// A bare name (or a kind found on PATH) is checked in every PATH directory the lookup
    /// tries: the one it is found in, and any before it, where a program could be put later.
    @Test func aProgramFoundOnPathInADirectoryOthersCanWriteIsRefused() throws {
        let trusted = try ExecFixture.trustedDirectory()
        let bin = trusted.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        chmod(bin.path, 0o755)
        try FileManager.default.copyItem(at: ExecFixture.examplePlugin, to: bin.appendingPathComponent("notify-route-sink-demo"))
        let systemPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"

        // Found by its kind, and named as a bare command of a `kind: exec` sink.
        for kind in ["demo", nil] {
            let fixture = try ExecFixture(kind: kind)
            if kind == nil { try fixture.pointing(at: "notify-route-sink-demo") }
            func send(_ path: String) throws -> ProcessResult {
                var environment = fixture.environment
                environment["PATH"] = path
                return try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "--json", "x"], environment: environment)
            }
            let fine = try send(bin.path + ":" + systemPath)
            #expect(fine.status == 0, "\(fine.standardError)")

            // Found in a directory others can write (a /tmp one).
            let openBin = fixture.directory.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: openBin, withIntermediateDirectories: true)
            try? FileManager.default.copyItem(at: ExecFixture.examplePlugin, to: openBin.appendingPathComponent("notify-route-sink-demo"))
            let found = try send(openBin.path + ":" + systemPath)
            #expect(found.status == 78, "\(found.standardError)")
            #expect(found.standardError.contains(
                "the directory /tmp above the PATH entry \(openBin.path) where notify-route-sink-demo is looked up is writable by group and others (mode 01777, sticky)"),
                "\(found.standardError)")

            // Found in a trusted one, behind one others can write.
            let empty = fixture.directory.appendingPathComponent("empty")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            let behind = try send(empty.path + ":" + bin.path + ":" + systemPath)
            #expect(behind.status == 78, "\(behind.standardError)")
            #expect(behind.standardError.contains("above the PATH entry \(empty.path) where notify-route-sink-demo is looked up"), "\(behind.standardError)")
            #expect(try fixture.requests().count == 1, "only the trusted run started the plugin")
        }
    }

    /// A config reached through a symbolic link is checked where it really is, and where
    /// the link is (whoever can write there can swap the link).
    @Test func aSymlinkedConfigIsCheckedWhereItReallyIs() throws {
        let fixture = try ExecFixture()
        let open = fixture.directory.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        let good = fixture.directory.appendingPathComponent("good")
        try FileManager.default.createDirectory(at: good, withIntermediateDirectories: true)
        chmod(good.path, 0o755)
        chmod(open.path, 0o777)
        defer { chmod(open.path, 0o755) }

        // The file in a directory others can write, the link in a good one.
        let real = open.appendingPathComponent("real.yaml")
        try FileManager.default.copyItem(at: fixture.config, to: real)
        chmod(real.path, 0o644)
        let link = good.appendingPathComponent("link.yaml")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let viaLink = try ProcessRunner.notifyRoute(["config", "check", link.path], environment: fixture.environment)
        #expect(viaLink.status == 78, "\(viaLink.standardError)")
        #expect(viaLink.standardError.contains("the directory \(open.path) above the config \(link.path) is writable by group and others (mode 0777)"),
                "\(viaLink.standardError)")

        // The file in a good directory, the link in one others can write.
        let swappable = open.appendingPathComponent("link.yaml")
        try FileManager.default.createSymbolicLink(at: swappable, withDestinationURL: fixture.config)
        let inOpen = try ProcessRunner.notifyRoute(["config", "check", swappable.path], environment: fixture.environment)
        #expect(inOpen.status == 78, "\(inOpen.standardError)")
        #expect(inOpen.standardError.contains("the directory \(open.path) above the config"), "\(inOpen.standardError)")

        // Both good: accepted.
        let both = good.appendingPathComponent("both.yaml")
        try FileManager.default.createSymbolicLink(at: both, withDestinationURL: fixture.config)
        let accepted = try ProcessRunner.notifyRoute(["config", "check", both.path], environment: fixture.environment)
        #expect(accepted.status == 0, "\(accepted.standardError)")
    }

    @Test func aMissingCommandIsUnavailableAndTheFailoverDelivers() throws {
        let fixture = try ExecFixture()
        let text = try String(contentsOf: fixture.config, encoding: .utf8)
            .replacingOccurrences(of: ExecFixture.examplePlugin.path, with: "no-such-notify-route-plugin")
        try text.write(to: fixture.config, atomically: true, encoding: .utf8)
        chmod(fixture.config.path, 0o644)
        let result = try ProcessRunner.notifyRoute(["send", "--config", fixture.config.path, "--json", "x"], environment: fixture.environment)
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try ExecFixture.reports(result.standardOutput).first)
        #expect(ExecFixture.sink(report, "ex")?["status"] as? String == "unavailable")
        #expect((ExecFixture.sink(report, "ex")?["reason"] as? String)?.contains("no executable \"no-such-notify-route-plugin\" in PATH") == true)
        #expect(ExecFixture.sink(report, "tty")?["status"] as? String == "delivered")
    }
}
