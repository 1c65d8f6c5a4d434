import NotifyRoute
import NotifyRouteHost
import Testing

@testable import NotifyRouteCLI

/// `send --json` prints a daemon's report with its own writer: the bytes must be those
/// `JSONEncoder` writes for the same report, so that a script sees one format whichever
/// process routed the event.
@Suite struct DaemonReportPrintingTests {
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
