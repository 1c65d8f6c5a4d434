#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// What the policy stages decided for one sink: what to ask it, or why not.
struct PolicyDecision: Sendable {
    var intent: SinkDelivery.Intent = .show
    /// The duplicate count the sink is told (1 for a new event).
    var count = 1
    var suppressed: SuppressionReason?
    /// True when this decision opened a dedup window (to undo if delivery fails).
    var createdWindow = false
    /// Events held back earlier (rate limit, quiet hours), to be summarised before this one.
    var summary: HeldSummary?
    /// A duplicate whose count update waits to go out later with a later count
    /// (see ``CountUpdateCoalescer``).
    var coalesced = false
    /// When the delivery escalates unless acknowledged (``EscalateStage``).
    var escalatesAt: Date?
    /// Said in the sink's outcome whatever happens (grouping that needs `serve`).
    var note: String?

    /// Whether the sink is asked anything: a show, a replace, or a count update.
    var sendsSomething: Bool { suppressed == nil || intent != .show }

    struct HeldSummary: Sendable, Hashable {
        var held: Int
        var sources: [String: Int]
        var highest: Level
        var why: String
    }
}

extension Duration {
    /// Whole microseconds, half a microsecond rounded away from zero: a report's
    /// `duration_ms` in thousandths, by integer arithmetic.
    var roundedMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let (micros, rest) = attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000_000)
        let half: Int64 = rest >= 500_000_000_000 ? 1 : rest <= -500_000_000_000 ? -1 : 0
        // Past 292,000 years of seconds: the largest, rather than a trap.
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (total, overflowAgain) = whole.addingReportingOverflow(micros + half)
        return overflow || overflowAgain ? (seconds < 0 ? .min : .max) : total
    }

    var seconds: Double {
        // `components` read once: each read divides the 128-bit attoseconds.
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
