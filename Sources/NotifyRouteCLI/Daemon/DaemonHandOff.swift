import ArgumentParser
import Glibc
import NotifyRoute
import NotifyRouteClient

/// `--no-daemon` and `--socket`, for the commands that hand events to `notify-route serve`.
struct HandOffOptions: ParsableArguments {
    @Flag(name: .long, help: "Route in this process even when a daemon (notify-route serve) answers.")
    var noDaemon = false

    @Option(name: .long, help: ArgumentHelp("The daemon's socket (default: $NOTIFY_ROUTE_SOCKET, else $XDG_RUNTIME_DIR/notify-route/socket).", valueName: "PATH"))
    var socket: String?
}

/// A command's events handed to the daemon, with what the command prints and its exit
/// code taken from the daemon's answers, so that the output reads as a local run's.
struct DaemonHandOff {
    let client: DaemonClient
    let verbose: Bool

    /// The daemon, or `nil` to route locally: none listens, it does not answer its
    /// greeting within ``DaemonClient/helloLimit``, or `--config` names another config
    /// than the daemon's (the event must go through the config asked for).
    /// A daemon that refuses this client (`serve.allow` does not name its user) is an error,
    /// exit 69: the socket was the way the events were meant to go.
    ///
    /// `first`: a request sent with the greeting (a round trip less), whose answer
    /// ``send(_:sinks:dryRun:json:wait:)`` then reads. With `--config`, the hello names the
    /// file, and a daemon routing with another does not route the request.
    static func connect(socket: String?, config: String?, verbose: Bool, first: (() -> DaemonProtocol.Request)? = nil) throws -> DaemonHandOff? {
        do {
            let client = try DaemonClient(
                path: try RouterLoader.daemonSocket(explicit: socket), first: first, config: config)
            if let config, !sameFile(config, client.daemonConfig) {
                if verbose { Console.error("daemon: it routes with \(client.daemonConfig ?? "?"), not \(config); routing here") }
                return nil
            }
            NetworkHandOff.daemonTakesPart()
            return DaemonHandOff(client: client, verbose: verbose)
        } catch let error as DaemonClient.Unavailable where error.isRefusal {
            Console.error("daemon: \(error.description); nothing was sent (--no-daemon routes in this process)")
            throw ExitStatus.noSinkAvailable
        } catch let error as DaemonClient.Unavailable {
            // A daemon that is there but does not answer is worth a line; no daemon is the
            // usual case, and `--json`'s "via" says where the event was routed.
            if !error.isAbsent { Console.error("daemon: \(error.description); routing here") }
        } catch {
            if verbose { Console.error("daemon: \(error); routing here") }
        }
        return nil
    }

    /// The sinks of the daemon's report that only this process can show
    /// (``SinkCapabilities/drawnByCaller``: a line on this process's stdout, a banner or a
    /// line on a stderr the daemon may not draw on) and that were unavailable there. This
    /// process draws them (``CallerShare``) rather than routing the event again.
    static func callerShare(of answer: DaemonProtocol.Answer) -> [String] {
        guard case .array(let sinks)? = answer.report?["sinks"] else { return [] }
        return sinks.compactMap { sink in
            guard sink["caller_draws"] == .bool(true), sink["status"]?.string == "unavailable" else { return nil }
            return sink["sink"]?.string
        }
    }

    /// The daemon's own test (``GreetingHandler``) of a named config: the same file, however named.
    private static func sameFile(_ path: String, _ other: String?) -> Bool {
        guard let other, let identity = DaemonProtocol.FileIdentity(path: path) else { return false }
        return DaemonProtocol.FileIdentity(path: other) == identity
    }

    /// What became of a `send` handed to the daemon.
    enum Sent {
        /// Printed and done: the exit status.
        case done(ExitCode)
        /// The daemon's answer names sinks only this process can show (``callerShare(of:)``):
        /// nothing is printed yet.
        case share(DaemonProtocol.Answer, sinks: [String])
        /// The daemon went away before it answered (said on stderr): route the event here.
        case gone
    }

    /// Sends `event` through the daemon and, unless this process has a share of it to draw,
    /// prints what `send` prints.
    func send(_ event: NotificationEvent, sinks: [String], dryRun: Bool, json: Bool, wait: Bool) -> Sent {
        let answer: DaemonProtocol.Answer
        do {
            answer = try client.hasFirst
                ? client.answerToFirst(within: client.routingLimit)
                : client.request(Self.sendRequest(event, sinks: sinks, dryRun: dryRun), within: client.routingLimit)
        } catch {
            Console.error("daemon: \(error.description); routing here")
            return .gone
        }
        if let error = answer.error {
            Console.error(error)
            return .done(ExitCode(answer.exit ?? ExitStatus.usage.rawValue))
        }
        if !dryRun, case let share = Self.callerShare(of: answer), !share.isEmpty { return .share(answer, sinks: share) }
        return .done(conclude(answer, dryRun: dryRun, json: json, wait: wait))
    }

    /// Prints the daemon's answer to a `send` as a local run prints its report, waits for
    /// an interaction when asked, and gives the exit status.
    func conclude(_ answer: DaemonProtocol.Answer, dryRun: Bool, json: Bool, wait: Bool) -> ExitCode {
        show(answer, json: json, text: verbose || (dryRun && !json), textOnStdout: dryRun && !json)
        if wait && !dryRun && answer.summary == DeliveryReport.Summary.delivered.rawValue, let id = answer.id {
            let timeout = answer.report?["event"]?["timeout"]?.string.flatMap { try? NotificationTimeout(parsing: $0) }
            waitForInteraction(of: id, within: (timeout ?? .serverDefault).waitLimit)
        }
        return ExitCode(answer.exit ?? ExitStatus.noneDelivered.rawValue)
    }

    /// The `send` request of `event` (its id is the client's to set).
    static func sendRequest(_ event: NotificationEvent, sinks: [String], dryRun: Bool) -> DaemonProtocol.Request {
        var request = DaemonProtocol.Request(kind: .send)
        request.notification = event
        request.sinks = sinks.isEmpty ? nil : sinks
        request.dryRun = dryRun
        request.terminal = terminal
        return request
    }

    /// This process's terminal, on which the daemon draws the banners and lines of its
    /// sends: stderr's, the terminal a command typed in a shell sits at. `nil` when stderr is
    /// not a terminal, or when `NO_COLOR` or `TERM=dumb` asks for what the daemon cannot
    /// see; a terminal sink is then this process's to draw (``CallerShare``).
    static let terminal: String? = {
        guard isatty(STDERR_FILENO) == 1 else { return nil }
        if let noColor = getenv("NO_COLOR"), noColor.pointee != 0 { return nil }
        if let term = getenv("TERM"), String(cString: term) == "dumb" { return nil }
        var name = [CChar](repeating: 0, count: DaemonProtocol.maximumTerminalBytes + 1)
        guard ttyname_r(STDERR_FILENO, &name, name.count) == 0 else { return nil }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// What became of one event of `run` or `ingest` handed to the daemon.
    enum Routed {
        /// The daemon's answer: its report, text, problems and exit code.
        case answered(DaemonProtocol.Answer)
        /// The answer names sinks that only this process can show (``callerShare(of:)``).
        case share(DaemonProtocol.Answer, sinks: [String])
        /// The daemon went away (said why on stderr): route this event and the rest here.
        case gone
    }

    /// Hands one event to the daemon, for commands that route many (`ingest`) or route
    /// long after they started (`run`).
    func route(_ event: NotificationEvent, sinks: [String]) -> Routed {
        do {
            let answer = try client.request({
                $0.notification = event
                $0.sinks = sinks.isEmpty ? nil : sinks
            }, kind: .send, within: client.routingLimit)
            let share = Self.callerShare(of: answer)
            return share.isEmpty ? .answered(answer) : .share(answer, sinks: share)
        } catch {
            Console.error("daemon: \(error.description); routing here")
            return .gone
        }
    }

    /// `--sink` names checked by the daemon against its config before any event goes,
    /// as a local run checks them before it starts: the same message, exit 64.
    /// `nil` when they are all known, or the daemon went away (the local check then runs).
    func validate(sinks: [String]) -> ExitCode? {
        guard !sinks.isEmpty else { return nil }
        do {
            let answer = try client.request({
                $0.event = .object(["title": .string("sink check")])
                $0.sinks = sinks
                $0.dryRun = true
            }, kind: .send, within: client.routingLimit)
            guard let error = answer.error else { return nil }
            Console.error(error)
            return ExitCode(answer.exit ?? ExitStatus.usage.rawValue)
        } catch {
            return nil
        }
    }

    /// Closes through the daemon; `nil` when it went away (the caller closes locally).
    func close(replaceKey: String, json: Bool) -> ExitCode? {
        let answer: DaemonProtocol.Answer
        do {
            answer = try client.request({ $0.replaceKey = replaceKey }, kind: .close, within: client.routingLimit)
        } catch {
            Console.error("daemon: \(error.description); closing here")
            return nil
        }
        if let error = answer.error {
            Console.error(error)
            return ExitCode(answer.exit ?? ExitStatus.usage.rawValue)
        }
        let closed = answer.exit == 0
        show(answer, json: json, text: verbose && !json, textOnStdout: false, problems: !json && !closed)
        return ExitCode(answer.exit ?? ExitStatus.noneDelivered.rawValue)
    }

    func show(_ answer: DaemonProtocol.Answer, json: Bool, text: Bool, textOnStdout: Bool, problems: Bool? = nil) {
        if json, let report = answer.report { Console.out(ReportPrinter.json(report, via: .daemon)) }
        if text, let lines = answer.text {
            Console.write(textOnStdout ? 1 : 2, lines + "\n")
        } else if problems ?? !json {
            for line in answer.problems ?? [] { Console.error(line) }
        }
    }

    /// Prints the first action or dismissal the daemon reports, or `expired` when none came
    /// within `limit` (``NotificationTimeout/waitLimit``), as the local `--wait` does.
    func waitForInteraction(of id: Int, within limit: Duration?) {
        let end = limit.map { ContinuousClock.now + $0 }
        do {
            let answer = try client.request({ $0.waitFor = id }, kind: .wait, within: limit)
            if let interaction = answer.interaction {
                Console.out(interaction)
            } else {
                Console.error("--wait: no sink that delivered this event reports actions or dismissal (the desktop sink does, when a notification daemon is running)")
            }
        } catch {
            if let end, ContinuousClock.now >= end {
                Console.out(DismissReason.expired.rawValue)
            } else {
                Console.error("--wait: the daemon went away before an action or the dismissal: \(error.description)")
            }
        }
    }
}

extension ReportPrinter {
    /// A daemon's report with its `via`, written as `JSONEncoder` writes it (keys sorted,
    /// slashes unescaped) but without its generic path, which cost a `send --json` more
    /// than the rest of its exchange with the daemon.
    static func json(_ report: JSONValue, via: Via) -> String {
        guard case .object(var fields) = report else { return json(Routed(report: report, via: via)) }
        fields["via"] = .string(via.rawValue)
        return String(decoding: JSONValue.object(fields).line.dropLast(), as: UTF8.self)
    }
}
