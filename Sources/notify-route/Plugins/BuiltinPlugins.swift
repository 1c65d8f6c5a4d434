import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteExec
import NotifyRouteJournal
import NotifyRouteNetwork
import NotifyRouteTerminal

/// The sink kinds this program knows, by an explicit list (no discovery): the one
/// place where plugins are wired in.
enum BuiltinPlugins {
    static let all: [SinkPlugin] = [
        TerminalSink.plugin,
        DesktopSink.plugin,
        JournalSink.plugin,
        ExecSink.plugin,
        AlertmanagerSink.plugin, WebhookSink.plugin,
    ]

    /// The list above has no duplicate kind, so making its registry cannot fail.
    static var registry: SinkRegistry {
        try! SinkRegistry(all)
    }
}
