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
    /// (DeliveryReportJSONTests holds them to it) without its generic path, which was a
    /// large part of a `send --json`.
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
        // Appended into one string of its size: the daemon writes this text into every answer.
        var text = ""
        text.reserveCapacity(64 + report.event.title.utf8.count + report.outcomes.count * 80)
        text += report.summary.rawValue
        text += ": ["
        text += report.event.level.rawValue
        text += "] "
        text += report.event.title
        if let dropped = report.droppedBy {
            text += "\n  dropped by "
            text += dropped
        }
        for outcome in report.outcomes {
            text += "\n  "
            text += outcome.sink
            text += " ("
            text += outcome.kind
            text += ") via "
            text += outcome.route
            text += ": "
            text += outcome.status.description
            if let failover = outcome.failoverFor {
                text += " [failover for "
                text += failover
                text += "]"
            }
            if let handle = outcome.handle { text += " [handle \(handle)]" }
            for note in outcome.notes {
                text += "\n      "
                text += note
            }
        }
        for note in report.notes {
            text += "\n  note: "
            text += note
        }
        return text
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
