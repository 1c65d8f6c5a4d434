import Foundation
@testable import NotifyRoute
import NotifyRouteTestSupport
import Testing

/// The history's rows are written by ``JSONWriter``, not `JSONEncoder`: these check that
/// the bytes are those the encoder wrote (so that `history --json` prints, and `replay`
/// and a pause's release read, exactly what they did), and that a row reads back whole.
@Suite struct HistoryJSONTests {
    /// Text that JSON must escape or must leave alone.
    static let awkward = [
        "plain", "", "Disk \u{e9} full \u{1F4BE} \u{05D0}\u{05D1} e\u{301} \u{FEFF}\u{2028}\u{2029}",
        "quote \" backslash \\ slash / </script>", "tab\tnewline\ncr\rbs\u{08}ff\u{0C}",
        String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}\u{80}\u{9F}",
        "\\u0041 \\n not escapes", "{\"json\": [1, 2]}",
    ]

    /// Keys that sort differently by bytes than by characters, and the text as a key too
    /// (a dictionary literal would trap where it equals one of them).
    static func fields(_ text: String) -> [String: String] {
        var fields = ["PCT": "92", "pct": "93", "_": "", "\u{e9}": "e", "Z": "z", "DEV": "/dev/sda"]
        fields[text] = text
        return fields
    }

    static var events: [NotificationEvent] {
        var events: [NotificationEvent] = [NotificationEvent(title: "just a title")]
        for (index, text) in awkward.enumerated() {
            events.append(NotificationEvent(
                title: text, body: text, level: Level.allCases[index % Level.allCases.count],
                timeout: index % 2 == 0 ? .after(.milliseconds(1500)) : .never, app: text, source: "src/\(text)",
                tags: [text, "ops", "Z", "a\u{301}", "\u{e1}"], dedupKey: text, replaceKey: text, icon: "/usr/share/\(text)",
                category: text, actions: [NotificationAction(id: "id" + text, label: "label " + text), NotificationAction(id: "ack", label: "Ack")],
                fields: fields(text),
                messageID: "0123456789abcdef0123456789abcdef", progress: index * 14))
            // What the history keeps in parts: no value outside its columns but the timeout and dedup key.
            events.append(NotificationEvent(
                title: text, body: index % 2 == 0 ? text : nil, level: Level.allCases[index % Level.allCases.count],
                timeout: index % 2 == 0 ? .never : .after(.milliseconds(250)), app: text, source: index % 3 == 0 ? nil : text,
                tags: index % 2 == 0 ? [] : [text, "ops", "a\u{301}"], dedupKey: index % 2 == 0 ? text : nil,
                category: index % 2 == 0 ? nil : text))
        }
        return events
    }

    /// Every status, and every suppression reason.
    static let statuses: [SinkOutcome.Status] = [
        .delivered, .replaced(previous: SinkHandle("42")), .queued(reason: "no terminal \"here\""),
        .failed(SinkError(.failed, "exit 3: \u{1B}[31mred\n")), .failed(SinkError(.timedOut, "no answer in 2s")),
        .unavailable(reason: "no session bus at /run/user/1000/bus"), .planned(.show),
        .suppressed(.duplicate(count: 3, window: .seconds(600), updatedInPlace: true)),
        .suppressed(.duplicate(count: 2, window: .seconds(90), updatedInPlace: false)),
        .suppressed(.belowMinimumLevel(.warning)),
        .suppressed(.rateLimited(max: 5, per: .seconds(60), held: 7)), .suppressed(.quietHours(window: "22:00-07:00", held: 2)),
        .suppressed(.inhibited(by: "inhibit 1 (source level=critical)")), .suppressed(.silenced(id: "1a2b3c4d")),
        .suppressed(.paused(below: .critical)), .suppressed(.lastResort(tookIt: "desktop, journal")),
        .suppressed(.grouped(group: "db \u{e9}", count: 4, due: Date(timeIntervalSince1970: 1_790_000_000.5))),
    ]

    static var reports: [DeliveryReport] {
        events.enumerated().flatMap { index, event -> [DeliveryReport] in
            let resolved = resolvedAsGiven(event)
            let outcomes = statuses.enumerated().map { position, status in
                SinkOutcome(sink: "sink\(position) \(awkward[position % awkward.count])", kind: "terminal", status: status, route: "route 1")
            }
            return [
                DeliveryReport(event: resolved, matchedRules: ["rule 1 \"\(event.title)\""], matchedRoutes: ["route 1", "fallback"],
                               outcomes: Array(outcomes[(index % outcomes.count)...]) + outcomes),
                DeliveryReport(event: resolved, matchedRules: ["rule 2"], droppedBy: "rule 2 \"drop \(event.title)\""),
                DeliveryReport(event: resolved),
            ]
        }
    }

    /// The record's time, written digit by digit, reads as a formatter would write it.
    @Test func timeIsRFC3339WithMilliseconds() throws {
        #expect(HistoryTime.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(HistoryTime.format(Date(timeIntervalSince1970: 1_790_000_000.125)) == "2026-09-21T14:13:20.125Z")
        #expect(HistoryTime.format(Date(timeIntervalSince1970: 253_402_300_799.5)) == "9999-12-31T23:59:59.500Z")
        var formatter = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        formatter.timeZone = TimeZone(identifier: "UTC")!
        for _ in 0..<2_000 {
            // Eighths of a second, exact in binary: the formatter's rounding and our truncation agree.
            let date = Date(timeIntervalSince1970: Double(Int64.random(in: -16_000_000_000...2_000_000_000_000)) / 8)
            #expect(HistoryTime.format(date) == formatter.format(date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func recordIsWhatTheEncoderWrote() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let times = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_790_000_000.25), Date()]
        var checked = 0
        for (index, report) in Self.reports.enumerated() {
            let record = HistoryRecord(report, time: times[index % times.count])
            let encoded = String(decoding: try encoder.encode(record), as: UTF8.self)
            #expect(record.json() == encoded)
            checked += 1
        }
        #expect(checked == Self.events.count * 3)
    }

    /// What the history stores is written in one pass: the record's JSON and summary as
    /// the record gives them.
    @Test func recordWrittenInOnePassIsTheRecord() throws {
        let times = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_790_000_000.25), Date()]
        for (index, report) in Self.reports.enumerated() {
            let record = HistoryRecord(report, time: times[index % times.count])
            let written = HistoryRecord.written(report, time: times[index % times.count])
            #expect(written.json == record.json())
            #expect(written.summary == record.summary)
        }
    }

    @Test func inputIsWhatTheEncoderWroteWithProgress() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for event in Self.events {
            let encoded = String(decoding: try encoder.encode(EncodedInput(event: event)), as: UTF8.self)
            #expect(IngestInput.json(event) == encoded)
        }
    }

    /// What replay and a pause's release send again is the event as it was given, progress included.
    @Test func inputReadsBackAsTheEventGiven() throws {
        for event in Self.events {
            let decoded = try NotificationEvent.decode(jsonLine: IngestInput.json(event))
            #expect(decoded == event)
        }
    }

    /// How a record reaches history.db: inserted by its own connection, appended to the spool
    /// by a one-shot send and folded, or buffered by a daemon's batch and inserted with it.
    enum Path: String, CaseIterable, Sendable {
        case inserted, spooled, batched
    }

    /// A row written to history.db and read back is the encoder's record, and the event
    /// given, whichever way it went.
    @Test(arguments: Path.allCases) func rowReadsBackIdentically(path: Path) throws {
        let directory = try TestEnvironment.temporaryDirectory("history-json", permissions: 0o700).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = RouterMemory(directory: directory, keepsOpen: path != .spooled, notice: { Issue.record("notice: \($0)") })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let reports = Self.reports
        try #require(reports.count >= RouterMemory.insertedLines)
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        func recordAll(in batch: StateBatch? = nil) {
            for (index, report) in reports.enumerated() {
                memory.record(report, input: Self.events[index / 3], settings: HistorySettings(), now: start.addingTimeInterval(Double(index)), keep: true,
                              batch: batch)
            }
        }
        if path == .batched {
            _ = memory.spoolRecords()
            let batch = StateBatch(maximumAge: .seconds(60))
            recordAll(in: batch)
            batch.commit()
        } else {
            recordAll()
        }
        if path == .inserted {
            #expect(!FileManager.default.fileExists(atPath: directory + "/history.db-spool"), "inserted, not spooled")
        }
        let entries = try memory.entries(since: nil, limit: nil, matching: .any)
        try #require(entries.count == reports.count)
        // Stored in parts: every event with nothing outside the columns, and tags the column splits back.
        let inParts = reports.filter { report in
            report.event.actions.isEmpty && report.event.replaceKey == nil && !report.event.tags.contains { $0.isEmpty || $0.contains("\u{1F}") }
        }.count
        #expect(inParts > reports.count / 3)
        let stored = try ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [directory + "/history.db", "SELECT count(*) FROM events WHERE timeout IS NOT NULL"])
        #expect(stored.standardOutput == "\(inParts)\n", "\(stored.standardError)")
        for (index, entry) in entries.enumerated() {
            let record = HistoryRecord(reports[index], time: start.addingTimeInterval(Double(index)))
            #expect(entry.record == String(decoding: try encoder.encode(record), as: UTF8.self))
            #expect(try NotificationEvent.decode(jsonLine: entry.input) == Self.events[index / 3])
            #expect(entry.outcomeSummary == record.summary)
        }
    }
}

/// The event with every value it gave, the rest as the cascade's built-in defaults.
private func resolvedAsGiven(_ event: NotificationEvent) -> ResolvedEvent {
    ResolvedEvent(
        title: event.title, body: event.body, level: event.level ?? .info, timeout: event.timeout ?? .after(.seconds(5)),
        app: event.app ?? "notify-route", source: event.source, tags: event.tags, dedupKey: event.dedupKey,
        replaceKey: event.replaceKey, icon: event.icon, category: event.category, actions: event.actions,
        fields: event.fields, messageID: event.messageID, progress: event.progress)
}

/// The encoder's form of the input before the writer (`IngestInput`'s `encode(to:)` as it
/// was), with `progress`, which it left out (so replay lost it).
private struct EncodedInput: Encodable {
    let event: NotificationEvent

    enum CodingKeys: String, CodingKey {
        case title, body, level, timeout, app, source, tags, dedupKey = "dedup_key", replaceKey = "replace_key"
        case icon, category, actions, fields, messageID = "message_id", progress
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.title, forKey: .title)
        try container.encodeIfPresent(event.body, forKey: .body)
        try container.encodeIfPresent(event.level?.rawValue, forKey: .level)
        try container.encodeIfPresent(event.timeout?.description, forKey: .timeout)
        try container.encodeIfPresent(event.app, forKey: .app)
        try container.encodeIfPresent(event.source, forKey: .source)
        if !event.tags.isEmpty { try container.encode(event.tags.sorted(), forKey: .tags) }
        try container.encodeIfPresent(event.dedupKey, forKey: .dedupKey)
        try container.encodeIfPresent(event.replaceKey, forKey: .replaceKey)
        try container.encodeIfPresent(event.icon, forKey: .icon)
        try container.encodeIfPresent(event.category, forKey: .category)
        if !event.actions.isEmpty { try container.encode(event.actions.map(\.description), forKey: .actions) }
        if !event.fields.isEmpty { try container.encode(event.fields, forKey: .fields) }
        try container.encodeIfPresent(event.messageID, forKey: .messageID)
        try container.encodeIfPresent(event.progress, forKey: .progress)
    }
}
