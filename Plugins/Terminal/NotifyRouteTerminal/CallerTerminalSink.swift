import Glibc
import NotifyRoute
import Synchronization

/// The terminal sink of a process that routes other processes' events (`notify-route
/// serve`): it draws on the terminal of the client that sent the event
/// (``SinkCaller/terminal``), never on the daemon's own output.
///
/// Banners get one presenter per terminal. A replace key thus replaces the banner on the
/// terminal it was sent from, and its timer starts again, as within one process; banners
/// on other terminals are never touched. The client returns at once: the daemon keeps
/// the banner and its timer. A line (`output: stderr` or `tty`) is written to the
/// client's terminal, which is its stderr.
///
/// Without a caller's terminal (a client whose stderr is not a terminal, a guest of
/// `serve.allow`, a delivery made later by a timer), and for lines on `stdout`, the sink
/// is unavailable and says why; it is ``SinkCapabilities/drawnByCaller``, so the client
/// draws it itself.
public struct CallerTerminalSink: NotificationSink {
    /// The most terminals drawn on at once; an idle one makes way for a new one.
    static let terminalLimit = 64

    private let template: TerminalSink
    private let terminals: Terminals

    /// - Parameter template: the configured terminal sink, whose options each terminal's
    ///   own sink takes.
    public init(_ template: TerminalSink) {
        self.template = template
        terminals = Terminals()
    }

    public var capabilities: SinkCapabilities {
        guard template.style == .banner else {
            return SinkCapabilities(maxTitleLength: 200, maxBodyLength: 1_000, deliversInline: true, drawnByCaller: true)
        }
        return SinkCapabilities(
            canReplace: true, canClose: true, supportsActions: true, reportsInteractions: true,
            maxTitleLength: 200, maxBodyLength: 1_000, drawnByCaller: true)
    }

    /// Where this delivery is drawn, or why not here.
    private var callerTerminal: Result<String, SinkError> {
        if template.style == .line && template.output == .standardOutput {
            return .failure(SinkError(.unavailable, Self.notHere))
        }
        guard let terminal = SinkCaller.terminal else { return .failure(SinkError(.unavailable, Self.noTerminal)) }
        return .success(terminal)
    }

    public func availability() async -> SinkAvailability {
        switch callerTerminal {
        case .failure(let error): return .unavailable(reason: error.message)
        case .success(let terminal):
            guard let device = try? TerminalDevice.open(terminal) else {
                return .unavailable(reason: "cannot open the caller's terminal \(terminal)")
            }
            device.close()
            return .available
        }
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let terminal = try callerTerminal.get()
        guard let sink = terminals.sink(for: terminal, like: template) else {
            throw SinkError(.unavailable, "this sink draws on \(Self.terminalLimit) terminals already, each with a banner up")
        }
        return try await sink.deliver(delivery)
    }

    /// Closes the banner wherever it shows: a handle names its presenter.
    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        for sink in terminals.all {
            let receipt = try await sink.close(request)
            if receipt.notes.isEmpty { return receipt }
        }
        return SinkReceipt(handle: request.handle, notes: ["no banner \(request.handle) shows on any terminal"])
    }

    public func interactions() -> AsyncStream<SinkInteraction>? {
        terminals.interactions()
    }

    /// Takes the banners down: a stopping daemon (or a replaced router) waits for no timeout.
    public func finish() async {
        terminals.endAll()
    }

    static let noTerminal = "drawn on the terminal of the command that sent the event, and it has none the daemon may draw on"
    static let notHere = "a line on stdout is written by the command that sent the event"

    /// A sink per terminal device path, and the streams that want their interactions.
    private final class Terminals: Sendable {
        private struct State {
            var sinks: [String: TerminalSink] = [:]
            var listeners: [AsyncStream<SinkInteraction>.Continuation] = []
            var ended = false
        }

        private let state = Mutex(State())

        /// The sink drawing on `terminal`, made on first use.
        func sink(for terminal: String, like template: TerminalSink) -> TerminalSink? {
            state.withLock { state in
                if let sink = state.sinks[terminal] { return sink }
                guard !state.ended else { return nil }
                if state.sinks.count >= CallerTerminalSink.terminalLimit {
                    guard let idle = state.sinks.first(where: { !$0.value.hasPendingWork })?.key else { return nil }
                    state.sinks[idle] = nil
                }
                // A line goes to the caller's stderr, which is this terminal.
                var sink = TerminalSink(
                    output: template.style == .line ? .controllingTerminal : template.output, color: template.color,
                    style: template.style, policy: template.policy, compact: template.compact, device: terminal, environment: [:])
                sink.drawsLineWithoutTerminal = false
                for listener in state.listeners { sink.forwardInteractions(to: listener) }
                state.sinks[terminal] = sink
                return sink
            }
        }

        var all: [TerminalSink] { state.withLock { Array($0.sinks.values) } }

        func interactions() -> AsyncStream<SinkInteraction> {
            let (stream, continuation) = AsyncStream.makeStream(of: SinkInteraction.self, bufferingPolicy: .bufferingNewest(64))
            state.withLock { state in
                state.listeners.append(continuation)
                for sink in state.sinks.values { sink.forwardInteractions(to: continuation) }
            }
            return stream
        }

        func endAll() {
            let (sinks, listeners) = state.withLock { state in
                state.ended = true
                defer { state.sinks = [:]; state.listeners = [] }
                return (Array(state.sinks.values), state.listeners)
            }
            for sink in sinks { sink.takeDownBanners() }
            for listener in listeners { listener.finish() }
        }
    }
}

extension TerminalSink {
    /// The sink that a process routing other processes' events (`notify-route serve`)
    /// makes of a terminal sink's options: drawn on the caller's terminal
    /// (``CallerTerminalSink``), or for a banner on the terminal the config names.
    public static func routingForOthers(options: SinkOptions) throws -> any NotificationSink {
        var sink = try TerminalSink(options: options)
        // What goes to the terminal the config names is drawn there whoever sends.
        guard sink.device != nil, sink.style == .banner || sink.output == .controllingTerminal else {
            return CallerTerminalSink(sink)
        }
        sink.drawsLineWithoutTerminal = false
        return sink
    }
}
