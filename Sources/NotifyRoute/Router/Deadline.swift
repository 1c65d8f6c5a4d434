import Synchronization

/// Runs work with a deadline that holds even when the work never returns.
///
/// A task group would wait for a child that ignores cancellation (a C call blocked
/// in D-Bus or `sd_journal_sendv`), so the work runs in a task of its own and a
/// ``DeadlineTimer``, which needs no thread of the cooperative pool, resumes the caller
/// at the deadline. The work is cancelled then and left to finish on its own.
enum Deadline {
    enum Outcome<Value: Sendable>: Sendable {
        case finished(Result<Value, any Error>)
        case timedOut
    }

    static func run<Value: Sendable>(
        within duration: Duration, _ work: @escaping @Sendable () async throws -> Value
    ) async -> Outcome<Value> {
        let gate = Gate<Outcome<Value>>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                gate.install(continuation)
                // High priority: the sink's own work must not queue behind a burst of
                // routing work (100,000 sends at once), or the deadline would measure the
                // backlog, not the sink, and the first notification of a storm time out.
                // On the global executor, whatever the caller's task prefers: a sink that
                // blocks its thread must not block the thread that resumes the caller (the
                // CLI's send runs on its main thread).
                let task = Task(executorPreference: globalConcurrentExecutor, priority: .high) {
                    do { gate.resume(.finished(.success(try await work()))) } catch {
                        gate.resume(.finished(.failure(error)))
                    }
                }
                let timer = DeadlineTimer.shared.schedule(at: .now + duration) { gate.resume(.timedOut) }
                gate.onResume {
                    task.cancel()
                    DeadlineTimer.shared.cancel(timer)
                }
            }
        } onCancel: {
            gate.resume(.timedOut)
        }
    }

    /// Resumes a continuation exactly once, whoever comes first.
    private final class Gate<Value: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Value, Never>?
            var early: Value?
            var done = false
            var cleanup: (@Sendable () -> Void)?
        }

        private let state = Mutex(State())

        func install(_ continuation: CheckedContinuation<Value, Never>) {
            let early = state.withLock { state -> Value? in
                if let early = state.early { state.early = nil; return early }
                state.continuation = continuation
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }

        func onResume(_ cleanup: @escaping @Sendable () -> Void) {
            let runNow = state.withLock { state -> Bool in
                if state.done { return true }
                state.cleanup = cleanup
                return false
            }
            if runNow { cleanup() }
        }

        func resume(_ value: Value) {
            let (continuation, cleanup) = state.withLock { state -> (CheckedContinuation<Value, Never>?, (@Sendable () -> Void)?) in
                guard !state.done else { return (nil, nil) }
                state.done = true
                defer { state.continuation = nil; state.cleanup = nil }
                if state.continuation == nil { state.early = value }
                return (state.continuation, state.cleanup)
            }
            continuation?.resume(returning: value)
            cleanup?()
        }
    }
}
