import Glibc

/// Where the state lives: `$XDG_RUNTIME_DIR/notify-route/`, or, without a usable runtime
/// directory (cron, `sudo -i`, ssh without pam_systemd), `runtime/` in the history's
/// directory (`$XDG_STATE_HOME/notify-route/`, else `~/.local/state/notify-route/`). Not
/// a name under /tmp: another user could make it first, and switch off dedup, rate limits
/// and the daemon. The directory is made 0700; one owned by another user, open to others,
/// or a symbolic link is refused.
///
/// The checks hold against a race. The directory is checked on an open descriptor (what
/// `fstat` says of the directory itself, not of whatever a path names a moment later),
/// and every directory above it must be one that no one else can change: owned by you or
/// by root, and not writable by others unless sticky (as /tmp is). A runtime directory
/// that fails this (world-writable and not sticky; another user's, as under `sudo -E`)
/// gets a warning and the private fallback, so that no other user can swap a component
/// of the path for a symbolic link between the check and SQLite's open by path.
public enum StateDirectory {
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The variables ``resolve(environment:)`` reads.
    public static let environmentNames = ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "HOME"]

    public static func resolve(environment: [String: String] = ProcessEnvironment.values(environmentNames)) throws(Refused) -> String {
        try resolve(environment: environment, warning: { _ in })
    }

    /// ``resolve(environment:)``, telling `warning` why a runtime directory was passed over.
    public static func resolve(environment: [String: String], warning: (String) -> Void) throws(Refused) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            if let unsafe = unsafeAncestor(of: runtime + "/notify-route") {
                let fallback = Result { () throws(Refused) in try privateFallback(environment) }
                warning("XDG_RUNTIME_DIR \(runtime) is not safe for the state (\(unsafe)); using "
                    + ((try? fallback.get()).map { "\($0) instead" } ?? "none"))
                return try fallback.get()
            } else {
                let path = runtime + "/notify-route"
                try prepare(path)
                return path
            }
        }
        return try privateFallback(environment)
    }

    /// `runtime/` in the history's directory: under the user's own home, where no one else
    /// can make it first. From the environment's XDG_STATE_HOME or HOME, else (none set, or
    /// another user's home, as under `sudo` keeping HOME) from the user's passwd entry.
    static func privateFallback(_ environment: [String: String]) throws(Refused) -> String {
        do throws(Refused) {
            return try privateFallback(in: environment)
        } catch {
            // Looked up only now: the passwd database may be a network service's.
            guard let home = passwdHome(), environment["XDG_STATE_HOME"]?.hasPrefix("/") == true || environment["HOME"] != home,
                  let path = try? privateFallback(in: ["HOME": home])
            else { throw error }
            return path
        }
    }

    private static func privateFallback(in environment: [String: String]) throws(Refused) -> String {
        let path = try RouterMemory.resolveDirectory(environment: environment, naming: "state directory") + "/runtime"
        try prepare(path)
        return path
    }

    /// The home directory of this process's user, from the passwd database.
    static func passwdHome() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let directory = entry.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }

    /// Creates `path` 0700 if missing, then checks it is a directory of ours that no one
    /// else can write: a directory another user made in /tmp could be used to feed us state.
    public static func prepare(_ path: String) throws(Refused) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw Refused(description: "cannot create the state directory \(path): \(String(cString: strerror(errno)))")
        }
        let fd = try open(path)
        close(fd)
    }

    /// Opens the state directory and checks the descriptor: the directory itself, owned by
    /// this user, not writable by others. The caller works relative to it (`openat`).
    static func open(_ path: String) throws(Refused) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP || errno == ENOTDIR {
                throw Refused(description: "the state directory \(path) is not a directory (a symbolic link or a file is refused)")
            }
            throw Refused(description: "cannot open the state directory \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Refused(description: "cannot inspect the state directory \(path): \(reason)")
        }
        guard info.st_uid == getuid() else {
            close(fd)
            throw Refused(description: "the state directory \(path) belongs to uid \(info.st_uid), not to you (uid \(getuid())); refusing to use it")
        }
        guard info.st_mode & 0o022 == 0 else {
            close(fd)
            throw Refused(description: "the state directory \(path) is writable by others (mode \(String(info.st_mode & 0o777, radix: 8))); make it 0700")
        }
        return fd
    }

    /// Why a directory above `path` lets someone else replace what `path` names, or `nil`
    /// when none does. Each directory from the root down to `path`'s parent, as it really
    /// is (symbolic links resolved), must belong to this user or root and be writable by
    /// no one else, or be sticky.
    static func unsafeAncestor(of path: String) -> String? {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let parent = slash == path.utf8.startIndex ? "/" : String(path[..<slash])
        guard let resolved = realpath(parent, nil) else {
            return "cannot resolve \(parent): \(String(cString: strerror(errno)))"
        }
        let real = String(cString: resolved)
        free(resolved)
        // The root, then each longer prefix. Built with String's own appends: `String +
        // Substring` goes through the generic, per-Character path.
        var prefixes = ["/"], prefix = ""
        for component in real.utf8.split(separator: UInt8(ascii: "/")) {
            prefix += "/"
            prefix += String(decoding: component, as: UTF8.self)
            prefixes.append(prefix)
        }
        for prefix in prefixes {
            var info = stat()
            guard lstat(prefix, &info) == 0 else { return "cannot inspect \(prefix): \(String(cString: strerror(errno)))" }
            if info.st_uid != 0 && info.st_uid != getuid() {
                return "\(prefix) belongs to uid \(info.st_uid)"
            }
            if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
                return "\(prefix) is writable by others and not sticky (mode \(String(info.st_mode & 0o7777, radix: 8)))"
            }
        }
        return nil
    }
}
