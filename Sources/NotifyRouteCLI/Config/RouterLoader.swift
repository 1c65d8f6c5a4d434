import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import NotifyRouteExec
import NotifyRouteClient
import NotifyRouteJournal
import Synchronization
import Glibc
import Dispatch

/// Finds the config, loads it and builds the router; config problems become exit 78
/// with file:line:column on stderr, before anything is sent.
package enum RouterLoader {
    static var embeddedConfig: String {
        String(decoding: PackageResources.notify_route_yaml, as: UTF8.self)
    }

    /// - Parameter daemon: `serve` logs what it does (refusals, reloads) at info; a
    ///   one-shot command says only what went wrong, itself.
    package static func bootstrapLogging(verbose: Bool, daemon: Bool = false) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler(label: label, stream: ConsoleErrorStream())
            handler.logLevel = verbose ? .debug : daemon ? .info : .critical
            return handler
        }
    }

    static func source(_ options: GlobalOptions) throws -> ConfigSource {
        try source(config: options.config)
    }

    package static func source(config: String?) throws -> ConfigSource {
        do {
            return try ConfigSource.locate(
                explicitPath: config, environment: ProcessEnvironment.values(["NOTIFY_ROUTE_CONFIG", "XDG_CONFIG_HOME", "HOME"]),
                embedded: embeddedConfig)
        } catch {
            throw configFailure(error)
        }
    }

    /// - Parameter sharedState: keep dedup windows and replace handles in the state file,
    ///   so they hold across calls (`send`, `close`, `explain`); commands that only read
    ///   the config leave the state directory alone.
    /// - Parameter streaming: many events follow (`ingest`): the history stays open between them.
    static func load(_ options: GlobalOptions, sharedState: Bool = false, streaming: Bool = false) throws -> (NotificationRouter, ConfigSource) {
        try load(config: options.config, verbose: options.verbose, sharedState: sharedState, streaming: streaming)
    }

    /// ``load(_:sharedState:)`` from plain values (``FastSendParser`` has no ``GlobalOptions``).
    /// - Parameter perEvent: the caller hands a network sink's event on itself
    ///   (``NetworkHandOff/runIfReached(_:only:router:releasingPause:)``); otherwise a config
    ///   that declares one is handed on here.
    static func load(
        config: String?, verbose: Bool, sharedState: Bool = false, store: (any RouterStateStore)? = nil,
        plugins: SinkRegistry = BuiltinPlugins.registry, streaming: Bool = false, perEvent: Bool = false
    ) throws -> (NotificationRouter, ConfigSource) {
        bootstrapLogging(verbose: verbose)
        ignoreSIGPIPE()
        let source = try source(config: config)
        do {
            let node = try ConfigNode.parse(yaml: source.text, file: source.origin)
            // Before the state is opened: the network executable must start from scratch.
            let kinds = PluginDiscovery.kinds(in: node)
            if !perEvent {
                NetworkHandOff.runIfNeeded(kinds: kinds)
            } else if NetworkHandOff.mayRun(kinds: kinds) {
                // Until the event decides: the network executable would repeat what the state's set-up says.
                Console.hold()
            }
            let store = store ?? (sharedState ? stateStore() : InMemoryStateStore())
            let history = sharedState ? memory(keepsOpen: streaming) : nil
            return (try makeRouter(node, source: source, store: store, plugins: plugins, memory: history), source)
        } catch {
            throw configFailure(error)
        }
    }

    /// The router for `source`, or what is wrong with the config (file:line:col).
    package static func makeRouter(
        from source: ConfigSource, store: any RouterStateStore, plugins: SinkRegistry = BuiltinPlugins.registry,
        memory: RouterMemory? = nil
    ) throws(ConfigError) -> NotificationRouter {
        try makeRouter(try ConfigNode.parse(yaml: source.text, file: source.origin), source: source, store: store, plugins: plugins, memory: memory)
    }

    static func makeRouter(
        _ node: ConfigNode, source: ConfigSource, store: any RouterStateStore, plugins: SinkRegistry, memory: RouterMemory?
    ) throws(ConfigError) -> NotificationRouter {
        let (registry, discovered) = PluginDiscovery.registry(for: node, adding: plugins, path: ProcessEnvironment.value("PATH"))
        let configuration = try configuration(node, origin: source.origin, registry: registry)
        try checkTrust(configuration, source: source, discovered: discovered)
        let router = try NotificationRouter(configuration: configuration, registry: registry, store: store, clock: clock(), memory: memory)
        router.recordFailures(with: failureLog)
        return router
    }

    /// The catalogued journal record of a failing sink (``JournalCatalog/sinkFailed``), once
    /// per sink and five minutes across the user's notify-route processes, so that
    /// `journalctl -x` explains a sink that fails.
    static let failureLog = SinkFailureLog(directory: try? stateDirectory()) { report in
        await failureJournal.recordFailures(in: report, deadline: .now + .milliseconds(200))
    }

    private static let failureJournal = JournalSink(identifier: "notify-route", name: "failures")

    /// The config file `source` came from, read again (`serve`'s reload); the embedded
    /// config is what it was.
    package static func reread(_ source: ConfigSource) throws(ConfigError) -> ConfigSource {
        source.origin == ConfigSource.embeddedOrigin ? source : try ConfigSource.read(path: source.origin)
    }

    static func configuration(_ node: ConfigNode, origin: String, registry: SinkRegistry) throws(ConfigError) -> RouterConfiguration {
        do {
            return try RouterConfiguration.load(node: node, origin: origin, registry: registry)
        } catch {
            var error = error
            if error.message.hasPrefix("unknown sink kind") {
                error.message += "; an external plugin would be an executable named notify-route-sink-KIND on PATH"
            }
            throw error
        }
    }

    /// External programs are run only from a config only its owner can change (``ConfigTrust``).
    static func checkTrust(_ configuration: RouterConfiguration, source: ConfigSource, discovered: Set<String>) throws(ConfigError) {
        guard source.origin != ConfigSource.embeddedOrigin else { return }
        for sink in configuration.sinks where sink.kind == ExecSink.plugin.kind || discovered.contains(sink.kind) {
            let program = sink.kind == ExecSink.plugin.kind
                ? ((try? sink.options.stringList("command"))??.first ?? "?")
                : ExecSink.executableName(forKind: sink.kind)
            try ConfigTrust.check(path: source.origin, externalSink: sink, program: program)
        }
    }

    /// The state database under $XDG_RUNTIME_DIR/notify-route (else in the history's directory).
    /// If it cannot be used, say why and keep delivering: losing dedup is better than
    /// losing the event.
    package static func stateStore() -> any RouterStateStore {
        databaseStateStore() ?? InMemoryStateStore()
    }

    /// The state database in the state directory; `nil`, said on stderr, when that directory
    /// is refused: then dedup and replace hold within this process only.
    package static func databaseStateStore() -> (any DaemonStateStore)? {
        do {
            let directory = try stateDirectory(warning: { Console.error("state: \($0)") })
            return SQLiteStateStore(directory: directory, notice: { Console.error("state: \($0)") })
        } catch {
            Console.error("state: \(error.description); dedup and replace hold within this call only")
            return nil
        }
    }

    /// The state directory, checked once per process (the daemon's socket is there too): the
    /// environment does not change within a command, and the directories above it, once
    /// found safe, are ones no other user can change. Its warnings go to each caller.
    static func stateDirectory(warning: (String) -> Void = { _ in }) throws(StateDirectory.Refused) -> String {
        let resolved = resolvedStateDirectory.withLock { resolved in
            if let resolved { return resolved }
            var warnings: [String] = []
            let result = Result { () throws(StateDirectory.Refused) in
                try StateDirectory.resolve(environment: ProcessEnvironment.values(StateDirectory.environmentNames), warning: { warnings.append($0) })
            }
            resolved = (result, warnings)
            return (result, warnings)
        }
        resolved.warnings.forEach(warning)
        return try resolved.result.get()
    }

    private static let resolvedStateDirectory = Mutex<(result: Result<String, StateDirectory.Refused>, warnings: [String])?>(nil)

    /// The daemon's socket, in the state directory checked once per process unless named.
    static func daemonSocket(explicit: String?) throws(StateDirectory.Refused) -> String {
        try DaemonClient.socketPath(explicit: explicit, stateDirectory: { () throws(StateDirectory.Refused) in try stateDirectory() })
    }

    /// The history, silences and pause under $XDG_STATE_HOME/notify-route. If they cannot
    /// be used, say why and keep delivering.
    package static func memory(keepsOpen: Bool) -> RouterMemory? {
        do {
            return RouterMemory(directory: try RouterMemory.resolveDirectory(), keepsOpen: keepsOpen, notice: { Console.error("history: \($0)") })
        } catch {
            Console.error("history: \(error.description); this event is not recorded")
            return nil
        }
    }

    /// Test-only: `NOTIFY_ROUTE_TEST_NOW=SECONDS` (since 1970) fixes the router's clock, so
    /// end-to-end tests can step through dedup windows without sleeping.
    static func clock() -> any RouterClock {
        guard let text = ProcessEnvironment.value("NOTIFY_ROUTE_TEST_NOW"), let seconds = Double(text) else {
            return SystemClock()
        }
        return ManualClock(Date(timeIntervalSince1970: seconds))
    }

    static func configFailure(_ error: ConfigError) -> ExitCode {
        Console.error(error.description)
        return ExitStatus.configError
    }

    /// A closed pipe on stderr must be a reported failure, not a silent death by SIGPIPE.
    package static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
