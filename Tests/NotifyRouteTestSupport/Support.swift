import Foundation
import NotifyRoute
import Synchronization

/// What the tests need from the machine, and how they fail when it is missing: under
/// `CI=true` (or inside Tests/with-components.sh) a missing component is a failure,
/// never a silent skip.
public enum TestEnvironment {
    public static var isCI: Bool {
        ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Set by Tests/with-components.sh.
    public static var componentsStarted: Bool {
        ProcessInfo.processInfo.environment["NOTIFY_ROUTE_TEST_COMPONENTS"] == "1"
    }

    /// True when tests that need real components must run (and so must fail if one is missing).
    public static var componentsRequired: Bool { isCI || componentsStarted }

    /// Tests that give files to other users or run as them need root: CI runs as root, so
    /// there a missing root fails them instead of skipping them.
    public static var runsAsRoot: Bool { getuid() == 0 || isCI }

    /// The directory holding the built products (`.build/debug`), found from the test bundle's path.
    public static var productsDirectory: URL {
        let arguments = CommandLine.arguments
        var url = URL(fileURLWithPath: arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        // swift-testing's runner may be the .xctest bundle itself, or a file inside it.
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("notify-route").path) {
            url = url.deletingLastPathComponent()
        }
        return url
    }

    /// The built `notify-route` executable, or the one `NOTIFY_ROUTE_TEST_BINARY` names: the
    /// end-to-end tests then check a release build made with the README's install options.
    public static var notifyRouteBinary: URL {
        if let path = ProcessInfo.processInfo.environment["NOTIFY_ROUTE_TEST_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return productsDirectory.appendingPathComponent("notify-route")
    }

    /// The history home of tests that do not give their own (XDG_STATE_HOME).
    public static let sharedStateHome: String = (try? temporaryDirectory("notify-route-state").path) ?? "/nonexistent-notify-route-test"

    /// A fresh temporary directory (`permissions` its mode, else the umask's), removed when
    /// the test process exits if the test did not remove it first.
    public static func temporaryDirectory(_ name: String = "notify-route-test", permissions: Int? = nil) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: permissions.map { [.posixPermissions: $0] })
        removeAtExit(url.path)
        return url
    }

    /// Removes `path` (a file or a whole tree) when the test process exits. A test that fails
    /// half-way skips its own clean-up, and most tests left theirs to this: a run of the suite
    /// used to leave about 390 directories in /tmp.
    public static func removeAtExit(_ path: String) {
        _ = exitCleanupRegistered
        pathsToRemove.withLock { $0.append(path) }
    }
}

private let pathsToRemove = Mutex<[String]>([])

private let exitCleanupRegistered: Void = {
    atexit {
        for path in pathsToRemove.withLock({ $0 }) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}()

/// The result of running a process to completion.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
    public var duration: Duration
    /// True when it was killed for running past its time limit.
    public var timedOut: Bool
    /// The CPU time it used (user and system), from `wait4`.
    public var cpuTime: Duration = .zero
}

/// Runs executables (never through a shell) with a time limit.
///
/// Children are started with `posix_spawn` and a clean signal mask and dispositions:
/// threads of the test process (Dispatch's, the cooperative pool's) block signals, and
/// Foundation's `Process` passes that mask on, so a child shell would wait forever for
/// a SIGCHLD it cannot receive, and a daemon would ignore SIGTERM.
public enum ProcessRunner {
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil,
        timeLimit: Duration = .seconds(30), discardOutput: Bool = false
    ) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        if let environment { env.merge(environment) { _, new in new } }
        // Tests must never read the developer's own config.
        if env["NOTIFY_ROUTE_CONFIG"] == nil { env["XDG_CONFIG_HOME"] = env["XDG_CONFIG_HOME"] ?? "/nonexistent-notify-route-test" }
        // Nor hand their events to a daemon the developer runs: only to one a test started.
        if env["NOTIFY_ROUTE_SOCKET"] == nil { env["NOTIFY_ROUTE_SOCKET"] = "/nonexistent-notify-route-test/socket" }
        // Nor record into the developer's own history (tests that read it give their own).
        if environment?["XDG_STATE_HOME"] == nil { env["XDG_STATE_HOME"] = TestEnvironment.sharedStateHome }

        var inPipe: [Int32] = [-1, -1], outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        // pipe2 is not imported from Glibc; set close-on-exec right after, so children spawned
        // concurrently by other tests do not keep these pipes open.
        guard pipe(&inPipe) == 0, pipe(&outPipe) == 0, pipe(&errPipe) == 0 else {
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in inPipe + outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], STDIN_FILENO)
        if discardOutput {
            // A daemon the child starts (tmux's server) would hold captured pipes open forever.
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        } else {
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], STDOUT_FILENO)
            posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO)
        }
        let pid = try spawn(executable.path, arguments, environment: env, actions: &actions)
        for fd in [inPipe[0], outPipe[1], errPipe[1]] { close(fd) }
        let started = ContinuousClock.now

        // Feed and drain on threads of their own, so a chatty child never blocks on a full pipe.
        let outData = LockedData(), errData = LockedData()
        let group = DispatchGroup()
        for (fd, sink) in [(outPipe[0], outData), (errPipe[0], errData)] {
            group.enter()
            Thread.detachNewThread {
                sink.set(readAll(fd))
                close(fd)
                group.leave()
            }
        }
        let stdinFD = inPipe[1]
        let bytes = Array((input ?? "").utf8)
        Thread.detachNewThread {
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(stdinFD, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(stdinFD)
        }

        var status: Int32 = 0
        var usage = rusage()
        var timedOut = false
        let deadline = started + timeLimit
        while true {
            let result = wait4(pid, &status, WNOHANG, &usage)
            if result == pid { break }
            if result < 0 && errno != EINTR { break }
            if ContinuousClock.now > deadline {
                timedOut = true
                kill(pid, SIGKILL)
                while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
                break
            }
            usleep(1_000)
        }
        let cpu = [usage.ru_utime, usage.ru_stime].reduce(Duration.zero) { $0 + .seconds($1.tv_sec) + .microseconds($1.tv_usec) }
        let duration = ContinuousClock.now - started
        // A grandchild that kept our pipes open must not hang the test, but on a loaded
        // 2-core machine the readers can lag the exit by seconds (seen: an empty stdout
        // after 2 s): give them 10 s.
        _ = group.wait(timeout: .now() + 10)
        let exitStatus: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return ProcessResult(
            status: exitStatus, standardOutput: String(decoding: outData.get(), as: UTF8.self),
            standardError: String(decoding: errData.get(), as: UTF8.self), duration: duration, timedOut: timedOut, cpuTime: cpu)
    }

    /// `posix_spawn` with every signal unblocked and at its default disposition.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String], actions: inout posix_spawn_file_actions_t
    ) throws -> pid_t {
        switch CleanSpawn.spawn(path, arguments: [path] + arguments, environment: environment, actions: &actions) {
        case .success(let pid): return pid
        case .failure(let failure): throw SpawnError(description: "cannot start \(path): \(failure.reason)")
        }
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    private static func readAll(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }

    /// Runs the built `notify-route` with `arguments`.
    public static func notifyRoute(
        _ arguments: [String], environment: [String: String]? = nil, input: String? = nil, timeLimit: Duration = .seconds(30)
    ) throws -> ProcessResult {
        try run(TestEnvironment.notifyRouteBinary, arguments, environment: environment, input: input, timeLimit: timeLimit)
    }

    /// Finds an executable on PATH.
    public static func which(_ name: String) -> URL? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}
