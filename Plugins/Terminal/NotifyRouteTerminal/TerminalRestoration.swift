import Glibc
import Dispatch
import Synchronization

/// Something holding rows of a terminal that must be given back when the process ends.
protocol TerminalClaim: AnyObject, Sendable {
    /// Gives the terminal back now (scroll region, rows, cursor); waits at most `limit`
    /// for a write already under way, so a wedged terminal cannot hold the process.
    /// `wakeWaiters` is false when the process is about to die of a signal.
    func restoreForExit(within limit: DispatchTimeInterval, wakeWaiters: Bool)
    /// The terminal changed size: lay out again.
    func terminalResized()
}

/// Process-wide: gives the terminal back on normal exit, SIGINT, SIGTERM and SIGHUP, and
/// tells banners about SIGWINCH. Installed lazily when the first banner shows, so a
/// process that never shows one keeps its signal dispositions untouched.
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
                var current = sigaction()
                guard sigaction(signalNumber, nil, &current) == 0 else { continue }
                let handler = current.__sigaction_handler.sa_handler
                let isDefault = handler == nil  // SIG_DFL is the null handler
                let isIgnored = handler.map { unsafeBitCast($0, to: Int.self) == 1 } ?? false  // SIG_IGN
                guard isDefault || isIgnored else { continue }
                if isDefault { signal(signalNumber, SIG_IGN) }
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                source.setEventHandler {
                    restoreAll(wakeWaiters: !isDefault)
                    if isDefault { reraise(signalNumber) }
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
        }
    }

    /// Dies of `signalNumber` the way the process would have without us.
    private static func reraise(_ signalNumber: Int32) {
        signal(signalNumber, SIG_DFL)
        // Dispatch's threads block signals; unblock it here so raise() delivers it now.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signalNumber)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(signalNumber)
    }
}
