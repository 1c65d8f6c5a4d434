import Glibc
import Dispatch
import NotifyRoute

/// Writes whole lines off Swift's cooperative pool, so a wedged terminal (`^S`, a
/// full pty buffer) blocks only this writer's own queue, never the router.
final class TerminalWriter: Sendable {
    let output: TerminalSink.Output
    private let queue = DispatchQueue(label: "notify-route.terminal")

    init(output: TerminalSink.Output) {
        self.output = output
    }

    func availability() -> SinkAvailability {
        switch output {
        case .controllingTerminal:
            let fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { return .unavailable(reason: "no controlling terminal (/dev/tty: \(String(cString: strerror(errno))))") }
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

    func write(_ text: String) async throws {
        let output = output
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                do {
                    try Self.writeAll(text, to: output)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private static func writeAll(_ text: String, to output: TerminalSink.Output) throws {
        let fd: Int32
        var opened = false
        switch output {
        case .standardError: fd = STDERR_FILENO
        case .standardOutput: fd = STDOUT_FILENO
        case .controllingTerminal:
            fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else {
                throw SinkError(.unavailable, "no controlling terminal (/dev/tty: \(String(cString: strerror(errno))))")
            }
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
