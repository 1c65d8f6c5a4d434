import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import Glibc
import Dispatch

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Send one event per line of JSON on standard input.",
        discussion: """
            Each line is an object such as {"title": "Disk full", "level": "warning", "tags": ["ops"]} \
            (schema: config/event.schema.json). Blank lines are skipped. A bad line is reported on stderr \
            as stdin:LINE: message and counted; the others are still delivered. Events go through the \
            router one at a time, in order, and memory does not grow with the input.

            Exit codes: 65 when any line was bad; otherwise 0 when every event was delivered or \
            suppressed on purpose, 1 when some event reached no sink (failed, found no sink available, \
            or was queued for journald and dropped at the end), 69 when no sink was available for any \
            event; 78 config error.

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

    @Option(name: .long, help: "json: one event object per line; lines: each line a title; journal: journalctl -o json lines.")
    var format: InputFormat = .json

    @Option(name: .shortAndLong, help: "The level of --format lines events (default: the config's).")
    var level: Level?

    @Option(name: .shortAndLong, help: "The source of --format lines events.")
    var source: String?

    @Option(name: .shortAndLong, help: "The app of --format lines events.")
    var app: String?

    enum InputFormat: String, ExpressibleByArgument, CaseIterable {
        case json, lines, journal
    }

    @Flag(name: .long, help: "Exit as soon as the last event is handed over, without waiting for banners to time out or queues to drain (what is dropped is reported).")
    var noWait = false

    @OptionGroup var handOff: HandOffOptions

    struct Tally {
        var lines = 0, bad = 0, delivered = 0, suppressed = 0, failed = 0, noSink = 0
        /// Reported queued, then dropped at the end: counted as delivered before, reaching no sink after all.
        var dropped = 0
    }

    func run() async throws {
        if !handOff.noDaemon, let daemon = try DaemonHandOff.connect(socket: handOff.socket, config: global.config, verbose: global.verbose) {
            return try await handOff(to: daemon)
        }
        let (router, _) = try RouterLoader.load(global, sharedState: true, streaming: true)
        let sinks = try SinkSelection.validated(sink, router: router)
        let started = ContinuousClock.now
        var tally = Tally()
        // The state of many lines in one commit; a line's output only once its state is committed.
        let batch = StateBatch(failureNotice: { Console.error("state: \($0); the last events' dedup windows are lost") })
        let exit = ExitFlush(router, settle: { batch.commit() })
        exit.install()

        // The router's runtime sends a burst's count updates while lines still come; it stops
        // once the sinks have finished.
        await withDiscardingTaskGroup { group in
            group.addTask { await router.runtime.run() }
            for await item in LineReader(fd: STDIN_FILENO) {
                // After SIGTERM or SIGINT nothing more is read; the signal's own task ends the process.
                guard exit.beginEvent() else { await exit.parkUntilExit() }
                defer { exit.endEvent() }
                await route(item, router: router, sinks: sinks, batch: batch, tally: &tally)
            }
            batch.commit()
            tally.dropped = await exit.finish(router, noWait: noWait)
            group.cancelAll()
        }
        if tally.bad > 0 { Console.error("\(tally.bad) of \(tally.lines) lines were bad") }
        if stats { printStats(tally, elapsed: ContinuousClock.now - started) }
        throw exitStatus(tally)
    }

    /// One input line through the router; what it prints is published to the batch.
    private func route(_ item: LineReader.Item, router: NotificationRouter, sinks: [String]?, batch: StateBatch,
                       tally: inout Tally) async {
        var output = Output()
        defer { output.publish(to: batch) }
        let number: Int, text: String
        switch line(item, &tally) {
        case .blank: return
        case .tooLong(let line, let message):
            bad(line, message, &tally, &output)
            return
        case .text(let line, let content): (number, text) = (line, content)
        }
        let report: DeliveryReport
        do {
            report = try await router.send(try event(from: text), only: sinks, in: batch)
        } catch {
            bad(number, "\(error)", &tally, &output)
            return
        }
        switch report.summary {
        case .delivered, .planned: tally.delivered += 1
        case .suppressed: tally.suppressed += 1
        case .failed: tally.failed += 1
        case .noSinkAvailable: tally.noSink += 1
        }
        if json {
            // The report with the line it came from, so output lines map back to input lines.
            output.out.append("{\"line\":\(number)," + ReportPrinter.json(report, via: .local).dropFirst())
        }
        if global.verbose {
            output.error.append("stdin:\(number): " + ReportPrinter.text(report))
        } else if !json {
            problems(report, line: number, &output)
        }
    }

    /// A line's messages, printed together once the batch holding its state is committed.
    private struct Output {
        var out: [String] = []
        var error: [String] = []

        func publish(to batch: StateBatch) {
            guard !out.isEmpty || !error.isEmpty else { return }
            batch.publish { [out, error] in
                for line in error { Console.error(line) }
                for line in out { Console.out(line) }
            }
        }
    }

    /// The event a line stands for, in the chosen format; `-l/-s/-a` fill in what it does not say.
    func event(from text: String) throws -> NotificationEvent {
        var event: NotificationEvent
        switch format {
        case .json: return try NotificationEvent.decode(jsonLine: text)
        case .lines: event = NotificationEvent(title: text.last == "\r" ? String(text.dropLast()) : text)
        case .journal: event = try JournalExportLine.event(from: text)
        }
        if let level, event.level == nil { event.level = level }
        if let source, event.source == nil { event.source = source }
        if let app, event.app == nil { event.app = app }
        return event
    }

    enum Line {
        case text(Int, String)
        case blank
        /// Counted as bad; the message says why.
        case tooLong(Int, String)
    }

    /// An input line as text (invalid UTF-8 repaired to U+FFFD, never fatal), counted.
    func line(_ item: LineReader.Item, _ tally: inout Tally) -> Line {
        switch item {
        case .tooLong(let line, let size):
            tally.lines += 1
            return .tooLong(line, "the line is \(size) bytes long; at most \(LineReader.maximumLineBytes) are read")
        case .line(let line, let content):
            let text = String(decoding: content, as: UTF8.self)
            guard !text.allSatisfy(\.isWhitespace) else { return .blank }
            tally.lines += 1
            return .text(line, text)
        }
    }

    /// A bad line, reported at once (the daemon hand-off has no batch to wait for).
    func bad(_ line: Int, _ message: String, _ tally: inout Tally) {
        var output = Output()
        bad(line, message, &tally, &output)
        for line in output.error { Console.error(line) }
        for line in output.out { Console.out(line) }
    }

    private func bad(_ line: Int, _ message: String, _ tally: inout Tally, _ output: inout Output) {
        tally.bad += 1
        output.error.append("stdin:\(line): \(message)")
        if json { output.out.append(ReportPrinter.json(BadLine(line: line, error: message))) }
    }

    private struct BadLine: Encodable {
        var line: Int
        var error: String
    }

    /// Like `send`: say what went wrong, nothing when all went well; with the line number.
    private func problems(_ report: DeliveryReport, line: Int, _ output: inout Output) {
        let delivered = report.summary == .delivered || report.summary == .suppressed
        for outcome in report.outcomes {
            switch outcome.status {
            case .failed: output.error.append("stdin:\(line): \(outcome.sink): \(outcome.status)")
            case .unavailable where !delivered: output.error.append("stdin:\(line): \(outcome.sink): \(outcome.status)")
            default: break
            }
        }
        for note in report.notes { output.error.append("stdin:\(line): \(note)") }
    }

    /// 65 for a bad line; 69 when no sink was available for any event; 1 when some event
    /// reached no sink (failed, no sink available, or queued and then dropped); else 0.
    func exitStatus(_ tally: Tally) -> ExitCode {
        if tally.bad > 0 { return ExitStatus.badEventData }
        let routed = tally.delivered + tally.suppressed + tally.failed + tally.noSink
        if tally.noSink > 0 && tally.noSink == routed && tally.dropped == 0 { return ExitStatus.noSinkAvailable }
        if tally.failed > 0 || tally.noSink > 0 || tally.dropped > 0 { return ExitStatus.noneDelivered }
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

/// A line of `journalctl -o json`: MESSAGE is the title (its first line; the rest the body),
/// PRIORITY the level (syslog's numbers), SYSLOG_IDENTIFIER the app, _SYSTEMD_UNIT the
/// source, and the other fields that are not journald's own (`_`, `__` prefixes) fields.
enum JournalExportLine {
    /// A field's value: text, or something else (a byte array for binary data, null for a
    /// field too large to show), which is left out.
    struct Value: Decodable {
        var text: String?
        init(from decoder: any Decoder) throws {
            text = try? decoder.singleValueContainer().decode(String.self)
        }
    }

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    static func event(from line: String) throws -> NotificationEvent {
        let record: [String: Value]
        do {
            record = try JSONDecoder().decode([String: Value].self, from: Data(line.utf8))
        } catch {
            throw Problem(description: "not a journalctl -o json line: a JSON object of fields was expected")
        }
        guard let message = record["MESSAGE"]?.text, !message.isEmpty else {
            throw Problem(description: "the record has no text MESSAGE")
        }
        let lines = message.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        var event = NotificationEvent(title: String(lines[0]), body: lines.count == 2 ? String(lines[1]) : nil)
        if let priority = record["PRIORITY"]?.text {
            guard let level = Level(name: priority) else { throw Problem(description: "PRIORITY \"\(priority)\" is not 0 to 7") }
            event.level = level
        }
        event.app = record["SYSLOG_IDENTIFIER"]?.text
        event.source = record["_SYSTEMD_UNIT"]?.text
        for (name, value) in record where !name.hasPrefix("_") && !["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"].contains(name) {
            if let text = value.text { event.fields[name] = text }
        }
        return event
    }
}
