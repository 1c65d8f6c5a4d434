import Dispatch
import Synchronization

/// A task executor that runs its jobs on the thread that calls ``run(_:)``: for
/// `notify-route send`, the main thread, which otherwise only waits.
///
/// Without it every async function of the command hops to the cooperative pool, which
/// starts its threads for it (three for a journal send: `clone3`, an 8 MiB stack and a
/// 64 MiB malloc arena each, for a process that lives a few milliseconds). With it a send
/// that never waits runs start to end on the main thread. Work that must not share that
/// thread says so: the deadline of a sink's call runs in a task of the global executor
/// (``Deadline``), so a sink stuck in a C call cannot stop the caller from timing out.
final class CallerThreadExecutor: TaskExecutor {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var next = 0
        var stopped = false
    }

    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    /// Runs `operation` in a task that prefers this executor, running the jobs of it and of
    /// its child tasks on the calling thread, and returns when `operation` has returned.
    /// `@Sendable`: a closure formed in `main` would otherwise take `main`'s main-actor
    /// isolation and wait for the main queue, which nothing serves while this thread runs jobs.
    static func run(_ operation: @escaping @Sendable () async -> Void) {
        let executor = CallerThreadExecutor()
        Task(executorPreference: executor) {
            await operation()
            executor.stop()
        }
        executor.runUntilStopped()
    }

    private func stop() {
        queue.withLock { $0.stopped = true }
        wake.signal()
    }

    private func runUntilStopped() {
        while true {
            wake.wait()
            let job = queue.withLock { queue -> UnownedJob? in
                guard queue.next < queue.jobs.count else { return nil }
                defer {
                    queue.next += 1
                    if queue.next == queue.jobs.count { queue.jobs.removeAll(keepingCapacity: true); queue.next = 0 }
                }
                return queue.jobs[queue.next]
            }
            if let job {
                job.runSynchronously(on: asUnownedTaskExecutor())
            } else if queue.withLock({ $0.stopped }) {
                return
            }
        }
    }
}
