import Dispatch
import Glibc
import NotifyRoute
import Synchronization

/// Writes whole lines off Swift's cooperative pool, so a wedged terminal (`^S`, a
/// full pty buffer) blocks only this writer's own queue, never the router.
final class TerminalWriter: Sendable {
    let output: TerminalSink.Output
    /// The terminal `output: tty` writes to: `/dev/tty`, the controlling terminal, unless
    /// the sink names one (`device`, or the caller's in a daemon).
    let terminal: String
    private let queue = DispatchQueue(label: "notify-route.terminal")

    init(output: TerminalSink.Output, device: String? = nil) {
        self.output = output
        self.terminal = device ?? TerminalDevice.controllingTerminal
    }

    func availability() -> SinkAvailability {
        switch output {
        case .controllingTerminal:
            let fd = open(terminal, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { return .unavailable(reason: Self.cannotOpen(terminal)) }
            close(fd)
            return .available
        case .standardError, .standardOutput:
            let fd = output == .standardError ? STDERR_FILENO : STDOUT_FILENO
            guard fcntl(fd, F_GETFD) >= 0 else { return .unavailable(reason: "\(output.rawValue) is closed") }
            return .available
        }
    }

    func shouldColor(mode: TerminalSink.ColorMode, environment: [String: String]) -> Bool {
        switch mode {
        case .always: return true
        case .never: return false
        case .auto:
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            if environment["TERM"] == "dumb" { return false }
            switch output {
            case .controllingTerminal: return true
            case .standardError: return isatty(STDERR_FILENO) == 1
            case .standardOutput: return isatty(STDOUT_FILENO) == 1
            }
        }
    }

    /// Writes `text`, answering by `deadline` whatever the output does: a line the output
    /// has not taken by then stays queued here and the delivery times out.
    func write(_ text: String, deadline: ContinuousClock.Instant? = nil) async throws {
        let (output, terminal) = (output, terminal)
        // A file, pipe or socket with room for the line takes it at once: written here, it
        // starts no thread (Dispatch's pool starts several for its first job).
        if Self.takesWithoutBlocking(output, count: text.utf8.count) {
            return try Self.writeAll(text, to: output, terminal: terminal)
        }
        let answer = OneAnswer()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            answer.wait(continuation)
            queue.async {
                do {
                    try Self.writeAll(text, to: output, terminal: terminal)
                    answer.give(.success(()))
                } catch {
                    answer.give(.failure(error))
                }
            }
            if let deadline {
                // A little before the router's own deadline, so that it gets this answer.
                let remaining = deadline - .now
                let wait = max(.zero, remaining - min(remaining / 10, .milliseconds(100)))
                let (seconds, attoseconds) = wait.components
                let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                    answer.give(.failure(SinkError(.timedOut, "\(output.rawValue) did not take the line in time (a stopped terminal, a full pipe); it is written when it does")))
                }
            }
        }
    }

    /// Not a terminal (one can be stopped with ^S), and `poll` says there is room for
    /// `count` bytes: a pipe that polls writable has a page free, and up to `PIPE_BUF` bytes
    /// go in whole.
    private static func takesWithoutBlocking(_ output: TerminalSink.Output, count: Int) -> Bool {
        guard output != .controllingTerminal, count <= PIPE_BUF else { return false }
        let fd = output == .standardError ? STDERR_FILENO : STDOUT_FILENO
        guard isatty(fd) == 0 else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLOUT) != 0 && entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0
    }

    private static func cannotOpen(_ terminal: String) -> String {
        let reason = String(cString: strerror(errno))
        return terminal == TerminalDevice.controllingTerminal
            ? "no controlling terminal (\(terminal): \(reason))" : "cannot open \(terminal): \(reason)"
    }

    private static func writeAll(_ text: String, to output: TerminalSink.Output, terminal: String) throws {
        let fd: Int32
        var opened = false
        switch output {
        case .standardError: fd = STDERR_FILENO
        case .standardOutput: fd = STDOUT_FILENO
        case .controllingTerminal:
            fd = open(terminal, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { throw SinkError(.unavailable, cannotOpen(terminal)) }
            opened = true
        }
        defer { if opened { close(fd) } }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                let reason = errno == EPIPE ? "\(output.rawValue) is a closed pipe (EPIPE)" : "write to \(output.rawValue) failed: \(String(cString: strerror(errno)))"
                throw SinkError(errno == EBADF ? .unavailable : .failed, reason)
            }
            bytes = bytes.dropFirst(written)
        }
    }
}

/// The first of several answers (written, failed, out of time) resumes the waiting delivery.
private final class OneAnswer: Sendable {
    private let waiting = Mutex<CheckedContinuation<Void, any Error>?>(nil)

    func wait(_ continuation: CheckedContinuation<Void, any Error>) {
        waiting.withLock { $0 = continuation }
    }

    func give(_ result: Result<Void, any Error>) {
        waiting.withLock { waiting -> CheckedContinuation<Void, any Error>? in
            defer { waiting = nil }
            return waiting
        }?.resume(with: result)
    }
}
