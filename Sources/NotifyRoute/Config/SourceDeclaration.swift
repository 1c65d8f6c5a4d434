/// One entry of `sources:`: something `notify-route serve` watches and turns into events,
/// which then go through the same rules, routes and policies as any other.
///
/// ```yaml
/// sources:
///   nginx-errors:
///     kind: journal
///     match: { PRIORITY: "<=3", _SYSTEMD_UNIT: "nginx*" }
///     title: "{SYSLOG_IDENTIFIER}: {MESSAGE}"
///   failed:
///     kind: units
///     units: ["*.service"]
/// ```
public struct SourceDeclaration: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// Journal records whose fields match become events.
        case journal
        /// A systemd unit entering the failed state becomes an error; active again, a success.
        case units
    }

    /// Which journal files are read: `all` is every journal the user may read.
    public enum JournalScope: String, Hashable, Sendable, CaseIterable {
        case all, user, system
    }

    /// What a `units` source does when a failed unit is active again.
    public enum Recovery: String, Hashable, Sendable, CaseIterable {
        /// A success event with the same replace key, which replaces the failure in place.
        case notify
        /// The failure's notification is closed (`notify-route close --replace-key unit:NAME`).
        case close
    }

    public var name: String
    public var kind: Kind
    public var journal: JournalScope
    /// Every condition must hold for a record to be read (after the kind's own filter).
    public var match: [FieldCondition]
    /// For `units`: which units; for `journal`: the record's `_SYSTEMD_UNIT` or `_SYSTEMD_USER_UNIT`.
    public var units: [Glob]?
    /// A fixed level; unset: from the record's `PRIORITY` (`journal`), `error` (`units`).
    public var level: Level?
    /// The highest level a record can give itself (its `PRIORITY`): any local user may log
    /// at any priority. A fixed `level` is the config's own and is not capped.
    public var maxLevel: Level
    public var title: FieldTemplate?
    public var body: FieldTemplate?
    public var app: FieldTemplate?
    /// The event's source; unset: the source's name.
    public var source: String?
    public var tags: Set<String>
    public var dedupKey: FieldTemplate?
    public var replaceKey: FieldTemplate?
    /// How many events the source lets through per period; the rest are counted and summarised.
    public var rate: RateLimit?
    public var recovery: Recovery
    public var location: SourceLocation?

    public init(
        name: String, kind: Kind, journal: JournalScope = .all, match: [FieldCondition] = [], units: [Glob]? = nil,
        level: Level? = nil, maxLevel: Level = SourceDeclaration.defaultMaxLevel,
        title: FieldTemplate? = nil, body: FieldTemplate? = nil, app: FieldTemplate? = nil,
        source: String? = nil, tags: Set<String> = [], dedupKey: FieldTemplate? = nil, replaceKey: FieldTemplate? = nil,
        rate: RateLimit? = nil, recovery: Recovery = .notify, location: SourceLocation? = nil
    ) {
        self.name = name
        self.kind = kind
        self.journal = journal
        self.match = match
        self.units = units
        self.level = level
        self.maxLevel = maxLevel
        self.title = title
        self.body = body
        self.app = app
        self.source = source
        self.tags = tags
        self.dedupKey = dedupKey
        self.replaceKey = replaceKey
        self.rate = rate
        self.recovery = recovery
        self.location = location
    }

    /// A record's own PRIORITY gives no sticky critical alert unless the config allows it.
    public static let defaultMaxLevel = Level.error

    /// The events' level: the fixed one, else the record's (`recordLevel`) up to `maxLevel`.
    public func effectiveLevel(_ recordLevel: Level) -> Level {
        level ?? min(recordLevel, maxLevel)
    }

    /// A desktop takes a handful of alerts a minute; a flood past that is summarised.
    public static let defaultRate = RateLimit(max: 5, per: .seconds(60))

    public var effectiveRate: RateLimit { rate ?? Self.defaultRate }

    /// The title when the config sets none.
    public var effectiveTitle: FieldTemplate {
        title ?? (kind == .journal ? FieldTemplate.journalTitle : FieldTemplate.unitTitle)
    }

    public var effectiveBody: FieldTemplate? {
        body ?? (kind == .units ? FieldTemplate.unitBody : nil)
    }

    public var effectiveApp: FieldTemplate { app ?? FieldTemplate.journalApp }
}

/// One field condition of a source's `match`: `PRIORITY: "<=3"` compares numbers,
/// `_SYSTEMD_UNIT: "nginx*"` or a list of globs matches text (any glob may match). A
/// record without the field holds only a glob that matches the empty text (`"*"`).
public struct FieldCondition: Hashable, Sendable, CustomStringConvertible {
    public enum Test: Hashable, Sendable {
        case globs([Glob])
        case number(LevelCondition.Comparison, Int)
    }

    public var field: String
    public var test: Test

    public init(field: String, test: Test) {
        self.field = field
        self.test = test
    }

    /// Parses one value of `match`: `<=3` (`>=`, `>`, `<`, `=` and a whole number) or a glob.
    public init(field: String, values: [String]) throws(Glob.SyntaxError) {
        self.field = field
        if values.count == 1, let number = Self.numeric(values[0]) {
            test = .number(number.0, number.1)
            return
        }
        var globs: [Glob] = []
        for value in values { globs.append(try Glob(value)) }
        test = .globs(globs)
    }

    private static func numeric(_ text: String) -> (LevelCondition.Comparison, Int)? {
        for comparison in [LevelCondition.Comparison.atLeast, .atMost, .above, .below, .equal] where text.hasPrefix(comparison.rawValue) {
            guard let number = Int(text.dropFirst(comparison.rawValue.count).trimmingWhitespace()) else { return nil }
            return (comparison, number)
        }
        return nil
    }

    public func holds(_ value: String?) -> Bool {
        switch test {
        case .globs(let globs):
            let text = value ?? ""
            return globs.contains { $0.matches(text) }
        case .number(let comparison, let limit):
            guard let value, let number = Int(value.trimmingWhitespace()) else { return false }
            switch comparison {
            case .atLeast: return number >= limit
            case .atMost: return number <= limit
            case .above: return number > limit
            case .below: return number < limit
            case .equal: return number == limit
            }
        }
    }

    /// As written in a config: the comparison, or the glob(s).
    public var description: String {
        switch test {
        case .globs(let globs): globs.map(\.pattern).joined(separator: ", ")
        case .number(let comparison, let number): "\(comparison.rawValue)\(number)"
        }
    }

    /// A journal field name as journald accepts it: `[A-Z0-9_]`, not starting with a digit.
    static func isFieldName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first), name.utf8.count <= 64 else { return false }
        return name.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}

/// A title, body or key written over a record's fields: `"{SYSLOG_IDENTIFIER}: {MESSAGE}"`.
/// `{A|B}` takes the first of the fields that is set and not empty. A field the record does
/// not have is empty, never an error.
public struct FieldTemplate: Hashable, Sendable, CustomStringConvertible {
    enum Part: Hashable, Sendable {
        case literal(String)
        case field([String])
    }

    let parts: [Part]
    public let template: String

    public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(_ template: String) throws(SyntaxError) {
        self.template = template
        var parts: [Part] = []
        var literal = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "}") else {
                throw SyntaxError(description: "template \"\(template)\": a { is not closed by }")
            }
            let names = rest[afterOpen..<close].split(separator: "|", omittingEmptySubsequences: false).map { String($0.trimmingWhitespace()) }
            for name in names where !FieldCondition.isFieldName(name) {
                throw SyntaxError(description: "template \"\(template)\": \"{\(rest[afterOpen..<close])}\" is not a journal field name; expected {FIELD} or {FIELD|OTHER} with upper-case letters, digits and _ (such as {MESSAGE})")
            }
            if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
            parts.append(.field(names))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    /// The fields the template reads.
    public var fieldNames: [String] {
        parts.flatMap { part -> [String] in
            if case .field(let names) = part { return names }
            return []
        }
    }

    public func render(_ value: (String) -> String?) -> String {
        var output = ""
        for part in parts {
            switch part {
            case .literal(let text): output += text
            case .field(let names):
                for name in names {
                    if let text = value(name), !text.isEmpty {
                        output += text
                        break
                    }
                }
            }
        }
        return output
    }

    public var description: String { template }

    // The built-in templates are valid: a failure here is a bug in this file.
    static let journalTitle = try! FieldTemplate("{SYSLOG_IDENTIFIER|_COMM}: {MESSAGE}")
    static let journalApp = try! FieldTemplate("{SYSLOG_IDENTIFIER|_COMM}")
    static let unitTitle = try! FieldTemplate("{UNIT} failed")
    static let unitBody = try! FieldTemplate("Result: {UNIT_RESULT}\n{LINES}")
}
