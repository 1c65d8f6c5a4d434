import Synchronization

/// The work a router goes on doing after the call that caused it has returned: a count
/// update sent when a burst's interval ends, a retry after its backoff, a replaced router
/// finishing what its sinks hold. Each piece runs as a child task of ``run()``, so it has
/// an owner: whoever runs the runtime waits for it, and cancelling the run cancels it.
///
/// `NotificationRouterService` runs its router's runtime in a `ServiceGroup`, and so
/// does `notify-route serve`; a program that uses a router without that service runs it
/// beside its own work:
///
/// ```swift
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { await router.runtime.run() }
///     for try await line in lines { try await router.send(NotificationEvent(title: line)) }
///     await router.finish(within: .seconds(5))
///     group.cancelAll()
/// }
/// ```
///
/// Work started while no run is under way waits for the next one;
/// ``NotificationRouter/finish(within:)`` sends the count updates it held in any case.
public final class RouterRuntime: Sendable {
    public typealias Work = @Sendable () async -> Void

    private struct State {
        var queued: [Work] = []
        var waiter: CheckedContinuation<[Work]?, Never>?
        var running = false
        var cancelled = false
        var ended = false
    }
    private let state = Mutex(State())

    public init() {}

    /// Starts `work` as a child task of the run under way, or of the next run.
    public func start(_ work: @escaping Work) {
        let waiter = state.withLock { state -> CheckedContinuation<[Work]?, Never>? in
            guard let waiter = state.waiter else {
                state.queued.append(work)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: [work])
    }

    /// Runs the work started here until the calling task is cancelled; then the work's
    /// tasks are cancelled (a retry keeps its outbox row, a count update goes out at once)
    /// and awaited before it returns. What was started but not yet begun waits for the next
    /// run. One run at a time: a second concurrent call returns at once.
    public func run() async {
        let first = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.cancelled = false
            return true
        }
        guard first else { return }
        defer { state.withLock { $0.running = false } }
        await withDiscardingTaskGroup { group in
            while let batch = await next() {
                for work in batch { group.addTask { await work() } }
            }
        }
    }

    /// Ends the run under way (or the next) for good, once the work it has begun is done:
    /// for a router that was replaced, after it finished.
    public func end() {
        let waiter = state.withLock { state -> CheckedContinuation<[Work]?, Never>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// What was started since the last call, waiting for it if nothing was; `nil` once the
    /// run is cancelled (what is queued then waits for the next run).
    private func next() async -> [Work]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Work]?, Never>) in
                let now = state.withLock { state -> [Work]?? in
                    if state.cancelled || state.ended { return .some(nil) }
                    if !state.queued.isEmpty {
                        defer { state.queued = [] }
                        return state.queued
                    }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<[Work]?, Never>? in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}
