#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute

/// The `terminal` sink kind: a line per event, or a banner at the top of the terminal.
///
/// **Line style** (the default): one line per event on stderr (or `/dev/tty`, or
/// stdout), tinted by level on a terminal, plain when the output is not a terminal,
/// when `NO_COLOR` is set, or when `TERM=dumb`.
///
/// **Banner style**: the top row (two with a body) of the controlling terminal is
/// reserved with a scroll region, so earlier output is pushed down rather than
/// overwritten, and a full-width bar tinted by level shows the glyph, the title, the
/// body and action hints. It goes away after the event's timeout (sticky `never`
/// banners stay until closed or the process ends) and the terminal is given back
/// exactly; a replacement redraws in place and restarts the timer. Narrower than 60
/// columns or shorter than 10 rows, one compact row. It always draws on the terminal
/// itself (`/dev/tty`, or `device`), never into a pipe a script reads; with no
/// terminal, or with `TERM=dumb`, it draws the line style instead and says so in the
/// report. Banners of several processes on one terminal stack, newest on top, and each
/// takes down only its own rows (see `BannerLedger`); Ctrl-Z gives the rows back until
/// the process continues.
///
/// Event text is made inert once more right before it is written, so nothing in an
/// event can move the cursor, set the title, ring the bell or reach the clipboard.
///
/// ```swift
/// // A long-running service: banners from any task, one at a time.
/// let banner = TerminalSink(style: .banner, policy: .oneAtATime)
/// let registry = try SinkRegistry([TerminalSink.plugin])
/// ```
///
/// Options in config: `style` (`line`, `banner`), `output` (`stderr`, `stdout`, `tty`:
/// the line style's output, and where a banner's fallback line goes), `color` (`auto`,
/// `always`, `never`), and for banners `policy` (`one-at-a-time`, `queue`), `compact`
/// (`auto`, `always`, `never`) and `device` (a terminal device path for banners and for
/// lines with `output: tty`; default `/dev/tty`),
/// and `unattended` (`print`, `last-resort`): with `last-resort`, when there is no terminal
/// to write on (cron, a systemd service), the line is written only when no other sink took
/// the event, as the embedded default config does.
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

    /// What a banner does when another event arrives while one shows.
    public enum BannerPolicy: String, Sendable, CaseIterable {
        /// The newest replaces the banner in place and its timer starts again.
        case oneAtATime = "one-at-a-time"
        /// Banners show in turn, each for its own timeout.
        case queue
    }

    /// What the sink does with an event when it has no terminal to write on: its line
    /// goes to a file or a pipe (cron mails it; a systemd service's stderr is journaled).
    public enum UnattendedMode: String, Sendable, CaseIterable {
        /// Writes the line all the same.
        case print
        /// Writes it only when no other sink took the event (``SinkCapabilities/lastResort``).
        case lastResort = "last-resort"
    }

    /// When a banner uses its one-row compact layout.
    public enum CompactMode: String, Sendable, CaseIterable {
        /// When the terminal is narrower than 60 columns or shorter than 10 rows.
        case auto
        case always, never
    }

    public let output: Output
    public let color: ColorMode
    public let style: Style
    public let policy: BannerPolicy
    public let compact: CompactMode
    /// The terminal a banner draws on; `nil` for the controlling terminal (`/dev/tty`).
    public let device: String?
    public let unattended: UnattendedMode
    /// `unattended` is `last-resort` and there is no terminal to write on, decided once.
    private let standsBy: Bool
    private let environment: [String: String]
    private let writer: TerminalWriter
    private let presenter: BannerPresenter?
    /// A banner with no terminal draws a line instead; not in a daemon, whose lines would go
    /// to its own stderr (``CallerTerminalSink``).
    var drawsLineWithoutTerminal = true

    /// - Parameters:
    ///   - device: a terminal device for banners and `output: tty` lines (`/dev/pts/3`);
    ///     `nil` for `/dev/tty`.
    ///   - unattended: what to do without a terminal to write on (a line style whose output is
    ///     not a terminal; a banner without a terminal whose fallback line would not go to one).
    ///   - environment: read for `NO_COLOR`, `TERM` and `COLORTERM`.
    public init(
        output: Output = .standardError, color: ColorMode = .auto, style: Style = .line,
        policy: BannerPolicy = .oneAtATime, compact: CompactMode = .auto, device: String? = nil,
        unattended: UnattendedMode = .print,
        environment: [String: String] = ProcessEnvironment.values(["NO_COLOR", "TERM", "COLORTERM"])
    ) {
        self.output = output
        self.color = color
        self.style = style
        self.policy = policy
        self.compact = compact
        self.device = device
        self.unattended = unattended
        self.environment = environment
        self.writer = TerminalWriter(output: output, device: style == .line ? device : nil)
        standsBy = unattended == .lastResort && !Self.hasTerminal(style: style, output: output, device: device)
        self.presenter = style == .banner
            ? BannerPresenter(settings: .init(
                devicePath: device ?? TerminalDevice.controllingTerminal,
                palette: BannerPalette.detect(mode: color, environment: environment), policy: policy, compact: compact))
            : nil
    }

    /// The plugin entry for a ``SinkRegistry``.
    public static let plugin = SinkPlugin(
        kind: "terminal",
        summary: "a line per event, or a banner at the top of the terminal (style: banner), tinted by level",
        options: [
            .option("style", .choice(Style.allCases.map(\.rawValue)), default: .value(Style.line.rawValue), example: "banner",
                    "a line per event, or a banner at the top of the terminal"),
            .option("output", .choice(Output.allCases.map(\.rawValue)), default: .value(Output.standardError.rawValue),
                    example: "tty", "where lines go (`tty`: the controlling terminal)"),
            .option("color", .choice(ColorMode.allCases.map(\.rawValue)), default: .value(ColorMode.auto.rawValue),
                    example: "never", "tint by level (`auto`: on a terminal without `NO_COLOR`)"),
            .option("policy", .choice(BannerPolicy.allCases.map(\.rawValue)), default: .value(BannerPolicy.oneAtATime.rawValue),
                    example: "queue", "what a banner does when another event arrives while it shows"),
            .option("compact", .choice(CompactMode.allCases.map(\.rawValue)), default: .value(CompactMode.auto.rawValue),
                    example: "always", "a one-row banner (`auto`: under 60 columns or 10 rows)"),
            .option("device", .string, default: .implicit("the controlling terminal"), example: "/dev/pts/3",
                    "the terminal a banner, or a line with `output: tty`, is drawn on (an absolute path)"),
            .option("unattended", .choice(UnattendedMode.allCases.map(\.rawValue)), default: .value(UnattendedMode.print.rawValue),
                    example: "last-resort",
                    "without a terminal to write on (cron, a service): print anyway, or only when no other sink took the event"),
        ]
    ) { options in
        try TerminalSink(options: options)
    }

    /// The sink a config's options describe; the error names the option at fault.
    public init(options: SinkOptions) throws {
        func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type, default value: T) throws -> T
        where T.RawValue == String {
            try options.choice(key, from: T.allCases.map(\.rawValue)).flatMap(T.init(rawValue:)) ?? value
        }
        let device = try options.string("device")
        if let device, !device.hasPrefix("/") {
            throw options.error("device must be an absolute path to a terminal (for example /dev/pts/3), not \"\(device)\"", at: "device")
        }
        self.init(
            output: try choice("output", Output.self, default: .standardError),
            color: try choice("color", ColorMode.self, default: .auto),
            style: try choice("style", Style.self, default: .line),
            policy: try choice("policy", BannerPolicy.self, default: .oneAtATime),
            compact: try choice("compact", CompactMode.self, default: .auto),
            device: device,
            unattended: try choice("unattended", UnattendedMode.self, default: .print))
    }

    public var capabilities: SinkCapabilities {
        // `deliversInline`: a line is written at once where the output has room for it, and
        // otherwise answered by the delivery's deadline (``TerminalWriter/write(_:deadline:)``).
        guard style == .banner else {
            return SinkCapabilities(maxTitleLength: 200, maxBodyLength: 1_000, deliversInline: true, lastResort: standsBy)
        }
        // A banner updates and closes in place, shows action labels as hints, and
        // reports when it goes (expired or closed), which `send --wait` prints.
        return SinkCapabilities(
            canReplace: true, canClose: true, supportsActions: true, reportsInteractions: true,
            maxTitleLength: 200, maxBodyLength: 1_000, lastResort: standsBy)
    }

    /// Whether what this sink writes reaches a terminal: the line style's output, or the
    /// banner's terminal and, failing that, the output its line falls back to.
    private static func hasTerminal(style: Style, output: Output, device: String?) -> Bool {
        if style == .banner, let terminal = try? TerminalDevice.open(device ?? TerminalDevice.controllingTerminal) {
            terminal.close()
            return true
        }
        let lineOutput = style == .banner && output == .controllingTerminal ? .standardError : output
        switch lineOutput {
        case .standardError: return isatty(STDERR_FILENO) == 1
        case .standardOutput: return isatty(STDOUT_FILENO) == 1
        case .controllingTerminal:
            let fd = Glibc.open(style == .line ? device ?? TerminalDevice.controllingTerminal : TerminalDevice.controllingTerminal, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { return false }
            Glibc.close(fd)
            return true
        }
    }

    public func availability() async -> SinkAvailability {
        guard style == .banner else { return writer.availability() }
        // Without a terminal a banner still delivers, as a line on the fallback output.
        guard let terminal = try? TerminalDevice.open(device ?? TerminalDevice.controllingTerminal) else {
            return fallbackWriter.availability()
        }
        terminal.close()
        return .available
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        if let presenter {
            if environment["TERM"] == "dumb" {
                return try await deliverLine(delivery, via: writer, note: "TERM=dumb: drawn as a line (a dumb terminal has no cursor addressing)")
            }
            let count: Int = if case .updateDuplicateCount(_, let count) = delivery.intent { count } else { delivery.duplicateCount }
            do {
                return try await presenter.present(
                    BannerContent(delivery.event, count: count), timeout: Self.bannerTimeout(delivery.event), intent: delivery.intent)
            } catch let error as TerminalDevice.Unusable {
                guard drawsLineWithoutTerminal else { throw SinkError(.unavailable, error.description) }
                return try await deliverLine(delivery, via: fallbackWriter, note: "\(error.description): banner drawn as a line on \(fallbackWriter.output.rawValue)")
            }
        }
        return try await deliverLine(delivery, via: writer, note: nil)
    }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        guard let presenter else { throw SinkError(.unsupported, "the line style cannot close what it wrote") }
        return try await presenter.close(request.handle)
    }

    public func interactions() -> AsyncStream<SinkInteraction>? {
        presenter?.interactions()
    }

    /// Returns when no banner shows any more: its timeout ran out or it was closed.
    public func finish() async {
        await presenter?.finish()
    }

    /// A banner shows or waits (the line style leaves nothing behind a delivery).
    public var hasPendingWork: Bool { presenter?.isBusy ?? false }

    /// Takes every banner down now, as at the process's end.
    func takeDownBanners() {
        presenter?.restoreForExit(within: TerminalRestoration.restoreWaitLimit, wakeWaiters: true)
    }

    /// Sends this sink's interactions to `continuation` too.
    func forwardInteractions(to continuation: AsyncStream<SinkInteraction>.Continuation) {
        presenter?.addListener(continuation)
    }

    // MARK: -

    /// Where a banner's line goes when there is no terminal: the configured output,
    /// unless that is the missing terminal itself.
    private var fallbackWriter: TerminalWriter {
        output == .controllingTerminal ? TerminalWriter(output: .standardError) : writer
    }

    private func deliverLine(_ delivery: SinkDelivery, via writer: TerminalWriter, note: String?) async throws -> SinkReceipt {
        let useColor = writer.shouldColor(mode: color, environment: environment)
        let line = TerminalLine.render(delivery.event, color: useColor, count: delivery.duplicateCount)
        try await writer.write(line + "\n", deadline: delivery.deadline)
        return SinkReceipt(notes: note.map { [$0] } ?? [])
    }

    /// The event's own timeout; for `default`, the level's, and five seconds failing that.
    static func bannerTimeout(_ event: ResolvedEvent) -> Duration? {
        switch event.timeout {
        case .never: return nil
        case .after(let duration): return duration
        case .serverDefault:
            if case .after(let duration) = event.style.timeout { return duration }
            return event.style.timeout == .never ? nil : .seconds(5)
        }
    }
}
