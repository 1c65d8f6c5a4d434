import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Router state kept in a file, so that dedup windows, duplicate counts and replace
/// handles hold across separate `notify-route send` calls.
///
/// Every ``withState(_:)`` takes an exclusive `flock` on a lock file beside the state,
/// reads the state, runs the body, and, when the body changed something, writes a new
/// file and renames it over the old one. A crash (even SIGKILL) mid-write leaves the
/// previous file whole; the kernel drops the lock of a dead process. A state file that
/// cannot be decoded is set aside as `state.json.corrupt` and replaced by an empty state.
///
/// ```swift
/// let store = try FileStateStore(directory: StateDirectory.resolve())
/// let router = try NotificationRouter(configuration: config, registry: registry, store: store)
/// ```
public final class FileStateStore: RouterStateStore {
    public let directory: String
    public var statePath: String { directory + "/state.json" }
    var lockPath: String { directory + "/state.lock" }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public init(directory: String) {
        self.directory = directory
    }

    public func withState<Result: Sendable>(_ body: (inout RouterState) throws -> Result) throws -> Result {
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw Failure(description: "cannot open \(lockPath): \(Self.errorText())") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw Failure(description: "cannot lock \(lockPath): \(Self.errorText())") }
        }
        let original = read()
        var state = original
        let result = try body(&state)
        if state != original { try write(state) }
        return result
    }

    /// The state on disk, or an empty one when there is none or it cannot be decoded.
    func read() -> RouterState {
        guard let data = Self.contents(of: statePath), !data.isEmpty else { return RouterState() }
        do {
            return try JSONDecoder.state.decode(RouterState.self, from: data)
        } catch {
            // Keep the evidence, start afresh: a bad state file must never stop delivery.
            _ = rename(statePath, statePath + ".corrupt")
            return RouterState()
        }
    }

    private func write(_ state: RouterState) throws {
        let data = try JSONEncoder.state.encode(state)
        let temporary = "\(statePath).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot write \(temporary): \(Self.errorText())") }
        var failed: String?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failed = Self.errorText()
                    return
                }
                offset += written
            }
        }
        if failed == nil && fsync(fd) != 0 { failed = Self.errorText() }
        close(fd)
        if let failed {
            unlink(temporary)
            throw Failure(description: "cannot write \(temporary): \(failed)")
        }
        guard rename(temporary, statePath) == 0 else {
            let reason = Self.errorText()
            unlink(temporary)
            throw Failure(description: "cannot replace \(statePath): \(reason)")
        }
    }

    /// The file's bytes, or `nil` when it cannot be read. With `open` and `read`, not
    /// `FileManager.contents(atPath:)`, which also gathers the file's attributes into a
    /// `[String: Any]`: 290 k instructions of a journal `send`, for a file usually absent.
    static func contents(of path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return (try? FileContents.read(fd).get()).map { Data($0) }
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

extension JSONEncoder {
    static var state: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }
}

extension JSONDecoder {
    static var state: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}

/// Where the state file lives: `$XDG_RUNTIME_DIR/notify-route/`, or, without a runtime
/// directory, `notify-route-UID/` under the temporary directory. The directory is made
/// 0700; one owned by another user, or open to others, is refused.
public enum StateDirectory {
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static func resolve(environment: [String: String] = ProcessEnvironment.values(["XDG_RUNTIME_DIR", "TMPDIR"])) throws(Refused) -> String {
        let path: String
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            path = runtime + "/notify-route"
        } else {
            let temporary = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
            path = "\(temporary)/notify-route-\(getuid())"
        }
        try prepare(path)
        return path
    }

    /// Creates `path` 0700 if missing, then checks it is a directory of ours that no one
    /// else can write: a directory another user made in /tmp could be used to feed us state.
    public static func prepare(_ path: String) throws(Refused) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw Refused(description: "cannot create the state directory \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw Refused(description: "cannot inspect the state directory \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Refused(description: "the state directory \(path) is not a directory (a symbolic link or a file is refused)")
        }
        guard info.st_uid == getuid() else {
            throw Refused(description: "the state directory \(path) belongs to uid \(info.st_uid), not to you (uid \(getuid())); refusing to use it")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw Refused(description: "the state directory \(path) is writable by others (mode \(String(info.st_mode & 0o777, radix: 8))); make it 0700")
        }
    }
}
