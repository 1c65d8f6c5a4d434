import NotifyRoute
import NotifyRouteTesting

/// Builds routers from YAML whose sinks are all recording sinks (kind `recording`, or
/// `plain` for one that cannot replace), with a manual clock: no sleeping, no real I/O.
struct RouterFixture {
    let router: NotificationRouter
    let clock: ManualClock
    let store: InMemoryStateStore

    static let registry = try! SinkRegistry([
        SinkPlugin(kind: "recording", summary: "records deliveries") { _ in RecordingSink() },
        SinkPlugin(kind: "plain", summary: "records deliveries, cannot replace") { _ in
            RecordingSink(capabilities: SinkCapabilities(maxTitleLength: 20, maxBodyLength: 30))
        },
    ])

    init(_ yaml: String) throws {
        clock = ManualClock()
        store = InMemoryStateStore()
        var config = try RouterConfiguration.load(yaml: yaml, file: "test.yaml", registry: Self.registry)
        // Other suites run child processes synchronously and can hold both threads of the
        // cooperative pool on a 2-core machine; a recording sink must not miss the default
        // 2s deadline because of that. Tests of deadlines set their own, short ones.
        config.defaults.deadline = config.defaults.deadline ?? .seconds(60)
        router = try NotificationRouter(configuration: config, registry: Self.registry, store: store, clock: clock)
    }

    func recorder(_ name: String) -> RecordingSink {
        router.sink(named: name) as! RecordingSink
    }

    @discardableResult
    func send(_ title: String, _ configure: (inout NotificationEvent) -> Void = { _ in }) async throws -> DeliveryReport {
        var event = NotificationEvent(title: title)
        configure(&event)
        return try await router.send(event)
    }
}

extension DeliveryReport {
    func status(of sink: String) -> SinkOutcome.Status? {
        outcomes.first { $0.sink == sink }?.status
    }

    func statusName(of sink: String) -> String? { status(of: sink)?.name }
}
