import Glibc

/// The state directory, open and checked (``StateDirectory/open(_:)``), for what opening
/// the database does in it by name: every call works relative to the descriptor
/// (`openat`, `renameat`, `unlinkat`), never through the path again.
final class StateFiles {
    let directory: String
    let fd: Int32

    init(directory: String) throws(SQLiteStateStore.Failure) {
        self.directory = directory
        do { fd = try StateDirectory.open(directory) } catch { throw SQLiteStateStore.Failure(description: error.description) }
    }

    deinit { close(fd) }

    enum Contents {
        case absent
        case unusable(String)
        case contents([UInt8])
    }

    /// Makes sure `name` is a regular file of this user, at most `maximumBytes` long,
    /// creating it (0600) if missing, before SQLite opens it by path. What is in its place
    /// otherwise is set aside, with a notice. SQLite's companions (`-wal`, `-shm`) get
    /// the same checks when they exist.
    func prepareDatabase(_ name: String, maximumBytes: Int, notice: (String) -> Void) throws(SQLiteStateStore.Failure) {
        for attempt in 0..<3 {
            // O_NONBLOCK: a FIFO in its place must not block the open.
            let file = openat(fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
            let why: String
            if file < 0 {
                let code = errno
                guard attempt < 2, code == ELOOP || code == EISDIR else {
                    throw SQLiteStateStore.Failure(description: "cannot open \(directory)/\(name): \(String(cString: strerror(code)))")
                }
                why = code == ELOOP ? "is a symbolic link" : "is a directory"
            } else {
                let problem = Self.problem(of: file, maximumBytes: maximumBytes)
                close(file)
                guard let problem else { break }
                guard attempt < 2 else { throw SQLiteStateStore.Failure(description: "\(directory)/\(name) \(problem)") }
                why = problem
            }
            let aside = try setAside(name, as: "unusable")
            notice("\(directory)/\(name) \(why); set aside as \(aside), starting afresh")
        }
        for suffix in ["-wal", "-shm"] {
            var info = stat()
            guard fstatat(fd, name + suffix, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if let problem = Self.problem(info, maximumBytes: maximumBytes) {
                let aside = try setAside(name, as: "unusable")
                notice("\(directory)/\(name)\(suffix) \(problem); set aside with its database as \(aside), starting afresh")
                return try prepareDatabase(name, maximumBytes: maximumBytes, notice: notice)
            }
        }
    }

    /// What makes the open file `file` unfit for state, or `nil`.
    static func problem(of file: Int32, maximumBytes: Int) -> String? {
        var info = stat()
        guard fstat(file, &info) == 0 else { return "cannot be inspected: \(String(cString: strerror(errno)))" }
        return problem(info, maximumBytes: maximumBytes)
    }

    static func problem(_ info: stat, maximumBytes: Int) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFIFO: return "is a FIFO, not a regular file"
        case S_IFLNK: return "is a symbolic link"
        case S_IFDIR: return "is a directory"
        default: return "is not a regular file (a device or a socket)"
        }
        if info.st_uid != getuid() { return "belongs to uid \(info.st_uid), not to you (uid \(getuid()))" }
        if Int(info.st_size) > maximumBytes { return "is \(info.st_size) bytes, more than the limit of \(maximumBytes)" }
        return nil
    }

    /// Renames `name` to `name.reason` (replacing an earlier one: one piece of evidence
    /// per reason, not a growing pile), and a database's `-wal` with it: a fresh database
    /// must not replay another's log. Returns the new name.
    @discardableResult
    func setAside(_ name: String, as reason: String) throws(SQLiteStateStore.Failure) -> String {
        let target = "\(name).\(reason)"
        if renameat(fd, name, fd, target) != 0 && errno != ENOENT {
            throw SQLiteStateStore.Failure(description: "cannot set aside \(directory)/\(name): \(String(cString: strerror(errno)))")
        }
        if renameat(fd, name + "-wal", fd, target + "-wal") != 0 && errno != ENOENT {
            unlinkat(fd, name + "-wal", 0)
        }
        unlinkat(fd, name + "-shm", 0)
        return "\(directory)/\(target)"
    }

    /// At most `limit` bytes of `name`, a regular file of this user; never blocks on a FIFO
    /// and never reads more than `limit + 1` bytes.
    func read(_ name: String, limit: Int) -> Contents {
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else {
            switch errno {
            case ENOENT: return .absent
            case ELOOP: return .unusable("is a symbolic link")
            default: return .unusable("cannot be opened: \(String(cString: strerror(errno)))")
            }
        }
        defer { close(file) }
        if let problem = Self.problem(of: file, maximumBytes: limit) { return .unusable(problem) }
        switch FileContents.read(file, limit: limit) {
        case .failure(let failure): return .unusable("cannot be read: \(String(cString: strerror(failure.errno)))")
        case .success(let bytes) where bytes.count > limit: return .unusable("is more than \(limit) bytes")
        case .success(let bytes): return .contents(bytes)
        }
    }

    /// Removes what writers of the earlier state file left when killed mid-write
    /// (`state.json.PID.tmp`), and its lock file.
    func removeLeftovers() {
        let copy = dup(fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return
        }
        defer { closedir(stream) }
        var doomed: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "state.lock" || (name.hasPrefix("state.json.") && name.hasSuffix(".tmp")) { doomed.append(name) }
        }
        for name in doomed { unlinkat(fd, name, 0) }
    }
}
