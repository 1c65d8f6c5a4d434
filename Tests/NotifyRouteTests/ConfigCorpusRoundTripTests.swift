import Foundation
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteTestSupport
import Testing

/// Every valid config we have, shipped or embedded in a test, loads back from what
/// `config show` prints for it to an equal config (a value comparison, not "it loads").
@Suite struct ConfigCorpusRoundTripTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func files(in directory: String, suffix: String) -> [URL] {
        let url = root.appendingPathComponent(directory)
        guard let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil) else { return [] }
        return enumerator.compactMap { $0 as? URL }.filter { $0.path.hasSuffix(suffix) }.sorted { $0.path < $1.path }
    }

    /// The configs: YAML files beside the config and in the fuzz corpus, the YAML blocks of the README and the DocC articles,
    /// and the multi-line string literals of the test sources (without interpolation).
    static let corpus: [(name: String, text: String)] = {
        var corpus: [(String, String)] = []
        for url in files(in: "config", suffix: ".yaml") + files(in: "Tests/Fuzz/corpus/fuzz-config", suffix: ".yaml") {
            if let text = try? String(contentsOf: url, encoding: .utf8) { corpus.append((url.path.replacingOccurrences(of: root.path + "/", with: ""), text)) }
        }
        let documents = ["README.md"] + (files(in: "Sources", suffix: ".md") + files(in: "Plugins", suffix: ".md"))
            .map { $0.path.replacingOccurrences(of: root.path + "/", with: "") }
        for document in documents {
            guard let text = try? String(contentsOf: root.appendingPathComponent(document), encoding: .utf8) else { continue }
            for (index, block) in text.components(separatedBy: "```yaml\n").dropFirst().enumerated() {
                corpus.append(("\(document) yaml block \(index + 1)", block.components(separatedBy: "```")[0]))
            }
        }
        for url in files(in: "Tests", suffix: ".swift") {
            guard let source = try? String(contentsOf: url, encoding: .utf8) else { continue }
            let lines = source.components(separatedBy: "\n")
            var index = 0
            while index < lines.count {
                defer { index += 1 }
                guard lines[index].hasSuffix("\"\"\"") else { continue }
                let start = index + 1
                guard let end = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("\"\"\"") }) else { break }
                let indent = lines[end].prefix { $0 == " " }.count
                let body = lines[start..<end].map { String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count))) }
                index = end
                let text = body.joined(separator: "\n")
                guard !text.contains("\\") else { continue }
                corpus.append(("\(url.lastPathComponent):\(start)", text + "\n"))
            }
        }
        return corpus
    }()

    /// A registry that knows every kind the config names, each allowing the options it is given.
    static func registry(for node: ConfigNode) -> SinkRegistry {
        var options: [String: [String]] = [:]
        if case .mapping(let top) = node.value, case .mapping(let sinks)? = top.first(where: { $0.key == "sinks" })?.value.value {
            for sink in sinks {
                guard case .mapping(let entries) = sink.value.value,
                      case .scalar(let kind)? = entries.first(where: { $0.key == "kind" })?.value.value else { continue }
                let keys = entries.map(\.key).filter { !SinkPlugin.genericOptionKeys.contains($0) }
                options[kind, default: []].append(contentsOf: keys.filter { !(options[kind] ?? []).contains($0) })
            }
        }
        return try! SinkRegistry(options.sorted { $0.key < $1.key }.map { kind, keys in
            SinkPlugin(kind: kind, summary: kind, optionKeys: keys) { _ in RecordingSink() }
        })
    }

    @Test func everyValidConfigOfTheCorpusLoadsBackEqualFromConfigShow() throws {
        var loaded: [String] = []
        for (name, text) in Self.corpus {
            guard let node = try? ConfigNode.parse(yaml: text, file: name),
                  case .mapping = node.value,
                  let config = try? RouterConfiguration.load(node: node, origin: name, registry: Self.registry(for: node))
            else { continue }
            loaded.append(name)
            let shown = try config.effectiveYAML()
            let again = try RouterConfiguration.load(yaml: shown, file: "shown from \(name)", registry: Self.registry(for: node))
            #expect(again == config, "\(name):\n\(text)\n--- shown:\n\(shown)")
        }
        // The shipped configs, the fuzz corpus's and the tests' own: far more than a handful.
        for shipped in ["README.md yaml block 1", "config/notify-route.yaml", "config/examples/backup-server.yaml", "config/examples/developer-laptop.yaml",
                        "config/examples/exec-plugin.yaml"] {
            #expect(loaded.contains(shipped), "\(shipped) did not load")
        }
        #expect(loaded.count >= 40, "only \(loaded.count) configs loaded: \(loaded)")
    }
}
