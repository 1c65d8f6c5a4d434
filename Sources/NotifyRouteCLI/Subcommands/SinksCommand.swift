import ArgumentParser
import NotifyRoute

struct SinksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sinks",
        abstract: "List the sink kinds, the configured sinks and whether each is available, and why not.")

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print JSON on stdout.")
    var json = false

    struct Row: Encodable {
        var name: String
        var kind: String
        var available: Bool
        var reason: String?
    }

    struct Listing: Encodable {
        var config: String
        var kinds: [String]
        var sinks: [Row]
    }

    func run() async throws {
        let (router, source) = try RouterLoader.load(global)
        let rows = await router.sinkAvailability().map { row in
            switch row.availability {
            case .available: Row(name: row.name, kind: row.kind, available: true)
            case .unavailable(let reason): Row(name: row.name, kind: row.kind, available: false, reason: reason)
            }
        }
        if json {
            Console.out(ReportPrinter.json(Listing(config: source.origin, kinds: BuiltinPlugins.all.map(\.kind), sinks: rows)))
            return
        }
        var lines = ["kinds:"]
        let width = BuiltinPlugins.all.map(\.kind.count).max() ?? 0
        for plugin in BuiltinPlugins.all {
            lines.append("  \(plugin.kind.padding(width))  \(plugin.summary)")
            if !plugin.optionKeys.isEmpty { lines.append("  \("".padding(width))  options: \(plugin.optionKeys.joined(separator: ", "))") }
        }
        lines.append("sinks in \(source.origin):")
        let nameWidth = rows.map(\.name.count).max() ?? 0
        for row in rows {
            lines.append("  \(row.name.padding(nameWidth))  \(row.kind.padding(width))  " + (row.available ? "available" : "unavailable: \(row.reason ?? "")"))
        }
        Console.out(lines.joined(separator: "\n"))
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
