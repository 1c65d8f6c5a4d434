/// The filter half of a rule or a route: every condition given must hold; an empty
/// matcher matches every event (as in dunst).
///
/// In config:
/// ```yaml
/// match: { level: ">=warning", source: "backup*", tags: [ops] }
/// ```
/// `level` takes `>=`, `>`, `<=`, `<`, `=` or a bare level; `source`, `app`, `title`,
/// `body` and `category` take a glob or a list of globs (any may match); `tags` lists
/// tags the event must all carry.
public struct EventMatcher: Hashable, Sendable {
    public var level: LevelCondition?
    public var source: [Glob]?
    public var app: [Glob]?
    public var title: [Glob]?
    public var body: [Glob]?
    public var category: [Glob]?
    public var tags: Set<String>

    public init(
        level: LevelCondition? = nil, source: [Glob]? = nil, app: [Glob]? = nil, title: [Glob]? = nil,
        body: [Glob]? = nil, category: [Glob]? = nil, tags: Set<String> = []
    ) {
        self.level = level
        self.source = source
        self.app = app
        self.title = title
        self.body = body
        self.category = category
        self.tags = tags
    }

    /// Matches anything.
    public static let any = EventMatcher()

    public var isEmpty: Bool {
        level == nil && source == nil && app == nil && title == nil && body == nil && category == nil && tags.isEmpty
    }

    /// The hot path: no explanation, no allocation beyond the globs' own.
    public func matches(_ subject: MatchSubject) -> Bool {
        if let level, !level.holds(for: subject.level) { return false }
        if let source, !Self.any(source, subject.source) { return false }
        if let app, !Self.any(app, subject.app) { return false }
        if let title, !Self.any(title, subject.title) { return false }
        if let body, !Self.any(body, subject.body) { return false }
        if let category, !Self.any(category, subject.category) { return false }
        if !tags.isEmpty, !tags.isSubset(of: subject.tags) { return false }
        return true
    }

    /// Why the matcher matched or not: one line per condition, for `explain`.
    public func explain(_ subject: MatchSubject) -> (matched: Bool, reasons: [String]) {
        var reasons: [String] = []
        var matched = true
        func check(_ ok: Bool, _ yes: String, _ no: String) {
            reasons.append(ok ? yes : no)
            if !ok { matched = false }
        }
        if isEmpty { return (true, ["empty matcher matches every event"]) }
        if let level {
            let ok = level.holds(for: subject.level)
            check(ok, "level \(subject.level.rawValue) \(level)", "level \(subject.level.rawValue) is not \(level)")
        }
        for (name, globs, value) in [
            ("source", source, subject.source), ("app", app, subject.app), ("title", title, subject.title),
            ("body", body, subject.body), ("category", category, subject.category),
        ] {
            guard let globs else { continue }
            let patterns = globs.map { "\"\($0.pattern)\"" }.joined(separator: " or ")
            let shown = value.map { "\"\($0)\"" } ?? "(none)"
            check(Self.any(globs, value), "\(name) \(shown) matches \(patterns)", "\(name) \(shown) does not match \(patterns)")
        }
        if !tags.isEmpty {
            let missing = tags.subtracting(subject.tags).sorted()
            check(missing.isEmpty, "tags include \(tags.sorted().joined(separator: ", "))",
                  "tags lack \(missing.joined(separator: ", "))")
        }
        return (matched, reasons)
    }

    private static func any(_ globs: [Glob], _ value: String?) -> Bool {
        let value = value ?? ""
        return globs.contains { $0.matches(value) }
    }
}

/// What a matcher sees of an event: its current values after the rules so far.
public struct MatchSubject: Sendable {
    public var level: Level
    public var source: String?
    public var app: String?
    public var title: String
    public var body: String?
    public var category: String?
    public var tags: Set<String>

    public init(
        level: Level, source: String? = nil, app: String? = nil, title: String, body: String? = nil,
        category: String? = nil, tags: Set<String> = []
    ) {
        self.level = level
        self.source = source
        self.app = app
        self.title = title
        self.body = body
        self.category = category
        self.tags = tags
    }
}

/// `>=warning`, `<info`, `=error`, or a bare level (same as `=`).
public struct LevelCondition: Hashable, Sendable, CustomStringConvertible {
    public enum Comparison: String, Hashable, Sendable, CaseIterable {
        case atLeast = ">=", atMost = "<=", above = ">", below = "<", equal = "="
    }

    public var comparison: Comparison
    public var level: Level

    public init(_ comparison: Comparison, _ level: Level) {
        self.comparison = comparison
        self.level = level
    }

    /// Parses `>=warning`; returns nil with nothing else said when the level is unknown,
    /// so that the caller can produce a located error.
    public init?(parsing text: String) {
        let trimmed = String(text.trimmingWhitespace())
        // Two-character operators first.
        for comparison in [Comparison.atLeast, .atMost, .above, .below, .equal] where trimmed.hasPrefix(comparison.rawValue) {
            let name = trimmed.dropFirst(comparison.rawValue.count).trimmingWhitespace().lowercased()
            guard let level = Level(rawValue: name) else { return nil }
            self.init(comparison, level)
            return
        }
        guard let level = Level(rawValue: trimmed.lowercased()) else { return nil }
        self.init(.equal, level)
    }

    public func holds(for candidate: Level) -> Bool {
        switch comparison {
        case .atLeast: candidate >= level
        case .atMost: candidate <= level
        case .above: candidate > level
        case .below: candidate < level
        // `=success` means success itself, not everything of notice's rank.
        case .equal: candidate == level
        }
    }

    public var description: String { "\(comparison.rawValue)\(level.rawValue)" }
}
