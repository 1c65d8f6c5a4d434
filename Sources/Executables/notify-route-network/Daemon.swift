import ArgumentParser
import Glibc
import Logging
import NotifyRoute
import NotifyRouteCLI
import NotifyRouteClient
import NotifyRouteDaemon
import NotifyRouteService
import NotifyRouteTerminal
import ServiceLifecycle
import UnixSignals

extension DaemonServer {
    /// What of `NotifyRouteDaemon` the commands use: `serve` (the router host, its socket
    /// server and timers in one `ServiceGroup`), the status without a daemon, and the
    /// sources' reading of a journal record for `explain`.
    static let serve = DaemonServer(run: Daemon.serve, status: RouterHost.sharedStatus(of:)) { line, sources in
        let record: JournalRecord
        do { record = try JournalRecord(json: line) } catch { return .failure(.malformed("\(error)")) }
        do {
            let match = try record.match(sources)
            return .success(SourceRecordMatch(source: match.source, event: match.event))
        } catch {
            return .failure(.refused("\(error)"))
        }
    }
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
        RouterDaemon.raiseOpenFileLimit(to: options.maximumConnections + 256)
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
