import ArgumentParser
import Glibc
import NotifyRoute
import NotifyRouteClient

extension IngestCommand {
    /// `ingest` through the daemon: each line is checked here (a bad line reads as it does
    /// locally), handed over, and its answer printed with its line number. When the
    /// daemon goes away, this event and the rest are routed here, as without a daemon.
    func handOff(to daemon: DaemonHandOff) async throws {
        if let usage = daemon.validate(sinks: sink) { throw usage }
        let started = ContinuousClock.now
        var tally = Tally()
        var local: LocalRoute?
        var drawing: CallerShare?
        var daemonGone = false
        for await item in LineReader(fd: STDIN_FILENO) {
            let number: Int, text: String
            switch line(item, &tally) {
            case .blank: continue
            case .tooLong(let line, let message):
                bad(line, message, &tally)
                continue
            case .text(let line, let content): (number, text) = (line, content)
            }
            let event: NotificationEvent
            do {
                event = try self.event(from: text)
            } catch {
                bad(number, "\(error)", &tally)
                continue
            }
            if !daemonGone {
                switch daemon.route(event, sinks: sink) {
                case .answered(let answer):
                    show(answer, line: number, &tally)
                    continue
                case .share(let answer, let sinks):
                    let here = try drawing ?? CallerShare(config: global.config, verbose: global.verbose)
                    drawing = here
                    show(await here.merged(answer, drawing: event, on: sinks), line: number, &tally)
                    continue
                case .gone: daemonGone = true
                }
            }
            let here = try local ?? LocalRoute(global, sinks: sink)
            local = here
            _ = here.exit.beginEvent()
            defer { here.exit.endEvent() }
            do {
                let report = try await here.router.send(event, only: here.sinks)
                count(report.summary.rawValue, &tally)
                if json { Console.out("{\"line\":\(number)," + ReportPrinter.json(report, via: .local).dropFirst()) }
                if global.verbose {
                    Console.error("stdin:\(number): " + ReportPrinter.text(report))
                } else if !json {
                    for line in ReportPrinter.problemLines(report) { Console.error("stdin:\(number): \(line)") }
                }
            } catch {
                bad(number, "\(error)", &tally)
            }
        }
        if let drawing { _ = await drawing.exit.finish(drawing.router, noWait: noWait) }
        if let local { tally.dropped = await local.exit.finish(local.router, noWait: noWait) }
        if tally.bad > 0 { Console.error("\(tally.bad) of \(tally.lines) lines were bad") }
        if stats { printStats(tally, elapsed: ContinuousClock.now - started) }
        throw exitStatus(tally)
    }

    private func show(_ answer: DaemonProtocol.Answer, line number: Int, _ tally: inout Tally) {
        guard answer.hasReport else {
            // What the daemon refused that the local decoder let through.
            let error = answer.error ?? "the daemon sent no report"
            bad(number, error.hasPrefix("bad event: ") ? String(error.dropFirst("bad event: ".count)) : error, &tally)
            return
        }
        count(answer.summary, &tally)
        if json, let report = answer.report { Console.out("{\"line\":\(number)," + ReportPrinter.json(report, via: .daemon).dropFirst()) }
        if global.verbose, let lines = answer.text {
            Console.error("stdin:\(number): " + lines)
        } else if !json {
            for line in answer.problems ?? [] { Console.error("stdin:\(number): \(line)") }
        }
    }

    private func count(_ summary: String?, _ tally: inout Tally) {
        switch summary.flatMap(DeliveryReport.Summary.init(rawValue:)) {
        case .delivered?, .planned?: tally.delivered += 1
        case .suppressed?: tally.suppressed += 1
        case .noSinkAvailable?: tally.noSink += 1
        case .failed?, nil: tally.failed += 1
        }
    }
}

/// The router of a command that hands its events to the daemon, made only when one of
/// them must be routed here after all, as the command would without a daemon.
struct LocalRoute {
    let router: NotificationRouter
    let sinks: [String]?
    let exit: ExitFlush

    /// `installingExitFlush: false` leaves SIGTERM and SIGINT alone until ``ExitFlush/install()``
    /// (`run`'s command owns them while it runs).
    init(_ global: GlobalOptions, sinks names: [String], installingExitFlush: Bool = true) throws {
        (router, _) = try RouterLoader.load(global, sharedState: true, streaming: true)
        sinks = try SinkSelection.validated(names, router: router)
        exit = ExitFlush(router)
        if installingExitFlush { exit.install() }
    }
}
