import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

struct ReloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Make the running daemon read its config file again.",
        discussion: """
            The daemon checks the new config first; a broken one is refused with file:line:col and the \
            daemon keeps routing with the config it had. Dedup windows, replace handles and held events \
            stay. Exit codes: 0 reloaded, 69 no daemon answers on the socket or it refuses this user (only its \
            owner may reload it), 78 the new config is broken.
            """)

    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let answer = try daemon.ask(.reload)
        if let error = answer.error {
            Console.error("reload: \(error)")
            throw ExitCode(answer.exit ?? ExitStatus.configError.rawValue)
        }
        if case .string(let path)? = answer.status?["config"] { Console.error("reloaded \(path)") }
    }
}
