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
        let gate = ResumeOnce<Outcome<Value>>()
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
}
