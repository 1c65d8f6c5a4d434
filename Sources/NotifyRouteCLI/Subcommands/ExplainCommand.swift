import ArgumentParser
import NotifyRoute

struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Explain which rules and routes an event would match and what each sink would do; nothing is sent.",
        discussion: """
            With --journal-record, the event is the one a source of the config makes of a journal \
            record (one line of `journalctl -o json` on standard input); the event flags are applied \
            on top. Exit 65 when the line is not a journal record, 1 when no source takes it.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var flags: EventFlags

    @Flag(name: .long, help: "Explain the event the config's sources make of a journal record: one line of `journalctl -o json` on stdin.")
    var journalRecord = false

    @Argument(help: "The title: one line (not with --journal-record).")
    var title: String?

    @Argument(help: "The body; - reads it from standard input.")
    var body: String?

    @Flag(name: .long, help: "Print the planned report as JSON on stdout.")
    var json = false

    func validate() throws {
        if journalRecord, title != nil {
            throw ValidationError("--journal-record reads the event from a journal record on stdin: give no title or body")
        }
        if !journalRecord, title == nil {
            throw ValidationError("Missing expected argument '<title>'")
        }
    }

    func run() async throws {
        // The sources' reading of a record is the daemon's, which only the network executable links.
        if journalRecord { NetworkHandOff.runIfAllowed() }
        let (router, source) = try RouterLoader.load(global, sharedState: true)
        let sinks = try SinkSelection.validated(flags.sink, router: router)
        var header = "config: \(source.origin)\n"
        let event: NotificationEvent
        if journalRecord {
            let match = try Self.sourceEvent(in: router.configuration.sources)
            var made = match.event
            flags.apply(to: &made)
            event = made
            header += "source: \(match.source.name) (kind \(match.source.kind.rawValue)"
                + (match.source.location.map { ", \($0)" } ?? "") + ")\n"
        } else {
            event = flags.arguments.makeEvent(title: title ?? "", body: body)
        }
        let explanation: RoutingExplanation
        do {
            explanation = try await router.explain(event, only: sinks)
        } catch {
            Console.error("bad event: \(error.description)")
            throw ExitStatus.badEventData
        }
        if json {
            Console.out(ReportPrinter.json(explanation.plannedReport))
        } else {
            Console.out(header + explanation.description)
        }
    }

    /// The record on standard input and the source that takes it: 65 for a line that is not
    /// a record, 1 for a record no source takes (nothing would be notified).
    private static func sourceEvent(in sources: [SourceDeclaration]) throws -> SourceRecordMatch {
        let input = StandardInput.readAll()
        let lines = input.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
        guard lines.count == 1, let line = lines.first else {
            Console.error("--journal-record: expected one line of `journalctl -o json` on stdin, got \(lines.count)")
            throw ExitStatus.badEventData
        }
        guard let server = BuiltinPlugins.daemon else {
            Console.error("--journal-record: this executable has no journal sources; run notify-route-network explain")
            throw ExitStatus.noSinkAvailable
        }
        switch server.matchRecord(String(line), sources) {
        case .success(let match): return match
        case .failure(.malformed(let reason)):
            Console.error("--journal-record: stdin: \(reason)")
            throw ExitStatus.badEventData
        case .failure(.refused(let reason)):
            Console.error("--journal-record: \(reason)")
            throw ExitStatus.noneDelivered
        }
    }
}
