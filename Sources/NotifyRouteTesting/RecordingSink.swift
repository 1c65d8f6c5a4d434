import NotifyRoute
import Synchronization

/// A sink that remembers what it was asked to do: the test kit of the core, like
/// swift-log's in-memory handler, in a library of its own so that it is no part of the
/// core's API. It can also be told to fail, to be unavailable, or
/// to hang, so that failover and deadlines can be tested without a real component.
///
/// ```swift
/// let recorder = RecordingSink()
/// let router = try NotificationRouter(configuration: config, sinks: ["tty": recorder])
/// try await router.send(NotificationEvent(title: "hi"))
/// recorder.deliveries.map(\.event.title)  // ["hi"]
/// ```
public final class RecordingSink: NotificationSink {
    /// How the recorder behaves on the next deliveries.
    public enum Behavior: Sendable {
        case deliver
        case fail(SinkError)
        case unavailable(String)
        /// Never answer (until cancelled): for deadline tests.
        case hang
    }

    private struct State {
        var deliveries: [SinkDelivery] = []
        var closes: [SinkCloseRequest] = []
        var behavior: Behavior = .deliver
        var nextHandle = 1
    }

    private let state = Mutex(State())
    public let capabilities: SinkCapabilities

    public init(capabilities: SinkCapabilities = SinkCapabilities(canReplace: true, canClose: true)) {
        self.capabilities = capabilities
    }

    public var deliveries: [SinkDelivery] { state.withLock { $0.deliveries } }
    public var closes: [SinkCloseRequest] { state.withLock { $0.closes } }

    public func setBehavior(_ behavior: Behavior) {
        state.withLock { $0.behavior = behavior }
    }

    public func availability() async -> SinkAvailability {
        if case .unavailable(let reason) = state.withLock({ $0.behavior }) { return .unavailable(reason: reason) }
        return .available
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let (behavior, handle) = record(delivery)
        if case .hang = behavior {
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
            throw CancellationError()
        }
        return try answer(behavior, handle)
    }

    private func record(_ delivery: SinkDelivery) -> (Behavior, SinkHandle) {
        state.withLock { state -> (Behavior, SinkHandle) in
            state.deliveries.append(delivery)
            switch delivery.intent {
            case .replace(let existing), .updateDuplicateCount(let existing, _):
                return (state.behavior, existing)
            case .show:
                defer { state.nextHandle += 1 }
                return (state.behavior, SinkHandle(String(state.nextHandle)))
            }
        }
    }

    private func answer(_ behavior: Behavior, _ handle: SinkHandle) throws -> SinkReceipt {
        switch behavior {
        case .deliver: return SinkReceipt(handle: handle)
        case .fail(let error): throw error
        case .unavailable(let reason): throw SinkError(.unavailable, reason)
        case .hang: throw CancellationError()  // handled by the caller
        }
    }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        state.withLock { $0.closes.append(request) }
        return SinkReceipt(handle: request.handle)
    }
    /// Nothing outlives a delivery here: ``finish()`` has nothing to wait for.
    public var hasPendingWork: Bool { false }
}
