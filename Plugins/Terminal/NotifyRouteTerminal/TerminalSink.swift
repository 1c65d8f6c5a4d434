#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Foundation
import NotifyRoute

/// The `terminal` sink kind: one line per event on stderr (or `/dev/tty`, or stdout),
/// tinted by level on a terminal, plain when the output is not a terminal, when
/// `NO_COLOR` is set, or when `TERM=dumb`.
///
/// Event text is cleaned by ``TextSanitizer`` once more right before it is written, so
/// nothing in an event can move the cursor, set the title or reach the clipboard.
///
/// ```swift
/// let sink = TerminalSink(output: .standardError, color: .auto)
/// let registry = try SinkRegistry([TerminalSink.plugin])
/// ```
///
/// Options in config: `style` (`line`; `banner` is drawn as a line until the banner
/// style lands), `output` (`stderr`, `stdout`, `tty`), `color` (`auto`, `always`, `never`).
public struct TerminalSink: NotificationSink {
    public enum Output: String, Sendable, CaseIterable {
        case standardError = "stderr"
        case standardOutput = "stdout"
        /// The controlling terminal, so that a pipe a script reads never sees banners.
        case controllingTerminal = "tty"
    }

    public enum ColorMode: String, Sendable, CaseIterable {
        case auto, always, never
    }

    public enum Style: String, Sendable, CaseIterable {
        case line, banner
    }

    public let output: Output
    public let color: ColorMode
    public let style: Style
    private let environment: [String: String]
    private let writer: TerminalWriter

    public init(
        output: Output = .standardError, color: ColorMode = .auto, style: Style = .line,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.output = output
        self.color = color
        self.style = style
        self.environment = environment
        self.writer = TerminalWriter(output: output)
    }

    /// The plugin entry for a ``SinkRegistry``.
    public static let plugin = SinkPlugin(
        kind: "terminal", summary: "a line per event on the terminal (stderr, stdout or /dev/tty), tinted by level",
        optionKeys: ["style", "output", "color"]
    ) { options in
        TerminalSink(
            output: Output(rawValue: try options.choice("output", from: Output.allCases.map(\.rawValue)) ?? "stderr")!,
            color: ColorMode(rawValue: try options.choice("color", from: ColorMode.allCases.map(\.rawValue)) ?? "auto")!,
            style: Style(rawValue: try options.choice("style", from: Style.allCases.map(\.rawValue)) ?? "line")!)
    }

    public var capabilities: SinkCapabilities {
        SinkCapabilities(maxTitleLength: 200, maxBodyLength: 1_000)
    }

    public func availability() async -> SinkAvailability {
        writer.availability()
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let useColor = writer.shouldColor(mode: color, environment: environment)
        let line = TerminalLine.render(delivery.event, color: useColor, count: delivery.duplicateCount)
        try await writer.write(line + "\n")
        var notes: [String] = []
        if style == .banner { notes.append("style banner is not built yet; drawn as a line") }
        return SinkReceipt(notes: notes)
    }
}

/// Formats one event as one line.
public enum TerminalLine {
    /// `⚠ warning  Disk full: 90% used ⏎ second line` with the level tinted; without
    /// colour, `[warning] Disk full: 90% used ⏎ second line`.
    public static func render(_ event: ResolvedEvent, color: Bool, count: Int = 1) -> String {
        let title = TextSanitizer.clean(event.title, keepNewlines: false)
        let body = event.body.map { TextSanitizer.clean($0).split(separator: "\n", omittingEmptySubsequences: true).joined(separator: " ⏎ ") }
        var text = title
        if count > 1 { text += " (×\(count))" }
        if let body, !body.isEmpty { text += ": " + body }
        guard color else { return "[\(event.level.rawValue)] \(text)" }
        let tint = event.style.tint.sgrParameters
        return "\u{1B}[\(tint)m\(glyph(event.level)) \(event.level.rawValue)\u{1B}[0m  \(text)"
    }

    public static func glyph(_ level: Level) -> String {
        switch level {
        case .debug: "·"
        case .info: "ℹ"
        case .notice: "•"
        case .success: "✔"
        case .warning: "⚠"
        case .error: "✖"
        case .critical: "‼"
        }
    }
}

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
