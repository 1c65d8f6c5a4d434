import Foundation
import NotifyRoute
import NotifyRouteJournal
import NotifyRouteTestSupport
import Testing

/// What the sink writes, checked without journald: names, fields, options, the catalog.
@Suite struct JournalFieldNameTests {
    @Test(arguments: [
        ("DISK_PATH", "DISK_PATH"),
        ("disk.path", "DISK_PATH"),
        ("Disk Path", "DISK_PATH"),
        ("_secret", "SECRET"),
        ("__x", "X"),
        ("2fa-code", "FIELD_2FA_CODE"),
        ("_9", "FIELD_9"),
        ("é", "FIELD"),
        ("", "FIELD"),
        ("naïve", "NA_VE"),
        ("a=b", "A_B"),
        ("x\ny", "X_Y"),
    ])
    func sanitise(original: String, expected: String) {
        #expect(JournalFieldName.sanitize(original) == expected)
        #expect(JournalFieldName.isValid(expected))
    }

    @Test func longNamesAreCutTo64() {
        let long = String(repeating: "a", count: 100)
        #expect(JournalFieldName.sanitize(long) == String(repeating: "A", count: 64))
        #expect(JournalFieldName.isValid(String(repeating: "A", count: 64)))
        #expect(!JournalFieldName.isValid(String(repeating: "A", count: 65)))
    }

    @Test(arguments: ["", "_X", "1X", "lower", "A-B", "A B", "Ä"])
    func invalidNames(name: String) {
        #expect(!JournalFieldName.isValid(name))
        #expect(JournalFieldName.isValid(JournalFieldName.sanitize(name)))
    }
}

@Suite struct JournalEventFormatTests {
    static func delivery(_ event: ResolvedEvent, intent: SinkDelivery.Intent = .show, count: Int = 1) -> SinkDelivery {
        SinkDelivery(event: event, sinkName: "journal", intent: intent, duplicateCount: count)
    }

    @Test func theRouterFields() {
        let event = ResolvedEvent(
            title: "Disk full", body: "sda1: 99%\nsdb1: 40%", level: .warning, app: "diskwatch", source: "disk",
            tags: ["ops", "disk"], dedupKey: "disk-sda1", replaceKey: "disk-status",
            messageID: "0123456789ABCDEF0123456789abcdef", callSite: CallSite(file: "App/Main.swift", line: 42, function: "check()"))
        let (record, notes) = JournalEventFormat.record(for: Self.delivery(event, count: 3))
        #expect(record["MESSAGE"] == "Disk full\nsda1: 99%\nsdb1: 40%")
        #expect(record["PRIORITY"] == "4")
        #expect(record["SYSLOG_IDENTIFIER"] == "diskwatch")
        #expect(record["MESSAGE_ID"] == "0123456789abcdef0123456789abcdef")
        #expect(record["CODE_FILE"] == "App/Main.swift")
        #expect(record["CODE_LINE"] == "42")
        #expect(record["CODE_FUNC"] == "check()")
        #expect(record["NOTIFY_ROUTE_LEVEL"] == "warning")
        #expect(record["NOTIFY_ROUTE_SOURCE"] == "disk")
        #expect(record.values("NOTIFY_ROUTE_TAGS") == ["disk", "ops"])
        #expect(record["NOTIFY_ROUTE_DEDUP_KEY"] == "disk-sda1")
        #expect(record["NOTIFY_ROUTE_REPLACE_KEY"] == "disk-status")
        #expect(record["NOTIFY_ROUTE_DUPLICATE_COUNT"] == "3")
        #expect(record["NOTIFY_ROUTE_SINK"] == "journal")
        #expect(notes.isEmpty)
    }

    @Test func optionalFieldsAreLeftOut() {
        let (record, _) = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "plain")))
        #expect(record["MESSAGE"] == "plain")
        for name in ["MESSAGE_ID", "CODE_FILE", "NOTIFY_ROUTE_SOURCE", "NOTIFY_ROUTE_TAGS", "NOTIFY_ROUTE_REPLACE_KEY",
                     "NOTIFY_ROUTE_DUPLICATE_COUNT", "NOTIFY_ROUTE_REPLACES", "NOTIFY_ROUTE_FIELD_NAME"] {
            #expect(record[name] == nil, "\(name)")
        }
    }

    @Test func theIdentifierOptionWinsOverTheApp() {
        let (record, _) = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "t", app: "myapp")), identifier: "backup")
        #expect(record["SYSLOG_IDENTIFIER"] == "backup")
        #expect(record["NOTIFY_ROUTE_APP"] == "myapp")
    }

    @Test func aReplaceOrCountUpdateNamesTheHandle() {
        let (replacing, _) = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "t"), intent: .replace(SinkHandle("7"))))
        #expect(replacing["NOTIFY_ROUTE_REPLACES"] == "7")
        let (updating, _) = JournalEventFormat.record(
            for: Self.delivery(ResolvedEvent(title: "t"), intent: .updateDuplicateCount(SinkHandle("9"), count: 4), count: 4))
        #expect(updating["NOTIFY_ROUTE_DUPLICATE_OF"] == "9")
        #expect(updating["NOTIFY_ROUTE_DUPLICATE_COUNT"] == "4")
    }

    @Test func theDefaultDedupKeyIsWrittenAsAStableHash() throws {
        let a = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "same", body: "b", source: "s"))).record
        let b = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "same", body: "b", source: "s"))).record
        let c = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "other", body: "b", source: "s"))).record
        let key = try #require(a["NOTIFY_ROUTE_DEDUP_KEY"])
        #expect(key.hasPrefix("default:"))
        #expect(key.count == "default:".count + 16)
        #expect(a["NOTIFY_ROUTE_DEDUP_KEY"] == b["NOTIFY_ROUTE_DEDUP_KEY"])
        #expect(a["NOTIFY_ROUTE_DEDUP_KEY"] != c["NOTIFY_ROUTE_DEDUP_KEY"])
    }

    @Test func userFieldsAreSanitisedAndTheOriginalNameKept() {
        let event = ResolvedEvent(title: "t", fields: [
            "disk.path": "/dev/sda", "disk-path": "/dev/sdb", "_secret": "s", "2fa": "x", "PRIORITY": "0",
            "OK_NAME": "v", String(repeating: "n", count: 70): "long",
        ])
        let (record, notes) = JournalEventFormat.record(for: Self.delivery(event), staticFields: ["ROLE": "static", "OK_NAME": "static"])
        // Sorted by original name: "disk-path" < "disk.path", so the dot one is numbered.
        #expect(record["DISK_PATH"] == "/dev/sdb")
        #expect(record["DISK_PATH_2"] == "/dev/sda")
        #expect(record["SECRET"] == "s")
        #expect(record["FIELD_2FA"] == "x")
        #expect(record.values("PRIORITY") == ["6"], "a user field never doubles the sink's own")
        #expect(record["USER_PRIORITY"] == "0")
        #expect(record["OK_NAME"] == "v", "the event's field wins over the config's")
        #expect(record["ROLE"] == "static")
        #expect(record[String(repeating: "N", count: 64)] == "long")
        #expect(Set(record.values("NOTIFY_ROUTE_FIELD_NAME")) == [
            "DISK_PATH=disk-path", "DISK_PATH_2=disk.path", "SECRET=_secret", "FIELD_2FA=2fa", "USER_PRIORITY=PRIORITY",
            String(repeating: "N", count: 64) + "=" + String(repeating: "n", count: 70),
        ])
        #expect(notes.contains("field \"disk.path\" written as DISK_PATH_2 (journal names are A-Z, 0-9 and _)"))
        #expect(record.fields.allSatisfy { JournalFieldName.isValid($0.name) })
    }

    @Test func multiLineAndByteValuesAreKeptAsTheyAre() {
        var record = JournalRecord([("MESSAGE", "a\nb\n\nc")])
        record.append("BLOB", bytes: [0xff, 0x00, 0x0a, 0x41])
        #expect(record["MESSAGE"] == "a\nb\n\nc")
        #expect(record.fields.last?.value == [0xff, 0x00, 0x0a, 0x41])
        #expect(record.fields.last?.text == nil)
    }

    @Test func anInvalidMessageIDIsNotWrittenAndSaysSo() {
        let (record, notes) = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "t", messageID: "xyz")))
        #expect(record["MESSAGE_ID"] == nil)
        #expect(notes == ["MESSAGE_ID \"xyz\" is not 32 hexadecimal digits; not written"])
    }

    @Test(arguments: Level.allCases)
    func priorityFollowsTheLevelTable(level: Level) {
        let expected = ["debug": "7", "info": "6", "notice": "5", "success": "5", "warning": "4", "error": "3", "critical": "2"]
        let (record, _) = JournalEventFormat.record(for: Self.delivery(ResolvedEvent(title: "t", level: level)))
        #expect(record["PRIORITY"] == expected[level.rawValue])
    }
}

@Suite struct JournalPluginOptionTests {
    static func make(_ values: [String: ConfigNode]) throws -> JournalSink {
        let sink = try JournalSink.plugin.makeSink(SinkOptions(sinkName: "j", kind: "journal", values))
        return try #require(sink as? JournalSink)
    }

    @Test func defaultsForTheConfig() throws {
        let sink = try Self.make([:])
        #expect(sink.queueSize == 0, "no queue for a process that exits after sending")
        #expect(sink.identifier == nil)
        #expect(sink.name == "j")
        #expect(JournalSink.plugin.optionKeys == ["identifier", "queue_size", "fields"] + SinkRetry.keys.map(\.name))
    }

    @Test func options() throws {
        let sink = try Self.make(["identifier": "backup", "queue_size": 64, "fields": ["ROLE": "db", "TIER": "1"]])
        #expect(sink.identifier == "backup")
        #expect(sink.queueSize == 64)
        #expect(sink.fields == ["ROLE": "db", "TIER": "1"])
    }

    @Test func badFieldNamesAreConfigErrorsWithASuggestion() {
        #expect {
            try Self.make(["fields": ["disk.path": "x"]])
        } throws: { error in
            "\(error)".contains("\"disk.path\" is not a journal field name") && "\(error)".contains("did you mean DISK_PATH?")
        }
        #expect {
            try Self.make(["fields": ["PRIORITY": "0"]])
        } throws: { error in
            "\(error)".contains("PRIORITY is written by the journal sink itself")
        }
    }

    @Test func badValues() {
        #expect(throws: ConfigError.self) { try Self.make(["queue_size": -1]) }
        #expect(throws: ConfigError.self) { try Self.make(["queue_size": "lots"]) }
        #expect(throws: ConfigError.self) { try Self.make(["identifier": ""]) }
    }
}

@Suite struct JournalCatalogTests {
    static let catalog = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/journal/notify-route.catalog")

    @Test func theCatalogDefinesEveryPublicID() throws {
        let text = try String(contentsOf: Self.catalog, encoding: .utf8)
        let ids = text.split(separator: "\n").filter { $0.hasPrefix("-- ") }.map { String($0.dropFirst(3)) }
        #expect(ids.sorted() == JournalCatalog.all.map(\.id).sorted())
        for (id, subject) in JournalCatalog.all {
            #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
            #expect(text.contains("-- \(id)\nSubject: \(subject)\n"))
        }
    }

    /// journalctl itself parses the file: `--update-catalog` into a scratch root, then list it.
    @Test(.enabled(if: ProcessRunner.which("journalctl") != nil || TestEnvironment.componentsRequired))
    func journalctlAcceptsTheCatalog() throws {
        let journalctl = try #require(ProcessRunner.which("journalctl"))
        let root = try TestEnvironment.temporaryDirectory("catalog-root")
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("usr/lib/systemd/catalog")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.catalog, to: directory.appendingPathComponent("notify-route.catalog"))
        let update = try ProcessRunner.run(journalctl, ["--root=\(root.path)", "--update-catalog"])
        #expect(update.status == 0, "\(update.standardError)")
        let list = try ProcessRunner.run(journalctl, ["--root=\(root.path)", "--list-catalog"])
        for (id, subject) in JournalCatalog.all {
            #expect(list.standardOutput.contains("\(id) notify-route: \(subject)"), "\(list.standardOutput)")
        }
        let dump = try ProcessRunner.run(journalctl, ["--root=\(root.path)", "--dump-catalog", JournalCatalog.eventsDropped])
        #expect(dump.standardOutput.contains("@NOTIFY_ROUTE_DROPPED_COUNT@"))
    }
}
