import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print the events routed lately (by this user's sends and daemon), newest last.",
        discussion: """
            The history lives in $XDG_STATE_HOME/notify-route/history.db (default ~/.local/state/notify-route/), \
            bounded by the config's `history: { max_events, max_bytes }`. MATCHER words use the config's matcher \
            language on one line: level>=warning source=backup* app=cron title=*failed* tag=ops. \
            Exit codes: 0 printed (perhaps nothing), 64 usage, 78 the history cannot be read.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Only events of the last DURATION (30s, 10m, 1h, 2d).", valueName: "DURATION"))
    var since: String?

    @Option(name: .long, help: "At most the newest N events.")
    var limit: Int?

    @Flag(name: .long, help: "One JSON object per line: time, event, sinks, rules, routes.")
    var json = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Only this level: warning, >=warning, <error.", valueName: "LEVEL"))
    var level: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("Only sources matching this glob.", valueName: "GLOB"))
    var source: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("Only apps matching this glob.", valueName: "GLOB"))
    var app: String?

    @Option(name: [.customShort("g"), .customLong("tag")], help: ArgumentHelp("Only events with this tag; repeat for more.", valueName: "TAG"))
    var tags: [String] = []

    @Argument(help: ArgumentHelp("Conditions such as level>=warning source=backup* tag=ops.", valueName: "MATCHER"))
    var matchers: [String] = []

    func run() async throws {
        if let limit, limit < 1 { throw MemoryCommand.usage("--limit: expected a whole number of at least 1, found \(limit)") }
        var words = matchers
        if let level { words.append(level.first.map { "<>=".contains($0) } == true ? "level\(level)" : "level=\(level)") }
        if let source { words.append("source=\(source)") }
        if let app { words.append("app=\(app)") }
        words += tags.map { "tag=\($0)" }
        let matcher = try MemoryCommand.matcher(words)
        let since = try since.map { try Date().addingTimeInterval(-MemoryCommand.seconds($0, option: "--since")) }
        let memory = try MemoryCommand.memory(global)
        let entries: [HistoryEntry]
        do { entries = try memory.entries(since: since, limit: limit, matching: matcher) } catch {
            Console.error("history: \(error)")
            throw ExitStatus.configError
        }
        var output = ""
        for entry in entries {
            if json {
                output += entry.record + "\n"
            } else {
                let subject = entry.subject
                let source = subject.source.map { " [\(TextSanitizer.clean($0, keepNewlines: false))]" } ?? ""
                output += "\(HistoryTime.format(entry.time)) \(subject.level.rawValue)\(source) \(TextSanitizer.clean(subject.title, keepNewlines: false)) -> "
                    + TextSanitizer.clean(entry.outcomeSummary, keepNewlines: false) + "\n"
            }
        }
        Console.write(1, output)
    }
}

/// What the history, silence and pause commands share.
enum MemoryCommand {
    static func usage(_ message: String) -> ExitCode {
        Console.error(message)
        return ExitStatus.usage
    }

    static func matcher(_ words: [String]) throws -> EventMatcher {
        do { return try MatcherLine.parse(words) } catch { throw usage(error.description) }
    }

    static func seconds(_ text: String, option: String) throws -> Double {
        do {
            let duration = try DurationParser.parse(text)
            guard duration > .zero else { throw usage("\(option): expected a duration longer than zero, found \"\(text)\"") }
            return Double(DurationParser.milliseconds(duration)) / 1000
        } catch let error as ExitCode {
            throw error
        } catch {
            throw usage("\(option): \(error) (a duration: 30s, 10m, 1h, 2d)")
        }
    }

    /// ``memory()`` for a command that takes the global options: a `--config` is read and
    /// checked as every command checks it (exit 78 with its file:line:col), though the
    /// history's place does not depend on it.
    static func memory(_ global: GlobalOptions) throws -> RouterMemory {
        if global.config != nil { _ = try RouterLoader.load(global) }
        return try memory()
    }

    /// The history database of this user; a directory that cannot be used is exit 78.
    static func memory() throws -> RouterMemory {
        do {
            return RouterMemory(directory: try RouterMemory.resolveDirectory(), keepsOpen: false, notice: { Console.error("history: \($0)") })
        } catch {
            Console.error("history: \(error.description)")
            throw ExitStatus.configError
        }
    }
}
