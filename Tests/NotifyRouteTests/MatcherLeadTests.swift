@testable import NotifyRoute
import Testing

/// The plan's matchers turn events away on the first byte of their source or app before
/// any glob runs; they must agree with ``EventMatcher/matches(_:)`` on every subject.
@Suite struct MatcherLeadTests {
    static let patterns: [[String]] = [
        ["svc1-*"], ["bench*", "db.*"], ["exact"], ["K*"], ["é*"], ["*pool"], ["[ab]*"], [""], ["a\r*"], ["x", "y*"],
    ]
    static let texts: [String?] = [
        nil, "", "svc1-db", "svc12", "bench3", "db.pool", "exact", "exactly", "\u{212A}elvin", "Kelvin", "e\u{301}t\u{E9}",
        "\u{E9}t\u{E9}", "a.pool", "b", "a\r\nb", "a\rb", "x", "yz", "\u{1F600}",
    ]

    @Test func agreesWithTheMatcherOnSources() throws {
        for patterns in Self.patterns {
            let matcher = EventMatcher(source: try patterns.map(Glob.init))
            let planned = RoutingPlan.Matcher(matcher)
            for text in Self.texts {
                let subject = MatchSubject(level: .info, source: text, app: "app", title: "t")
                #expect(planned.matches(subject) == matcher.matches(subject), "source \(patterns) vs \(String(describing: text))")
            }
        }
    }

    @Test func agreesWithTheMatcherOnApps() throws {
        for patterns in Self.patterns {
            let matcher = EventMatcher(level: LevelCondition(.atLeast, .info), app: try patterns.map(Glob.init))
            let planned = RoutingPlan.Matcher(matcher)
            for text in Self.texts {
                let subject = MatchSubject(level: .warning, source: "s", app: text, title: "t")
                #expect(planned.matches(subject) == matcher.matches(subject), "app \(patterns) vs \(String(describing: text))")
            }
        }
    }
}
