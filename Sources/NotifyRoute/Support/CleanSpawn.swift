import Glibc
import Synchronization

/// `posix_spawn` with every signal unblocked and at its default disposition in the child,
/// and under `SCHED_OTHER` when the daemon moved itself to `SCHED_BATCH`
/// (``startChildrenUnderDefaultPolicy(insteadOf:)``).
///
/// A process of ours ignores SIGPIPE, may catch SIGINT, and has threads that block
/// signals; an ignored disposition and the signal mask are inherited across exec, so a
/// child started plainly would not see SIGPIPE, or SIGCHLD, or a kill it should die of.
/// The exec plugin, `notify-route run` and the tests start their children through this.
package enum CleanSpawn {
    /// The scheduling policy this process moved to, which its children do not inherit; 0: none.
    private static let resetPolicy = Atomic<Int32>(0)

    /// Children start under `SCHED_OTHER` while this process runs under `policy`, which it
    /// chose for itself (the daemon's `SCHED_BATCH`); a policy someone else chose for it
    /// (`chrt`, systemd's `CPUSchedulingPolicy=`) goes on to its children.
    package static func startChildrenUnderDefaultPolicy(insteadOf policy: Int32) {
        resetPolicy.store(policy, ordering: .relaxed)
    }

    private static var resetsChildren: Bool {
        let policy = resetPolicy.load(ordering: .relaxed)
        return policy != 0 && sched_getscheduler(0) == policy
    }

    /// Starts `path` with `arguments` (argv[0] included) and `environment` (`nil`: this
    /// process's environment), applying `actions` (dup2s of pipes, say).
    ///
    /// - Returns: the child's pid, or the `errno` of the failure (`ENOENT`, `EACCES`, ...).
    package static func spawn(
        _ path: String, arguments: [String], environment: [String: String]? = nil,
        actions: inout posix_spawn_file_actions_t
    ) -> Result<pid_t, SpawnFailure> {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if resetsChildren {
            var parameters = sched_param(sched_priority: 0)
            posix_spawnattr_setschedpolicy(&attributes, SCHED_OTHER)
            posix_spawnattr_setschedparam(&attributes, &parameters)
            flags |= POSIX_SPAWN_SETSCHEDULER
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = envp.map { posix_spawn(&pid, path, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        return result == 0 ? .success(pid) : .failure(SpawnFailure(code: result))
    }

    /// Why a spawn failed: the `errno` value `posix_spawn` returned.
    package struct SpawnFailure: Error, Sendable {
        package var code: Int32
        /// `strerror` of the code.
        package var reason: String { String(cString: strerror(code)) }
    }
}
