import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import NotifyRouteClient
import NotifyRouteDaemon
import ServiceLifecycle
import UnixSignals

/// `serve SOCKET`: the daemon (``RouterDaemon``, as `notify-route serve` runs it) with
/// counting sinks instead of real ones, for `daemon-throughput.sh`: what is measured is
/// the daemon (protocol, routing, the state database and the history), not a sink.
/// State and history in `$BENCH_STATE_DIR` (default /dev/shm, a tmpfs as
/// `$XDG_RUNTIME_DIR` is). Runs until SIGTERM.
func benchServe(socket: String) async -> Never {
    let directory = "\(ProcessEnvironment.value("BENCH_STATE_DIR") ?? "/dev/shm")/notify-route-bench-serve-\(getpid())"
    mkdir(directory, 0o700)
    // Made as `serve` makes its history directory (RouterMemory.resolveDirectory):
    // RouterMemory opens history.db only in a directory that exists.
    mkdir(directory + "/history", 0o700)
    let yaml = """
    sinks: { counting: { kind: counting } }
    routes: [ { match: {}, to: [counting] } ]
    """
    DaemonMemory.returnLargeBlocks()  // as notify-route serve does
    BatchScheduling.adopt()
    let notice: @Sendable (String) -> Void = { message in
        _ = "notify-route-bench serve: \(message)\n".withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
    let store = SQLiteStateStore(directory: directory, notice: notice)
    let memory = RouterMemory(directory: directory + "/history", notice: notice)
    var logger = Logger(label: "notify-route-bench.serve")
    logger.logLevel = .warning
    do {
        let host = try RouterHost(load: {
            let registry = try SinkRegistry([countingPlugin])
            let configuration = try RouterConfiguration.load(yaml: yaml, file: "bench.yaml", registry: registry)
            return try NotificationRouter(configuration: configuration, registry: registry, store: store, memory: memory)
        }, outbox: Outbox(store: store))  // as notify-route serve has
        // What the CLI's rendering does at its cheapest: the exit code from the summary.
        let rendering = RouterDaemon.Rendering(
            exitCode: { $0.summary == .delivered ? 0 : 1 }, text: { "\($0.summary.rawValue)" }, problems: { _ in [] })
        let daemon = RouterDaemon(listener: .path(socket), host: host, rendering: rendering, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: daemon)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    } catch {
        fail("serve: \(error)")
    }
    _ = try? FileManager.default.removeItem(atPath: directory)
    exit(0)
}
