import NotifyRoute

/// A source's own rate limit, applied before routing: at most `max` events per period;
/// the rest are counted, and one summary follows when the period ends. A flood of records
/// then costs the router a few events, and the source's memory does not grow with it.
struct SourceThrottle {
    let rate: RateLimit
    let sourceName: String
    private var periodStart: ContinuousClock.Instant?
    private var sent = 0
    private(set) var held = 0
    private var highest = Level.debug
    private var last: NotificationEvent?

    init(rate: RateLimit, sourceName: String) {
        self.rate = rate
        self.sourceName = sourceName
    }

    /// Whether `event` goes through now; if not, it is counted for the summary.
    mutating func admit(_ event: NotificationEvent, at now: ContinuousClock.Instant) -> Bool {
        if let start = periodStart, now - start >= rate.per, held == 0 { periodStart = nil }
        if periodStart == nil {
            periodStart = now
            sent = 0
        }
        if sent < rate.max {
            sent += 1
            return true
        }
        held += 1
        highest = max(highest, event.level ?? .info)
        last = event
        return false
    }

    /// When the period holding counted events ends, if any are.
    var summaryDue: ContinuousClock.Instant? {
        guard held > 0, let periodStart else { return nil }
        return periodStart + rate.per
    }

    /// The summary of what was held, once its period has ended (or at once with
    /// `force`, when the source stops); a new period starts with it.
    mutating func summary(at now: ContinuousClock.Instant, force: Bool = false) -> NotificationEvent? {
        guard let due = summaryDue, force || now >= due, let last else { return nil }
        let event = NotificationEvent(
            title: "\(held) more from \(sourceName)",
            body: "The last: \(last.title)",
            level: highest, app: last.app, source: last.source, tags: last.tags,
            fields: ["SOURCE_HELD": String(held)])
        held = 0
        highest = .debug
        self.last = nil
        periodStart = now
        sent = 1
        return event
    }
}
