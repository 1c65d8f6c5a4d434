import Foundation
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteTestSupport
import Testing

@Suite struct DedupTests {
    static let yaml = """
        sinks:
          desk: { kind: recording }
          log: { kind: plain }
        routes:
          - to: [desk, log]
            dedup: { window: 1m }
        """

    @Test func duplicatesInsideTheWindowAreCountedAndSuppressed() async throws {
        let fixture = try RouterFixture(Self.yaml)
        let first = try await fixture.send("Disk full")
        #expect(first.statusName(of: "desk") == "delivered")
        fixture.clock.advance(by: .seconds(30))
        let second = try await fixture.send("Disk full")
        guard case .suppressed(.duplicate(let count, _, let updated)) = second.status(of: "desk") else {
            Issue.record("expected a duplicate: \(String(describing: second.status(of: "desk")))")
            return
        }
        #expect(count == 2)
        #expect(updated)  // desk can replace: the count is updated in place
        #expect(second.summary == .suppressed)
        // The sink that can replace was asked to update the first notification's count.
        let update = try #require(fixture.recorder("desk").deliveries.last)
        #expect(update.intent == .updateDuplicateCount(SinkHandle("1"), count: 2))
        // The sink that cannot replace got nothing more.
        #expect(fixture.recorder("log").deliveries.count == 1)
        guard case .suppressed(.duplicate(2, _, false)) = second.status(of: "log") else {
            Issue.record("log: \(String(describing: second.status(of: "log")))")
            return
        }
    }

    @Test func theWindowEndsAndTheNextOneIsShown() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("Disk full")
        fixture.clock.advance(by: .seconds(61))
        let later = try await fixture.send("Disk full")
        #expect(later.statusName(of: "desk") == "delivered")
        #expect(fixture.recorder("desk").deliveries.map(\.intent) == [.show, .show])
    }

    @Test func defaultDedupKeyIsLevelSourceTitleBody() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("Disk full")
        #expect(try await fixture.send("Disk full") { $0.level = .error }.statusName(of: "desk") == "delivered")
        #expect(try await fixture.send("Disk full") { $0.body = "other" }.statusName(of: "desk") == "delivered")
        #expect(try await fixture.send("Disk full") { $0.source = "other" }.statusName(of: "desk") == "delivered")
        #expect(try await fixture.send("Disk full").statusName(of: "desk") == "suppressed")
    }

    @Test func anExplicitDedupKeyJoinsDifferentEvents() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await fixture.send("Disk 90%") { $0.dedupKey = "disk" }
        let report = try await fixture.send("Disk 91%") { $0.dedupKey = "disk" }
        #expect(report.statusName(of: "desk") == "suppressed")
    }

    @Test func aFailedDeliveryDoesNotOpenTheWindow() async throws {
        let fixture = try RouterFixture(Self.yaml)
        fixture.recorder("desk").setBehavior(.fail(SinkError(.failed, "down")))
        let first = try await fixture.send("Disk full")
        #expect(first.statusName(of: "desk") == "failed")
        #expect(first.statusName(of: "log") == "delivered")  // one sink's failure is not another's
        fixture.recorder("desk").setBehavior(.deliver)
        let retry = try await fixture.send("Disk full")
        #expect(retry.statusName(of: "desk") == "delivered")
        #expect(retry.statusName(of: "log") == "suppressed")
    }

    @Test func withoutAWindowNothingIsDeduplicated() async throws {
        let fixture = try RouterFixture("""
            sinks: { out: { kind: recording } }
            fallback: [out]
            """)
        try await fixture.send("same")
        #expect(try await fixture.send("same").statusName(of: "out") == "delivered")
    }

    @Test func manyDuplicatesCountExactly() async throws {
        let fixture = try RouterFixture(Self.yaml)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try await fixture.send("storm") } }
            try await group.waitForAll()
        }
        let last = try await fixture.send("storm")
        guard case .suppressed(.duplicate(let count, _, _)) = last.status(of: "log") else {
            Issue.record("\(String(describing: last.status(of: "log")))")
            return
        }
        #expect(count == 201)
        #expect(fixture.recorder("log").deliveries.count == 1)
    }
}

@Suite struct ReplaceTests {
    @Test func aReplaceKeyReplacesOnSinksThatCan() async throws {
        let fixture = try RouterFixture("""
            sinks: { desk: { kind: recording }, log: { kind: plain } }
            fallback: [desk, log]
            """)
        let first = try await fixture.send("Backup running") { $0.replaceKey = "backup" }
        let handle = try #require(first.outcomes.first { $0.sink == "desk" }?.handle)
        let second = try await fixture.send("Backup done") { $0.replaceKey = "backup" }
        guard case .replaced(let previous) = second.status(of: "desk") else {
            Issue.record("\(String(describing: second.status(of: "desk")))")
            return
        }
        #expect(previous == handle)
        #expect(fixture.recorder("desk").deliveries.last?.intent == .replace(handle))
        // A sink that cannot replace shows it as new.
        #expect(second.statusName(of: "log") == "delivered")
        #expect(fixture.recorder("log").deliveries.map(\.intent) == [.show, .show])
    }

    @Test func closeUsesTheRememberedHandle() async throws {
        let fixture = try RouterFixture("""
            sinks: { desk: { kind: recording } }
            fallback: [desk]
            """)
        try await fixture.send("Backup running") { $0.replaceKey = "backup" }
        let report = await fixture.router.close(replaceKey: "backup")
        #expect(report.statusName(of: "desk") == "delivered")
        #expect(fixture.recorder("desk").closes.map(\.handle) == [SinkHandle("1")])
        // Closed: nothing is remembered for the key any more.
        let again = await fixture.router.close(replaceKey: "backup")
        #expect(again.outcomes.isEmpty)
        #expect(again.notes == ["no notification is known for replace key \"backup\""])
    }

    @Test func stateIsBounded() async throws {
        let fixture = try RouterFixture("""
            sinks: { out: { kind: recording } }
            routes: [ { to: [out], dedup: { window: 1h } } ]
            state: { max_entries: 50 }
            """)
        for index in 0..<200 { try await fixture.send("event \(index)") }
        #expect(fixture.store.snapshot.dedup.count <= 50)
    }

    /// Past `max_entries`, closed windows go first, then the least recently seen: a
    /// window seen again outlives older ones. The same with a state that was decoded
    /// (as from a state file), which keeps no eviction order and cuts by selection, and
    /// with the state database, which deletes through its indexes.
    @Test(arguments: ["memory", "decoded", "database"]) func evictionForgetsTheLeastRecentlySeen(store kind: String) async throws {
        let registry = RouterFixture.registry
        let config = try RouterConfiguration.load(yaml: """
            sinks: { out: { kind: recording } }
            routes:
              - { match: { source: short }, to: [out], dedup: { window: 1m } }
              - { to: [out], dedup: { window: 1h } }
            state: { max_entries: 10 }
            """, file: "test.yaml", registry: registry)
        let store: any RouterStateStore
        let snapshot: () throws -> RouterState
        switch kind {
        case "database":
            let directory = try TestEnvironment.temporaryDirectory().path
            chmod(directory, 0o700)
            let database = SQLiteStateStore(directory: directory)
            (store, snapshot) = (database, { try database.snapshot() })
        default:
            let initial = kind == "decoded" ? try JSONDecoder().decode(RouterState.self, from: JSONEncoder().encode(RouterState())) : RouterState()
            let memory = InMemoryStateStore(initial)
            (store, snapshot) = (memory, { memory.snapshot })
        }
        let clock = ManualClock()
        let router = try NotificationRouter(configuration: config, registry: registry, store: store, clock: clock)
        func send(_ title: String, source: String? = nil) async throws {
            _ = try await router.send(NotificationEvent(title: title, source: source))
            clock.advance(by: .seconds(1))
        }
        func remembered(_ title: String) throws -> Bool {
            try snapshot().dedup.keys.contains { $0.text.hasSuffix("\u{1F}\(title)\u{1F}") }
        }

        try await send("closes soon", source: "short")  // its window closes a minute later
        for index in 0..<9 { try await send("event \(index)") }
        clock.advance(by: .seconds(120))
        let again = try await router.send(NotificationEvent(title: "event 0"))  // seen again: now the most recent
        #expect(again.statusName(of: "out") == "suppressed")
        try await send("event 9")  // 11 entries: the closed window goes, 10 remain
        #expect(try snapshot().dedup.count == 10)
        #expect(try !remembered("closes soon"))
        try await send("event 10")  // 11 again: down to 9, without the two least recently seen
        let state = try snapshot()
        #expect(state.dedup.count == 9)
        #expect(try remembered("event 0"))
        #expect(try !remembered("event 1") && !remembered("event 2"))
        #expect(try (3...10).allSatisfy { try remembered("event \($0)") })
    }
}

@Suite struct RegistryTests {
    @Test func aDuplicateKindIsAStartupError() {
        let plugin = SinkPlugin(kind: "twice", summary: "") { _ in RecordingSink() }
        #expect(throws: SinkRegistry.DuplicateKindError(kind: "twice")) { try SinkRegistry([plugin, plugin]) }
    }
}

@Suite struct ExplainTests {
    @Test func explainSaysWhatWouldHappenWithoutSending() async throws {
        let fixture = try RouterFixture(RoutingTests.yaml)
        let explanation = try await fixture.router.explain(NotificationEvent(title: "Disk", level: .warning, tags: ["ops"]))
        #expect(explanation.routes.map(\.matched) == [false, true, true, false])
        #expect(explanation.routes[0].reasons == ["level warning is not >=error"])
        #expect(explanation.routes[3].reasons == ["not tried: an earlier route matched without `continue`"])
        #expect(explanation.plannedReport.outcomes.map(\.status.name) == ["planned", "planned"])
        #expect(fixture.recorder("journal").deliveries.isEmpty && fixture.recorder("desk").deliveries.isEmpty)
        #expect(explanation.description.contains("route 2: matched (to journal, continue)"))
    }

    @Test func dryRunSeesDuplicatesButChangesNothing() async throws {
        let fixture = try RouterFixture(DedupTests.yaml)
        try await fixture.send("Disk full")
        let before = fixture.store.snapshot
        let planned = try await fixture.router.dryRun(NotificationEvent(title: "Disk full"))
        #expect(planned.statusName(of: "desk") == "suppressed")
        #expect(fixture.store.snapshot == before)
    }
}
