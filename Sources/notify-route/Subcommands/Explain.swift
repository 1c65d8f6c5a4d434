import ArgumentParser
import NotifyRoute

struct Explain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Explain which rules and routes an event would match and what each sink would do; nothing is sent.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var event: EventOptions

    @Flag(name: .long, help: "Print the planned report as JSON on stdout.")
    var json = false

    func run() async throws {
        let (router, source) = try RouterLoader.load(global, sharedState: true)
        let sinks = try SinkSelection.validated(event.sink, router: router)
        let explanation: RoutingExplanation
        do {
            explanation = try await router.explain(event.makeEvent(), only: sinks)
        } catch {
            Console.error("bad event: \(error.description)")
            throw ExitStatus.badEventData
        }
        if json {
            Console.out(ReportPrinter.json(explanation.plannedReport))
        } else {
            Console.out("config: \(source.origin)\n" + explanation.description)
        }
    }
}
