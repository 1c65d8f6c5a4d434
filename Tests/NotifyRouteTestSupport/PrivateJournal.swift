import Foundation

import Glibc

/// The private systemd-journald that Tests/with-components.sh starts in its own mount
/// namespace: how to find it, read records back from it (`journalctl -o json`), stop and
/// resume it, fill its socket, and run a process that sees no journald or a stale socket.
///
/// Outside with-components.sh there is no private journald, and tests must not write to
/// the host's journal: ``missing`` then says why, and tests skip, or fail when
/// ``TestEnvironment/componentsRequired``.
///
/// ```swift
/// let run = PrivateJournal.newRunID()
/// // ... write records with the field NOTIFY_ROUTE_TEST_RUN=run ...
/// let entries = try await PrivateJournal.entries(matching: ["NOTIFY_ROUTE_TEST_RUN=\(run)"], count: 2)
/// entries[0]["PRIORITY"]  // "4"
/// ```
public enum PrivateJournal {
    public static let socketPath = "/run/systemd/journal/socket"
    /// The field tests put on their records to find them again.
    public static let runField = "NOTIFY_ROUTE_TEST_RUN"

    /// The PID of the private journald, from with-components.sh (its file, which the loop
    /// that starts journald again after ``restart(signal:)`` keeps up to date).
    public static var journaldPID: pid_t? {
        let environment = ProcessInfo.processInfo.environment
        if let file = environment["NOTIFY_ROUTE_TEST_JOURNALD_PIDFILE"],
           let text = try? String(contentsOfFile: file, encoding: .utf8),
           let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return pid
        }
        return environment["NOTIFY_ROUTE_TEST_JOURNALD_PID"].flatMap { pid_t($0) }
    }

    /// Why the private journald cannot be used here, or `nil` when it can.
    public static var missing: String? {
        guard let pid = journaldPID else {
            return "no private journald: run the tests inside Tests/with-components.sh (test records must not reach the host journal)"
        }
        guard kill(pid, 0) == 0 else { return "the private journald (pid \(pid)) is not running" }
        guard FileManager.default.fileExists(atPath: socketPath) else { return "journald's socket \(socketPath) is absent" }
        guard ProcessRunner.which("journalctl") != nil else { return "journalctl is not on PATH" }
        return nil
    }

    /// True when journal tests can run; with-components.sh or CI make a missing journald a failure.
    public static var isAvailable: Bool { missing == nil }

    /// A value unique to one test, for ``runField``.
    public static func newRunID() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    // MARK: Reading back

    /// One value of a journal field, as `journalctl -o json` prints it: text, or an array
    /// of byte values for anything not printable UTF-8.
    public enum Value: Hashable, Sendable {
        case text(String)
        case bytes([UInt8])

        public var text: String? {
            if case .text(let text) = self { return text }
            return nil
        }

        public var bytes: [UInt8] {
            switch self {
            case .text(let text): Array(text.utf8)
            case .bytes(let bytes): bytes
            }
        }
    }

    /// One journal entry: every field with all its values (journal fields may repeat).
    public struct Entry: Sendable {
        public var fields: [String: [Value]]

        /// The first value of a field, as text.
        public subscript(name: String) -> String? { fields[name]?.first?.text }

        /// Every value of a field, as text.
        public func values(_ name: String) -> [String] { fields[name]?.compactMap(\.text) ?? [] }
    }

    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Entries matching every `FIELD=value` in `matches`, oldest first. Records appear a few
    /// milliseconds after they are written: this polls until at least `count` are there or
    /// `timeout` passes, and returns what it found (fewer means some never arrived).
    public static func entries(
        matching matches: [String], count: Int = 1, timeout: Duration = .seconds(5)
    ) async throws -> [Entry] {
        let end = ContinuousClock.now + timeout
        while true {
            let found = try await offPool { try read(matching: matches) }
            if found.count >= count || ContinuousClock.now >= end { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Runs blocking work (a child process, a journalctl read) on a Dispatch thread, so an
    /// async test never holds one of the few threads of Swift's cooperative pool (two on a
    /// two-core machine), which the router's other tests need to meet their deadlines.
    public static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// What the journal holds for `matches` right now.
    public static func read(matching matches: [String]) throws -> [Entry] {
        guard let journalctl = ProcessRunner.which("journalctl") else { throw ReadError(description: "journalctl is not on PATH") }
        // --all: without it journalctl prints null for long or unprintable values.
        let result = try ProcessRunner.run(journalctl, ["--no-pager", "--all", "-o", "json"] + matches, timeLimit: .seconds(20))
        guard result.status == 0 else {
            throw ReadError(description: "journalctl exited \(result.status): \(result.standardError)")
        }
        return try result.standardOutput.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw ReadError(description: "journalctl printed a line that is not a JSON object: \(line)")
            }
            var fields: [String: [Value]] = [:]
            for (name, raw) in object { fields[name] = values(raw) }
            return Entry(fields: fields)
        }
    }

    /// journalctl's JSON: a string; an array of numbers (one binary value); or an array of
    /// strings and number arrays (a field that occurs more than once).
    private static func values(_ raw: Any) -> [Value] {
        if let text = raw as? String { return [.text(text)] }
        guard let array = raw as? [Any] else { return [] }
        if !array.isEmpty, array.allSatisfy({ $0 is NSNumber }) {
            return [.bytes(array.compactMap { ($0 as? NSNumber)?.uint8Value })]
        }
        return array.flatMap { values($0) }
    }

    // MARK: Taking turns

    /// Runs `body` holding the journal-test lock: shared for tests that only write and read,
    /// exclusive for tests that stop journald, so a stopped journald never surprises a test
    /// in another suite or target (they may all run in one test process, in parallel).
    /// An flock(2) on a file, so it also holds across processes.
    public static func withAccess<T>(exclusive: Bool = false, _ body: () async throws -> T) async throws -> T {
        let path = (NSTemporaryDirectory() as NSString).appendingPathComponent("notify-route-journal-tests.lock")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw ReadError(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // Poll without blocking: a blocking flock would hold a thread of the cooperative pool.
        while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw ReadError(description: "flock: \(String(cString: strerror(errno)))") }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try await body()
    }

    // MARK: Faults

    /// SIGSTOP to the private journald: it stops reading its socket, as a hung journald does.
    public static func stop() throws {
        guard let pid = journaldPID, kill(pid, SIGSTOP) == 0 else { throw ReadError(description: "cannot stop journald") }
    }

    /// SIGCONT to the private journald.
    public static func resume() {
        if let pid = journaldPID { kill(pid, SIGCONT) }
    }

    /// Ends the private journald with `signal` (SIGTERM: a clean restart; SIGKILL: a crash,
    /// which leaves its open file dirty) and waits until the journald with-components.sh
    /// starts in its place takes records again. Hold ``withAccess(exclusive:_:)``.
    public static func restart(signal: Int32 = SIGTERM, timeout: Duration = .seconds(10)) async throws {
        guard let old = journaldPID, kill(old, signal) == 0 else { throw ReadError(description: "cannot signal journald") }
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if let pid = journaldPID, pid != old, kill(pid, 0) == 0,
               FileManager.default.fileExists(atPath: socketPath),
               (try? await offPool({ try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/logger"), ["--journald"], input: "MESSAGE=journald is back\n") }))?.status == 0 {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ReadError(description: "journald did not come back within \(timeout) of signal \(signal) (is the pid file of with-components.sh there?)")
    }

    /// Runs `body` with journald stopped, and resumes it whatever happens.
    public static func whileStopped<T>(_ body: () async throws -> T) async throws -> T {
        try stop()
        defer { resume() }
        return try await body()
    }

    /// Fills journald's socket queue with small valid records, without blocking, until the
    /// kernel refuses more (EAGAIN): with journald stopped, the next blocking write
    /// (`sd_journal_sendv`) then hangs. Returns how many datagrams went in.
    @discardableResult
    public static func fillSocketQueue(run: String, limit: Int = 10_000) throws -> Int {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ReadError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.prefix(raw.count - 1))
        }
        let payload = Array("MESSAGE=socket filler\nNOTIFY_ROUTE_TEST_FILLER=\(run)\n".utf8)
        var sent = 0
        while sent < limit {
            let result = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, payload, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if result < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return sent }
                throw ReadError(description: "sendto \(socketPath): \(String(cString: strerror(errno)))")
            }
            sent += 1
        }
        throw ReadError(description: "journald's socket took \(limit) datagrams without filling up: is journald really stopped?")
    }

    /// What a process run by ``run(_:_:socket:environment:timeLimit:)`` finds at journald's socket path.
    public enum SocketState: Sendable {
        /// Nothing: no journald in this namespace.
        case absent
        /// A socket file nobody is bound to, as a crashed journald leaves it: connection refused.
        case stale
    }

    /// Runs `executable` in a nested private mount namespace with an empty tmpfs over
    /// /run/systemd/journal (and, for ``SocketState/stale``, a socket file nobody listens on),
    /// so only that process loses journald. Needs root, as with-components.sh does.
    public static func run(
        _ executable: URL, _ arguments: [String], socket: SocketState, environment: [String: String]? = nil,
        timeLimit: Duration = .seconds(30)
    ) async throws -> ProcessResult {
        let directory = (socketPath as NSString).deletingLastPathComponent
        var script = "set -e; mount -t tmpfs tmpfs \(directory); "
        if case .stale = socket {
            // A datagram socket bound and then closed leaves its file behind: connect() is refused.
            script += "/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(sys.argv[1])' \(socketPath); "
        }
        script += "exec \"$@\""
        let arguments = ["-m", "--propagation", "private", "/bin/sh", "-c", script, "sh", executable.path] + arguments
        return try await offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/unshare"), arguments, environment: environment, timeLimit: timeLimit)
        }
    }

    /// Makes a socket file at `path` that nobody is bound to (connection refused).
    public static func makeStaleSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ReadError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw ReadError(description: "bind \(path): \(String(cString: strerror(errno)))") }
    }
}
