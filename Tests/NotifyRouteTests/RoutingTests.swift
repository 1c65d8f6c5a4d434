import Foundation
import NotifyRoute
import NotifyRouteTesting
import Testing

@Suite struct RoutingTests {
    static let yaml = """
        sinks:
          desk: { kind: recording }
          journal: { kind: recording }
          tty: { kind: recording }
          pager: { kind: recording }
        routes:
          - match: { level: ">=error" }
            to: [pager, desk]
            failover: [tty]
          - match: { tags: [ops] }
            to: [journal]
            continue: true
          - match: { level: ">=warning" }
            to: [desk, journal]
          - match: { source: never }
            to: [tty]
        fallback: [tty]
        """

    @Test func firstMatchWinsAndStops() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("t") { $0.level = .error; $0.tags = ["ops"] }
        #expect(report.matchedRoutes == ["route 1"])
        #expect(report.outcomes.map(\.sink) == ["pager", "desk"])
        #expect(fixture.recorder("journal").deliveries.isEmpty)
    }

    @Test func continueGoesOnToTheNextMatch() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("t") { $0.level = .warning; $0.tags = ["ops"] }
        #expect(report.matchedRoutes == ["route 2", "route 3"])
        // journal is in both routes: it gets the event once.
        #expect(report.outcomes.map(\.sink) == ["journal", "desk"])
        #expect(fixture.recorder("journal").deliveries.count == 1)
    }

    @Test func fallbackWhenNothingMatches() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("t") { $0.level = .info }
        #expect(report.matchedRoutes == ["fallback"])
        #expect(report.outcomes.map(\.sink) == ["tty"])
        #expect(report.statusName(of: "tty") == "delivered")
    }

    @Test func continueWithoutAFurtherMatchDoesNotUseTheFallback() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("t") { $0.level = .info; $0.tags = ["ops"] }
        #expect(report.matchedRoutes == ["route 2"])
        #expect(report.outcomes.map(\.sink) == ["journal"])
    }

    @Test func failoverSinksGetTheEventWhenASinkFails() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.recorder("pager").setBehavior(.fail(SinkError(.failed, "boom")))
        let report = try await fixture.send("t") { $0.level = .critical }
        #expect(report.statusName(of: "pager") == "failed")
        #expect(report.statusName(of: "desk") == "delivered")
        let failover = try #require(report.outcomes.first { $0.sink == "tty" })
        #expect(failover.failoverFor == "pager")
        #expect(failover.status.name == "delivered")
        #expect(report.summary == .delivered)
    }

    @Test func failoverOnUnavailable() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.recorder("desk").setBehavior(.unavailable("no notification daemon"))
        let report = try await fixture.send("t") { $0.level = .error }
        guard case .unavailable(let reason) = report.status(of: "desk") else {
            Issue.record("desk should be unavailable: \(String(describing: report.status(of: "desk")))")
            return
        }
        #expect(reason == "no notification daemon")
        #expect(report.outcomes.first { $0.sink == "tty" }?.failoverFor == "desk")
    }

    @Test func aHungSinkTimesOutAtItsDeadlineAndFailsOver() async throws {
        let fixture = try RouterFixture(Self.yaml.replacingOccurrences(
            of: "pager: { kind: recording }", with: "pager: { kind: recording, deadline: 200ms }"))
        fixture.recorder("pager").setBehavior(.hang)
        let started = ContinuousClock.now
        let report = try await fixture.send("t") { $0.level = .error }
        let elapsed = ContinuousClock.now - started
        guard case .failed(let error) = report.status(of: "pager") else {
            Issue.record("pager should have failed: \(String(describing: report.status(of: "pager")))")
            return
        }
        #expect(error.kind == .timedOut)
        #expect(error.isRetryable)
        #expect(report.outcomes.first { $0.sink == "tty" }?.status.name == "delivered")
        // Generous bound: the point is "not the hang", not a timing target.
        #expect(elapsed < .seconds(5))
    }

    @Test func noSinkAvailableAndNoneDeliveredAreDistinct() async throws {
        let fixture = try RouterFixture("""
            sinks: { a: { kind: recording }, b: { kind: recording } }
            fallback: [a, b]
            """)
        fixture.recorder("a").setBehavior(.unavailable("gone"))
        fixture.recorder("b").setBehavior(.unavailable("gone too"))
        #expect(try await fixture.send("t").summary == .noSinkAvailable)
        fixture.recorder("b").setBehavior(.fail(SinkError(.failed, "broken")))
        #expect(try await fixture.send("t").summary == .failed)
    }

    @Test func onlyNamedSinksBypassRoutes() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.router.send(NotificationEvent(title: "t", level: .critical), only: ["journal"])
        #expect(report.outcomes.map(\.sink) == ["journal"])
        #expect(report.matchedRoutes == ["--sink"])
    }

    /// The targets of `--sink` are made once per config and shared by every event that names
    /// them: each event still gets its own outcome, and none takes a route's failover.
    @Test func namedSinksAreTheSameForEveryEvent() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.recorder("pager").setBehavior(.fail(SinkError(.failed, "down")))
        for title in ["one", "two"] {
            let report = try await fixture.router.send(NotificationEvent(title: title, level: .critical), only: ["pager", "journal"])
            #expect(report.outcomes.map(\.sink) == ["pager", "journal"])
            #expect(report.matchedRoutes == ["--sink"])
        }
        #expect(fixture.recorder("journal").deliveries.map(\.event.title) == ["one", "two"])
        #expect(fixture.recorder("tty").deliveries.isEmpty)
    }

    @Test func lengthsAreCappedPerSink() async throws {
        let fixture = try RouterFixture("""
            sinks: { short: { kind: plain } }
            fallback: [short]
            """)
        let report = try await fixture.send(String(repeating: "t", count: 50)) {
            $0.body = String(repeating: "b", count: 100)
            $0.actions = [NotificationAction(id: "ok", label: "OK")]
        }
        let event = try #require(fixture.recorder("short").deliveries.first?.event)
        #expect(event.title.count == 20 && event.title.hasSuffix("…"))
        #expect(event.body?.count == 30)
        #expect(event.actions.isEmpty)
        #expect(report.outcomes.first?.notes == ["actions dropped: this sink cannot show them"])
    }

    @Test func minLevelSuppressesPerSink() async throws {
        let fixture = try RouterFixture("""
            sinks: { loud: { kind: recording, min_level: warning }, all: { kind: recording } }
            fallback: [loud, all]
            """)
        let report = try await fixture.send("t") { $0.level = .info }
        #expect(report.statusName(of: "loud") == "suppressed")
        #expect(report.statusName(of: "all") == "delivered")
    }

    @Test func aRouterBuiltInCode() async throws {
        let recorder = RecordingSink()
        var config = RouterConfiguration()
        config.routes = [Route(matcher: EventMatcher(level: LevelCondition(.atLeast, .warning)), sinks: ["mine"])]
        let router = try NotificationRouter(configuration: config, sinks: ["mine": recorder])
        let report = try await router.send("Disk almost full") { $0.level = .warning }
        #expect(report.summary == .delivered)
        #expect(recorder.deliveries.first?.event.callSite?.function.isEmpty == false)
        #expect(try await router.send("quiet").summary == .failed)  // no route, no fallback
    }
}
