import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run the recorded events through another config, deliver nothing, and print what would change.",
        discussion: """
            Each recorded event goes through NEW's rules, routes and policies in its original order and at its \
            original time, with a fresh state. Printed: each event whose outcome would differ (per sink: \
            delivered, suppressed with the reason, or dropped), then a summary. Silences and the pause are \
            not the config's: what they held counts as delivered. \
            Exit codes: 0 replayed (whether or not anything changes), 64 usage, 78 NEW is broken or the history cannot be read.
            """)

    @Option(name: .long, help: ArgumentHelp("The config to try.", valueName: "NEW"))
    var config: String

    @Option(name: .long, help: ArgumentHelp("Only events of the last DURATION (1h, 1d).", valueName: "DURATION"))
    var since: String?

    @Flag(name: .long, help: "One JSON object per changed event (time, event, before, after), then one summary object.")
    var json = false

    @Argument(help: ArgumentHelp("Only events matching these conditions (level>=warning source=backup*).", valueName: "MATCHER"))
    var matchers: [String] = []

    func run() async throws {
        let matcher = try MemoryCommand.matcher(matchers)
        let since = try since.map { try Date().addingTimeInterval(-MemoryCommand.seconds($0, option: "--since")) }
        RouterLoader.bootstrapLogging(verbose: false)
        let source = try RouterLoader.source(config: config)
        let configuration: RouterConfiguration
        do {
            let node = try ConfigNode.parse(yaml: source.text, file: source.origin)
            let (registry, _) = PluginDiscovery.registry(for: node, adding: BuiltinPlugins.registry, path: ProcessEnvironment.value("PATH"))
            configuration = try RouterLoader.configuration(node, origin: source.origin, registry: registry)
        } catch {
            throw RouterLoader.configFailure(error)
        }
        let entries: [HistoryEntry]
        do { entries = try MemoryCommand.memory().entries(since: since, limit: nil, matching: matcher) } catch let code as ExitCode { throw code } catch {
            Console.error("replay: \(error)")
            throw ExitStatus.configError
        }
        let result: Replay.Result
        do { result = try await Replay.run(entries, through: configuration) } catch { throw RouterLoader.configFailure(error) }
        Console.write(1, json ? Self.json(result) : Self.text(result))
    }

    static func describe(_ verdicts: [String: String]) -> String {
        if let dropped = verdicts[Replay.droppedKey] { return dropped }
        if verdicts.isEmpty { return "no sink" }
        return verdicts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    static func text(_ result: Replay.Result) -> String {
        var output = ""
        for change in result.changes {
            let source = change.subject.source.map { " [\(TextSanitizer.clean($0, keepNewlines: false))]" } ?? ""
            output += "\(HistoryTime.format(change.time)) \(change.subject.level.rawValue)\(source) "
                + "\(TextSanitizer.clean(change.subject.title, keepNewlines: false)): \(describe(change.before)) -> \(describe(change.after))\n"
        }
        output += "replayed \(result.events) events; \(result.changes.count) would change\n"
        for (sink, counts) in result.deliveries.sorted(by: { $0.key < $1.key }) {
            output += "  \(sink): \(counts.before) -> \(counts.after) delivered\n"
        }
        output += "  suppressed: \(result.suppressed.before) -> \(result.suppressed.after)\n"
        output += "  dropped: \(result.dropped.before) -> \(result.dropped.after)\n"
        if result.unreadable > 0 { output += "  \(result.unreadable) recorded events could not be read again\n" }
        return output
    }

    static func json(_ result: Replay.Result) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func line(_ value: some Encodable) -> String { String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self) + "\n" }
        struct Change: Encodable {
            var time: String, level: String, source: String?, title: String, before: [String: String], after: [String: String]
        }
        struct Summary: Encodable {
            var events: Int, changed: Int, unreadable: Int
            var delivered: [String: [String: Int]], suppressed: [String: Int], dropped: [String: Int]
        }
        var output = ""
        for change in result.changes {
            output += line(Change(time: HistoryTime.format(change.time), level: change.subject.level.rawValue, source: change.subject.source,
                                  title: change.subject.title, before: change.before, after: change.after))
        }
        output += line(Summary(
            events: result.events, changed: result.changes.count, unreadable: result.unreadable,
            delivered: result.deliveries.mapValues { ["before": $0.before, "after": $0.after] },
            suppressed: ["before": result.suppressed.before, "after": result.suppressed.after],
            dropped: ["before": result.dropped.before, "after": result.dropped.after]))
        return output
    }
}
