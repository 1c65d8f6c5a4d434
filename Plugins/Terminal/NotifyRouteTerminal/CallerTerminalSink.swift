import Glibc
import NotifyRoute
import Synchronization

/// The banner sink of a process that routes other processes' events (`notify-route
/// serve`): each banner is drawn on the terminal of the client that sent it
/// (``SinkCaller/terminal``), with one banner presenter per terminal. A replace key
/// thus replaces the banner on the terminal it was sent from, and its timer starts
/// again, as within one process; banners on other terminals are never touched. The
/// client returns at once: the daemon keeps the banner and its timer.
///
/// Without a caller's terminal (a client with no terminal, a guest of `serve.allow`,
/// a delivery made later by a timer) the sink is unavailable and says why: a daemon's
/// own stderr is no place for a line.
public struct CallerTerminalSink: NotificationSink {
    /// The most terminals with presenters at once; an idle one makes way for a new one.
    static let terminalLimit = 64

    private let template: TerminalSink
    private let banners: Banners

    /// - Parameter template: the configured banner sink whose options each terminal's
    ///   presenter takes.
    public init(_ template: TerminalSink) {
        precondition(template.style == .banner, "only banners are drawn on a caller's terminal")
        self.template = template
        banners = Banners()
    }

    public var capabilities: SinkCapabilities {
        SinkCapabilities(
            canReplace: true, canClose: true, supportsActions: true, reportsInteractions: true,
            maxTitleLength: 200, maxBodyLength: 1_000)
    }

    public func availability() async -> SinkAvailability {
        guard let terminal = SinkCaller.terminal else { return .unavailable(reason: Self.noTerminal) }
        guard let device = try? TerminalDevice.open(terminal) else {
            return .unavailable(reason: "cannot open the caller's terminal \(terminal)")
        }
        device.close()
        return .available
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        guard let terminal = SinkCaller.terminal else { throw SinkError(.unavailable, Self.noTerminal) }
        guard let sink = banners.sink(for: terminal, like: template) else {
            throw SinkError(.unavailable, "banners show on \(Self.terminalLimit) terminals already", isRetryable: false)
        }
        return try await sink.deliver(delivery)
    }

    /// Closes the banner wherever it shows: a handle names its presenter.
    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        for sink in banners.all {
            let receipt = try await sink.close(request)
            if receipt.notes.isEmpty { return receipt }
        }
        return SinkReceipt(handle: request.handle, notes: ["no banner \(request.handle) shows on any terminal"])
    }

    public func interactions() -> AsyncStream<SinkInteraction>? {
        banners.interactions()
    }

    /// Takes the banners down: a stopping daemon (or a replaced router) waits for no timeout.
    public func finish() async {
        banners.endAll()
    }

    static let noTerminal = "a banner is drawn on the terminal of the command that sent the event, and this one has none the daemon may draw on"

    /// The presenters, by terminal device path, and the streams that want their interactions.
    private final class Banners: Sendable {
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
                var sink = TerminalSink(
                    output: template.output, color: template.color, style: .banner, policy: template.policy,
                    compact: template.compact, device: terminal, environment: [:])
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
    /// makes of a terminal sink's options: banners on the caller's terminal, or on the
    /// terminal the config names; `nil` for the line style, whose output is the caller's.
    public static func routingForOthers(options: SinkOptions) throws -> (any NotificationSink)? {
        var sink = try TerminalSink(options: options)
        guard sink.style == .banner else { return nil }
        guard sink.device != nil else { return CallerTerminalSink(sink) }
        sink.drawsLineWithoutTerminal = false
        return sink
    }
}
