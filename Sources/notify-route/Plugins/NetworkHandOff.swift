import ArgumentParser
import Glibc
import NotifyRoute
import NotifyRouteNetworkSchema
import Synchronization

/// How `notify-route`, which links no network code, runs a command that needs it: it
/// replaces itself (execv) with `notify-route-network` from its own directory, with the
/// same arguments (argv[0] too, for the notify-send link), environment, descriptors and
/// signal mask, before it has done anything anyone could see, so the command runs as if
/// that had been the program started.
///
/// A command needs it when it loads a config that declares a sink of a network kind (the
/// sink may be chosen by any route, failover or `--sink`, so the declaration decides), and
/// `serve` always (a reload may add one). A command that a daemon has already served in part
/// (the daemon routed, then this process routes the terminal's share) cannot start over; its
/// network sinks there are reported unavailable, the daemon having had them.
enum NetworkHandOff {
    /// The signal mask the process started with: a pool thread that execs has most signals
    /// blocked, and the new program would inherit that.
    nonisolated(unsafe) private static var startMask = sigset_t()

    /// Set when a daemon took part of the command's work: from then on, starting over would do it twice.
    private static let daemonTookPart = Atomic<Bool>(false)

    static func daemonTakesPart() {
        daemonTookPart.store(true, ordering: .relaxed)
    }

    static func start(_ network: NetworkSinks) {
        BuiltinPlugins.network = network
        if case .handOff = network { pthread_sigmask(SIG_SETMASK, nil, &startMask) }
    }

    /// Execs the network executable when `kinds` (a config's sink kinds) name a network one.
    static func runIfNeeded(kinds: [String]) {
        guard kinds.contains(where: NetworkSinkSchema.kinds.contains) else { return }
        runIfAllowed()
    }

    /// Execs the network executable unless this is it, or it is too late to start over.
    static func runIfAllowed() {
        guard case .handOff(let name)? = BuiltinPlugins.network, !daemonTookPart.load(ordering: .relaxed) else { return }
        let path = Self.path(of: name)
        pthread_sigmask(SIG_SETMASK, &startMask, nil)
        execv(path, CommandLine.unsafeArgv)
        let reason = String(cString: strerror(errno))
        Console.error("notify-route: this command needs the network sinks (alertmanager, webhook), which are in \(path): \(reason); install it beside notify-route (make install)")
        exit(ExitStatus.noSinkAvailable.rawValue)
    }

    /// `name` in the directory of the running executable (/proc/self/exe: symlinks resolved,
    /// as for the notify-send link).
    static func path(of name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return name }
        let executable = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return name }
        return String(executable[...slash]) + name
    }

    /// The sink of a network kind where the hand-off did not happen: in-process tests, and a
    /// command a daemon served in part.
    @Sendable static func standIn(_ options: SinkOptions) throws -> any NotificationSink {
        NetworkStandInSink(name: options.sinkName)
    }
}

/// Says that its sink's kind is not in this executable; delivers nothing.
final class NetworkStandInSink: NotificationSink {
    let name: String

    init(name: String) { self.name = name }

    var capabilities: SinkCapabilities { SinkCapabilities() }
    var hasPendingWork: Bool { false }

    static let reason = "this sink's kind is in notify-route-network, which did not run this command (a daemon served it in part)"

    func availability() async -> SinkAvailability { .unavailable(reason: Self.reason) }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        throw SinkError(.unavailable, Self.reason)
    }
}
