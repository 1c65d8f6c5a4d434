import ArgumentParser
import CBuildInfo
import Dispatch
import Glibc

/// The process's entry point: synchronous, so that it decides on which threads the
/// command runs.
///
/// `send` in its usual forms (the command of scripts, run thousands of times) runs on the
/// main thread, on a ``CallerThreadExecutor``: a send to the journal then starts no thread
/// at all, where an async `main` hands all its work to the cooperative pool, which first
/// starts three. Every other command runs in the pool while the main thread serves the main
/// queue, as with an async `main`.
///
/// Both executables start here: `network` says whether this one links the network sinks,
/// `daemon` whether it links the daemon's server.
public enum NotifyRouteMain {
    public static func main(network: NetworkSinks, daemon: DaemonServer? = nil) {
        BuiltinPlugins.daemon = daemon
        NetworkHandOff.start(network)
        let arguments = Array(CommandLine.arguments.dropFirst())
        // notify-send's options through a link named notify-send, or as `notify-route notify-send`.
        if let program = CommandLine.arguments.first, program == "notify-send" || program.hasSuffix("/notify-send") {
            CallerThreadExecutor.run { await NotifySendCommand.main(arguments) }
            return
        }
        if arguments == ["--version"] {
            print(NotifyRouteVersion.current)
            return
        }
        if arguments.first == "notify-send" {
            CallerThreadExecutor.run { await NotifySendCommand.main(arguments.dropFirst()) }
            return
        }
        if arguments.first == "send", let request = FastSendParser.parse(arguments.dropFirst()) {
            CallerThreadExecutor.run { await NotifyRouteCommand.send(request) }
            return
        }
        // Detached: a task made here would inherit `main`'s main-actor isolation.
        Task.detached {
            await NotifyRouteCommand.main(arguments: arguments)
            exit(0)
        }
        dispatchMain()
    }
}

struct NotifyRouteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-route",
        abstract: "Route notifications to the terminal, the desktop and the systemd journal.",
        discussion: """
            Exit codes: 0 delivered (or suppressed on purpose), 1 no sink delivered, 64 usage, \
            65 bad event data, 69 no sink available, 78 config error.
            """,
        version: NotifyRouteVersion.current,
        subcommands: [
            SendCommand.self, CloseCommand.self, RunCommand.self, IngestCommand.self, ExplainCommand.self, ConfigCommand.self, SinksCommand.self, ServeCommand.self, ReloadCommand.self,
            StatusCommand.self, NotifySendCommand.self, AckCommand.self, HistoryCommand.self, ReplayCommand.self, SilenceCommand.self, PauseCommand.self, ResumeCommand.self,
        ],
        defaultSubcommand: nil
    )

    /// A leaf subcommand (`send`, `close`, ...) is parsed on its own rather than as a
    /// branch of the whole tree, and `notify-route --version` alone is answered before
    /// ArgumentParser builds the tree (in ``NotifyRouteMain``): ArgumentParser's reflection
    /// (protocol-conformance scans, walks of every subcommand's arguments) is most of a cold
    /// start (Tests/Benchmarks/README.md, "Why the code is so"). Anything
    /// that does not parse that way (help, a usage error, `config ...`) goes through the
    /// whole tree, so messages, help and exit codes are the parser's own, and name the
    /// command as `notify-route send`.
    /// `send` as ``FastSendParser`` read it.
    static func send(_ request: SendRequest) async {
        do {
            try await request.run()
        } catch {
            exit(status: error)
        }
    }

    static func main(arguments: [String]) async {
        if arguments.first == "send", let misuse = SendCommand.shortHelpMisuse(in: arguments.dropFirst()) {
            Console.write(STDERR_FILENO, "Error: \(misuse)\n" + usage(of: SendCommand.self) + "\n")
            Glibc.exit(ExitStatus.usage.rawValue)
        }
        do {
            let command = try parse(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                var command = command
                try command.run()
            }
        } catch {
            exit(status: error)
        }
    }

    /// The leaf alone when it parses as itself; the whole tree otherwise. A leaf parsed as
    /// a root answers `--help` with ArgumentParser's help command, whose usage line would
    /// name the leaf alone (`USAGE: send ...`).
    private static func parse(_ arguments: [String]) throws -> any ParsableCommand {
        // ArgumentParser's time grows with the square of the arguments after `--`: it sees
        // `run`'s options and the command's name, and the command is taken as it was given.
        if arguments.first == "run", let terminator = arguments.firstIndex(of: "--"), arguments.count > terminator + 2 {
            let parsed = try parse(Array(arguments[...(terminator + 1)]))
            guard var run = parsed as? RunCommand else { return parsed }
            run.command = Array(arguments[(terminator + 1)...])
            return run
        }
        if let first = arguments.first, let leaf = leaves[first],
           let command = try? leaf.parseAsRoot(Array(arguments.dropFirst())),
           ObjectIdentifier(type(of: command)) == ObjectIdentifier(leaf) {
            return command
        }
        return try parseAsRoot(arguments)
    }

    /// ArgumentParser's usage lines for a subcommand, as it prints them under a usage error.
    static func usage(of subcommand: any ParsableCommand.Type) -> String {
        let name = "notify-route \(subcommand._commandName)"
        return "Usage: \(usageString(for: subcommand))\n  See '\(name) --help' for more information."
    }

    /// Ends the process for what a command threw. An ``ExitCode`` (every `send` ends with
    /// one) exits with it directly, as ArgumentParser would, but without the usage message
    /// ArgumentParser renders for it and throws away: the whole command reflected again.
    /// Anything else is printed as ArgumentParser's `exit(withError:)` would, but through
    /// ``Console``, whose escaping covers the input its messages quote (`-l`'s value).
    private static func exit(status error: any Error) -> Never {
        if let code = error as? ExitCode {
            Glibc.exit(code.rawValue)
        }
        let code = exitCode(for: error)
        let text = fullMessage(for: error)
        if !text.isEmpty { Console.write(code.isSuccess ? STDOUT_FILENO : STDERR_FILENO, text + "\n") }
        Glibc.exit(code.rawValue)
    }

    /// The subcommands without subcommands of their own, by name.
    private static let leaves: [String: any ParsableCommand.Type] = [
        "send": SendCommand.self, "close": CloseCommand.self, "ack": AckCommand.self, "run": RunCommand.self, "ingest": IngestCommand.self,
        "explain": ExplainCommand.self, "sinks": SinksCommand.self, "serve": ServeCommand.self, "reload": ReloadCommand.self, "status": StatusCommand.self,
        "history": HistoryCommand.self, "replay": ReplayCommand.self, "pause": PauseCommand.self, "resume": ResumeCommand.self,
    ]
}

enum NotifyRouteVersion {
    static var current: String { String(cString: notify_route_build_version()) }
}
