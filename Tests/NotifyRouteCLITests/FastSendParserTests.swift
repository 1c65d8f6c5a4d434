import ArgumentParser
import NotifyRoute
import NotifyRouteTestSupport
import Testing

@testable import NotifyRouteCLI

/// `send`'s fast parser against ArgumentParser, the reference: for every argument list
/// the fast parser accepts, ArgumentParser must parse the same ``SendRequest``; for the
/// forms people type it must accept (or the fast path is dead code); for everything else
/// it must step aside, so that ArgumentParser's message and exit code are what users see.
@Suite struct FastSendParserTests {
    /// ArgumentParser's reading of `send ARGUMENTS`, as the fast parser's type; `nil` when it refuses them.
    func argumentParser(_ arguments: [String]) -> SendRequest? {
        guard let command = try? SendCommand.parseAsRoot(arguments) as? SendCommand else { return nil }
        return command.request
    }

    /// Forms from the README, the man page style of scripts, and the tests of the CLI.
    static let accepted: [[String]] = [
        ["Backup done"],
        ["Disk almost full", "92% used on /"],
        ["-l", "warning", "Disk almost full", "92% used on /"],
        ["--level", "critical", "--timeout", "never", "Database down", "connection refused"],
        ["--level=error", "--timeout=5s", "title", "body"],
        ["--config", "/etc/notify-route/x.yaml", "--sink", "journal", "a", "b"],
        ["--config=/tmp/c.yaml", "--sink=desktop", "--sink=journal", "a"],
        ["-v", "-w", "--json", "t"],
        ["--verbose", "--wait", "--no-wait", "--dry-run", "--json", "t", "b"],
        ["-s", "backup", "-a", "cron", "-g", "nightly", "-g", "disk", "-k", "disk:/", "-r", "disk", "t"],
        ["--source", "db.pool", "--app", "api", "--tag", "x", "--dedup-key", "k", "--replace-key", "r", "t"],
        ["-i", "dialog-warning", "-c", "device", "t"],
        ["-A", "ack=Acknowledge", "--action", "snooze=Snooze 5m", "t"],
        ["-f", "DISK=/dev/sda", "--field", "MOUNT=/", "--field=A==B", "t"],
        ["-t", "1500ms", "t"], ["-t", "default", "t"], ["-t", "2m", "t"],
        ["t", "-"],
        ["--", "-title that starts with a dash", "-body too"],
        ["-l", "success", "--", "t", "b"],
        ["", ""],
        ["t", ""],
        ["--source", "", "t"],
        ["ünïcödé ✓", "body\nwith\nlines"],
        ["--dry-run", "t", "b"],
        ["t", "b", "--level", "info"],
        ["t", "--json", "b"],
        ["-l", "err", "t"], ["--level=crit", "t"], ["-l", "3", "t"], ["--level", "7", "t"],
    ]

    @Test func syslogNamesAndNumbersMapOntoOurLevels() throws {
        let cases: [(String, Level)] = [
            ("emerg", .critical), ("alert", .critical), ("crit", .critical), ("err", .error), ("warning", .warning),
            ("notice", .notice), ("info", .info), ("debug", .debug), ("0", .critical), ("2", .critical),
            ("3", .error), ("4", .warning), ("5", .notice), ("6", .info), ("7", .debug),
        ]
        for (name, level) in cases {
            #expect(FastSendParser.parse(["-l", name, "t"])?.flags.level == level, "\(name)")
            #expect(argumentParser(["-l", name, "t"])?.flags.level == level, "\(name)")
        }
        #expect(argumentParser(["-l", "8", "t"]) == nil)
        #expect(argumentParser(["-l", "error", "t"])?.flags.level == .error)
    }

    @Test(arguments: accepted)
    func theUsualFormsTakeTheFastPathAndMeanWhatArgumentParserReads(_ arguments: [String]) throws {
        let fast = try #require(FastSendParser.parse(arguments), "the fast parser should accept \(arguments)")
        let reference = try #require(argumentParser(arguments), "ArgumentParser refuses \(arguments)")
        #expect(fast == reference)
    }

    /// What the fast parser must leave to ArgumentParser (most of these are errors there,
    /// some are valid forms it does not read itself).
    static let leftToArgumentParser: [[String]] = [
        [], ["--help"], ["-h"], ["help"], ["t", "help"], ["--version"],
        ["-l", "loud", "t"], ["--level"], ["-l"], ["t", "-l"],
        ["-lwarning", "t"], ["-l=warning", "t"], ["-vw", "t"],
        ["--unknown", "t"], ["-x", "t"], ["--sinks", "a", "t"],
        ["a", "b", "c"],
        ["-l", "info", "-l", "error", "t"], ["-v", "-v", "t"], ["--json", "--json", "t"],
        ["--source", "-x", "t"], ["--config", "--verbose", "t"],
        ["-t", "soon", "t"], ["-A", "no-equals", "t"], ["-f", "=x", "t"], ["-f", "novalue", "t"],
        ["--dry-run=yes", "t"], ["--json=1", "t"],
        ["--source=", "t", "b"],  // ArgumentParser takes `t` as the source here
        ["-", "body"], ["-title"],
        ["--experimental-dump-help"], ["--generate-completion-script", "bash"],
    ]

    @Test(arguments: leftToArgumentParser)
    func everythingElseIsLeftToArgumentParser(_ arguments: [String]) {
        #expect(FastSendParser.parse(arguments) == nil)
    }

    /// Random argument lists from the parts above: wherever the fast parser answers,
    /// ArgumentParser answers the same. A fixed seed, so a failure is reproducible.
    @Test func randomArgumentListsNeverDisagree() throws {
        let parts: [[String]] = [
            ["-l", "warning"], ["--level", "debug"], ["--level=notice"], ["-l", "bogus"], ["-t", "5s"], ["-t", "x"],
            ["-s", "svc"], ["--source=a=b"], ["-g", "t1"], ["--tag", "t2"], ["-k", "key"], ["-r", "rk"], ["-i", "icon"],
            ["-c", "cat"], ["-A", "a=b"], ["-A", "bad"], ["-f", "K=V"], ["--sink", "journal"], ["--config", "/c.yaml"],
            ["-v"], ["-w"], ["--no-wait"], ["--dry-run"], ["--json"], ["--"], ["title"], ["body"], ["-"], ["help"],
            ["--help"], ["-vw"], ["--nope"], [""], ["-l"], ["--source="], ["--app=x"], ["--tag=-x"], ["--config=--v"],
            ["-h"], ["-h", "int:value:50"], ["-vh"],
        ]
        var generator = SplitMix64(seed: 0x6E6F_7469_6679)
        var agreed = 0
        for _ in 0..<2_000 {
            var arguments: [String] = []
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                arguments += parts[Int.random(in: 0..<parts.count, using: &generator)]
            }
            guard let fast = FastSendParser.parse(arguments) else { continue }
            let reference = argumentParser(arguments)
            #expect(reference == fast, "\(arguments)")
            agreed += 1
        }
        // The generator must reach the fast path often enough to mean something.
        #expect(agreed > 100)
    }
}
