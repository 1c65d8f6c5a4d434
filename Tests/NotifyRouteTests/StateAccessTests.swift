import NotifyRoute
import NotifyRouteTesting
import Synchronization
import Testing

/// An in-memory store that counts the transactions a router asks of it.
final class CountingStateStore: RouterStateStore {
    let inner = InMemoryStateStore()
    let transactions = Atomic<Int>(0)

    var count: Int { transactions.load(ordering: .relaxed) }

    func withState<Result: Sendable>(
        discardingChanges: Bool, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result {
        transactions.add(1, ordering: .relaxed)
        return try inner.withState(discardingChanges: discardingChanges, body)
    }
}

/// The state is asked for only when a policy of the event's routes reads it: a `send`
/// on a route without one does not open the CLI's database.
@Suite struct StateAccessTests {
    func router(_ yaml: String, _ store: CountingStateStore) throws -> NotificationRouter {
        let config = try RouterConfiguration.load(yaml: yaml, file: "test.yaml", registry: RouterFixture.registry)
        return try NotificationRouter(configuration: config, registry: RouterFixture.registry, store: store)
    }

    @Test func aRouteWithoutPoliciesAsksForNoTransaction() async throws {
        let store = CountingStateStore()
        let router = try router("sinks: { a: { kind: recording }, b: { kind: plain } }\nroutes: [ { to: [a, b] } ]\n", store)
        let report = try await router.send(NotificationEvent(title: "Backup done"))
        #expect(report.statusName(of: "a") == "delivered" && report.statusName(of: "b") == "delivered")
        #expect((router.sink(named: "a") as! RecordingSink).deliveries.count == 1)
        _ = try await router.dryRun(NotificationEvent(title: "Backup done"))
        _ = try await router.explain(NotificationEvent(title: "Backup done"))
        #expect(store.count == 0)
    }

    /// Each policy that reads the state still gets its transaction (deciding) and, for a
    /// delivery that opened a window or has a replace key, its settlement.
    @Test(arguments: [
        "routes: [ { to: [a], dedup: { window: 1m } } ]",
        "routes: [ { to: [a], rate: { max: 2, per: 1m } } ]",
        "routes: [ { to: [a], quiet: { hours: [\"22:00-07:00\"], timezone: UTC } } ]",
        "inhibit: [ { source: { level: critical }, target: {} } ]\nfallback: [a]",
        "rules: [ { set: { replace_key: backup } } ]\nroutes: [ { to: [a] } ]",
    ])
    func aPolicyThatReadsTheStateGetsIt(routes: String) async throws {
        let store = CountingStateStore()
        let router = try router("sinks: { a: { kind: recording } }\n" + routes + "\n", store)
        _ = try await router.send(NotificationEvent(title: "Backup done"))
        #expect(store.count >= 1)
    }
}
