import ArgumentParser
import NotifyRoute

struct AckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ack",
        abstract: "Acknowledge the notification an earlier event with this replace key showed: its escalation stops.",
        discussion: """
            Escalations (a route's `escalate:`) are kept in the state that `send` and `serve` share, so this \
            works whether or not the daemon runs. The notification itself stays; `close` closes it and stops \
            its escalation too.

            Exit codes: 0 an escalation stopped, 1 none was pending for the key, 78 config error.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: [.customShort("r"), .customLong("replace-key")], help: "The replace key of the event to acknowledge.")
    var replaceKey: String

    func run() async throws {
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        let stopped: Int
        do {
            stopped = try router.acknowledge(replaceKey: replaceKey)
        } catch {
            Console.error("ack: the state cannot be read: \(error)")
            throw ExitStatus.noneDelivered
        }
        guard stopped > 0 else {
            Console.error("ack: no escalation is pending for replace key \"\(replaceKey)\"")
            throw ExitStatus.noneDelivered
        }
        if global.verbose { Console.error("ack: \(stopped) escalation(s) stopped for \"\(replaceKey)\"") }
    }
}
