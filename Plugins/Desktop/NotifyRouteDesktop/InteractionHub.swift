import NotifyRoute
import Synchronization

/// Fans out what users do with notifications (actions, dismissals) to every
/// ``DesktopSink/interactions()`` stream and the optional callback.
///
/// Keeps the most recent interactions and replays them to each new stream, because
/// the router subscribes only after `deliver` returns, and a fast user (or a test
/// emitting `ActionInvoked`) can act before that.
final class InteractionHub: Sendable {
    private struct State {
        var history: [SinkInteraction] = []
        var subscribers: [Int: AsyncStream<SinkInteraction>.Continuation] = [:]
        var nextID = 0
    }

    static let historyLimit = 256
    private let state = Mutex(State())
    private let callback: (@Sendable (SinkInteraction) -> Void)?

    init(callback: (@Sendable (SinkInteraction) -> Void)?) {
        self.callback = callback
    }

    func publish(_ interaction: SinkInteraction) {
        // The callback first: whoever learns of an interaction from a stream (the
        // router's `firstInteraction`) may count on the callback having seen it.
        callback?(interaction)
        state.withLock { state in
            state.history.append(interaction)
            if state.history.count > Self.historyLimit { state.history.removeFirst(state.history.count - Self.historyLimit) }
            // Yield under the lock so a stream never sees a live item before the replayed ones.
            for continuation in state.subscribers.values { continuation.yield(interaction) }
        }
    }

    /// A stream of everything from the recent history on, until the consumer stops.
    func stream() -> AsyncStream<SinkInteraction> {
        let (stream, continuation) = AsyncStream<SinkInteraction>.makeStream(bufferingPolicy: .bufferingNewest(Self.historyLimit))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            for item in state.history { continuation.yield(item) }
            state.subscribers[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}
