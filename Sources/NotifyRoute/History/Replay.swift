#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `notify-route replay`: recorded events run again through another config's stages
/// (rules, routes, policies), in their order and at their times, with a fresh state and
/// sinks that deliver nothing, and compared with what happened.
///
/// What is compared is each sink's verdict: delivered (whatever the sink then answered:
/// shown, queued, failed or unavailable, which depends on the machine, not the config),
/// suppressed with a reason, or the event dropped by a rule. Silences and the pause are
/// not the config's, so an event they held counts as delivered.
public enum Replay {
    /// One event whose verdicts differ.
    public struct Change: Sendable {
        public var time: Date
        public var subject: MatchSubject
        /// Sink → verdict (`delivered`, `suppressed: duplicate`), or `dropped` under the key `*`.
        public var before: [String: String]
        public var after: [String: String]
    }

    public struct Result: Sendable {
        public var events = 0
        public var changes: [Change] = []
        /// Per sink, how many events it got before and would get now.
        public var deliveries: [String: (before: Int, after: Int)] = [:]
        public var suppressed = (before: 0, after: 0)
        public var dropped = (before: 0, after: 0)
        /// Recorded events that could not be read again (written by another version).
        public var unreadable = 0
    }

    public static let droppedKey = "*"

    /// Replays `entries` (oldest first) through `configuration`.
    public static func run(_ entries: [HistoryEntry], through configuration: RouterConfiguration) async throws(ConfigError) -> Result {
        let clock = ManualClock(entries.first?.time ?? Date())
        var sinks: [String: any NotificationSink] = [:]
        for declaration in configuration.sinks { sinks[declaration.name] = ReplaySink() }
        let router = try NotificationRouter(configuration: configuration, sinks: sinks, store: InMemoryStateStore(), clock: clock)
        var result = Result()
        for entry in entries {
            guard let event = try? NotificationEvent.decode(jsonLine: entry.input), let before = verdicts(of: entry) else {
                result.unreadable += 1
                continue
            }
            clock.advance(by: .seconds(entry.time.timeIntervalSince(clock.now())))
            guard let report = try? await router.send(event) else {
                result.unreadable += 1
                continue
            }
            let after = verdicts(of: report)
            result.events += 1
            tally(before, &result, before: true)
            tally(after, &result, before: false)
            if before != after { result.changes.append(Change(time: entry.time, subject: entry.subject, before: before, after: after)) }
        }
        return result
    }

    private static func tally(_ verdicts: [String: String], _ result: inout Result, before: Bool) {
        for (sink, verdict) in verdicts {
            if sink == droppedKey {
                if before { result.dropped.before += 1 } else { result.dropped.after += 1 }
            } else if verdict == "delivered" {
                var counts = result.deliveries[sink] ?? (0, 0)
                if before { counts.before += 1 } else { counts.after += 1 }
                result.deliveries[sink] = counts
            } else {
                if before { result.suppressed.before += 1 } else { result.suppressed.after += 1 }
            }
        }
    }

    static func verdicts(of report: DeliveryReport) -> [String: String] {
        if let rule = report.droppedBy { return [droppedKey: "dropped by \(rule)"] }
        var verdicts: [String: String] = [:]
        for outcome in report.outcomes {
            if case .suppressed(let reason) = outcome.status {
                verdicts[outcome.sink] = verdict(suppressedBy: reason.code)
            } else {
                verdicts[outcome.sink] = "delivered"
            }
        }
        return verdicts
    }

    /// The verdicts the record of `entry` holds; `nil` when it cannot be read.
    static func verdicts(of entry: HistoryEntry) -> [String: String]? {
        guard case .object(let fields)? = try? JSONLine.parse(entry.record) else { return nil }
        if case .string(let rule)? = fields.first(where: { $0.key == "dropped_by" })?.value { return [droppedKey: "dropped by \(rule)"] }
        guard case .array(let sinks)? = fields.first(where: { $0.key == "sinks" })?.value else { return [:] }
        var verdicts: [String: String] = [:]
        for sink in sinks {
            guard case .object(let values) = sink, case .string(let name)? = values.first(where: { $0.key == "sink" })?.value else { continue }
            let status = values.first { $0.key == "status" }?.value
            let reason = values.first { $0.key == "reason" }?.value
            if case .string("suppressed")? = status, case .string(let code)? = reason {
                verdicts[name] = verdict(suppressedBy: code)
            } else {
                verdicts[name] = "delivered"
            }
        }
        return verdicts
    }

    private static func verdict(suppressedBy code: String) -> String {
        code == "silenced" || code == "paused" ? "delivered" : "suppressed: \(code)"
    }
}

/// Delivers nothing and says it did: what replay's router sends to.
struct ReplaySink: NotificationSink {
    // Inline: nothing to wait for, so no deadline task per delivery.
    var capabilities: SinkCapabilities { SinkCapabilities(deliversInline: true) }
    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt { SinkReceipt() }
    var hasPendingWork: Bool { false }
}
