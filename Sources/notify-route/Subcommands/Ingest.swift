import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import Glibc
import Dispatch

struct Ingest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Send one event per line of JSON on standard input.",
        discussion: """
            Each line is an object such as {"title": "Disk full", "level": "warning", "tags": ["ops"]} \
            (schema: config/event.schema.json). Blank lines are skipped. A bad line is reported on stderr \
            as stdin:LINE: message and counted; the others are still delivered. Events go through the \
            router one at a time, in order, and memory does not grow with the input.

            Exit codes: 65 when any line was bad; otherwise 0 when every event was delivered or \
            suppressed on purpose, 1 when some event was not delivered by any sink, 69 when the only \
            problem was that no sink was available; 78 config error.

            At the end of input, records queued for a stalled journald get at most 5s; what it did not \
            take is reported on stderr as dropped. SIGTERM and SIGINT stop reading, finish the event \
            under way, give the queue the same 5s (a second signal: none), report, and end the process.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Send to this sink only, bypassing routes; repeat for more.", valueName: "NAME"))
    var sink: [String] = []

    @Flag(name: .long, help: "Print one JSON line per input line on stdout: the delivery report with its \"line\", or {\"line\": N, \"error\": ...}.")
    var json = false

    @Flag(name: .long, help: "Print counts, throughput and the peak resident memory on stderr at the end.")
    var stats = false

    @Flag(name: .long, help: "Exit as soon as the last event is handed over, without waiting for banners to time out or queues to drain (what is dropped is reported).")
    var noWait = false

    @OptionGroup var handOff: HandOffOptions

    struct Tally {
        var lines = 0, bad = 0, delivered = 0, suppressed = 0, failed = 0, noSink = 0
    }

    func run() async throws {
        if !handOff.noDaemon, let daemon = try DaemonHandOff.connect(socket: handOff.socket, config: global.config, verbose: global.verbose) {
            return try await handOff(to: daemon)
        }
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        let sinks = try SinkSelection.validated(sink, router: router)
        let started = ContinuousClock.now
        var tally = Tally()
        let exit = ExitFlush(router)
        exit.install()

        for await item in LineReader(fd: STDIN_FILENO) {
            // After SIGTERM or SIGINT nothing more is read; the signal's own task ends the process.
            guard exit.beginEvent() else { await exit.parkUntilExit() }
            defer { exit.endEvent() }
            guard let (number, text) = line(item, &tally) else { continue }
            let report: DeliveryReport
            do {
                report = try await router.send(try NotificationEvent.decode(jsonLine: text), only: sinks)
            } catch {
                bad(number, error.description, &tally)
                continue
            }
            switch report.summary {
            case .delivered, .planned: tally.delivered += 1
            case .suppressed: tally.suppressed += 1
            case .failed: tally.failed += 1
            case .noSinkAvailable: tally.noSink += 1
            }
            if json {
                // The report with the line it came from, so output lines map back to input lines.
                Console.out("{\"line\":\(number)," + ReportPrinter.json(report, via: .local).dropFirst())
            }
            if global.verbose {
                Console.error("stdin:\(number): " + ReportPrinter.text(report))
            } else if !json {
                problems(report, line: number)
            }
        }

        await exit.finish(router, noWait: noWait)
        if tally.bad > 0 { Console.error("\(tally.bad) of \(tally.lines) lines were bad") }
        if stats { printStats(tally, elapsed: ContinuousClock.now - started) }
        throw exitStatus(tally)
    }

    /// The line's number and text, or `nil` for a blank line or one too long (reported).
    func line(_ item: LineReader.Item, _ tally: inout Tally) -> (Int, String)? {
        let number: Int, bytes: [UInt8]
        switch item {
        case .tooLong(let line, let size):
            tally.lines += 1
            bad(line, "the line is \(size) bytes long; at most \(LineReader.maximumLineBytes) are read", &tally)
            return nil
        case .line(let line, let content):
            (number, bytes) = (line, content)
        }
        // Invalid UTF-8 is repaired (U+FFFD), never fatal.
        let text = String(decoding: bytes, as: UTF8.self)
        guard !text.allSatisfy(\.isWhitespace) else { return nil }
        tally.lines += 1
        return (number, text)
    }

    func bad(_ line: Int, _ message: String, _ tally: inout Tally) {
        tally.bad += 1
        Console.error("stdin:\(line): \(message)")
        if json { Console.out(ReportPrinter.json(BadLine(line: line, error: message))) }
    }

    private struct BadLine: Encodable {
        var line: Int
        var error: String
    }

    /// Like `send`: say what went wrong, nothing when all went well; with the line number.
    private func problems(_ report: DeliveryReport, line: Int) {
        let delivered = report.summary == .delivered || report.summary == .suppressed
        for outcome in report.outcomes {
            switch outcome.status {
            case .failed: Console.error("stdin:\(line): \(outcome.sink): \(outcome.status)")
            case .unavailable where !delivered: Console.error("stdin:\(line): \(outcome.sink): \(outcome.status)")
            default: break
            }
        }
        for note in report.notes { Console.error("stdin:\(line): \(note)") }
    }

    func exitStatus(_ tally: Tally) -> ExitCode {
        if tally.bad > 0 { return ExitStatus.badEventData }
        if tally.failed > 0 { return ExitStatus.noneDelivered }
        if tally.noSink > 0 { return ExitStatus.noSinkAvailable }
        return ExitStatus.delivered
    }

    private static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = String(hundredths % 100)
        return "\(hundredths / 100)." + (fraction.count < 2 ? "0" + fraction : fraction)
    }

    func printStats(_ tally: Tally, elapsed: Duration) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Int(Double(tally.lines) / seconds) : tally.lines
        let peak = ResourceUsage.peakResidentKiB().map { "\($0) KiB" } ?? "unknown"
        Console.error(
            "stats: \(tally.lines) lines, \(tally.bad) bad, \(tally.delivered) delivered, \(tally.suppressed) suppressed, "
                + "\(tally.failed) failed, \(tally.noSink) without an available sink; "
                + "\(Self.twoDecimals(seconds))s, \(rate) lines/s; peak RSS \(peak)")
    }
}
