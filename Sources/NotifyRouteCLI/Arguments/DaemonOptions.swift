import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

/// `--socket` for the commands that only talk to the daemon.
struct DaemonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The daemon's socket.", valueName: "PATH"))
    var socket: String?

    func ask(_ kind: DaemonProtocol.Kind) throws -> DaemonProtocol.Answer {
        do {
            let client = try DaemonClient(path: try RouterLoader.daemonSocket(explicit: socket))
            return try client.request({ _ in }, kind: kind, within: .seconds(30))
        } catch let error as DaemonClient.Unavailable {
            Console.error("no daemon: \(error.description) (start one with notify-route serve)")
            throw ExitStatus.noSinkAvailable
        } catch let error as StateDirectory.Refused {
            Console.error("no daemon: \(error.description)")
            throw ExitStatus.noSinkAvailable
        }
    }
}
