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
    /// - Parameter standardError: a descriptor to become the child's stderr; `nil` keeps ours.
    static func spawn(_ path: String, arguments: [String], standardError: Int32?) throws(LaunchError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, STDERR_FILENO) }

        switch CleanSpawn.spawn(path, arguments: arguments, actions: &actions) {
        case .success(let pid):
            return pid
        case .failure(let failure):
            switch failure.code {
            case ENOENT: throw LaunchError(status: 127, message: "\(path): \(failure.reason)")
            case ENOEXEC: throw LaunchError(status: 126, message: "\(path): not an executable format (a script without a #! line? run never uses a shell)")
            default: throw LaunchError(status: 126, message: "\(path): \(failure.reason)")
            }
        }
    }
}
