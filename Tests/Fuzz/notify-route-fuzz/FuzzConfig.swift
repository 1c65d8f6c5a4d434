import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteExec
import NotifyRouteJournal
import NotifyRouteTerminal

/// The built-in plugins, as the CLI registers them, so configs naming any kind get past
/// the kind lookup and their options are parsed too.
let registry = try! SinkRegistry([TerminalSink.plugin, DesktopSink.plugin, JournalSink.plugin, ExecSink.plugin])

/// One input: bytes as a config file. Anything may be refused with a located error;
/// nothing may crash or hang, and a config that loads must load again, to an equal config,
/// from the YAML that `notify-route config show` prints for it.
func fuzzConfig(_ bytes: UnsafeRawBufferPointer) {
    // As ConfigSource.read does: at most 1 MiB of UTF-8 without NUL (the rest is a located error, tested elsewhere).
    guard bytes.count <= ConfigSource.maximumSize, !bytes.contains(0),
          let text = String(validating: bytes, as: UTF8.self) else { return }
    let configuration: RouterConfiguration
    do {
        configuration = try RouterConfiguration.load(yaml: text, file: "fuzz.yaml", registry: registry)
    } catch {
        precondition(!error.description.isEmpty, "an empty config error")
        precondition(error.description.hasPrefix("fuzz.yaml:"), "an error without its location: \(error.description)")
        return
    }
    let shown: String
    let again: RouterConfiguration
    do {
        shown = try configuration.effectiveYAML()
        again = try RouterConfiguration.load(yaml: shown, file: "shown.yaml", registry: registry)
    } catch {
        preconditionFailure("config show printed a config that does not load: \(error)\n--- input:\n\(text)")
    }
    precondition(again == configuration, "config show printed a different config:\n\(shown)\n--- input:\n\(text)")
}
