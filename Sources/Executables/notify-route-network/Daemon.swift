import ArgumentParser
import Glibc
import Logging
import NotifyRoute
import NotifyRouteCLI
import NotifyRouteHost
import NotifyRouteService
import NotifyRouteTerminal
import ServiceLifecycle
import UnixSignals

extension DaemonServer {
    /// The daemon: the router host, its socket server and timers in one `ServiceGroup`.
    static let serve = DaemonServer(run: Daemon.serve)
}

enum Daemon {
    /// `notify-route serve`, once this is the process that runs it.
    static func serve(_ arguments: ServeArguments) async throws {
        RouterLoader.bootstrapLogging(verbose: arguments.verbose, daemon: true)
        RouterLoader.ignoreSIGPIPE()
        let logger = Logger(label: "notify-route.serve")
        DaemonMemory.returnLargeBlocks()
        let batch = BatchScheduling.adopt()
        logger.debug("scheduling", metadata: ["SCHED_BATCH": "\(batch) threads moved"])
        let source = try RouterLoader.source(config: arguments.config)
        let database = RouterLoader.databaseStateStore()
        let store: any RouterStateStore = database ?? InMemoryStateStore()
        let memory = RouterLoader.memory(keepsOpen: true)
        // Accepted deliveries and the sources' positions outlive the process only where the
        // state lives in a database.
        let outbox = database.map { Outbox(store: $0) }
        let host: RouterHost
        do {
            host = try RouterHost(
                load: {
                    let router = try RouterLoader.makeRouter(from: RouterLoader.reread(source), store: store, plugins: BuiltinPlugins.daemonRegistry, memory: memory)
                    router.keepTime()  // the timer below sends what waits for a time (groups)
                    return router
                },
                outbox: outbox)
        } catch {
            Console.error("\(error)")
            throw ExitStatus.configError
        }

        let listener: RouterDaemon.Listener
        var lock: SocketLock?
        if let inherited = Systemd.inheritedSocket() {
            listener = .inherited(inherited)
            // Held too, so that a `serve` started by hand beside it refuses.
            lock = Systemd.socketPath(of: inherited).flatMap { try? SocketLock(socketPath: $0, checkingForDaemon: false) }
        } else {
            let path: String
            do {
                path = try DaemonClient.socketPath(explicit: arguments.socket)
            } catch {
                Console.error("serve: \(error.description)")
                throw ExitStatus.noSinkAvailable
            }
            do {
                lock = try SocketLock(socketPath: path)
            } catch {
                Console.error("serve: \(error.description)")
                throw ExitStatus.noSinkAvailable
            }
            listener = .path(path)
        }

        var options = RouterDaemon.Options()
        if case .path(let path) = listener, let directory = try? StateDirectory.resolve(), path == directory + "/socket" {
            options.ownedDirectory = directory
        }
        options.drainLimit = .seconds(Int64(max(1, (await host.answerWithinMS) / 1000)))
        Self.raiseOpenFileLimit(to: options.maximumConnections + 256)
        let daemon = RouterDaemon(listener: listener, host: host, rendering: .cli, options: options, logger: logger)
        let reloader = ReloadOnHangup(host: host, daemon: daemon, logger: logger)
        let timer = HeldSummaryTimer(router: { host.router }, wakeup: host.summaryWakeup, logger: logger,
                                     delivered: { host.account(for: $0) })
        // The daemon's services: one entry per service that lives as long as it does.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [
                .init(service: daemon),
                .init(service: reloader, successTerminationBehavior: .ignore),
                .init(service: timer, successTerminationBehavior: .ignore),
                .init(service: EscalationTimer(router: { host.router }, logger: logger, delivered: { host.account(for: $0) }),
                      successTerminationBehavior: .ignore),
                .init(service: SourcesService(host: host, store: database, logger: logger), successTerminationBehavior: .ignore),
            ] + (outbox.map { [.init(service: OutboxService(host: host, outbox: $0, logger: logger), successTerminationBehavior: .ignore)] } ?? []),
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        withExtendedLifetime(lock) {}
        throw ExitStatus.delivered
    }

    /// Lets the daemon hold its connection cap plus its own files: systemd starts services
    /// with a soft limit of 1,024 open files (for `select`, which nothing here uses), and
    /// leaves the hard limit for programs to raise it to.
    static func raiseOpenFileLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// SIGHUP reloads the config, as `notify-route reload` does.
struct ReloadOnHangup: Service {
    let host: RouterHost
    let daemon: RouterDaemon
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                Systemd.notify("RELOADING=1")
                let router = try await host.reload()
                await daemon.applySocketAccess()
                logger.info("reloaded on SIGHUP", metadata: ["config": "\(router.configuration.origin)"])
            } catch {
                logger.error("reload on SIGHUP refused; the previous config stays: \(error)")
            }
            Systemd.notify("READY=1")
        }
    }
}

/// One daemon per socket: an exclusive lock beside the socket, held for the daemon's
/// life, so a second `serve` refuses instead of unlinking a live daemon's socket.
final class SocketLock {
    private let fd: Int32

    struct Held: Error, CustomStringConvertible {
        var description: String
    }

    init(socketPath path: String, checkingForDaemon: Bool = true) throws(Held) {
        fd = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Held(description: "cannot open \(path).lock: \(String(cString: strerror(errno)))") }
        let locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        // A daemon may answer without holding this lock (systemd's socket, or one started
        // by an older notify-route): its socket must not be unlinked either.
        let live = checkingForDaemon ? try? DaemonClient(path: path) : nil
        guard locked, live == nil else {
            close(fd)
            let owner = live?.daemonPID.map { " (pid \($0))" } ?? ""
            throw Held(description: "another notify-route serve\(owner) is already listening on \(path); stop it first, or pass --socket")
        }
    }

    deinit { close(fd) }
}

extension RouterDaemon.Rendering {
    /// What the CLI prints for a report, so answers through the daemon read as local ones do.
    static let cli = RouterDaemon.Rendering(
        exitCode: { ExitStatus.forReport($0).rawValue },
        text: { ReportPrinter.text($0) },
        problems: { ReportPrinter.problemLines($0) })
}

extension BuiltinPlugins {
    /// The daemon's plugins: a terminal sink draws on the terminal of the client that sent
    /// the event (``CallerTerminalSink``), never on the daemon's own output.
    static var daemonRegistry: SinkRegistry {
        let terminal = SinkPlugin(kind: TerminalSink.plugin.kind, summary: TerminalSink.plugin.summary, options: TerminalSink.plugin.options) { options in
            try TerminalSink.routingForOthers(options: options)
        }
        return try! SinkRegistry(all.map { $0.kind == terminal.kind ? terminal : $0 })
    }
}
