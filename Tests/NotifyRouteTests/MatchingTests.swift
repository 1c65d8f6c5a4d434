import NotifyRoute
import Testing

@Suite struct GlobTests {
    @Test(arguments: [
        ("backup*", "backup.nightly", true), ("backup*", "db.backup", false), ("*.pool", "db.pool", true),
        ("*err*", "some error here", true), ("db.?ool", "db.pool", true), ("db.?ool", "db.spool", false),
        ("[bc]at", "cat", true), ("[!bc]at", "cat", false), ("[a-c]*", "bingo", true), ("*", "", true),
        ("exact", "exact", true), ("exact", "exactly", false), ("a*b*c", "axxbyyc", true), ("a*b*c", "axxbyy", false),
        ("\\*lit", "*lit", true),
    ])
    func matches(pattern: String, text: String, expected: Bool) throws {
        #expect(try Glob(pattern).matches(text) == expected)
    }

    /// Prefixes are decided on bytes when that gives String's answer; these are the
    /// cases where bytes alone would not (a grapheme or a canonical equivalent straddling
    /// the end of the prefix), and plain ones either side.
    @Test(arguments: [
        ("svc1-*", "svc1-db", true), ("svc1-*", "svc1-", true), ("svc1-*", "svc1", false), ("svc1-*", "bench12", false),
        ("e*", "e\u{301}t\u{E9}", false), ("e*", "\u{E9}t\u{E9}", false), ("caf\u{E9}*", "cafe\u{301}s", true),
        ("K*", "\u{212A}elvin", true), ("ab*", "a\u{212A}", false), ("a\r*", "a\r\nb", false), ("a\r*", "a\rb", true),
        ("a*", "a\r\n", true), ("x-*", "x-\u{200D}y", false), ("*", "\u{1F600}", true),
    ])
    func prefixesMatchLikeString(pattern: String, text: String, expected: Bool) throws {
        #expect(try Glob(pattern).matches(text) == expected)
        #expect(text.hasPrefix(String(pattern.dropLast())) == expected || pattern == "*")
    }

    @Test func rejectsAnUnclosedSet() {
        #expect(throws: Glob.SyntaxError.self) { try Glob("[abc") }
    }
}

@Suite struct MatcherTests {
    let subject = MatchSubject(level: .warning, source: "backup.nightly", app: "restic", title: "Disk full", body: "90%", tags: ["ops", "disk"])

    @Test(arguments: [
        (">=warning", true), (">warning", false), ("<=warning", true), ("<error", true), ("=warning", true),
        ("warning", true), (">=error", false), ("=info", false), (">=notice", true),
    ])
    func levelConditions(condition: String, expected: Bool) throws {
        let parsed = try #require(LevelCondition(parsing: condition))
        #expect(EventMatcher(level: parsed).matches(subject) == expected)
    }

    @Test func equalSuccessIsNotNotice() throws {
        let matcher = EventMatcher(level: LevelCondition(parsing: "=success")!)
        #expect(!matcher.matches(MatchSubject(level: .notice, title: "x")))
        #expect(matcher.matches(MatchSubject(level: .success, title: "x")))
        #expect(EventMatcher(level: LevelCondition(.atLeast, .success)).matches(MatchSubject(level: .notice, title: "x")))
    }

    @Test func unknownLevelsDoNotParse() {
        #expect(LevelCondition(parsing: ">=warn") == nil)
        #expect(LevelCondition(parsing: "") == nil)
    }

    @Test func everyConditionMustHold() throws {
        let matcher = EventMatcher(source: [try Glob("backup*")], app: [try Glob("restic")], tags: ["ops"])
        #expect(matcher.matches(subject))
        var other = subject
        other.tags = ["disk"]
        #expect(!matcher.matches(other))
        other = subject
        other.source = nil
        #expect(!matcher.matches(other))
    }

    @Test func anyGlobOfAListMayMatch() throws {
        let matcher = EventMatcher(source: [try Glob("db.*"), try Glob("backup*")])
        #expect(matcher.matches(subject))
    }

    @Test func emptyMatcherMatchesEverything() {
        #expect(EventMatcher.any.matches(MatchSubject(level: .debug, title: "x")))
        #expect(EventMatcher.any.explain(subject).reasons == ["empty matcher matches every event"])
    }

    @Test func explainSaysWhy() throws {
        let matcher = EventMatcher(level: LevelCondition(.atLeast, .error), source: [try Glob("backup*")], tags: ["pager"])
        let verdict = matcher.explain(subject)
        #expect(!verdict.matched)
        #expect(verdict.reasons == [
            "level warning is not >=error",
            "source \"backup.nightly\" matches \"backup*\"",
            "tags lack pager",
        ])
    }
}
