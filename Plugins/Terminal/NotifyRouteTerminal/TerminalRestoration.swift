import Glibc
import Dispatch
import Synchronization
import NotifyRoute

/// Something holding rows of a terminal that must be given back when the process ends.
protocol TerminalClaim: AnyObject, Sendable {
    /// Gives the terminal back now (scroll region, rows, cursor); waits at most `limit`
    /// for a write already under way, so a wedged terminal cannot hold the process.
    /// `wakeWaiters` is false when the process is about to die of a signal.
    func restoreForExit(within limit: DispatchTimeInterval, wakeWaiters: Bool)
    /// The terminal changed size: lay out again.
    func terminalResized()
    /// The process is about to stop (SIGTSTP): give the rows back, keep the banners;
    /// waits at most `limit`, as ``restoreForExit(within:wakeWaiters:)`` does.
    func giveBackForStop(within limit: DispatchTimeInterval)
    /// The process continues (SIGCONT): draw again, repairing the scroll region.
    func terminalContinued()
}

/// Process-wide: gives the terminal back on normal exit, SIGINT, SIGTERM and SIGHUP, and
/// tells banners about SIGWINCH. Installed lazily when the first banner shows, so a
/// process that never shows one keeps its signal dispositions untouched.
///
/// Job control: on SIGTSTP (Ctrl-Z) the rows are given back before the process stops,
/// so the shell's prompt lands on a whole screen; on SIGCONT (`fg`, or after a SIGSTOP
/// that could not be caught) the banners are drawn again and the scroll region set.
///
/// A signal whose disposition is still the default is taken over (Dispatch needs it
/// ignored to deliver it to a source): the terminal is restored, then the signal is
/// raised again with its default disposition, so the process dies of it as it would
/// have, and a shell sees why. A signal the host already ignores or handles through
/// Dispatch (as swift-service-lifecycle does) gets a source that only restores the
/// terminal and leaves the decision to the host; a signal with a C handler of the
/// host's own is left alone.
enum TerminalRestoration {
    private struct Entry: Sendable {
        weak var claim: (any TerminalClaim)?
    }

    private struct Registry: Sendable {
        var claims: [ObjectIdentifier: Entry] = [:]
        var installed = false
    }

    private static let registry = Mutex(Registry())
    /// The signal sources live as long as the process.
    private static let sources = Mutex<[any DispatchSourceSignal]>([])
    private static let queue = DispatchQueue(label: "notify-route.terminal.signals")
    static let restoreWaitLimit = DispatchTimeInterval.milliseconds(500)

    static func register(_ claim: any TerminalClaim) {
        let install = registry.withLock { registry in
            registry.claims[ObjectIdentifier(claim)] = Entry(claim: claim)
            defer { registry.installed = true }
            return !registry.installed
        }
        if install { installHandlers() }
    }

    static func unregister(_ claim: any TerminalClaim) {
        _ = registry.withLock { $0.claims.removeValue(forKey: ObjectIdentifier(claim)) }
    }

    private static var liveClaims: [any TerminalClaim] {
        registry.withLock { $0.claims.values.compactMap(\.claim) }
    }

    static func restoreAll(wakeWaiters: Bool = true) {
        for claim in liveClaims { claim.restoreForExit(within: restoreWaitLimit, wakeWaiters: wakeWaiters) }
    }

    private static func installHandlers() {
        atexit { TerminalRestoration.restoreAll() }
        // Made inside the lock that keeps them, so the sources never cross an isolation boundary.
        sources.withLock { sources in
            for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
                let current = disposition(signalNumber)
                guard current != .handled else { continue }
                let isDefault = current == .standard
                if isDefault { signal(signalNumber, SIG_IGN) }
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                source.setEventHandler {
                    restoreAll(wakeWaiters: !isDefault)
                    if isDefault { Signals.reraise(signalNumber) }
                }
                source.resume()
                sources.append(source)
            }
            // SIGWINCH's default is to ignore it, so listening changes nothing for the host.
            let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: queue)
            resize.setEventHandler {
                for claim in liveClaims { claim.terminalResized() }
            }
            resize.resume()
            sources.append(resize)
            // SIGTSTP only while its default stops the process: a host that ignores or
            // handles it does not stop, so its banners stay.
            if disposition(SIGTSTP) == .standard {
                signal(SIGTSTP, SIG_IGN)
                let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: queue)
                stop.setEventHandler {
                    for claim in liveClaims { claim.giveBackForStop(within: restoreWaitLimit) }
                    stopNow()
                    // Continued (or never stopped: an orphaned process group ignores it).
                    for claim in liveClaims { claim.terminalContinued() }
                }
                stop.resume()
                sources.append(stop)
            }
            // A stop always ends with SIGCONT, whatever its disposition: listening to it
            // changes nothing for the host unless it has a handler of its own.
            if disposition(SIGCONT) != .handled {
                signal(SIGCONT, SIG_IGN)
                let resume = DispatchSource.makeSignalSource(signal: SIGCONT, queue: queue)
                resume.setEventHandler {
                    for claim in liveClaims { claim.terminalContinued() }
                }
                resume.resume()
                sources.append(resume)
            }
        }
    }

    private enum Disposition { case standard, ignored, handled }

    private static func disposition(_ signalNumber: Int32) -> Disposition {
        var current = sigaction()
        guard sigaction(signalNumber, nil, &current) == 0 else { return .handled }
        guard let handler = current.__sigaction_handler.sa_handler else { return .standard }  // SIG_DFL is the null handler
        return unsafeBitCast(handler, to: Int.self) == 1 ? .ignored : .handled  // SIG_IGN
    }

    /// Stops the process as SIGTSTP's default would, and returns once it continues.
    /// Dispatch has its own handler in place by now: put it back afterwards.
    private static func stopNow() {
        var standard = sigaction()
        standard.__sigaction_handler.sa_handler = nil  // SIG_DFL
        var saved = sigaction()
        sigaction(SIGTSTP, &standard, &saved)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTSTP)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(SIGTSTP)
        pthread_sigmask(SIG_BLOCK, &set, nil)
        sigaction(SIGTSTP, &saved, nil)
    }
}
