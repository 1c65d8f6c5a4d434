#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

enum ReportPrinter {
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The report as text, one line per sink.
    static func text(_ report: DeliveryReport) -> String {
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
        let delivered = report.summary == .delivered || report.summary == .suppressed
        for outcome in report.outcomes {
            switch outcome.status {
            case .failed:
                Console.error("\(outcome.sink): \(outcome.status)")
            case .unavailable where !delivered:
                Console.error("\(outcome.sink): \(outcome.status)")
            default:
                break
            }
        }
        for note in report.notes { Console.error(note) }
    }
}
