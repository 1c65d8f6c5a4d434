import NotifyRouteClient
import Testing

@testable import NotifyRoute
@testable import NotifyRouteCLI

/// `send --json` prints a report with the report's own writer, a daemon's report with
/// JSONValue's: the bytes must be those `JSONEncoder` writes for the same report, so that
/// a script sees one format whichever process routed the event.
@Suite struct DaemonReportPrintingTests {
    @Test func aLocalReportPrintsAsJSONEncoderPrintsIt() {
        let event = ResolvedEvent(
            title: "Disk \"sda\" / full\n", body: "92%\t✓", level: .warning, timeout: .never, app: "a", source: "cron", tags: ["x", "y"],
            dedupKey: "d\u{1F}e", replaceKey: "disk", icon: nil, category: nil, actions: [], fields: [:], messageID: nil, progress: 40)
        let outcomes = [
            SinkOutcome(sink: "desktop", kind: "desktop", status: .replaced(previous: SinkHandle("6")), handle: SinkHandle("7"),
                        route: "route 1", notes: ["a note"], duration: .microseconds(1234)),
            SinkOutcome(sink: "journal", kind: "journal", status: .failed(SinkError(.unavailable, "gone", isRetryable: true)),
                        route: "route 1", failoverFor: "desktop", duration: .seconds(2)),
        ]
        let report = DeliveryReport(event: event, matchedRules: ["rule 1"], matchedRoutes: ["route 1"], outcomes: outcomes, notes: ["n"])
        for via in [ReportPrinter.Via.local, .daemon] {
            #expect(ReportPrinter.json(report, via: via) == ReportPrinter.json(ReportPrinter.Routed(report: report, via: via)))
        }
    }

    @Test func aDaemonsReportPrintsAsJSONEncoderPrintsIt() throws {
        let report = JSONValue.object([
            "summary": .string("delivered"), "dropped_by": .null,
            "event": .object([
                "title": .string("Disk \"sda\"\n/ full \u{1}\u{1F}\t ünï ✓"), "dedup_key": .string("info\u{1F}\u{1F}x\u{1F}"),
                "tags": .array([.string("b/c"), .string("a")]), "progress": .number(42), "body": .null,
            ]),
            "sinks": .array([
                .object(["status": .string("delivered"), "duration_ms": .number(0.014), "handle": .number(17), "notes": .array([])]),
                .object(["status": .string("failed"), "duration_ms": .number(1234.5), "retryable": .bool(true)]),
            ]),
            "notes": .array([]), "rules": .array([.string("rule 1 \"quiet\"")]), "routes": .array([]),
        ])
        let printed = ReportPrinter.json(report, via: .daemon)
        #expect(printed == ReportPrinter.json(ReportPrinter.Routed(report: report, via: .daemon)))
        #expect(printed.hasSuffix(#","via":"daemon"}"#))
    }
}
