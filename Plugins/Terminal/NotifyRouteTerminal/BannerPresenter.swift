import Glibc
import Dispatch
import NotifyRoute
import Synchronization

/// The lifetime of the banners of one terminal sink: which banner shows, which wait,
/// their timers, and the rows they hold on the terminal.
///
/// Everything that changes the screen runs on one serial queue, in order, off Swift's
/// cooperative pool: a wedged terminal (`^S`, a full pty buffer) blocks this queue only.
/// The state sits in a `Mutex` so that any task of a long-running process can deliver,
/// close or wait on the same sink. Timers are Dispatch deadlines on the same queue,
/// tagged with a generation: a replacement bumps the generation, so the old timer finds
/// itself stale and does nothing, and the new one starts from zero.
final class BannerPresenter: TerminalClaim {
    struct Settings: Sendable {
        var devicePath: String
        var palette: BannerPalette
        var policy: TerminalSink.BannerPolicy
        var compact: TerminalSink.CompactMode
    }

    private struct Banner: Sendable {
        var handle: SinkHandle
        var content: BannerContent
        /// `nil`: sticky, until closed or the process ends.
        var timeout: Duration?
    }

    private struct State: Sendable {
        var device: TerminalDevice?
        /// The rows of every banner on the device, ours and other processes'.
        var ledger: BannerLedger?
        var current: Banner?
        var waiting: [Banner] = []
        var generation = 0
        var serial = 0
        /// The process is ending: the terminal was given back and stays given back.
        var ended = false
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelledWaiters: Set<Int> = []
        var nextWaiter = 0
        var listeners: [Int: AsyncStream<SinkInteraction>.Continuation] = [:]
        var nextListener = 0

        var isIdle: Bool { current == nil && waiting.isEmpty }
    }

    /// A screen change decided under the lock, carried out after it.
    private struct Effects {
        /// Lines to show on the device (none: give the rows back).
        var write: (device: TerminalDevice, ledger: BannerLedger, lines: [String], resetRegion: Bool)?
        var close: TerminalDevice?
        var interactions: [SinkInteraction] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var timer: (generation: Int, after: Duration)?
        var unregister = false
    }

    let settings: Settings
    private let queue = DispatchQueue(label: "notify-route.terminal.banner")
    private let state = Mutex(State())
    /// Unique among the presenters of this process too: a daemon has one per terminal, and
    /// a replace must never reach another terminal's banner.
    private let handlePrefix: String
    /// This sink's name among the sinks of this process in a ``BannerLedger``.
    private let slot: Int

    init(settings: Settings) {
        self.settings = settings
        slot = BannerLedger.claimSlot()
        handlePrefix = "banner-\(getpid())-\(slot)-"
    }

    deinit {
        BannerLedger.releaseSlot(slot)
    }

    // MARK: Delivering, closing, finishing

    /// Shows, replaces or queues a banner; throws ``TerminalDevice/Unusable`` when there
    /// is no terminal to draw on, so that the sink can draw a line instead.
    func present(_ content: BannerContent, timeout: Duration?, intent: SinkDelivery.Intent) async throws -> SinkReceipt {
        try await onQueue { try self.presentNow(content, timeout: timeout, intent: intent) }
    }

    /// Takes a banner down (or out of the queue) before its time.
    func close(_ handle: SinkHandle) async throws -> SinkReceipt {
        try await onQueue {
            var effects = Effects()
            let found = self.state.withLock { state -> Bool in
                if state.current?.handle == handle {
                    self.dismissCurrent(reason: .closed, state: &state, effects: &effects)
                    return true
                }
                if let index = state.waiting.firstIndex(where: { $0.handle == handle }) {
                    state.waiting.remove(at: index)
                    effects.interactions.append(SinkInteraction(handle: handle, interaction: .dismissed(.closed)))
                    if state.current != nil { self.redraw(state: &state, effects: &effects) }
                    return true
                }
                return false
            }
            try self.perform(effects)
            guard found else {
                return SinkReceipt(handle: handle, notes: [
                    "no banner \(handle) is shown by this process; one shown by another notify-route process goes away at its own timeout",
                ])
            }
            return SinkReceipt(handle: handle)
        }
    }

    /// A banner shows or waits: ``finish()`` would wait for it.
    var isBusy: Bool { state.withLock { !$0.isIdle && !$0.ended } }

    /// Returns once no banner shows and none waits, or when the calling task is cancelled.
    func finish() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async {
                    let now = self.state.withLock { state -> Bool in
                        if state.isIdle || state.ended || state.cancelledWaiters.remove(id) != nil { return true }
                        state.idleWaiters[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
        } onCancel: {
            queue.async {
                let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                    if let waiter = state.idleWaiters.removeValue(forKey: id) { return waiter }
                    state.cancelledWaiters.insert(id)
                    return nil
                }
                waiter?.resume()
            }
        }
    }

    /// Shown, dismissed (expired or closed) for every banner from now on.
    func interactions() -> AsyncStream<SinkInteraction> {
        let (stream, continuation) = AsyncStream.makeStream(of: SinkInteraction.self, bufferingPolicy: .bufferingNewest(64))
        let id = addListener(continuation)
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Yields every interaction from now on to `continuation` as well (whose stream's
    /// owner ends it).
    @discardableResult
    func addListener(_ continuation: AsyncStream<SinkInteraction>.Continuation) -> Int {
        state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = continuation
            return state.nextListener
        }
    }

    // MARK: TerminalClaim

    func restoreForExit(within limit: DispatchTimeInterval, wakeWaiters: Bool) {
        let done = DispatchSemaphore(value: 0)
        queue.async {
            var effects = Effects()
            self.state.withLock { state in
                state.ended = true
                state.generation += 1
                state.current = nil
                state.waiting = []
                self.release(state: &state, effects: &effects, wakeWaiters: wakeWaiters)
            }
            try? self.perform(effects)
            done.signal()
        }
        _ = done.wait(timeout: .now() + limit)
    }

    func terminalResized() {
        redrawWhole()
    }

    func giveBackForStop(within limit: DispatchTimeInterval) {
        let done = DispatchSemaphore(value: 0)
        queue.async {
            var effects = Effects()
            self.state.withLock { state in
                // The banners and their timers stay; only the rows go, until SIGCONT.
                guard let device = state.device, let ledger = state.ledger, state.current != nil else { return }
                effects.write = (device, ledger, [], false)
            }
            try? self.perform(effects)
            done.signal()
        }
        _ = done.wait(timeout: .now() + limit)
    }

    func terminalContinued() {
        redrawWhole()
    }

    /// Lays the banner out again and sets the scroll region, whatever happened to the
    /// terminal meanwhile; draws it on top again if another process took its rows.
    private func redrawWhole() {
        queue.async {
            var effects = Effects()
            self.state.withLock { state in
                guard state.current != nil else { return }
                self.redraw(state: &state, effects: &effects, resetRegion: true)
            }
            try? self.perform(effects)
        }
    }

    // MARK: On the queue

    private func presentNow(_ content: BannerContent, timeout: Duration?, intent: SinkDelivery.Intent) throws -> SinkReceipt {
        var effects = Effects()
        var notes: [String] = []
        var disposition = SinkReceipt.Disposition.delivered
        let target: SinkHandle? = switch intent {
        case .show: nil
        case .replace(let handle), .updateDuplicateCount(let handle, _): handle
        }
        let handle = try state.withLock { state throws -> SinkHandle in
            guard !state.ended else { throw TerminalDevice.Unusable(description: "the terminal was given back as the process ends") }
            if state.device == nil {
                let device = try TerminalDevice.open(settings.devicePath)
                state.device = device
                state.ledger = BannerLedger(device: device, slot: slot)
                TerminalRestoration.register(self)
            }
            if let target, state.current?.handle == target {
                // Same replace key: redraw in place and start the timer again.
                state.current = Banner(handle: target, content: content, timeout: timeout)
                redraw(state: &state, effects: &effects)
                startTimer(timeout, state: &state, effects: &effects)
                return target
            }
            if let target, let index = state.waiting.firstIndex(where: { $0.handle == target }) {
                state.waiting[index] = Banner(handle: target, content: content, timeout: timeout)
                disposition = .queued("waiting behind \(index + 1) banner(s)")
                return target
            }
            if target != nil {
                notes.append("the banner it replaces is no longer shown here (dismissed, or shown by another process); shown as a new banner")
            }
            state.serial += 1
            let banner = Banner(handle: SinkHandle(handlePrefix + String(state.serial)), content: content, timeout: timeout)
            if let current = state.current {
                if settings.policy == .queue {
                    state.waiting.append(banner)
                    disposition = .queued("waiting behind \(state.waiting.count) banner(s)")
                    redraw(state: &state, effects: &effects)  // the "+n waiting" hint
                    return banner.handle
                }
                // One at a time: the newest replaces what shows, in place.
                effects.interactions.append(SinkInteraction(handle: current.handle, interaction: .dismissed(.closed)))
            }
            state.current = banner
            effects.interactions.append(SinkInteraction(handle: banner.handle, interaction: .shown))
            redraw(state: &state, effects: &effects)
            startTimer(timeout, state: &state, effects: &effects)
            return banner.handle
        }
        do {
            try perform(effects)
        } catch {
            // The terminal went away under us: forget the banners rather than draw on nothing.
            restoreAfterFailure()
            throw error
        }
        if !content.actionLabels.isEmpty {
            notes.append("actions shown as hints; a terminal banner cannot take a choice")
        }
        return SinkReceipt(handle: handle, disposition: disposition, notes: notes)
    }

    private func expire(generation: Int) {
        var effects = Effects()
        state.withLock { state in
            guard state.generation == generation, state.current != nil else { return }
            dismissCurrent(reason: .expired, state: &state, effects: &effects)
        }
        try? perform(effects)
    }

    private func restoreAfterFailure() {
        var effects = Effects()
        state.withLock { state in
            if let current = state.current {
                effects.interactions.append(SinkInteraction(handle: current.handle, interaction: .dismissed(.undefined)))
            }
            state.current = nil
            state.waiting = []
            state.generation += 1
            if let device = state.device { effects.close = device }
            state.device = nil
            state.ledger = nil
            effects.unregister = true
            effects.idleWaiters = Array(state.idleWaiters.values)
            state.idleWaiters = [:]
        }
        try? perform(effects)
    }

    // MARK: Decisions, under the lock

    private func dismissCurrent(reason: DismissReason, state: inout State, effects: inout Effects) {
        if let current = state.current {
            effects.interactions.append(SinkInteraction(handle: current.handle, interaction: .dismissed(reason)))
        }
        state.current = nil
        state.generation += 1
        if !state.waiting.isEmpty {
            let next = state.waiting.removeFirst()
            state.current = next
            effects.interactions.append(SinkInteraction(handle: next.handle, interaction: .shown))
            redraw(state: &state, effects: &effects)
            startTimer(next.timeout, state: &state, effects: &effects)
        } else {
            release(state: &state, effects: &effects)
        }
    }

    /// Gives every row back and closes the device; wakes whoever waits in ``finish()``
    /// unless the process is about to die of a signal (a woken waiter would let it exit
    /// normally first, hiding how it ended).
    private func release(state: inout State, effects: inout Effects, wakeWaiters: Bool = true) {
        if let device = state.device {
            if let ledger = state.ledger { effects.write = (device, ledger, [], false) }
            effects.close = device
        }
        state.device = nil
        state.ledger = nil
        effects.unregister = true
        guard wakeWaiters else { return }
        effects.idleWaiters = Array(state.idleWaiters.values)
        state.idleWaiters = [:]
    }

    private func redraw(state: inout State, effects: inout Effects, resetRegion: Bool = false) {
        guard let device = state.device, let ledger = state.ledger, let banner = state.current else { return }
        let (rows, columns) = device.size()
        let compact = BannerRenderer.isCompact(columns: columns, rows: rows, mode: settings.compact)
        let lines = BannerRenderer.lines(banner.content, columns: columns, compact: compact, waiting: state.waiting.count)
            .prefix(max(0, rows - 1))
        let painted = lines.enumerated().map { index, line in
            BannerRenderer.paint(line, columns: columns, tint: banner.content.tint, palette: settings.palette, bold: index == 0)
        }
        effects.write = (device, ledger, Array(painted), resetRegion)
    }

    private func startTimer(_ timeout: Duration?, state: inout State, effects: inout Effects) {
        state.generation += 1
        if let timeout { effects.timer = (state.generation, timeout) }
    }

    // MARK: Effects, outside the lock

    private func perform(_ effects: Effects) throws {
        defer {
            if let device = effects.close { device.close() }
            if effects.unregister { TerminalRestoration.unregister(self) }
            for waiter in effects.idleWaiters { waiter.resume() }
        }
        if let (generation, after) = effects.timer {
            // Expired on the queue, never on the timer's thread: redrawing may block on the terminal.
            DeadlineTimer.shared.schedule(at: .now + after) { self.queue.async { self.expire(generation: generation) } }
        }
        if !effects.interactions.isEmpty {
            let listeners = state.withLock { Array($0.listeners.values) }
            for interaction in effects.interactions {
                for listener in listeners { listener.yield(interaction) }
            }
        }
        if let write = effects.write { try write.ledger.show(write.lines, on: write.device, resetRegion: write.resetRegion) }
    }

    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result(catching: work)) }
        }
    }
}
