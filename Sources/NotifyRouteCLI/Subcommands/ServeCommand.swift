import ArgumentParser
import NotifyRoute
import NotifyRouteClient

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run one long-lived router that send, close, run and ingest hand their events to.",
        discussion: """
            Listens on --socket, $NOTIFY_ROUTE_SOCKET or $XDG_RUNTIME_DIR/notify-route/socket, or on the \
            socket systemd passes (LISTEN_FDS), and tells systemd when it is ready (NOTIFY_SOCKET). SIGTERM \
            and SIGINT drain: requests already read are answered and sinks finish, then exit 0. SIGHUP, like \
            `notify-route reload`, reads the config again and keeps the old one if the new one is broken.

            Exit codes: 0 stopped cleanly, 69 another daemon already listens on the socket, 78 config error.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Listen on this socket path.", valueName: "PATH"))
    var socket: String?

    func run() async throws {
        // A reload may bring a network sink: the daemon is always the network executable.
        NetworkHandOff.runIfAllowed()
        guard let server = BuiltinPlugins.daemon else {
            Console.error("serve: this executable has no daemon; run notify-route-network serve")
            throw ExitStatus.noSinkAvailable
        }
        try await server.run(ServeArguments(config: global.config, verbose: global.verbose, socket: socket))
    }
}

/// What `serve` was given, for the daemon's server.
package struct ServeArguments: Sendable {
    package let config: String?
    package let verbose: Bool
    package let socket: String?
}

/// The daemon's server (SwiftNIO, swift-service-lifecycle), linked into `notify-route-network`
/// only: `serve` in `notify-route` execs that executable first (``NetworkHandOff``), so a
/// `send`'s start-up maps and relocates none of it.
public struct DaemonServer: Sendable {
    package let run: @Sendable (ServeArguments) async throws -> Void
    /// What a daemon would show of `router`'s shared state, read by this process: `status`
    /// when no daemon answers.
    package let status: @Sendable (NotificationRouter) async throws -> JSONValue

    /// The source of `sources:` that takes a line of `journalctl -o json`, and its event:
    /// `explain --journal-record`.
    package let matchRecord: @Sendable (String, [SourceDeclaration]) -> Result<SourceRecordMatch, SourceRecordMatch.Failure>

    package init(run: @escaping @Sendable (ServeArguments) async throws -> Void,
                 status: @escaping @Sendable (NotificationRouter) async throws -> JSONValue,
                 matchRecord: @escaping @Sendable (String, [SourceDeclaration]) -> Result<SourceRecordMatch, SourceRecordMatch.Failure>) {
        self.run = run
        self.status = status
        self.matchRecord = matchRecord
    }
}

/// A journal record that a source of the config takes, and the event it makes of it.
package struct SourceRecordMatch: Sendable {
    package let source: SourceDeclaration
    package let event: NotificationEvent

    package init(source: SourceDeclaration, event: NotificationEvent) {
        self.source = source
        self.event = event
    }

    package enum Failure: Error {
        /// Not a record (exit 65).
        case malformed(String)
        /// No source takes it (exit 1).
        case refused(String)
    }
}
