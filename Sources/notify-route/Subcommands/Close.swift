import ArgumentParser
import NotifyRoute

struct Close: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "close",
        abstract: "Close the notification an earlier event with this replace key showed.")

    @OptionGroup var global: GlobalOptions

    @Option(name: [.customShort("r"), .customLong("replace-key")], help: "The replace key of the notification to close.")
    var replaceKey: String

    @Flag(name: .long, help: "Print the report as JSON on stdout.")
    var json = false

    func run() async throws {
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        let report = await router.close(replaceKey: replaceKey)
        if json { Console.out(ReportPrinter.json(report)) } else if global.verbose { Console.error(ReportPrinter.text(report)) }
        guard report.outcomes.contains(where: \.status.isSuccess) else {
            if !json { ReportPrinter.problems(report) }
            throw ExitStatus.noneDelivered
        }
    }
}
