import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "End the pause and deliver what it held.",
        discussion: """
            The running daemon delivers what was held when its socket answers; otherwise this command does. \
            Exit codes: 0 resumed (or nothing was paused), 1 the held events could not be delivered, 69 the daemon \
            refuses this user (only its owner may resume it), 78 config error.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("The daemon's socket.", valueName: "PATH"))
    var socket: String?

    @Flag(name: .long, help: "Deliver here even when a daemon runs.")
    var noDaemon = false

    func run() async throws {
        if !noDaemon, let daemon = try DaemonHandOff.connect(socket: socket, config: global.config, verbose: global.verbose) {
            let answer = try daemon.client.request({ _ in }, kind: .resume, within: .seconds(30))
            if let error = answer.error {
                Console.error("resume: \(error)")
                throw ExitCode(answer.exit ?? ExitStatus.configError.rawValue)
            }
            if let held = answer.status?["held"]?.integer {
                var summarised = false
                if case .bool(true)? = answer.status?["summarised"] { summarised = true }
                Console.error(Self.said(held, summarised: summarised))
            }
            throw ExitCode(answer.exit ?? 0)
        }
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        let release: PauseRelease?
        do { release = try await router.resume() } catch {
            Console.error("resume: \(error)")
            throw ExitStatus.configError
        }
        guard let release else { throw ExitStatus.configError }
        for report in release.reports { ReportPrinter.problems(report) }
        Console.error(Self.said(release.held, summarised: release.summarised))
        await router.finish(within: .seconds(5))
        if release.reports.contains(where: { $0.summary == .failed || $0.summary == .noSinkAvailable }) { throw ExitStatus.noneDelivered }
    }

    static func said(_ held: Int, summarised: Bool) -> String {
        held == 0 ? "resumed; nothing was held" : "resumed; delivered \(held) held event\(held == 1 ? "" : "s")" + (summarised ? " as one summary" : "")
    }
}
