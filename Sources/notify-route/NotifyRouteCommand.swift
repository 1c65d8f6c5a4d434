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
    /// command tree, and a leaf subcommand (`send`, `close`, ...) is parsed on its own
    /// rather than as a branch of the whole tree: ArgumentParser's reflection is most of
    /// a cold start (callgrind, `send --dry-run`: 67% of 28.8 M instructions, mostly
    /// protocol-conformance scans and walks of every subcommand's arguments). Anything
    /// that does not parse that way (help, a usage error, `config ...`) goes through the
    /// whole tree, so messages, help and exit codes are the parser's own.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["--version"] {
            print(NotifyRouteVersion.current)
            return
        }
        if let first = arguments.first, let leaf = leaves[first] {
            let command: any ParsableCommand
            do {
                command = try leaf.parseAsRoot(Array(arguments.dropFirst()))
            } catch {
                await main(nil)
                return
            }
            do {
                if var command = command as? any AsyncParsableCommand {
                    try await command.run()
                } else {
                    var command = command
                    try command.run()
                }
            } catch {
                exit(withError: error)
            }
            return
        }
        await main(nil)
    }

    /// The subcommands without subcommands of their own, by name.
    private static let leaves: [String: any ParsableCommand.Type] = [
        "send": Send.self, "close": Close.self, "run": Run.self, "ingest": Ingest.self,
        "explain": Explain.self, "sinks": Sinks.self,
    ]
}

enum NotifyRouteVersion {
    static let current = "0.1.0"
}
