import ArgumentParser
import NotifyRoute

struct CloseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "close",
        abstract: "Close the notification an earlier event with this replace key showed.")

    @OptionGroup var global: GlobalOptions

    @Option(name: [.customShort("r"), .customLong("replace-key")], help: "The replace key of the notification to close.")
    var replaceKey: String

    @Flag(name: .long, help: "Print the report as JSON on stdout.")
    var json = false

    @OptionGroup var handOff: HandOffOptions

    func run() async throws {
        if !handOff.noDaemon, let daemon = try DaemonHandOff.connect(socket: handOff.socket, config: global.config, verbose: global.verbose),
           let status = daemon.close(replaceKey: replaceKey, json: json) {
            throw status
        }
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        let report = await router.close(replaceKey: replaceKey)
        if json { Console.out(ReportPrinter.json(report, via: .local)) } else if global.verbose { Console.error(ReportPrinter.text(report)) }
        guard report.outcomes.contains(where: \.status.isSuccess) else {
            if !json { ReportPrinter.problems(report) }
            throw ExitStatus.noneDelivered
        }
    }
}
