#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

package enum ReportPrinter {
    /// Who routed an event, as the `--json` report's `via` says.
    enum Via: String, Encodable {
        case local, daemon
    }

    /// A report with its `via`: the report's own keys, and one more.
    struct Routed<Report: Encodable>: Encodable {
        let report: Report
        let via: Via
        private enum Keys: String, CodingKey { case via }

        func encode(to encoder: any Encoder) throws {
            try report.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(via, forKey: .via)
        }
    }

    static func json(_ report: some Encodable, via: Via) -> String {
        json(Routed(report: report, via: via))
    }

    /// A report with its `via`, by the report's own writer: the bytes `JSONEncoder` writes
    /// (DeliveryReportJSONTests holds them to it) without its generic path, which cost a
    /// `send --json` about 900,000 instructions.
    static func json(_ report: DeliveryReport, via: Via) -> String {
        var bytes = report.json()
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "}") {
            bytes.removeLast()
            if last == UInt8(ascii: "}") { break }
        }
        bytes.append(contentsOf: #","via":""#.utf8)
        bytes.append(contentsOf: via.rawValue.utf8)
        bytes.append(contentsOf: #""}"#.utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The report as text, one line per sink.
    package static func text(_ report: DeliveryReport) -> String {
        var lines = ["\(report.summary.rawValue): [\(report.event.level.rawValue)] \(report.event.title)"]
        if let dropped = report.droppedBy { lines.append("  dropped by \(dropped)") }
        for outcome in report.outcomes {
            var line = "  \(outcome.sink) (\(outcome.kind)) via \(outcome.route): \(outcome.status)"
            if let failover = outcome.failoverFor { line += " [failover for \(failover)]" }
            if let handle = outcome.handle { line += " [handle \(handle)]" }
            lines.append(line)
            lines += outcome.notes.map { "      \($0)" }
        }
        lines += report.notes.map { "  note: \($0)" }
        return lines.joined(separator: "\n")
    }

    /// On a plain `send`: say what went wrong, and nothing when all went well.
    static func problems(_ report: DeliveryReport) {
        for line in problemLines(report) { Console.error(line) }
    }

    /// What ``problems(_:)`` prints, a line each.
    package static func problemLines(_ report: DeliveryReport) -> [String] {
        let delivered = report.summary == .delivered || report.summary == .suppressed
        var lines: [String] = []
        for outcome in report.outcomes {
            switch outcome.status {
            case .failed:
                lines.append("\(outcome.sink): \(outcome.status)")
            case .unavailable where !delivered:
                lines.append("\(outcome.sink): \(outcome.status)")
            default:
                break
            }
        }
        return lines + report.notes
    }
}
