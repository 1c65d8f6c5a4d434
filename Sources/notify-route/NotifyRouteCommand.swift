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
}

enum NotifyRouteVersion {
    static let current = "0.1.0"
}
