import Glibc
import NotifyRoute

/// The daemon's threads under `SCHED_BATCH`, Linux's policy for work nobody waits on
/// interactively: a thread woken under it does not preempt the thread that is running.
/// A `send` that connects wakes the daemon, which preempted the client on its CPU for its
/// accept and greeting before the client could write its request (Tests/Benchmarks/README.md, "Why the code is so").
/// Its share of the CPU and its nice value are unchanged.
package enum BatchScheduling {
    /// `SCHED_BATCH` of <linux/sched.h>: Glibc's module, built without _GNU_SOURCE, lacks the name.
    package static let policy: Int32 = 3

    /// Moves this process's threads that run under the default policy (`SCHED_OTHER`) to
    /// `SCHED_BATCH`; the threads started later inherit it from the thread that starts them.
    /// A policy chosen for the process (`chrt`, systemd's `CPUSchedulingPolicy=`) is kept.
    /// Returns how many threads moved.
    @discardableResult
    package static func adopt() -> Int {
        guard let tasks = opendir("/proc/self/task") else { return 0 }
        defer { closedir(tasks) }
        var moved = 0
        var parameters = sched_param(sched_priority: 0)
        while let entry = readdir(tasks) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let thread = pid_t(name), sched_getscheduler(thread) == SCHED_OTHER else { continue }
            if sched_setscheduler(thread, policy, &parameters) == 0 { moved += 1 }
        }
        // The programs the daemon's exec sinks start get the policy they would have had without it.
        if moved > 0 { CleanSpawn.startChildrenUnderDefaultPolicy(insteadOf: policy) }
        return moved
    }
}
