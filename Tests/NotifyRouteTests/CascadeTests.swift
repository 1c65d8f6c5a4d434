import NotifyRoute
import NotifyRouteTesting
import Testing

/// The cascade: built-in → config defaults → per level → rules → route → sink → explicit.
@Suite struct CascadeTests {
    static let yaml = """
        defaults: { app: from-defaults, timeout: 7s }
        levels:
          critical: { timeout: never }
          error: { timeout: 20s, priority: 1, tint: magenta }
        sinks:
          plainsink: { kind: recording }
          routed: { kind: recording }
          sinkset: { kind: recording, timeout: 2s, app: from-sink }
        rules:
          - match: { source: "db*" }
            set: { timeout: 30s, app: from-rule, tags: [database] }
        routes:
          - match: { tags: [routeset] }
            to: [routed]
            set: { timeout: 45s, app: from-route }
          - match: { tags: [sinkset] }
            to: [sinkset]
            set: { timeout: 45s }
        fallback: [plainsink]
        """

    func timeoutAndApp(_ configure: (inout NotificationEvent) -> Void) async throws -> (String, String, String) {
        let fixture = try RouterFixture(Self.yaml)
        let report = try await fixture.send("t", configure)
        let sink = try #require(report.outcomes.first?.sink)
        let delivered = try #require(fixture.recorder(sink).deliveries.first?.event)
        return (sink, delivered.timeout.description, delivered.app)
    }

    @Test func builtInThenDefaults() async throws {
        // defaults.timeout (7s) overrides the built-in level table (info: 5s).
        #expect(try await timeoutAndApp { $0.level = .info } == ("plainsink", "7s", "from-defaults"))
    }

    @Test func perLevelOverridesDefaults() async throws {
        #expect(try await timeoutAndApp { $0.level = .critical } == ("plainsink", "never", "from-defaults"))
        #expect(try await timeoutAndApp { $0.level = .error } == ("plainsink", "20s", "from-defaults"))
    }

    @Test func rulesOverrideLevels() async throws {
        #expect(try await timeoutAndApp { $0.level = .critical; $0.source = "db.pool" } == ("plainsink", "30s", "from-rule"))
    }

    @Test func routeOverridesRules() async throws {
        #expect(try await timeoutAndApp { $0.source = "db.pool"; $0.tags = ["routeset"] } == ("routed", "45s", "from-route"))
    }

    @Test func sinkOverridesRoute() async throws {
        #expect(try await timeoutAndApp { $0.tags = ["sinkset"] } == ("sinkset", "2s", "from-sink"))
    }

    @Test func explicitAlwaysWins() async throws {
        #expect(try await timeoutAndApp {
            $0.tags = ["sinkset"]; $0.timeout = .after(.milliseconds(1500)); $0.app = "explicit"
        } == ("sinkset", "1500ms", "explicit"))
    }

    @Test func levelOverridesReachTheStyle() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("t") { $0.level = .error }
        let style = try #require(fixture.recorder("plainsink").deliveries.first?.event.style)
        #expect(style.journalPriority == 1)
        #expect(style.tint == .magenta)
        #expect(style.urgency == .normal)
    }

    @Test func ruleTagsAddUp() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("t") { $0.source = "db"; $0.tags = ["mine"] }
        #expect(fixture.recorder("plainsink").deliveries.first?.event.tags == ["mine", "database"])
    }
}

@Suite struct RuleTests {
    @Test func everyMatchingRuleAppliesInFileOrder() async throws {
        let fixture = try RouterFixture("""
            sinks: { out: { kind: recording } }
            rules:
              - match: { source: "backup*" }
                set: { tags: [ops], level: warning }
              - match: { tags: [ops] }            # sees the tag the first rule added
                set: { level: error, replace_key: "status-{source}" }
              - match: { level: ">=error" }       # sees the level the second rule set
                set: { category: alert }
              - match: { source: "other" }
                set: { level: debug }
            fallback: [out]
            """)
        let report = try await fixture.send("Backup failed") { $0.source = "backup.nightly" }
        #expect(report.matchedRules == ["rule 1", "rule 2", "rule 3"])
        let event = try #require(fixture.recorder("out").deliveries.first?.event)
        #expect(event.level == .error)
        #expect(event.tags == ["ops"])
        #expect(event.replaceKey == "status-backup.nightly")
        #expect(event.category == "alert")
    }

    @Test func anExplicitLevelBeatsARule() async throws {
        let fixture = try RouterFixture("""
            sinks: { out: { kind: recording } }
            rules: [ { match: { source: "x" }, set: { level: critical } } ]
            fallback: [out]
            """)
        try await fixture.send("t") { $0.source = "x"; $0.level = .info }
        #expect(fixture.recorder("out").deliveries.first?.event.level == .info)
    }

    @Test func dropSendsNothingAndSaysWhich() async throws {
        let fixture = try RouterFixture("""
            sinks: { out: { kind: recording } }
            rules:
              - name: quiet chatter
                match: { level: "<=debug" }
                set: { drop: true }
            fallback: [out]
            """)
        let report = try await fixture.send("noise") { $0.level = .debug }
        #expect(report.droppedBy == "rule 1 \"quiet chatter\"")
        #expect(report.outcomes.isEmpty)
        #expect(report.summary == .suppressed)
        #expect(fixture.recorder("out").deliveries.isEmpty)
    }
}
