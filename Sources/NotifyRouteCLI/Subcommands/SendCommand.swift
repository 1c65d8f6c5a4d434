import ArgumentParser
import NotifyRoute
import NotifyRouteClient

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a notification through the configured routes.",
        discussion: """
            Exit codes: 0 delivered or suppressed on purpose (duplicate, dropped by a rule), \
            1 no sink delivered, 64 usage, 65 bad event data, 69 no sink available, 78 config error.
            """,
        // `-h` is notify-send's hint option: help there would print and exit 0, sending nothing.
        helpNames: [.long])

    @OptionGroup var global: GlobalOptions
    @OptionGroup var event: EventOptions

    @Flag(name: .shortAndLong, help: "Wait for an action or the dismissal, and print the action id or the close reason (expired after the timeout and 2 s when the server says nothing; with -t never, for as long as it takes).")
    var wait = false

    @Flag(name: .long, help: "Exit as soon as the event is handed over, without waiting for banners to time out or queues to drain.")
    var noWait = false

    @Flag(name: .long, help: "Show what would happen; send nothing, remember nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Print the delivery report as JSON on stdout.")
    var json = false

    @OptionGroup var handOff: HandOffOptions

    /// What was asked, as plain values: the same request ``FastSendParser`` makes.
    var request: SendRequest {
        SendRequest(
            config: global.config, verbose: global.verbose, flags: event.flags.arguments, title: event.title,
            body: event.body, wait: wait, noWait: noWait, dryRun: dryRun, json: json, noDaemon: handOff.noDaemon,
            socket: handOff.socket)
    }

    func run() async throws {
        try await request.run()
    }

    /// What is wrong when `-h` is among the options (alone, as `-hVALUE`, or in a run of
    /// short flags such as `-vh`): notify-send users type `-h int:value:50` for a hint, and
    /// must learn that nothing was sent, not get the help and exit 0. `nil` when there is none.
    static func shortHelpMisuse(in arguments: some Sequence<String>) -> String? {
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.hasPrefix("-"), !argument.hasPrefix("--") else { continue }
            if argument.dropFirst().prefix(while: { $0 != "=" }).contains("h") {
                return "\"\(argument)\": send has no -h; it is not help (use --help), "
                    + "and notify-send's hints (-h TYPE:NAME:VALUE) are `notify-route notify-send`'s; nothing was sent"
            }
        }
        return nil
    }
}

/// `notify-route send` as plain values, however it was parsed: by ArgumentParser
/// (``Send``) or, for the usual forms, by ``FastSendParser``.
struct SendRequest: Equatable, Sendable {
    var config: String?
    var verbose = false
    var flags = EventArguments()
    var title: String
    var body: String?
    var wait = false
    var noWait = false
    var dryRun = false
    var json = false
    var noDaemon = false
    var socket: String?

    func run() async throws {
        guard !noDaemon else { return try await routeLocally(nil) }
        // Made before connecting: its request goes with the greeting (a round trip less).
        let notification = flags.makeEvent(title: title, body: body)
        let first = { DaemonHandOff.sendRequest(notification, sinks: flags.sinks, dryRun: dryRun) }
        if let daemon = try DaemonHandOff.connect(socket: socket, config: config, verbose: verbose, first: first) {
            switch daemon.send(notification, sinks: flags.sinks, dryRun: dryRun, json: json, wait: wait) {
            case .done(let status): throw status
            case .share(let answer, let sinks): throw try await draw(notification, on: sinks, answeredBy: answer, daemon: daemon)
            case .gone: break
            }
        }
        try await routeLocally(notification)
    }

    /// Draws this process's share of what the daemon routed (``CallerShare``), then prints
    /// the daemon's answer with the drawn outcomes in it and waits as a local run does.
    private func draw(_ event: NotificationEvent, on share: [String], answeredBy answer: DaemonProtocol.Answer,
                      daemon: DaemonHandOff) async throws -> ExitCode {
        let here = try CallerShare(config: config, verbose: verbose)
        let sinks = here.sinks(share, answeredBy: answer)
        guard !sinks.isEmpty, let drawn = await here.draw(event, on: sinks) else {
            return daemon.conclude(answer, dryRun: false, json: json, wait: wait)
        }
        let merged = CallerShare.merged(answer, drawn: drawn)
        if wait && drawn.summary == .delivered && !CallerShare.daemonTook(answer) {
            // Only what this process drew was delivered: the interaction can come from it alone.
            daemon.show(merged, json: json, text: verbose, textOnStdout: false)
            show(await Self.firstInteraction(with: drawn, router: here.router), printsDismissal: true)
        } else {
            _ = daemon.conclude(merged, dryRun: false, json: json, wait: wait)
        }
        await here.exit.finish(here.router, noWait: noWait)
        return ExitCode(merged.exit ?? ExitStatus.noneDelivered.rawValue)
    }

    /// Routes in this process, as without a daemon; `event` is the one already made when a
    /// daemon was tried first (its body may have been read from standard input).
    private func routeLocally(_ event: NotificationEvent?) async throws {
        let (router, _) = try RouterLoader.load(config: config, verbose: verbose, sharedState: true, perEvent: true)
        try await route(event, with: router)
    }

    /// Sends with `router` and ends with the exit status. `delivered` sees the report
    /// before any wait (`notify-send -p` prints the id there); `printsDismissal`: `--wait`
    /// prints how a notification closed, where notify-send's `-w` prints nothing.
    func route(
        _ event: NotificationEvent?, with router: NotificationRouter, printsDismissal: Bool = true,
        delivered: (DeliveryReport) -> Void = { _ in }
    ) async throws {
        let sinks = try SinkSelection.validated(flags.sinks, router: router)
        let notification = event ?? flags.makeEvent(title: title, body: body)
        // The router was loaded `perEvent`: this event decides whether the network executable routes it.
        NetworkHandOff.runIfReached(notification, only: sinks, router: router, releasingPause: !dryRun)
        let exit = ExitFlush(router)
        exit.install()
        _ = exit.beginEvent()
        let controls = dryRun ? nil : await router.releaseEndedPauseReadingControls()
        let report: DeliveryReport
        do {
            report = dryRun ? try await router.dryRun(notification, only: sinks) : try await router.send(notification, only: sinks, controls: controls)
        } catch {
            Console.error("bad event: \(error.description)")
            exit.endEvent()
            throw ExitStatus.badEventData
        }
        if json { Console.out(ReportPrinter.json(report, via: .local)) }
        if verbose || (dryRun && !json) {
            Console.write(dryRun && !json ? 1 : 2, ReportPrinter.text(report) + "\n")
        } else if !json {
            ReportPrinter.problems(report)
        }
        exit.endEvent()
        delivered(report)
        let status = dryRun ? ExitStatus.delivered : ExitStatus.forReport(report)
        if wait && !dryRun && report.summary == .delivered {
            show(await Self.firstInteraction(with: report, router: router), printsDismissal: printsDismissal)
        }
        if !dryRun {
            // Sticky (`never`) banners would hold the process forever: a CLI call gives them
            // one hour at most; queued journal records get seconds (``ExitFlush``).
            await exit.finish(router, noWait: noWait)
        }
        throw status
    }
}

enum SinkSelection {
    /// `--sink` names must exist: a typo is a usage error (64), not a silent no-op.
    static func validated(_ names: [String], router: NotificationRouter) throws -> [String]? {
        guard !names.isEmpty else { return nil }
        let known = router.configuration.sinks.map(\.name)
        for name in names where !known.contains(name) {
            Console.error("--sink \"\(name)\": no such sink in \(router.configuration.origin); known sinks: \(known.joined(separator: ", "))")
            throw ExitStatus.usage
        }
        return names
    }
}

extension SendRequest {
    enum Waited {
        case interaction(sink: String, NotificationInteraction)
        /// Nothing came within the event's timeout and a margin (``NotificationTimeout/waitLimit``).
        case expired
        case nothingReports
    }

    /// The first action or dismissal, waited for no longer than the event's timeout allows:
    /// a server that expires a notification without saying so must not hold `--wait` forever.
    /// What `--wait` prints of the first interaction.
    private func show(_ waited: Waited, printsDismissal: Bool) {
        switch waited {
        case .interaction(let sink, let interaction):
            switch interaction {
            case .actionInvoked(let id): Console.out(id)
            case .dismissed(let reason): if printsDismissal { Console.out(reason.rawValue) }
            case .shown: break
            }
            if verbose { Console.error("interaction from \(sink)") }
        case .expired:
            if printsDismissal { Console.out(DismissReason.expired.rawValue) }
            if verbose { Console.error("--wait: no sink signalled within the event's timeout and a margin; taken as expired") }
        case .nothingReports:
            Console.error("--wait: no sink that delivered this event reports actions or dismissal (the desktop sink does, when a notification daemon is running)")
        }
    }

    static func firstInteraction(with report: DeliveryReport, router: NotificationRouter) async -> Waited {
        let limit = report.event.timeout.waitLimit
        return await withTaskGroup(of: Waited?.self) { group in
            group.addTask {
                guard let (sink, interaction) = await router.firstInteraction(with: report) else { return .nothingReports }
                return .interaction(sink: sink, interaction)
            }
            if let limit {
                group.addTask { (try? await Task.sleep(for: limit)) == nil ? nil : .expired }
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .nothingReports
        }
    }
}

extension NotificationTimeout {
    /// How long `--wait` waits for an action or a dismissal: the timeout and a margin for
    /// the server to act on it; a server's default at most 30 s; `never`, for as long as it takes.
    var waitLimit: Duration? {
        switch self {
        case .never: nil
        case .after(let duration): duration + .seconds(2)
        case .serverDefault: .seconds(30)
        }
    }
}
