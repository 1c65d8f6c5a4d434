import Foundation

/// A real terminal for tests: a detached tmux session on a private server socket,
/// read back with `capture-pane` (`-e` keeps colours and attributes).
public final class TmuxSession {
    public let socketName: String
    public let target = "t"
    private let tmux: URL

    /// Whether tests may run (tmux on PATH), and whether they must (CI or components wrapper).
    public static var isAvailable: Bool { ProcessRunner.which("tmux") != nil }

    public struct Failed: Error, CustomStringConvertible {
        public var status: Int32
        public var description: String { "tmux new-session exited \(status)" }
    }

    public struct Missing: Error, CustomStringConvertible {
        public var description: String { "tmux is not installed (run: bash .ci/setup)" }
    }

    /// Starts `command` (run by /bin/sh inside the pane) in an 80×24 (or given) terminal.
    /// `configuration` is tmux config read by the server before the pane starts
    /// (`set -g set-clipboard on`, hooks), so it already holds for the command's first byte.
    public init(
        command: String, width: Int = 80, height: Int = 24, environment: [String: String] = [:], configuration: String = ""
    ) throws {
        guard let tmux = ProcessRunner.which("tmux") else { throw Missing() }
        self.tmux = tmux
        socketName = "nr-test-\(UUID().uuidString.prefix(8))"
        var configPath = "/dev/null"
        if !configuration.isEmpty {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(socketName).conf")
            try configuration.write(to: url, atomically: true, encoding: .utf8)
            configPath = url.path
        }
        var arguments = ["-L", socketName, "-f", configPath, "new-session", "-d", "-s", target, "-x", "\(width)", "-y", "\(height)"]
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["-e", "\(key)=\(value)"] }
        arguments.append(command)
        // Not through Foundation's Process: tmux's server daemonises and would inherit the
        // descriptor Process watches for the child's exit, so the client would never look done.
        let status = try Self.spawnAndWait(tmux.path, arguments)
        guard status == 0 else { throw Failed(status: status) }
    }

    static func spawnAndWait(_ path: String, _ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
        }
        let pid = try ProcessRunner.spawn(path, arguments, environment: ProcessInfo.processInfo.environment, actions: &actions)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// The visible screen; with `attributes`, SGR sequences as tmux re-encodes them.
    public func capture(attributes: Bool = false) throws -> String {
        var arguments = ["-L", socketName, "capture-pane", "-p", "-t", target]
        if attributes { arguments.insert("-e", at: 3) }
        return try ProcessRunner.run(tmux, arguments, timeLimit: .seconds(10)).standardOutput
    }

    /// A tmux format value of the pane (`#{pane_title}`, `#{cursor_y}`).
    public func display(_ format: String) throws -> String {
        try ProcessRunner.run(tmux, ["-L", socketName, "display-message", "-p", "-t", target, format], timeLimit: .seconds(10))
            .standardOutput.trimmingCharacters(in: .newlines)
    }

    /// Runs a tmux command against this session's server and returns what it printed.
    @discardableResult
    public func command(_ arguments: [String]) throws -> String {
        try ProcessRunner.run(tmux, ["-L", socketName] + arguments, timeLimit: .seconds(10)).standardOutput
    }

    /// The pane's terminal device (`/dev/pts/N`), for writing to it from the test itself.
    public func paneTTY() throws -> String { try display("#{pane_tty}") }

    /// The cursor as (column, row), both from 0.
    public func cursor() throws -> (x: Int, y: Int) {
        let parts = try display("#{cursor_x},#{cursor_y}").split(separator: ",").compactMap { Int($0) }
        return (parts.first ?? -1, parts.last ?? -1)
    }

    /// The pane's scroll region as (upper, lower) rows, from 0.
    public func scrollRegion() throws -> (upper: Int, lower: Int) {
        let parts = try display("#{scroll_region_upper},#{scroll_region_lower}").split(separator: ",").compactMap { Int($0) }
        return (parts.first ?? -1, parts.last ?? -1)
    }

    /// Types keys into the pane (`send-keys`), e.g. `"C-c"` or `"Enter"`.
    public func sendKeys(_ keys: String...) throws {
        try command(["send-keys", "-t", target] + keys)
    }

    /// Resizes the window, which sends SIGWINCH to the pane's processes.
    public func resize(width: Int, height: Int) throws {
        try command(["resize-window", "-t", target, "-x", "\(width)", "-y", "\(height)"])
    }

    /// tmux's paste buffers (`list-buffers`): with `set-clipboard on`, an OSC 52 that
    /// reaches tmux becomes one, so an empty list proves none did.
    public func buffers() throws -> String { try command(["list-buffers"]) }

    /// Polls the screen until `predicate` holds or the time is up; returns the last screen.
    @discardableResult
    public func waitForScreen(timeout: Duration = .seconds(10), attributes: Bool = false, _ predicate: (String) -> Bool) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var screen = try capture(attributes: attributes)
        while !predicate(screen) && ContinuousClock.now < deadline {
            usleep(20_000)
            screen = try capture(attributes: attributes)
        }
        return screen
    }

    deinit {
        _ = try? Self.spawnAndWait(tmux.path, ["-L", socketName, "kill-server"])
        try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("\(socketName).conf"))
    }
}
