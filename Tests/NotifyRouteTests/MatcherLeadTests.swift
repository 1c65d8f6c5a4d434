@testable import NotifyRoute
import NotifyRouteTesting
import Testing

/// The routes stage's index turns routes away on the first byte of an event's source
/// before any glob runs; it must never turn away a route whose matcher matches.
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
            let index = RouteIndex([matcher])
            for text in Self.texts {
                let subject = MatchSubject(level: .info, source: text, app: "app", title: "t")
                let indexed = index.candidates(for: subject).contains(0) && index.matches(0, subject)
                #expect(indexed == matcher.matches(subject), "source \(patterns) vs \(String(describing: text))")
            }
        }
    }
}

/// The plan tries only the routes a source's first byte leaves in the running; tracing
/// (`explain`) tries every route. Both must pick the same routes, in the same order.
@Suite struct RouteCandidateTests {
    @Test func candidatesPickWhatTryingEveryRoutePicks() throws {
        var config = RouterConfiguration()
        let sources: [[String]?] = [["svc1-*"], ["bench*", "db.*"], nil, ["K*"], ["é*"], ["*pool"], ["exact"], ["b*"], [""]]
        config.routes = try sources.enumerated().map { index, globs in
            Route(name: "r\(index)", matcher: EventMatcher(source: try globs?.map(Glob.init)), sinks: ["a"],
                  continues: index % 2 == 0)
        }
        config.fallback = ["a"]
        let stage = RoutesStage(config, instances: [:])
        let cascade = Cascade(config)
        for source in [nil, "", "svc1-x", "bench1", "db.pool", "\u{212A}elvin", "Kelvin", "\u{E9}t\u{E9}", "e\u{301}t", "exact", "b", "zzz"] as [String?] {
            let event = NotificationEvent(title: "t", source: source)
            var planned = RoutedEvent(event, only: nil, tracing: false), traced = RoutedEvent(event, only: nil, tracing: true)
            planned.subject = cascade.subject(event, rules: EventEffects())
            traced.subject = planned.subject
            try stage.run(&planned)
            try stage.run(&traced)
            #expect(planned.matchedRoutes == traced.matchedRoutes, "source \(String(describing: source))")
            #expect(planned.targets.map(\.sinkName) == traced.targets.map(\.sinkName))
        }
    }
}
