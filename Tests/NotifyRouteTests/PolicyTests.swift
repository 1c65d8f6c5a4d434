import Foundation
import NotifyRoute
import NotifyRouteTesting
import Testing

@Suite struct RateLimitTests {
    static let yaml = """
        sinks: { desk: { kind: recording } }
        routes:
          - to: [desk]
            rate: { max: 2, per: 1m }
        """

    @Test func overTheLimitIsHeldAndSummarisedAfterThePeriod() async throws {
        let fixture = try RouterFixture(Self.yaml)
        for index in 1...2 { #expect(try await fixture.send("ok \(index)").statusName(of: "desk") == "delivered") }
        for index in 1...5 {
            let report = try await fixture.send("burst \(index)") { $0.source = index <= 3 ? "backup" : "db" }
            guard case .suppressed(.rateLimited(2, _, let held)) = report.status(of: "desk") else {
                Issue.record("\(String(describing: report.status(of: "desk")))")
                return
            }
            #expect(held == index)
            #expect(report.summary == .suppressed)
        }
        #expect(fixture.recorder("desk").deliveries.count == 2)
        fixture.clock.advance(by: .seconds(60))
        let next = try await fixture.send("after") { $0.level = .warning }
        #expect(next.statusName(of: "desk") == "delivered")
        #expect(next.outcomes.first?.notes == ["delivered first: a summary of 5 events held over the rate limit"])
        let titles = fixture.recorder("desk").deliveries.map(\.event.title)
        #expect(titles == ["ok 1", "ok 2", "+5 more from backup, db", "after"])
        #expect(fixture.recorder("desk").deliveries[2].event.body == "held over the rate limit: backup 3, db 2")
        // The summary goes out once.
        #expect(try await fixture.send("again").outcomes.first?.notes == [])
    }

    @Test func duplicatesDoNotUseTheQuota() async throws {
        let fixture = try RouterFixture("""
            sinks: { desk: { kind: plain } }
            routes: [ { to: [desk], rate: { max: 1, per: 1m }, dedup: { window: 1m } } ]
            """)
        try await fixture.send("same")
        guard case .suppressed(.duplicate)? = try await fixture.send("same").status(of: "desk") else {
            Issue.record("expected a duplicate")
            return
        }
        guard case .suppressed(.rateLimited)? = try await fixture.send("other").status(of: "desk") else {
            Issue.record("expected the rate limit")
            return
        }
    }
}

@Suite struct QuietHoursTests {
    static let yaml = """
        sinks: { desk: { kind: recording } }
        routes:
          - to: [desk]
            quiet: { hours: ["22:00-07:00"], timezone: UTC, breakthrough: error }
        """

    /// 2027-01-15 at hh:mm UTC.
    static func at(_ hour: Int, _ minute: Int = 0) -> Date {
        Date(timeIntervalSince1970: 1_800_000_000 - 1_800_000_000.truncatingRemainder(dividingBy: 86_400) + Double(hour * 3600 + minute * 60))
    }

    @Test func windowsWrapPastMidnight() throws {
        let quiet = QuietHours(windows: [try #require(ClockWindow(parsing: "22:00-07:00"))], timeZone: "UTC")
        #expect(quiet.activeWindow(at: Self.at(23)) != nil)
        #expect(quiet.activeWindow(at: Self.at(3)) != nil)
        #expect(quiet.activeWindow(at: Self.at(6, 59)) != nil)
        #expect(quiet.activeWindow(at: Self.at(7)) == nil)
        #expect(quiet.activeWindow(at: Self.at(21, 59)) == nil)
        #expect(ClockWindow(parsing: "9:00-10:00") == nil)
        #expect(ClockWindow(parsing: "25:00-01:00") == nil)
    }

    /// The hours are read on the zone's wall clock, daylight saving included: 07:00 comes an
    /// hour earlier in UTC in summer. Instants from `date -u -d "2027-03-28 04:59:59Z" +%s`,
    /// their readings from `TZ=Europe/Berlin date -d @1806209999` (and Asia/Kathmandu).
    @Test func windowsFollowTheZonesDaylightSaving() throws {
        let berlin = QuietHours(windows: [try #require(ClockWindow(parsing: "22:00-07:00"))], timeZone: "Europe/Berlin")
        let at = { (seconds: Double) in Date(timeIntervalSince1970: seconds) }
        #expect(berlin.activeWindow(at: at(1_806_127_199)) != nil)   // 2027-03-27 06:59:59 CET
        #expect(berlin.activeWindow(at: at(1_806_127_200)) == nil)   // 2027-03-27 07:00:00 CET
        #expect(berlin.activeWindow(at: at(1_806_209_999)) != nil)   // 2027-03-28 06:59:59 CEST
        #expect(berlin.activeWindow(at: at(1_806_210_000)) == nil)   // 2027-03-28 07:00:00 CEST
        #expect(berlin.activeWindow(at: at(1_824_872_399)) != nil)   // 2027-10-30 06:59:59 CEST
        #expect(berlin.activeWindow(at: at(1_824_872_400)) == nil)   // 2027-10-30 07:00:00 CEST
        #expect(berlin.activeWindow(at: at(1_824_962_399)) != nil)   // 2027-10-31 06:59:59 CET
        #expect(berlin.activeWindow(at: at(1_824_962_400)) == nil)   // 2027-10-31 07:00:00 CET
        let kathmandu = QuietHours(windows: berlin.windows, timeZone: "Asia/Kathmandu")
        #expect(kathmandu.activeWindow(at: at(1_800_029_699)) == nil)   // 2027-01-15 21:59:59 +0545
        #expect(kathmandu.activeWindow(at: at(1_800_029_700)) != nil)   // 2027-01-15 22:00:00 +0545
        let fixed = QuietHours(windows: berlin.windows, timeZone: "GMT+05:45")
        #expect(fixed.activeWindow(at: at(1_800_029_700)) != nil)
        #expect(berlin.windows[0].description == "22:00-07:00")
    }

    @Test func belowBreakthroughIsHeldThenSummarised() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.clock.advance(by: .seconds(Self.at(23).timeIntervalSince(fixture.clock.now())))
        let held = try await fixture.send("nightly warning") { $0.level = .warning; $0.source = "backup" }
        guard case .suppressed(.quietHours("22:00-07:00", 1)) = held.status(of: "desk") else {
            Issue.record("\(String(describing: held.status(of: "desk")))")
            return
        }
        #expect(try await fixture.send("db down") { $0.level = .error }.statusName(of: "desk") == "delivered")  // breaks through
        fixture.clock.advance(by: .seconds(9 * 3600))  // 08:00
        let morning = try await fixture.send("good morning")
        #expect(morning.outcomes.first?.notes == ["delivered first: a summary of 1 events held during quiet hours"])
        #expect(fixture.recorder("desk").deliveries.map(\.event.title) == ["db down", "+1 more from backup", "good morning"])
    }

    @Test func explainShowsTheQuietHours() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.clock.advance(by: .seconds(Self.at(23).timeIntervalSince(fixture.clock.now())))
        let explanation = try await fixture.router.explain(NotificationEvent(title: "x"))
        #expect(explanation.description.contains("desk (recording) via route 1: suppressed: quiet hours 22:00-07:00 (1 held for a summary)"))
        #expect(fixture.recorder("desk").deliveries.isEmpty)
    }
}

@Suite struct InhibitionTests {
    static let yaml = """
        sinks: { desk: { kind: recording } }
        inhibit:
          - source: { level: critical }
            target: { level: "<=warning" }
            equal: [source]
            for: 10m
        fallback: [desk]
        """

    @Test func anActiveSourceSuppressesMatchingTargets() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("db is down") { $0.level = .critical; $0.source = "db" }
        let target = try await fixture.send("slow query") { $0.level = .warning; $0.source = "db" }
        guard case .suppressed(.inhibited(by: "inhibit rule 1 (equal source)")) = target.status(of: "desk") else {
            Issue.record("\(String(describing: target.status(of: "desk")))")
            return
        }
        // Another source is not inhibited; an error is not a target.
        #expect(try await fixture.send("slow query") { $0.level = .warning; $0.source = "web" }.statusName(of: "desk") == "delivered")
        #expect(try await fixture.send("db error") { $0.level = .error; $0.source = "db" }.statusName(of: "desk") == "delivered")
        // After `for`, the source is no longer active.
        fixture.clock.advance(by: .seconds(601))
        #expect(try await fixture.send("slow query") { $0.level = .warning; $0.source = "db" }.statusName(of: "desk") == "delivered")
    }

    @Test func closingTheSourceEndsTheInhibition() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("db is down") { $0.level = .critical; $0.source = "db"; $0.replaceKey = "db-status" }
        #expect(try await fixture.send("slow") { $0.level = .info; $0.source = "db" }.statusName(of: "desk") == "suppressed")
        _ = await fixture.router.close(replaceKey: "db-status")
        #expect(try await fixture.send("slow") { $0.level = .info; $0.source = "db" }.statusName(of: "desk") == "delivered")
    }
}

@Suite struct PolicyConfigTests {
    func error(_ yaml: String) -> String? {
        do {
            _ = try RouterFixture(yaml)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func policyErrorsAreLocated() {
        #expect(error("sinks: { d: { kind: recording } }\nroutes: [ { to: [d], rate: { max: 5 } } ]\n")
            == "test.yaml:2:28: route 1 rate: expected both `max` (a whole number) and `per` (a duration), as { max: 5, per: 1m }")
        #expect(error("sinks: { d: { kind: recording } }\nroutes: [ { to: [d], quiet: [\"22-07\"] } ]\n")
            == "test.yaml:2:29: route 1 quiet: invalid span \"22-07\"; expected HH:MM-HH:MM, such as \"22:00-07:00\"")
        #expect(error("sinks: { d: { kind: recording } }\nroutes: [ { to: [d], quiet: { hours: [\"22:00-07:00\"], timezone: Mars/Base } } ]\n")
            == "test.yaml:2:65: route 1 quiet: unknown time zone \"Mars/Base\"; expected an IANA name such as Europe/Paris or UTC")
        #expect(error("sinks: { d: { kind: recording } }\nroutes: [ { to: [d], quiet: { hours: [\"22:00-07:00\"], timezone: Europe/Berln } } ]\n")
            == "test.yaml:2:65: route 1 quiet: unknown time zone \"Europe/Berln\"; did you mean \"Europe/Berlin\"? expected an IANA name such as Europe/Paris or UTC")
        #expect(error("sinks: { d: { kind: recording } }\nroutes: [ { to: [d], quiet: { hours: [\"22:00-07:00\"], timezone: Australia/Lord_Howe } } ]\n") == nil)
        #expect(error("sinks: { d: { kind: recording } }\nfallback: [d]\ninhibit: [ { source: {}, target: {}, equal: [sorce] } ]\n")?
            .hasPrefix("test.yaml:3:46: unknown key \"sorce\" in inhibit rule 1 equal; did you mean \"source\"?") == true)
    }
}
