import Foundation
import NotifyRoute

/// A `notify-route serve` started by a test: a real process on a socket of the test's
/// own, its stderr kept in a file.
///
/// ```swift
/// let daemon = try DaemonProcess.start(config: url)
/// defer { daemon.stop() }
/// let result = try ProcessRunner.notifyRoute(["send", "--json", "Hi"], environment: daemon.environment)
/// ```
public final class DaemonProcess {
    public let directory: URL
    public let socketPath: String
    public private(set) var pid: pid_t
    public let logPath: String
    private var reaped = false

    /// For a client of this daemon: its socket, its state directory, and its config, so
    /// that a client that routes locally does so as the daemon would, as on a real session.
    public var environment: [String: String] {
        var environment = ["NOTIFY_ROUTE_SOCKET": socketPath, "XDG_RUNTIME_DIR": runtimeDirectory, "XDG_STATE_HOME": stateHome]
        if let config { environment["NOTIFY_ROUTE_CONFIG"] = config }
        return environment
    }
    public let runtimeDirectory: String
    /// The history's home (XDG_STATE_HOME): the caller's, else one of its own.
    public let stateHome: String
    private let config: String?

    /// What the daemon wrote on stderr so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts `command` (the CLI's arguments after the binary, `serve` by default) and
    /// waits until the socket accepts connections.
    ///
    /// - Parameter socket: the socket of an earlier daemon, to restart on it (default: one of its own).
    /// - Parameter runtime: an earlier daemon's runtime (state) directory, to restart on its state.
    /// - Parameter namingSocket: pass `--socket`; without it the daemon finds its socket as a
    ///   user's would (`socket` is then where the test expects it, for the wait).
    public static func start(
        config: URL?, arguments extra: [String] = [], environment: [String: String] = [:], launcher: [String] = [],
        waitForSocket: Bool = true, socket: String? = nil, runtime: String? = nil, namingSocket: Bool = true
    ) throws -> DaemonProcess {
        let directory = try TestEnvironment.temporaryDirectory("notify-route-daemon")
        let socketPath = socket ?? directory.appendingPathComponent("socket").path
        var arguments = namingSocket ? ["serve", "--socket", socketPath] : ["serve"]
        if let config { arguments += ["--config", config.path] }
        arguments += extra
        return try DaemonProcess(
            directory: directory, socketPath: socketPath, config: config?.path, arguments: arguments, environment: environment,
            launcher: launcher, waitForSocket: waitForSocket, runtime: runtime)
    }

    private init(
        directory: URL, socketPath: String, config: String?, arguments: [String], environment: [String: String], launcher: [String],
        waitForSocket: Bool, runtime: String?
    ) throws {
        self.directory = directory
        self.socketPath = socketPath
        self.config = config
        self.logPath = directory.appendingPathComponent("daemon.log").path
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        if env["NOTIFY_ROUTE_CONFIG"] == nil { env["XDG_CONFIG_HOME"] = "/nonexistent-notify-route-test" }
        // The test's own state directory, shared with its clients (``environment``).
        let runtime = runtime.map { URL(fileURLWithPath: $0) } ?? directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        chmod(runtime.path, 0o700)
        runtimeDirectory = runtime.path
        // The caller's, when it gives one (an empty one: none, as under cron).
        env["XDG_RUNTIME_DIR"] = environment["XDG_RUNTIME_DIR"] ?? runtime.path
        stateHome = environment["XDG_STATE_HOME"] ?? directory.appendingPathComponent("state").path
        env["XDG_STATE_HOME"] = stateHome

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let binary = TestEnvironment.notifyRouteBinary.path
        let (path, argv) = launcher.isEmpty ? (binary, arguments) : (launcher[0], Array(launcher.dropFirst()) + [binary] + arguments)
        pid = try ProcessRunner.spawn(path, argv, environment: env, actions: &actions)
        if waitForSocket { try self.waitForSocket() }
    }

    deinit { stop() }

    /// Waits until a connection to the socket succeeds (the daemon is listening).
    public func waitForSocket(timeLimit: Duration = .seconds(20)) throws {
        let deadline = ContinuousClock.now + timeLimit
        while ContinuousClock.now < deadline {
            if Self.canConnect(socketPath) { return }
            if let status = exitStatus() {
                throw ProcessRunner.SpawnError(description: "notify-route serve exited with \(status) before it listened: \(log)")
            }
            usleep(20_000)
        }
        throw ProcessRunner.SpawnError(description: "notify-route serve did not listen on \(socketPath) within \(timeLimit): \(log)")
    }

    public static func canConnect(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    public func signal(_ signal: Int32) {
        if !reaped { kill(pid, signal) }
    }

    /// The exit status once it has exited (128 + N for a signal), `nil` while it runs.
    public func exitStatus() -> Int32? {
        guard !reaped else { return lastStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        reaped = true
        lastStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return lastStatus
    }

    private var lastStatus: Int32?

    /// Waits for the exit, at most `timeLimit`; `nil` if it is still running then.
    public func waitForExit(timeLimit: Duration = .seconds(10)) -> (status: Int32, after: Duration)? {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < timeLimit {
            if let status = exitStatus() { return (status, ContinuousClock.now - started) }
            usleep(5_000)
        }
        return nil
    }

    /// SIGKILL (also of a stopped daemon), reaped, and the directory removed.
    public func stop() {
        if !reaped {
            kill(pid, SIGCONT)
            kill(pid, SIGKILL)
            _ = waitForExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A raw connection to a daemon's socket, for tests of the protocol itself.
public final class RawDaemonConnection {
    private let handle: FileHandle
    private var buffered = Data()

    public init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, connected == 0 else {
            if fd >= 0 { Glibc.close(fd) }
            throw ProcessRunner.SpawnError(description: "connect \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// Writes all of `text`; a daemon that closed the connection is an error, not a SIGPIPE.
    public func write(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { send(handle.fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                throw ProcessRunner.SpawnError(description: "send: \(String(cString: strerror(errno)))")
            }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Shuts down the writing side: the daemon sees the end of the requests.
    public func finishWriting() {
        shutdown(handle.fileDescriptor, Int32(SHUT_WR))
    }

    /// The next answer line decoded, or `nil` at the end of the stream (or after 10 s).
    public func readAnswer() throws -> [String: Any]? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffered[..<newline]
                buffered = Data(buffered[buffered.index(after: newline)...])
                return try JSONSerialization.jsonObject(with: line) as? [String: Any]
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(handle.fileDescriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffered.append(contentsOf: chunk[..<count])
        }
    }

    public func close() {
        try? handle.close()
    }
}

extension DaemonProcess {
    /// `serve` as uid 65534 (through setpriv) on the config `yaml`, with its home, runtime
    /// directory, config and socket in a directory of that user's: a daemon of another user
    /// than the test's. The caller removes `home` when done.
    public static func startAsNobody(config yaml: String) throws -> (daemon: DaemonProcess, home: URL) {
        guard let setpriv = ProcessRunner.which("setpriv") else { throw SetprivMissing() }
        let home = try TestEnvironment.temporaryDirectory("daemon-nobody")
        let runtime = home.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let config = home.appendingPathComponent("config.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        for path in [home.path, runtime.path, config.path] { chown(path, 65534, 65534) }
        chmod(runtime.path, 0o700)
        let daemon = try DaemonProcess.start(
            config: config, environment: ["HOME": home.path, "XDG_STATE_HOME": home.appendingPathComponent("state").path],
            launcher: [setpriv.path, "--reuid=65534", "--regid=65534", "--clear-groups"],
            socket: home.appendingPathComponent("socket").path, runtime: runtime.path)
        return (daemon, home)
    }

    struct SetprivMissing: Error, CustomStringConvertible {
        var description: String { "setpriv (package util-linux) is needed to run serve as another user" }
    }
}
