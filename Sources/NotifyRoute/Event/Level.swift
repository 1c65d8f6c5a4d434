/// How important an event is.
///
/// Levels are ordered by severity, so matchers and policies compare them with
/// `>=` (`.warning >= .notice`). ``success`` has the same severity as ``notice``:
/// it is good news worth seeing, not an alarm.
///
/// ```swift
/// let level = Level(rawValue: "warning")!
/// level >= .notice   // true
/// Level.success.severity == Level.notice.severity  // true
/// ```
public enum Level: String, Codable, CaseIterable, Comparable, Hashable, Sendable {
    case debug
    case info
    case notice
    case success
    case warning
    case error
    case critical

    /// The rank used for ordering; `success` shares its rank with `notice`.
    public var severity: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .notice, .success: 2
        case .warning: 3
        case .error: 4
        case .critical: 5
        }
    }

    public static func < (lhs: Level, rhs: Level) -> Bool {
        lhs.severity < rhs.severity
    }
}

extension Level {
    /// The level's position in `allCases` (declaration order), for tables indexed by level.
    var ordinal: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .notice: 2
        case .success: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }
}

extension Level {
    /// The names syslog gives its priorities, and its numbers, by the level each maps onto:
    /// what people type who know `logger -p` and `journalctl -p`.
    public static let syslogNames: [(name: String, level: Level)] = [
        ("emerg", .critical), ("alert", .critical), ("crit", .critical), ("err", .error),
        ("0", .critical), ("1", .critical), ("2", .critical), ("3", .error), ("4", .warning),
        ("5", .notice), ("6", .info), ("7", .debug),
    ]

    /// A level by its own name, or by a syslog name or number (`err`, `3`); `nil` for anything else.
    public init?(name: String) {
        if let level = Level(rawValue: name) {
            self = level
        } else if let entry = Level.syslogNames.first(where: { $0.name == name }) {
            self = entry.level
        } else {
            return nil
        }
    }
}
