import CTetheredSpawn
import Glibc
import NotifyRoute

/// Starts the command of `notify-route run`: argv as given, the program found on
/// `PATH` the way `execvp` finds it, never through a shell.
enum CommandLauncher {
    /// Why a command could not be started, with the status a shell would give (127, 126).
    struct LaunchError: Error {
        var status: Int32
        var message: String
    }

    /// The path to execute for `name`: as given when it contains a slash, otherwise
    /// the first executable regular file named so in a `PATH` directory.
    static func resolve(_ name: String, path: String?) throws(LaunchError) -> String {
        if name.contains("/") {
            try checkExecutable(name)
            return name
        }
        guard !name.isEmpty else { throw LaunchError(status: 127, message: "an empty command name") }
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        var denied: LaunchError?
        for directory in directories {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
            do {
                try checkExecutable(candidate)
                return candidate
            } catch where error.status == 126 {
                denied = denied ?? error  // keep looking, as execvp does; report it if nothing better turns up
            } catch {}
        }
        throw denied ?? LaunchError(status: 127, message: "no \"\(name)\" in PATH (\(path ?? "unset"))")
    }

    private static func checkExecutable(_ path: String) throws(LaunchError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw LaunchError(status: errno == ENOENT || errno == ENOTDIR ? 127 : 126, message: "\(path): \(String(cString: strerror(errno)))")
        }
        if info.st_mode & S_IFMT == S_IFDIR { throw LaunchError(status: 126, message: "\(path): is a directory") }
        guard access(path, X_OK) == 0 else {
            throw LaunchError(status: 126, message: "\(path): permission denied (not executable)")
        }
    }

    /// Spawns `path` with `arguments` (argv[0] included), every signal unblocked and at
    /// its default disposition: this process ignores SIGPIPE and catches SIGINT, and an
    /// ignored disposition would otherwise be inherited across exec.
    ///
    /// The child gets SIGKILL when the calling thread ends (PR_SET_PDEATHSIG): a `run`
    /// killed by a signal it cannot forward (SIGKILL) leaves no orphan behind. So call this
    /// on a thread that outlives the child: the one that waits for it.
    ///
    /// - Parameter standardError: a descriptor to become the child's stderr; `nil` keeps ours.
    static func spawn(_ path: String, arguments: [String], standardError: Int32?) throws(LaunchError) -> pid_t {
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let code = notify_route_spawn_tethered(&pid, path, argv, environ, standardError ?? -1, SIGKILL)
        switch code {
        case 0: return pid
        case ENOENT: throw LaunchError(status: 127, message: "\(path): \(String(cString: strerror(code)))")
        case ENOEXEC: throw LaunchError(status: 126, message: "\(path): not an executable format (a script without a #! line? run never uses a shell)")
        default: throw LaunchError(status: 126, message: "\(path): \(String(cString: strerror(code)))")
        }
    }
}
