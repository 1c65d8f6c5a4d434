import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Hold every event below a level (do not disturb) until `resume` or for a while.",
        discussion: """
            Held events are suppressed with the reason `paused` and delivered when the pause ends: one by one \
            when few (the config's `history.resume_one_by_one`, default 3), else as one summary \
            ("+12 held while paused: backup 9, db 3"). The pause survives logouts and daemon restarts. \
            Exit codes: 0 paused, 64 usage, 78 the history cannot be written.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Hold events below this level (default critical: all but critical).", valueName: "LEVEL"))
    var level: Level = .critical

    @Option(name: .customLong("for"), help: ArgumentHelp("End the pause after DURATION (default: at `resume`).", valueName: "DURATION"))
    var duration: String?

    func run() async throws {
        let now = Date()
        let until = try duration.map { now.addingTimeInterval(try MemoryCommand.seconds($0, option: "--for")) }
        do { try MemoryCommand.memory(global).pause(below: level, until: until, now: now) } catch let code as ExitCode { throw code } catch {
            Console.error("pause: \(error)")
            throw ExitStatus.configError
        }
        Console.error("paused: events below \(level.rawValue) are held " + (until.map { "until \(HistoryTime.format($0))" } ?? "until `notify-route resume`"))
    }
}
