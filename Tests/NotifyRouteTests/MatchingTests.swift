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
