#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TimeZoneInfo

/// `rate: { max: 5, per: 1m }` on a route: at most `max` events per sink in each period;
/// what is held back is counted and summarised ("+37 more from backup") with the first
/// event let through after the period.
public struct RateLimit: Hashable, Sendable {
    public var max: Int
    public var per: Duration

    public init(max: Int, per: Duration) {
        self.max = max
        self.per = per
    }
}

/// `quiet: { hours: ["22:00-07:00"], timezone: Europe/Paris, breakthrough: critical }` on a
/// route (or the short form `quiet: ["22:00-07:00"]`): inside the hours, events below
/// `breakthrough` are held, counted and summarised with the first event after them.
public struct QuietHours: Hashable, Sendable {
    public var windows: [ClockWindow]
    /// An IANA zone (`Europe/Paris`); `nil` for the machine's own.
    public var timeZone: String? {
        didSet { zone = Self.zone(named: timeZone) }
    }
    /// Events at or above this level go through even in quiet hours.
    public var breakthrough: Level
    /// ``timeZone`` read once, so that the per-event check does no lookup; `nil` for the
    /// machine's zone.
    private var zone: ZoneInfo?

    public init(windows: [ClockWindow], timeZone: String? = nil, breakthrough: Level = .critical) {
        self.windows = windows
        self.timeZone = timeZone
        self.breakthrough = breakthrough
        self.zone = Self.zone(named: timeZone)
    }

    private static func zone(named name: String?) -> ZoneInfo? {
        name.flatMap { try? ZoneInfo.named($0) }
    }

    /// The window `date` falls in, if any, read on the wall clock of ``timeZone`` (daylight
    /// saving included), or of the machine's zone when there is none or it cannot be read.
    public func activeWindow(at date: Date) -> ClockWindow? {
        let seconds = ZoneInfo.wholeSeconds(date.timeIntervalSince1970)
        // `if let`, not `??`: that would copy the zone (a retain per array) on every check.
        let minute = if let zone {
            zone.minuteOfDay(atSecondsSince1970: seconds)
        } else {
            ZoneInfo.local.minuteOfDay(atSecondsSince1970: seconds)
        }
        return windows.first { $0.contains(minuteOfDay: minute) }
    }

    // The zone follows from its name: equality and hashing leave it out.
    public static func == (lhs: QuietHours, rhs: QuietHours) -> Bool {
        lhs.windows == rhs.windows && lhs.timeZone == rhs.timeZone && lhs.breakthrough == rhs.breakthrough
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(windows)
        hasher.combine(timeZone)
        hasher.combine(breakthrough)
    }
}

/// A daily span of wall-clock time, `22:00-07:00`; it wraps past midnight when it ends
/// earlier than it starts.
public struct ClockWindow: Hashable, Sendable, CustomStringConvertible {
    public var start: Int
    public var end: Int

    public init?(parsing text: String) {
        let parts = text.split(separator: "-").map { $0.trimmingWhitespace() }
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]), start != end else { return nil }
        self.start = start
        self.end = end
    }

    private static func minutes(_ text: Substring) -> Int? {
        let pieces = text.split(separator: ":")
        guard pieces.count == 2, pieces.allSatisfy({ $0.count == 2 }), let hour = Int(pieces[0]), let minute = Int(pieces[1]),
              (0...24).contains(hour), (0..<60).contains(minute), hour * 60 + minute <= 1440
        else { return nil }
        return hour * 60 + minute
    }

    public func contains(minuteOfDay minute: Int) -> Bool {
        start < end ? (start <= minute && minute < end) : (minute >= start || minute < end)
    }

    public var description: String {
        func clock(_ minutes: Int) -> String {
            let hour = minutes / 60, minute = minutes % 60
            return (hour < 10 ? "0\(hour)" : "\(hour)") + ":" + (minute < 10 ? "0\(minute)" : "\(minute)")
        }
        return clock(start) + "-" + clock(end)
    }
}

/// An inhibition rule (Alertmanager's): while an event matching `source` is active,
/// events matching `target` whose `equal` values are the same are suppressed.
///
/// ```yaml
/// inhibit:
///   - source: { level: critical, source: "db*" }
///     target: { level: "<=warning" }
///     equal:  [source]
///     for:    30m
/// ```
public struct InhibitRule: Hashable, Sendable {
    public var source: EventMatcher
    public var target: EventMatcher
    /// Event values that must be equal between the two: `source`, `app`, `category`, `title`, `level`.
    public var equal: [String]
    /// How long a source event stays active; default: its own timeout (one hour for sticky
    /// events), or until `notify-route close` closes it.
    public var duration: Duration?
    public var location: SourceLocation?

    public static let equalKeys = ["source", "app", "category", "title", "level"]

    public init(source: EventMatcher, target: EventMatcher, equal: [String] = [], duration: Duration? = nil, location: SourceLocation? = nil) {
        self.source = source
        self.target = target
        self.equal = equal
        self.duration = duration
        self.location = location
    }

    func signature(of subject: MatchSubject) -> String {
        equal.map { key in
            switch key {
            case "source": subject.source ?? ""
            case "app": subject.app ?? ""
            case "category": subject.category ?? ""
            case "title": subject.title
            case "level": subject.level.rawValue
            default: ""
            }
        }.joined(separator: "\u{1F}")
    }
}

extension MatchSubject {
    init(_ event: ResolvedEvent) {
        self.init(level: event.level, source: event.source, app: event.app, title: event.title, body: event.body,
                  category: event.category, tags: event.tags)
    }
}
