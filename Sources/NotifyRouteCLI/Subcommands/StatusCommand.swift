import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running daemon: its config, uptime, what each sink did, its queues and what is held.",
        discussion: """
            Without a daemon, it shows what the shared state and history hold (the pause, silences, inhibitions, \
            held events, open groups, escalations) for the config of --config or the usual places, and still exits 69. \
            Exit codes: 0 a daemon answered, 69 no daemon answers on the socket or it refuses this user (only its \
            owner may see its status), 78 config error (without a daemon).
            """)

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the status as JSON on stdout.")
    var json = false

    func run() async throws {
        // Without a daemon, the status is read as the daemon reads it, by its module, which
        // only the network executable links.
        NetworkHandOff.runIfAllowed()
        let answer: DaemonProtocol.Answer
        do {
            answer = try daemon.ask(.status)
        } catch let code as ExitCode where code == ExitStatus.noSinkAvailable {
            // Said on stderr already; what the state shows is still worth seeing.
            show(try await Self.localStatus(global))
            throw code
        }
        // A daemon that answers and refuses (this user may only hand events in) shows nothing.
        guard let status = answer.status else {
            Console.error("status: \(answer.error ?? "the daemon sent no status")")
            throw ExitCode(answer.exit ?? ExitStatus.noSinkAvailable.rawValue)
        }
        show(status)
    }

    /// What a daemon would show of the shared state, read by this process.
    private static func localStatus(_ global: GlobalOptions) async throws -> JSONValue {
        let (router, _) = try RouterLoader.load(global, sharedState: true)
        guard let server = BuiltinPlugins.daemon else {
            Console.error("status: this executable has no daemon to read the state with; run notify-route-network status")
            throw ExitStatus.noSinkAvailable
        }
        return try await server.status(router)
    }

    private func show(_ status: JSONValue) {
        if json {
            Console.out(String(decoding: DaemonProtocol.encodeLine(status), as: UTF8.self))
            return
        }
        guard status["pid"]?.number != 0 else {  // read here: no daemon, so no counts
            Console.out((Self.directoryLines(status) + Self.stateLines(status) + Self.pendingLines(status)).joined(separator: "\n"))
            return
        }
        var lines: [String] = []
        func field(_ key: String) -> String {
            switch status[key] {
            case .string(let text)?: text
            case .number(let number)?: status[key]?.integer.map(String.init) ?? String(number)
            default: "?"
            }
        }
        lines.append("daemon pid \(field("pid")), up \(field("uptime_seconds"))s, \(field("in_flight")) requests in flight")
        lines.append("config \(field("config")), loaded \(field("loaded_at")) (\(field("reloads")) reloads)")
        lines += Self.directoryLines(status)
        if case .object(let sinks)? = status["sinks"] {
            for (name, counts) in sinks.sorted(by: { $0.key < $1.key }) {
                guard case .object(let values) = counts else { continue }
                let parts = values.sorted(by: { $0.key < $1.key }).map { key, value in
                    "\(key) \(value.integer.map(String.init) ?? "?")"
                }
                var line = "  \(name): " + parts.joined(separator: ", ")
                if case .object(let queue)? = status["queues"]?[name] {
                    if let depth = queue["depth"]?.integer { line += "; \(depth) queued now" }
                    if queue["pending"] == .bool(true) { line += "; still finishing" }
                }
                lines.append(line)
            }
        }
        lines += Self.stateLines(status) + Self.pendingLines(status)
        Console.out(lines.joined(separator: "\n"))
    }

    /// Where the state is: without a runtime directory it is not where one would look first.
    private static func directoryLines(_ status: JSONValue) -> [String] {
        var lines = [status["state"]?.string.map { "state in \($0)" } ?? "state in this process only (no state directory)"]
        if let kept = status["outbox"]?.integer, kept > 0 {
            lines.append("\(kept) accepted deliveries not done yet (queued or retrying), kept across a restart")
        }
        return lines
    }

    /// What is held, the pause, silences and inhibitions.
    private static func stateLines(_ status: JSONValue) -> [String] {
        var lines: [String] = []
        if case .array(let held)? = status["held"] {
            lines.append(held.isEmpty ? "nothing held" : "held for a summary:")
            for entry in held {
                let sources: String
                if case .object(let counts)? = entry["sources"] {
                    sources = counts.sorted { $0.key < $1.key }.map { key, value in
                        value.integer.map { "\(key) \($0)" } ?? key
                    }.joined(separator: ", ")
                } else {
                    sources = ""
                }
                lines.append("  \(entry["sink"]?.string ?? "?") via \(entry["route"]?.string ?? "?"): \((entry["held"]?.integer ?? 0)) by \(entry["kind"]?.string ?? "?")"
                    + " (highest \(entry["highest"]?.string ?? "?"); \(sources))")
            }
        }
        if case .object(let pause)? = status["pause"] {
            lines.append("paused: events below \(pause["below"]?.string ?? "?") held since \(pause["since"]?.string ?? "?")"
                + (pause["until"]?.string.map { " until \($0)" } ?? " until resume") + ", \((pause["held"]?.integer ?? 0)) held")
        }
        if case .array(let silences)? = status["silences"], !silences.isEmpty {
            lines.append("silences:")
            for silence in silences {
                lines.append("  \(silence["id"]?.string ?? "?") until \(silence["ends"]?.string ?? "?"): \(silence["matchers"]?.string ?? "?")"
                    + (silence["comment"]?.string.map { " # \($0)" } ?? ""))
            }
        }
        if case .array(let inhibitions)? = status["inhibitions"], !inhibitions.isEmpty {
            lines.append("inhibitions:")
            for inhibition in inhibitions {
                var equal = ""
                if case .object(let values)? = inhibition["equal"], !values.isEmpty {
                    equal = " with " + values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.string ?? "")" }.joined(separator: " ")
                }
                lines.append("  rule \((inhibition["rule"]?.integer ?? 0)) holds back \(inhibition["inhibits"]?.string ?? "?")\(equal)"
                    + " until \(inhibition["until"]?.string ?? "?")" + (inhibition["replace_key"]?.string.map { " (or close -r \($0))" } ?? ""))
            }
        }
        return lines
    }

    /// Open groups, then escalations and snoozes, each with when it is next due.
    private static func pendingLines(_ status: JSONValue) -> [String] {
        var lines: [String] = []
        func more(_ listed: Int, _ key: String) {
            let total = (status[key]?.integer ?? 0)
            if total > listed { lines.append("  … and \(total - listed) more") }
        }
        if case .array(let groups)? = status["groups"], !groups.isEmpty {
            lines.append("open groups:")
            for group in groups {
                lines.append("  \(group["name"]?.string ?? "?") on \(group["sink"]?.string ?? "?") via \(group["route"]?.string ?? "?"): "
                    + "\((group["count"]?.integer ?? 0)) events, \((group["pending"]?.integer ?? 0)) not shown yet, next at \(group["due"]?.string ?? "?")")
            }
            more(groups.count, "groups_open")
        }
        if case .array(let timers)? = status["timers"], !timers.isEmpty {
            lines.append("escalations and snoozes:")
            for timer in timers {
                let sinks: String = if case .array(let names)? = timer["sinks"] { names.compactMap(\.string).joined(separator: ", ") } else { "?" }
                let key = timer["replace_key"]?.string.map { " (replace key \($0))" } ?? ""
                let what = timer["kind"]?.string == "escalate"
                    ? "escalates to \(sinks) at \(timer["due"]?.string ?? "?")" + ((timer["sent"]?.integer ?? 0) > 0 ? ", escalated \((timer["sent"]?.integer ?? 0)) times" : "")
                    : "shown again on \(sinks) at \(timer["due"]?.string ?? "?")"
                lines.append("  \(timer["title"]?.string ?? "?")\(key) via \(timer["route"]?.string ?? "?"): \(what)")
            }
            more(timers.count, "timers_waiting")
        }
        return lines
    }
}
