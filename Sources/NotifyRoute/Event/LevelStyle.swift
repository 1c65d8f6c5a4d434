/// How a level is presented by each kind of sink: the level table of the design.
///
/// | level | journal priority | urgency | tint | timeout |
/// |---|---|---|---|---|
/// | debug | 7 | low | dim | 3s |
/// | info | 6 | normal | blue | 5s |
/// | notice | 5 | normal | cyan | 5s |
/// | success | 5 | normal | green | 4s |
/// | warning | 4 | normal | yellow | 8s |
/// | error | 3 | normal | red | 15s |
/// | critical | 2 | critical | white-on-red | never |
///
/// Every column can be overridden per level in the config's `levels:` section.
public struct LevelStyle: Hashable, Sendable, Codable {
    /// syslog priority, 0 (emerg) to 7 (debug): the journal's `PRIORITY`.
    public var journalPriority: Int
    /// Desktop urgency hint.
    public var urgency: Urgency
    /// Terminal colour.
    public var tint: Tint
    /// How long it stays visible unless something more specific says otherwise.
    public var timeout: NotificationTimeout

    public init(journalPriority: Int, urgency: Urgency, tint: Tint, timeout: NotificationTimeout) {
        self.journalPriority = journalPriority
        self.urgency = urgency
        self.tint = tint
        self.timeout = timeout
    }

    /// The built-in row of the level table.
    public static func builtIn(for level: Level) -> LevelStyle {
        switch level {
        case .debug: LevelStyle(journalPriority: 7, urgency: .low, tint: .dim, timeout: .after(.seconds(3)))
        case .info: LevelStyle(journalPriority: 6, urgency: .normal, tint: .blue, timeout: .after(.seconds(5)))
        case .notice: LevelStyle(journalPriority: 5, urgency: .normal, tint: .cyan, timeout: .after(.seconds(5)))
        case .success: LevelStyle(journalPriority: 5, urgency: .normal, tint: .green, timeout: .after(.seconds(4)))
        case .warning: LevelStyle(journalPriority: 4, urgency: .normal, tint: .yellow, timeout: .after(.seconds(8)))
        case .error: LevelStyle(journalPriority: 3, urgency: .normal, tint: .red, timeout: .after(.seconds(15)))
        case .critical: LevelStyle(journalPriority: 2, urgency: .critical, tint: .whiteOnRed, timeout: .never)
        }
    }
}

/// The desktop notification urgency levels of the freedesktop specification.
public enum Urgency: String, Hashable, Sendable, CaseIterable, Codable {
    case low, normal, critical

    /// The byte sent in the `urgency` hint.
    public var byteValue: UInt8 {
        switch self {
        case .low: 0
        case .normal: 1
        case .critical: 2
        }
    }
}

/// A terminal colour, in 16-colour terms; sinks that can do more may map it further.
public enum Tint: String, Hashable, Sendable, CaseIterable, Codable {
    case plain, dim, blue, cyan, green, yellow, red, magenta, white
    case whiteOnRed = "white-on-red"

    /// The SGR parameters for a 16-colour terminal.
    public var sgrParameters: String {
        switch self {
        case .plain: "0"
        case .dim: "2"
        case .blue: "34"
        case .cyan: "36"
        case .green: "32"
        case .yellow: "33"
        case .red: "31"
        case .magenta: "35"
        case .white: "97"
        case .whiteOnRed: "97;41"
        }
    }
}
