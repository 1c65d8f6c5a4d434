#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ArgumentParser
import NotifyRoute
import NotifyRouteClient

/// This process's share of an event the daemon routed: the sinks its answer names that
/// only this process can show (``DaemonHandOff/callerShare(of:)``), drawn here with
/// ``NotificationRouter/draw(_:on:)``: the rules and routes again (they are pure), no
/// policy stage, no failover and nothing recorded, since the daemon did all three. The
/// event is thus routed once, by the daemon, and its answer gets the drawn outcomes in
/// place of its own.
struct CallerShare {
    /// The daemon's config (the same file: ``DaemonHandOff/connect(socket:config:verbose:first:)``
    /// routes here otherwise), with its state in memory and no history.
    let router: NotificationRouter
    let exit: ExitFlush

    init(config: String?, verbose: Bool) throws {
        (router, _) = try RouterLoader.load(config: config, verbose: verbose)
        exit = ExitFlush(router)
        exit.install()
    }

    /// The sinks of `share` to draw: every one when the daemon delivered nothing; else
    /// those that are not a last resort here (`unattended: last-resort` stands by when
    /// another sink took the event, as in a local run).
    func sinks(_ share: [String], answeredBy answer: DaemonProtocol.Answer) -> [String] {
        guard Self.daemonTook(answer) else { return share }
        return share.filter { router.sink(named: $0)?.capabilities.lastResort == false }
    }

    /// Draws `event` on `sinks`. A drawn banner keeps this process until it goes, as in a local run.
    func draw(_ event: NotificationEvent, on sinks: [String]) async -> DeliveryReport? {
        _ = exit.beginEvent()
        defer { exit.endEvent() }
        return try? await router.draw(event, on: sinks)
    }

    /// The daemon's `answer` once this process drew its share of `event` on `share`, or
    /// the answer as it was when there is nothing to draw here.
    func merged(_ answer: DaemonProtocol.Answer, drawing event: NotificationEvent, on share: [String]) async -> DaemonProtocol.Answer {
        let sinks = sinks(share, answeredBy: answer)
        guard !sinks.isEmpty, let drawn = await draw(event, on: sinks) else { return answer }
        return Self.merged(answer, drawn: drawn)
    }

    /// Whether the daemon's sinks took the event (delivered it, or held it on purpose).
    static func daemonTook(_ answer: DaemonProtocol.Answer) -> Bool {
        answer.summary == DeliveryReport.Summary.delivered.rawValue || answer.summary == DeliveryReport.Summary.suppressed.rawValue
    }

    /// `answer` with the outcomes of `drawn` in place of the daemon's for the same sinks: its
    /// report, summary, exit code, problems and text read as one local run's would.
    static func merged(_ answer: DaemonProtocol.Answer, drawn: DeliveryReport) -> DaemonProtocol.Answer {
        guard case .object(var fields)? = answer.report, case .array(let sinks)? = fields["sinks"],
              let local = try? JSONDecoder().decode(JSONValue.self, from: Data(drawn.json())),
              case .array(let drawnSinks)? = local["sinks"]
        else { return answer }
        var byName: [String: JSONValue] = [:]
        for sink in drawnSinks { if let name = sink["sink"]?.string { byName[name] = sink } }
        let mergedSinks = sinks.map { sink in sink["sink"]?.string.flatMap { byName[$0] } ?? sink }
        fields["sinks"] = .array(mergedSinks)
        var merged = answer
        let deliveredHere = drawn.summary == .delivered
        if deliveredHere && !daemonTook(answer) {
            fields["summary"] = .string(DeliveryReport.Summary.delivered.rawValue)
            merged.exit = ExitStatus.delivered.rawValue
        }
        merged.report = .object(fields)
        // The daemon's lines for the drawn sinks give way to this process's; once delivered,
        // an unavailable sink is no longer a problem (``ReportPrinter/problemLines(_:)``).
        let unavailable = mergedSinks.compactMap { $0["status"]?.string == "unavailable" ? $0["sink"]?.string : nil }
        let replaced = Set(byName.keys).union(merged.exit == ExitStatus.delivered.rawValue ? unavailable : [])
        merged.problems = (answer.problems ?? []).filter { line in !replaced.contains { line.hasPrefix("\($0): ") } }
            + ReportPrinter.problemLines(drawn).filter { line in byName.keys.contains { line.hasPrefix("\($0): ") } }
        if let text = answer.text {
            let drawnLines = ReportPrinter.text(drawn).split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
            merged.text = text + "\n  drawn by this process:" + drawnLines.map { "\n  " + $0 }.joined()
        }
        return merged
    }
}
