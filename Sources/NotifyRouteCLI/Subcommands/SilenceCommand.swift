import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

struct SilenceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "silence",
        abstract: "Silence matching events on every sink for a while, without editing the config.",
        discussion: """
            A silenced event is suppressed with the reason `silenced` and the silence's id (in the report, \
            `explain` and the history). Silences live in $XDG_STATE_HOME/notify-route/history.db and hold \
            for every process and the daemon, across restarts.
            """,
        subcommands: [Add.self, List.self, Expire.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a silence; prints its id.",
            discussion: """
                MATCHER words use the config's matcher language on one line: level>=warning level=error \
                source=backup* app=... title=... body=... category=... tag=ops; all must hold. \
                Exit codes: 0 added, 64 a matcher or an option does not parse, 78 the history cannot be written.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(name: .customLong("for"), help: ArgumentHelp("How long it holds (default 1h).", valueName: "DURATION"))
        var duration: String?

        @Option(name: .long, help: ArgumentHelp("When it ends: HH:MM (the next one, local time) or an RFC 3339 time.", valueName: "TIME"))
        var until: String?

        @Option(name: .long, help: ArgumentHelp("Why, for `silence list`.", valueName: "TEXT"))
        var comment: String?

        @Argument(help: ArgumentHelp("Conditions such as level<=warning source=backup*.", valueName: "MATCHER"))
        var matchers: [String] = []

        func run() async throws {
            guard !matchers.isEmpty else {
                throw MemoryCommand.usage("silence add: give at least one MATCHER (level>=warning, source=backup*, tag=ops, ...); a silence of everything is `notify-route pause`")
            }
            let matcher = try MemoryCommand.matcher(matchers)
            if duration != nil && until != nil { throw MemoryCommand.usage("silence add: give --for or --until, not both") }
            let now = Date()
            let ends: Date
            if let until {
                ends = try Self.time(until, after: now)
            } else {
                ends = now.addingTimeInterval(try duration.map { try MemoryCommand.seconds($0, option: "--for") } ?? 3600)
            }
            let memory = try MemoryCommand.memory(global)
            do {
                let silence = try memory.addSilence(matcher, starts: now, ends: ends, comment: comment)
                Console.out(silence.id)
            } catch {
                Console.error("silence add: \(error)")
                throw ExitStatus.configError
            }
        }

        /// `HH:MM` today (tomorrow if past) in local time, or an RFC 3339 time.
        static func time(_ text: String, after now: Date) throws -> Date {
            let parts = text.split(separator: ":")
            if parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute) {
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = .current
                var components = calendar.dateComponents([.year, .month, .day], from: now)
                components.hour = hour
                components.minute = minute
                if let today = calendar.date(from: components) {
                    return today > now ? today : today.addingTimeInterval(86_400)
                }
            }
            if let date = try? Date(text, strategy: .iso8601), date > now { return date }
            throw MemoryCommand.usage("--until: expected HH:MM or an RFC 3339 time in the future (2026-11-24T18:00:00Z), found \"\(text)\"")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the active silences (with --expired, also those ended in the last day).")

        @OptionGroup var global: GlobalOptions

        @Flag(name: .long, help: "One JSON object per line: id, matchers, starts, ends, comment, active.")
        var json = false

        @Flag(name: .long, help: "Also the silences that ended in the last day.")
        var expired = false

        func run() async throws {
            let now = Date()
            let silences: [Silence]
            do { silences = try MemoryCommand.memory(global).silences(now: now) } catch let code as ExitCode { throw code } catch {
                Console.error("silence list: \(error)")
                throw ExitStatus.configError
            }
            var output = ""
            for silence in silences where expired || silence.isActive(at: now) {
                let matchers = MatcherLine.format(silence.matcher)
                if json {
                    let object: [String: String] = [
                        "id": silence.id, "matchers": matchers, "starts": HistoryTime.format(silence.starts),
                        "ends": HistoryTime.format(silence.ends), "comment": silence.comment ?? "",
                        "active": silence.isActive(at: now) ? "true" : "false",
                    ]
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    output += String(decoding: (try? encoder.encode(object)) ?? Data(), as: UTF8.self) + "\n"
                } else {
                    let state = silence.isActive(at: now) ? "until \(HistoryTime.format(silence.ends))" : "ended \(HistoryTime.format(silence.ends))"
                    let comment = silence.comment.map { " # \(TextSanitizer.clean($0, keepNewlines: false))" } ?? ""
                    output += "\(silence.id) \(state) \(TextSanitizer.clean(matchers, keepNewlines: false))\(comment)\n"
                }
            }
            Console.write(1, output)
        }
    }

    struct Expire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "expire", abstract: "End a silence now.",
            discussion: "Exit codes: 0 ended, 64 no active silence has this id (or it is an ambiguous prefix).")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The silence's id, as `silence add` printed it (a unique prefix will do).")
        var id: String

        func run() async throws {
            let ended: String?
            do { ended = try MemoryCommand.memory(global).expireSilence(id, now: Date()) } catch let code as ExitCode { throw code } catch {
                Console.error("silence expire: \(error)")
                throw ExitStatus.configError
            }
            guard let ended else { throw MemoryCommand.usage("silence expire: no active silence has the id \"\(id)\"; see `notify-route silence list`") }
            Console.error("silence \(ended) ended")
        }
    }
}
