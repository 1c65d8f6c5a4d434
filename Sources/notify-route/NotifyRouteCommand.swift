import ArgumentParser

@main
struct NotifyRouteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-route",
        abstract: "Route notifications to the terminal, the desktop and the systemd journal.",
        discussion: """
            Exit codes: 0 delivered (or suppressed on purpose), 1 no sink delivered, 64 usage, \
            65 bad event data, 69 no sink available, 78 config error.
            """,
        version: NotifyRouteVersion.current,
        subcommands: [Send.self, Close.self, Run.self, Ingest.self, Explain.self, ConfigCommand.self, Sinks.self],
        defaultSubcommand: nil
    )

    /// `notify-route --version` alone is answered before ArgumentParser builds the
    /// command tree: that reflection costs about 2 ms of protocol-conformance scans per
    /// process (measured with perf), more than the rest of a cold start. Everything
    /// else, `--version` among other arguments included, goes through the parser.
    static func main() async {
        let arguments = CommandLine.arguments
        if arguments.count == 2, arguments[1] == "--version" {
            print(NotifyRouteVersion.current)
            return
        }
        await main(nil)
    }
}

enum NotifyRouteVersion {
    static let current = "0.1.0"
}
