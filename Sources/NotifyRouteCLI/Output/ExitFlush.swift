import Dispatch
import Glibc
import NotifyRoute
import Synchronization

/// How a command ends without losing a record it reported as queued, with no unbounded wait.
///
/// - At the end (``finish(_:noWait:)``): the sinks that keep a queue (``NotificationSink/queue``,
///   the journal's) get at most ``queueWait`` to write what they queued, and stderr says so
///   while they wait; whatever their destination has not taken by then is given up and
///   reported, with its count. `--no-wait` gives it up at once, and reports it the same way.
/// - On SIGTERM or SIGINT (``install()``): the event being delivered is finished and its
///   report printed, the same bounded wait follows, then the process dies of the signal as
///   it would have (a second signal stops the wait at once). Nothing is read after the signal.
///
/// Commands mark the delivery of each event with ``beginEvent()`` and ``endEvent()``, so a
/// signal never cuts one in half: a report that says "queued" is always printed before
/// the count of what was given up.
final class ExitFlush: Sendable {
    private let queues: [(name: String, sink: any NotificationSink)]
    /// How long queued deliveries may keep a process that exits: a stopped journald must not
    /// hold it long, and one that reads at all takes thousands of records a second.
    static let queueWait = Duration.seconds(5)

    private struct State {
        var busy = false
        var stopping = false
        var reported = false
        var idle: CheckedContinuation<Void, Never>?
        /// The task that ends the process after a signal, cancelled by a second one.
        var stopTask: Task<Void, Never>?
        var sources: [any DispatchSourceSignal] = []
    }

    private let state = Mutex(State())
    private let givenUpBefore: [Int]
    /// Runs once the event under way has finished, before the wait (`ingest`'s batch commit).
    private let settle: @Sendable () -> Void

    init(_ router: NotificationRouter, settle: @escaping @Sendable () -> Void = {}) {
        self.settle = settle
        queues = router.configuration.sinks.compactMap { declaration in
            router.sink(named: declaration.name).flatMap { sink in sink.queue.map { _ in (declaration.name, sink) } }
        }
        givenUpBefore = queues.map { $0.sink.queue?.givenUp ?? 0 }
    }

    // MARK: Events

    /// `false` once a signal asked the command to stop: read and send nothing more.
    func beginEvent() -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.busy = true
            return true
        }
    }

    func endEvent() {
        let idle = state.withLock { state in
            state.busy = false
            defer { state.idle = nil }
            return state.idle
        }
        idle?.resume()
    }

    /// Suspends for good: after a signal the stop task ends the process.
    func parkUntilExit() async -> Never {
        // Never resumed, on purpose: the process ends under it.
        while true { await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in } }
    }

    // MARK: The end

    /// The queues get their bounded time (none with `noWait`), the router's sinks finish (a
    /// banner's timeout), then what the queues could not write is reported.
    /// Returns how many queued records were dropped: events a report called queued that
    /// reached no sink after all.
    @discardableResult
    func finish(_ router: NotificationRouter, noWait: Bool) async -> Int {
        announce(limit: noWait ? nil : Self.queueWait)
        // Side by side, as one wait: a banner's timeout and journald's bounded time overlap.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.drainQueues(within: noWait ? .zero : Self.queueWait) }
            if !noWait { group.addTask { await router.finish(within: .seconds(3_600)) } }
        }
        let dropped = report(noWait ? "--no-wait" : "the \(DurationParser.format(Self.queueWait)) wait ended")
        // A signal came meanwhile: its task ends the process, of that signal.
        if state.withLock({ $0.stopping }) { await parkUntilExit() }
        return dropped
    }

    /// SIGTERM and SIGINT end the command through ``stop(_:)`` (unless they were ignored
    /// when we started), when a sink keeps a queue. Installed before the first event,
    /// so the terminal sink, which installs its own later, leaves the decision to us.
    func install() {
        // Only a queue holds deliveries a report called queued; with none, the signals keep
        // their usual effect (the terminal sink restores the screen first).
        guard queues.contains(where: { ($0.sink.queue?.capacity ?? 0) > 0 }) else { return }
        state.withLock { state in
            for signalNumber in [SIGTERM, SIGINT] {
                // One ignored by whoever started us (a background job's SIGINT) stays ignored.
                var current = sigaction()
                guard sigaction(signalNumber, nil, &current) == 0,
                      current.__sigaction_handler.sa_handler.map({ unsafeBitCast($0, to: Int.self) != 1 }) ?? true
                else { continue }
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler { [self] in received(signalNumber) }
                source.resume()
                state.sources.append(source)
            }
        }
    }

    private func received(_ signalNumber: Int32) {
        let second = state.withLock { state -> Task<Void, Never>? in
            guard !state.stopping else { return state.stopTask }
            state.stopping = true
            state.stopTask = Task { await self.stop(signalNumber) }
            return nil
        }
        second?.cancel()
    }

    private func stop(_ signalNumber: Int32) async {
        // Let the event being delivered finish and print its report first.
        await withCheckedContinuation { continuation in
            let busy = state.withLock { state in
                if state.busy { state.idle = continuation }
                return state.busy
            }
            if !busy { continuation.resume() }
        }
        settle()
        let name = signalNumber == SIGTERM ? "SIGTERM" : "SIGINT"
        announce(limit: Self.queueWait, because: name)
        await drainQueues(within: Self.queueWait)
        report(Task.isCancelled ? "\(name) twice: stopped waiting" : "\(name), and the \(DurationParser.format(Self.queueWait)) wait ended")
        Signals.reraise(signalNumber)
    }

    /// Every queue drained side by side, each within `limit`.
    private func drainQueues(within limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            for (_, sink) in queues { group.addTask { _ = await sink.drainQueue(within: limit) } }
        }
    }

    /// What the process waits for, when something is queued.
    private func announce(limit: Duration?, because reason: String? = nil) {
        guard let limit else { return }
        for (name, sink) in queues {
            guard let queue = sink.queue, queue.queued > 0 else { continue }
            let stalled = queue.stalledFor.map { "; it has not taken one for \(DurationParser.format($0))" } ?? ""
            let prefix = reason.map { "\($0): " } ?? ""
            Console.error("\(prefix)waiting up to \(DurationParser.format(limit)) for \(queue.destination) to take \(queue.queued) record(s) queued by sink \"\(name)\"\(stalled)")
        }
    }

    /// Once: the records each queue gave up since the command started.
    ///
    /// Written under the lock: the end of the command and a signal's stop both report, and
    /// the one that comes second (the signal's, about to re-raise) must not end the process
    /// between the first one's claim and its write.
    /// Reports, once, what each queue gave up; returns the count.
    @discardableResult
    private func report(_ why: String) -> Int {
        state.withLock { state in
            guard !state.reported else { return 0 }
            state.reported = true
            var dropped = 0
            for (index, (name, sink)) in queues.enumerated() {
                guard let queue = sink.queue else { continue }
                let lost = queue.givenUp - givenUpBefore[index]
                guard lost > 0 else { continue }
                dropped += lost
                Console.error("sink \"\(name)\": \(lost) queued record(s) dropped, never taken by \(queue.destination): \(why)")
            }
            return dropped
        }
    }
}
