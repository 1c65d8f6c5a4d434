import NotifyRoute
import NotifyRouteExec

/// External sink plugins found by name: a sink `kind` that no built-in plugin provides
/// is served by an executable `notify-route-sink-KIND` on `PATH`, when there is one.
///
/// This lives in the CLI, not the core: the core never looks at `PATH`. It reads the
/// kinds from the parsed config before the config is validated, registers an exec
/// plugin for each one found, and leaves unknown kinds to the core's usual error.
enum PluginDiscovery {
    /// `registry` plus a plugin for each unknown kind found on `path`; the kinds added.
    static func registry(for root: ConfigNode, adding registry: SinkRegistry, path: String?) -> (SinkRegistry, Set<String>) {
        var registry = registry
        var discovered: Set<String> = []
        for kind in kinds(in: root) where registry.plugin(forKind: kind) == nil && isPluginName(kind) {
            guard let executable = ExecutableLookup.find(ExecSink.executableName(forKind: kind), path: path) else { continue }
            // Cannot be a duplicate: the kind was checked to be unknown just above.
            try? registry.register(ExecSink.discoveredPlugin(kind: kind, executable: executable))
            discovered.insert(kind)
        }
        return (registry, discovered)
    }

    /// The `kind` of every entry under `sinks:`, as written; malformed entries are left
    /// for the config loader to report with their position.
    static func kinds(in root: ConfigNode) -> [String] {
        guard case .mapping(let top) = root.value, let sinks = top.first(where: { $0.key == "sinks" })?.value,
              case .mapping(let entries) = sinks.value
        else { return [] }
        return entries.compactMap { entry in
            guard case .mapping(let fields) = entry.value.value, let kind = fields.first(where: { $0.key == "kind" })?.value,
                  case .scalar(let text) = kind.value
            else { return nil }
            return text
        }
    }

    /// Letters, digits, `-` and `_`: a kind must never smuggle a path into the program name.
    static func isPluginName(_ kind: String) -> Bool {
        !kind.isEmpty && kind.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
        }
    }
}
