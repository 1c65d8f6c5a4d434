#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Dispatch
import NotifyRoute
import Synchronization

/// One running plugin: a child process that reads requests as JSON lines on its
/// stdin and answers one JSON line per request on its stdout.
///
/// Its I/O runs on threads of its own (a blocked `read` or `write` must never hold a
/// thread of Swift's cooperative pool): one reads answers, one passes stderr through
/// with a prefix, one waits for the exit, and a serial queue writes requests. Its
/// stdin, stdout and stderr are socket pairs: created close-on-exec atomically (so a
/// plugin started at the same moment by another sink cannot inherit them), and
/// written with `MSG_NOSIGNAL`, so a plugin that died raises EPIPE, never SIGPIPE in
/// a program that did not expect one.
final class PluginProcess: Sendable {
    let pid: pid_t
    let sinkName: String
    private let input: Int32
    private let writer: DispatchQueue
    private let state = Mutex(State())
    private let exitSignal = DispatchSemaphore(value: 0)

    private struct Pending {
        var id: Int
        var continuation: CheckedContinuation<Result<SinkReceipt, SinkError>, Never>
    }

    private struct State {
        var pending: [Pending] = []
        /// Why it takes no more requests; set once.
        var ended: SinkError?
        var exitDescription: String?
        var exitWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter = 0
        var lastStderrLine: String?
    }

    /// The longest answer line read; past it the plugin is out of protocol.
    static let maximumLineBytes = 1 << 20

    /// Starts `executable` with `arguments` (argv[0] included).
    static func start(
        executable: String, arguments: [String], environment: [String: String], sinkName: String
    ) throws(SinkError) -> PluginProcess {
        var pairs: [[Int32]] = []
        for _ in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                let reason = String(cString: strerror(errno))
                for fd in pairs.joined() { close(fd) }
                throw SinkError(.failed, "cannot create the plugin's pipes: \(reason)", isRetryable: true)
            }
            pairs.append(pair)
        }
        let (stdinPair, stdoutPair, stderrPair) = (pairs[0], pairs[1], pairs[2])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPair[1], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, stdoutPair[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, stderrPair[1], STDERR_FILENO)

        let spawned = CleanSpawn.spawn(executable, arguments: arguments, environment: environment, actions: &actions)
        for fd in [stdinPair[1], stdoutPair[1], stderrPair[1]] { close(fd) }
        let pid: pid_t
        switch spawned {
        case .success(let child):
            pid = child
        case .failure(let failure):
            for fd in [stdinPair[0], stdoutPair[0], stderrPair[0]] { close(fd) }
            let kind: SinkError.Kind = failure.code == ENOENT || failure.code == EACCES ? .unavailable : .failed
            throw SinkError(kind, "cannot start \(executable): \(failure.reason)")
        }
        let process = PluginProcess(pid: pid, sinkName: sinkName, input: stdinPair[0])
        process.startThreads(stdout: stdoutPair[0], stderr: stderrPair[0])
        return process
    }

    private init(pid: pid_t, sinkName: String, input: Int32) {
        self.pid = pid
        self.sinkName = sinkName
        self.input = input
        self.writer = DispatchQueue(label: "notify-route.exec.\(sinkName).writer")
    }

    deinit { close(input) }

    /// True once it died, was killed, or broke the protocol: the next request starts a new one.
    var hasEnded: Bool { state.withLock { $0.ended != nil } }

    /// How it ended ("exited with status 3"), for the restart message.
    var endReason: String? { state.withLock { $0.ended?.message } }

    // MARK: Requests

    /// Writes `line` and waits for the answer with `id`, at most until `deadline`; past it
    /// the process is killed (SIGKILL) and the request fails as timed out.
    func request(id: Int, line: Data, deadline: ContinuousClock.Instant) async -> Result<SinkReceipt, SinkError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ended = state.withLock { state -> SinkError? in
                    if let ended = state.ended { return ended }
                    state.pending.append(Pending(id: id, continuation: continuation))
                    return nil
                }
                if let ended {
                    continuation.resume(returning: .failure(ended))
                    return
                }
                writer.async { [self] in
                    if let failure = Self.send(line, to: input) {
                        end(SinkError(.failed, "cannot write to the plugin (pid \(pid)): \(failure)", isRetryable: true), kill: true)
                    }
                }
                DeadlineTimer.shared.schedule(at: deadline) { [self] in
                    // Killing and reporting are off the timer's thread, which must not wait on stderr.
                    guard isPending(id) else { return }
                    DispatchQueue.global().async { self.timeOut(id) }
                }
            }
        } onCancel: {
            // The router stopped waiting (its deadline): the plugin must not linger half-way.
            timeOut(id)
        }
    }

    private func isPending(_ id: Int) -> Bool {
        state.withLock { state in state.pending.contains { $0.id == id } }
    }

    private func timeOut(_ id: Int) {
        guard isPending(id) else { return }
        Self.report("killed the plugin (pid \(pid)): no answer before the deadline; it restarts on the next event", sink: sinkName)
        end(SinkError(.timedOut, "no answer before the deadline; the plugin (pid \(pid)) was killed and restarts on the next event",
                      isRetryable: true), kill: true)
    }

    private func answer(_ answer: ExecAnswer) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<SinkReceipt, SinkError>, Never>? in
            if let id = answer.id {
                guard let index = state.pending.firstIndex(where: { $0.id == id }) else { return nil }  // a late answer
                return state.pending.remove(at: index).continuation
            }
            return state.pending.isEmpty ? nil : state.pending.removeFirst().continuation
        }
        continuation?.resume(returning: answer.result)
    }

    /// Marks the process as finished with `error`, fails every waiting request with it,
    /// and kills the process when it may still be running.
    private func end(_ error: SinkError, kill shouldKill: Bool) {
        let pending = state.withLock { state -> [Pending] in
            if state.ended == nil {
                var error = error
                if let last = state.lastStderrLine, error.kind != .timedOut { error.message += " (its last stderr line: \(last))" }
                state.ended = error
            }
            defer { state.pending = [] }
            return state.pending
        }
        if shouldKill { Glibc.kill(pid, SIGKILL) }
        let failure = state.withLock { $0.ended! }
        for item in pending { item.continuation.resume(returning: .failure(failure)) }
    }

    // MARK: Shutdown

    /// Closes its stdin: a well-behaved plugin finishes what it has and exits.
    func closeInput() {
        writer.async { [self] in _ = shutdown(input, Int32(SHUT_WR)) }
    }

    /// Waits for the exit, at most `limit`; true when it exited.
    func waitForExit(within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let token = state.withLock { state -> Int? in
                if state.exitDescription != nil { return nil }
                state.nextWaiter += 1
                state.exitWaiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let token else {
                continuation.resume(returning: true)
                return
            }
            DeadlineTimer.shared.schedule(at: .now + limit) { [self] in
                state.withLock { $0.exitWaiters.removeValue(forKey: token) }?.resume(returning: false)
            }
        }
    }

    func kill(reason: String) {
        end(SinkError(.failed, reason, isRetryable: true), kill: true)
    }

    // MARK: Threads

    private func startThreads(stdout: Int32, stderr: Int32) {
        DetachedThread.start { [self] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let termination = status & 0x7F
            let description = termination == 0
                ? "the plugin (pid \(pid)) exited with status \((status >> 8) & 0xFF)"
                : "the plugin (pid \(pid)) was killed by signal \(termination)"
            let waiters = state.withLock { state in
                state.exitDescription = description
                defer { state.exitWaiters = [:] }
                return Array(state.exitWaiters.values)
            }
            exitSignal.signal()
            end(SinkError(.failed, description, isRetryable: true), kill: false)
            for waiter in waiters { waiter.resume(returning: true) }
        }
        DetachedThread.start { [self] in
            Self.readLines(stdout, limit: Self.maximumLineBytes) { line in
                guard let line else {
                    end(SinkError(.failed, "the plugin wrote an answer longer than \(Self.maximumLineBytes) bytes"), kill: true)
                    return false
                }
                do throws(ExecAnswer.ProtocolError) {
                    answer(try ExecAnswer.parse(line))
                    return true
                } catch {
                    end(SinkError(.failed, error.message), kill: true)
                    return false
                }
            }
            close(stdout)
            // End of its stdout: it is exiting, or it closed stdout and can no longer answer.
            if exitSignal.wait(timeout: .now() + 1) == .success {
                exitSignal.signal()
            } else {
                end(SinkError(.failed, "the plugin (pid \(pid)) closed its standard output", isRetryable: true), kill: true)
            }
        }
        DetachedThread.start { [self] in
            Self.readLines(stderr, limit: 64 * 1024) { line in
                guard let line else { return true }
                let text = TextSanitizer.clean(String(decoding: line, as: UTF8.self), keepNewlines: false)
                state.withLock { $0.lastStderrLine = text.count > 200 ? String(text.prefix(200)) + "…" : text }
                Self.report(text, sink: sinkName)
                return true
            }
            close(stderr)
        }
    }

    /// Calls `handle` with each line (`nil` for one over `limit`, which is skipped);
    /// stops at end of file or when `handle` returns false.
    private static func readLines(_ fd: Int32, limit: Int, _ handle: ([UInt8]?) -> Bool) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var current: [UInt8] = []
        var overlong = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            var start = 0
            while start < count {
                let newline = buffer[start..<count].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? count
                if !overlong {
                    current += buffer[start..<end]
                    if current.count > limit { overlong = true; current = [] }
                }
                guard newline != nil else { break }
                let keepGoing = overlong ? handle(nil) : handle(current)
                guard keepGoing else { return }
                current = []
                overlong = false
                start = end + 1
            }
        }
        if !current.isEmpty { _ = handle(current) }
    }

    /// Writes all of `data`; the error text on failure.
    private static func send(_ data: Data, to fd: Int32) -> String? {
        data.withUnsafeBytes { buffer -> String? in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if written < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += written
            }
            return nil
        }
    }

    /// A line on our stderr, attributed to the sink.
    static func report(_ message: String, sink: String) {
        let bytes = Array(TextSanitizer.escaped("notify-route: sink \"\(sink)\": \(message)\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
