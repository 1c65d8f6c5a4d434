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
