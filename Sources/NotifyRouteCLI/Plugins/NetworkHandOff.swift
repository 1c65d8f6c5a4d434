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
/// Only a config that declares a sink of a network kind can need it. `send` (and
/// `notify-send`) then decide per event (``runIfReached(_:only:router:releasingPause:)``):
/// the config is loaded with stand-ins for the network sinks (their options checked as the
/// network executable checks them), the rules and routes stages pick the event's targets,
/// and only an event that can reach a network sink (a target, a failover of one, `--sink`;
/// or whatever a pause that ended releases) is handed on, before the state is opened. The
/// body it read from standard input goes along as the new program's standard input.
/// Every other command whose config declares one is handed on when the config is parsed
/// (``runIfNeeded(kinds:)``): `close` (which sinks hold the key is in the state database),
/// `ingest` and `run` (they cannot start over once they have read a line or run the
/// command), `explain`, `config`, `sinks`. `serve` (a reload may add one), `status` and
/// `explain --journal-record` are handed on always: they need the daemon's module. A
/// command that a daemon has already served in part (the daemon routed, then this process
/// routes the terminal's share) cannot start over; its network sinks there are reported
/// unavailable, the daemon having had them.
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

    /// Execs the network executable when `kinds` (a config's sink kinds) name a network one:
    /// for the commands that do not decide per event.
    static func runIfNeeded(kinds: [String]) {
        guard kinds.contains(where: NetworkSinkSchema.kinds.contains) else { return }
        runIfAllowed()
    }

    /// Whether a command on a config with these sink kinds may still be handed on.
    static func mayRun(kinds: [String]) -> Bool {
        guard case .handOff? = BuiltinPlugins.network, !daemonTookPart.load(ordering: .relaxed) else { return false }
        return kinds.contains(where: NetworkSinkSchema.kinds.contains)
    }

    /// Execs the network executable when a `send` of `event` could ask a sink of a network
    /// kind (``NotificationRouter/sinkKindsReached(by:only:)``), or, `releasingPause`, when a
    /// pause that ended may release held events first. Called once the event is made and
    /// before anything is delivered or the state is opened.
    static func runIfReached(_ event: NotificationEvent, only sinkNames: [String]?, router: NotificationRouter, releasingPause: Bool) {
        guard case .handOff? = BuiltinPlugins.network, !daemonTookPart.load(ordering: .relaxed),
              router.configuration.sinks.contains(where: { NetworkSinkSchema.kinds.contains($0.kind) })
        else { return }
        guard releasingPause && router.mayReleaseHeldEvents
                || !router.sinkKindsReached(by: event, only: sinkNames).isDisjoint(with: NetworkSinkSchema.kinds)
        else {
            Console.release()
            return
        }
        if let input = StandardInput.consumed { putBack(input) }
        runIfAllowed()
    }

    /// Makes `bytes`, which this process read from standard input, the standard input the
    /// next program reads from its start: an anonymous file (memfd) in its place.
    private static func putBack(_ bytes: [UInt8]) {
        typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
        // Glibc's memfd_create is not in Swift's Glibc module.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "memfd_create") else {
            fail("memfd_create: \(String(cString: dlerror()))")
        }
        let file = unsafeBitCast(symbol, to: MemfdCreate.self)("notify-route-stdin", 0)
        guard file >= 0 else { fail("memfd_create: \(String(cString: strerror(errno)))") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(file, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { fail("writing standard input aside: \(String(cString: strerror(errno)))") }
            written += count
        }
        guard lseek(file, 0, SEEK_SET) == 0, dup2(file, STDIN_FILENO) == STDIN_FILENO else {
            fail("standard input: \(String(cString: strerror(errno)))")
        }
        close(file)
    }

    private static func fail(_ reason: String) -> Never {
        Console.error("this event needs the network sinks (alertmanager, webhook), but its standard input cannot be handed on: \(reason)")
        exit(ExitStatus.noSinkAvailable.rawValue)
    }

    /// Execs the network executable unless this is it, or it is too late to start over.
    static func runIfAllowed() {
        guard case .handOff(let name)? = BuiltinPlugins.network, !daemonTookPart.load(ordering: .relaxed) else { return }
        let path = Self.path(of: name)
        Console.dropHeld()
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

    var capabilities: SinkCapabilities { SinkCapabilities(worthRetrying: true) }
    var hasPendingWork: Bool { false }

    static let reason = "this sink's kind is in notify-route-network, which did not run this command (a daemon served it in part)"

    func availability() async -> SinkAvailability { .unavailable(reason: Self.reason) }

    func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        throw SinkError(.unavailable, Self.reason)
    }
}
