import Foundation
import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteJournal
import NotifyRouteTestSupport
import Testing
@testable import NotifyRouteCLI

/// The config file as the CLI reads and prints it: `config show` for every shipped config
/// loads back equal, the key reference is up to date, and a config that is not a regular
/// file is refused at once.
@Suite struct ConfigFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let shipped = ["config/notify-route.yaml", "config/examples/backup-server.yaml", "config/examples/developer-laptop.yaml",
                          "config/examples/exec-plugin.yaml"]

    static func load(_ text: String, origin: String) throws -> RouterConfiguration {
        let node = try ConfigNode.parse(yaml: text, file: origin)
        return try RouterLoader.configuration(node, origin: origin, registry: BuiltinPlugins.registry)
    }

    @Test(arguments: shipped)
    func configShowOfAShippedConfigLoadsBackEqual(file: String) throws {
        let path = Self.root.appendingPathComponent(file).path
        let shown = try ProcessRunner.notifyRoute(["config", "show", "--config", path])
        #expect(shown.status == 0, "\(shown.standardError)")
        let original = try Self.load(try String(contentsOfFile: path, encoding: .utf8), origin: path)
        let again = try Self.load(shown.standardOutput, origin: "shown.yaml")
        #expect(again == original, "\(shown.standardOutput)")
        // Every top-level key is there, with defaults filled in.
        for key in ConfigSchema.names(in: .top) {
            #expect(shown.standardOutput.contains("\n\(key):"), "\(key) missing")
        }
    }

    /// `config/REFERENCE.md` is what `notify-route config reference` prints; regenerate it with
    /// `swift run notify-route config reference > config/REFERENCE.md`.
    @Test func theKeyReferenceIsUpToDate() throws {
        let reference = try ProcessRunner.notifyRoute(["config", "reference"])
        #expect(reference.status == 0)
        let committed = try String(contentsOf: Self.root.appendingPathComponent("config/REFERENCE.md"), encoding: .utf8)
        #expect(reference.standardOutput == committed,
                "config/REFERENCE.md is out of date: swift run notify-route config reference > config/REFERENCE.md")
        for key in ConfigSchema.keys + BuiltinPlugins.all.flatMap(\.options) {
            #expect(committed.contains("| `\(key.name)` |"), "\(key.section) \(key.name)")
        }
    }

    /// Each built-in plugin's options, every one at its documented example: the config
    /// loads, the plugin accepts the values, and `config show` gives them back.
    @Test(arguments: BuiltinPlugins.all.map(\.kind))
    func everyPluginOptionExampleIsAccepted(kind: String) throws {
        let plugin = try #require(BuiltinPlugins.all.first { $0.kind == kind })
        let options = plugin.options.map { "\($0.name): \($0.example)" }.joined(separator: ", ")
        let config = try Self.load("sinks:\n  one: { kind: \(kind), \(options) }\nfallback: [one]\n", origin: "t.yaml")
        _ = try plugin.makeSink(config.sinks[0].options)
        #expect(try Self.load(try config.effectiveYAML(), origin: "shown.yaml") == config)
    }

    /// The defaults the reference documents are the ones the plugins use.
    @Test func documentedPluginDefaultsAreTheRealOnes() throws {
        func documented(_ plugin: SinkPlugin, _ name: String) -> String? {
            guard case .value(let text)? = plugin.options.first(where: { $0.name == name })?.defaultValue else { return nil }
            return text
        }
        #expect(try documented(DesktopSink.plugin, "probe_timeout").map(DurationParser.parse) == DesktopSink.Configuration().probeTimeout)
        let journal = try #require(try JournalSink.plugin.makeSink(SinkOptions(sinkName: "j", kind: "journal")) as? JournalSink)
        #expect(documented(JournalSink.plugin, "queue_size") == String(journal.queueSize))
    }

    @Test func aFIFOIsRefusedAtOnceWithoutWaitingForAWriter() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let fifo = directory.appendingPathComponent("config.yaml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for arguments in [["config", "check", fifo], ["send", "--config", fifo, "must not appear"]] {
            let started = ContinuousClock.now
            let result = try ProcessRunner.notifyRoute(arguments, timeLimit: .seconds(10))
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(result.status == 78, "\(arguments): \(result.standardError)")
            #expect(result.standardError
                == "notify-route: \(fifo):1:1: cannot read the config file: it is a FIFO (named pipe); expected a regular file\n")
        }
        // Through the environment too.
        let result = try ProcessRunner.notifyRoute(["config", "check"], environment: ["NOTIFY_ROUTE_CONFIG": fifo], timeLimit: .seconds(10))
        #expect(result.status == 78)
    }

    @Test(arguments: ["/dev/zero", "/dev/null", "/dev/tty", "/dev/urandom"])
    func aDeviceIsRefusedUnread(device: String) throws {
        guard FileManager.default.fileExists(atPath: device) else { return }
        let result = try ProcessRunner.notifyRoute(["config", "check", device], timeLimit: .seconds(10))
        #expect(result.status == 78)
        #expect(result.standardError
            == "notify-route: \(device):1:1: cannot read the config file: it is a character device; expected a regular file\n")
    }

    @Test func aDirectoryIsRefusedWithTheReason() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let result = try ProcessRunner.notifyRoute(["config", "check", directory.path])
        #expect(result.status == 78)
        #expect(result.standardError.hasSuffix("cannot read the config file: it is a directory; expected a regular file\n"))
    }

    @Test func aByteOrderMarkIsAccepted() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let file = directory.appendingPathComponent("bom.yaml")
        let yaml = "sinks:\n  tty: { kind: terminal, output: stdout }\nroutes:\n  - match: {}\n    to: [tty]\nfallback: [tty]\n"
        try Data([0xEF, 0xBB, 0xBF] + Array(yaml.utf8)).write(to: file)
        let check = try ProcessRunner.notifyRoute(["config", "check", file.path])
        #expect(check.status == 0, "\(check.standardError)")
        #expect(check.standardOutput == "\(file.path): ok (1 sink, 0 rules, 1 route)\n")
        let send = try ProcessRunner.notifyRoute(["send", "--config", file.path, "with a BOM"], environment: ["NO_COLOR": "1"])
        #expect(send.status == 0, "\(send.standardError)")
        #expect(send.standardOutput.contains("with a BOM"))
        // Errors after it still name the line and column as an editor shows them.
        try Data([0xEF, 0xBB, 0xBF] + Array("sinks:\n  tty: { kind: terminal, colr: x }\nfallback: [tty]\n".utf8)).write(to: file)
        let broken = try ProcessRunner.notifyRoute(["config", "check", file.path])
        #expect(broken.status == 78)
        #expect(broken.standardError.hasPrefix("notify-route: \(file.path):2:26: unknown key \"colr\" in sink \"tty\"; did you mean \"color\"?"))
    }
}
