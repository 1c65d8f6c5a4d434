import Foundation
import NotifyRouteTestSupport
import Testing

/// One notify-route "host": a config and a state directory of its own, run through the
/// built CLI, as one machine of a fleet would run it.
struct NotifyRouteHost {
    var directory: URL
    var config: URL
    var environment: [String: String] { ["NO_COLOR": "1", "XDG_RUNTIME_DIR": directory.appendingPathComponent("runtime").path] }

    /// `sinks` is the YAML of the `sinks:` mapping's entries; `routes` the rest of the config.
    init(sinks: String, routes: String) throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-host")
        let runtime = directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        chmod(runtime.path, 0o700)
        config = directory.appendingPathComponent("config.yaml")
        try "sinks:\n\(sinks)\n\(routes)\n".write(to: config, atomically: true, encoding: .utf8)
    }

    func run(_ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.notifyRoute([arguments[0], "--config", config.path] + arguments.dropFirst(), environment: environment)
    }

    /// `send --json ...`, with its report decoded.
    func send(_ arguments: [String]) throws -> (result: ProcessResult, report: [String: Any]) {
        let result = try run(["send", "--json"] + arguments)
        return (result, decodeObject(result.standardOutput))
    }
}

/// A JSON object printed by the CLI (`--json`), or an empty one.
func decodeObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
}

extension Dictionary where Key == String, Value == Any {
    /// The report's entry for `sink`.
    func sink(_ name: String) -> [String: Any]? {
        (self["sinks"] as? [[String: Any]])?.first { $0["sink"] as? String == name }
    }

    /// The report's error message for `sink`, or "".
    func error(of sink: String) -> String {
        let message = self.sink(sink)?["error"] as? String
        return message ?? ""
    }
}

/// Alertmanager's webhook notifications (`{"status": "firing", "alerts": [...]}`) that the receiver got.
func notifications(_ requests: [HTTPReceiver.Request], status: String, replaceKey: String) -> [[String: Any]] {
    requests.compactMap { $0.body as? [String: Any] }.filter { notification in
        notification["status"] as? String == status
            && (notification["alerts"] as? [[String: Any]] ?? []).contains {
                ($0["labels"] as? [String: String])?["replace_key"] == replaceKey && $0["status"] as? String == status
            }
    }
}

/// Alertmanager tests run only with the binary, and must run under CI=true / with-components.sh.
let alertmanagerTestsEnabled = AlertmanagerCluster.isAvailable || TestEnvironment.componentsRequired

struct FixtureError: Error, CustomStringConvertible {
    var description: String
}

/// This machine's name, as the sinks read it.
var hostName: String {
    var buffer = [CChar](repeating: 0, count: 256)
    gethostname(&buffer, 255)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
