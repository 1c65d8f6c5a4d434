import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteExec
import NotifyRouteJournal
import NotifyRouteNetworkSchema
import NotifyRouteTerminal

/// The sink kinds this program knows, by an explicit list (no discovery): the one
/// place where plugins are wired in.
package enum BuiltinPlugins {
    /// Where the network sinks are: set by ``NotifyRouteMain`` before anything reads it,
    /// while the process has one thread; `nil` in tests that call the commands in-process.
    nonisolated(unsafe) static var network: NetworkSinks?
    /// The daemon's server, where it is linked; set there as ``network`` is.
    nonisolated(unsafe) static var daemon: DaemonServer?

    package static let all: [SinkPlugin] = [
        TerminalSink.plugin,
        DesktopSink.plugin,
        JournalSink.plugin,
        ExecSink.plugin,
    ] + networkPlugins

    /// The linked plugins, or, in `notify-route`, the same kinds and options (checked as there)
    /// with a sink that only says where they are: no event reaches one without ``NetworkHandOff`` first.
    private static var networkPlugins: [SinkPlugin] {
        if case .linked(let plugins)? = network { return plugins }
        return [NetworkSinkSchema.alertmanager { options, _ in try NetworkHandOff.standIn(options) },
                NetworkSinkSchema.webhook { options, _ in try NetworkHandOff.standIn(options) }]
    }

    /// The list above has no duplicate kind, so making its registry cannot fail.
    package static var registry: SinkRegistry {
        try! SinkRegistry(all)
    }
}

/// Whether this executable links the network sinks (`kind: alertmanager`, `kind: webhook`).
public enum NetworkSinks: Sendable {
    /// `notify-route-network`: the sinks themselves.
    case linked([SinkPlugin])
    /// `notify-route`: a command that needs them is run by this executable, which sits in the
    /// same directory (see ``NetworkHandOff``).
    case handOff(executable: String)
}
