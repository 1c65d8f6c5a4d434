import Synchronization

/// One sleeper's alarm: ``wait(upTo:)`` returns after the time given, or at once after
/// a ``poke()`` (one made while nobody waits is kept for the next wait).
public final class TimerWakeup: Sendable {
    private struct State {
        var poked = false
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    public init() {}

    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Wakes the sleeper now (or makes its next wait return at once).
    public func poke() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.poked = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Ends the sleeper's loop: every later wait returns at once.
    public func stop() {
        state.withLock { $0.stopped = true }
        poke()
    }

    /// Sleeps until poked, or for `duration` (`nil`: until poked), or until the task is cancelled.
    package func wait(upTo duration: Duration?) async {
        guard let duration else { return await waitForPoke() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { await self.waitForPoke() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForPoke() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.poked || state.stopped {
                        state.poked = false
                        return true
                    }
                    // Checked under the lock that the handler below takes: no cancel goes unseen.
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
