import NotifyRoute

/// How a notification becomes a journal record: which fields, under which names.
///
/// | field | value |
/// |---|---|
/// | `MESSAGE` | the title; the body on the following lines |
/// | `PRIORITY` | the level's journal priority (7 debug … 2 critical, overridable in `levels:`) |
/// | `SYSLOG_IDENTIFIER` | the sink's `identifier` option, else the event's app |
/// | `MESSAGE_ID` | when a rule or the event sets one (32 hex digits) |
/// | `CODE_FILE`, `CODE_LINE`, `CODE_FUNC` | the library caller's call site |
/// | `NOTIFY_ROUTE_LEVEL`, `_APP`, `_SOURCE`, `_SINK` | the event's level, app, source; the sink instance |
/// | `NOTIFY_ROUTE_TAGS` | one field per tag (`journalctl NOTIFY_ROUTE_TAGS=ops` finds any; journald keeps no order) |
/// | `NOTIFY_ROUTE_DEDUP_KEY` | an explicit key as given; the default key as `default:` + 16 hex digits |
/// | `NOTIFY_ROUTE_REPLACE_KEY` | when set |
/// | `NOTIFY_ROUTE_DUPLICATE_COUNT` | when the router counted more than one |
/// | `NOTIFY_ROUTE_PROGRESS` | the event's progress, 0 to 100, when it has one |
/// | `NOTIFY_ROUTE_REPLACES`, `NOTIFY_ROUTE_DUPLICATE_OF` | the handle the router asked to replace or update |
/// | user fields | the config's `fields`, then the event's (`-f KEY=VALUE`), names sanitised |
/// | `NOTIFY_ROUTE_FIELD_NAME` | one per renamed user field: `WRITTEN=original` |
///
/// A user field whose sanitised name is one the sink writes itself (``reservedNames``), or
/// one journald and journalctl read as a claim about who wrote the record
/// (``isProtected(_:)``: `OBJECT_*`, `CODE_*`, `SYSLOG_*`, `UNIT`, ...), is written as
/// `USER_NAME`: an event can neither override nor double `PRIORITY`, nor make
/// `journalctl -u sshd.service` show a record written for someone else.
///
/// ```swift
/// let (record, notes) = JournalEventFormat.record(for: delivery, identifier: "backup")
/// record["SYSLOG_IDENTIFIER"]  // "backup"
/// ```
public enum JournalEventFormat {
    public static let level = "NOTIFY_ROUTE_LEVEL"
    public static let app = "NOTIFY_ROUTE_APP"
    public static let source = "NOTIFY_ROUTE_SOURCE"
    public static let sink = "NOTIFY_ROUTE_SINK"
    public static let tags = "NOTIFY_ROUTE_TAGS"
    public static let dedupKey = "NOTIFY_ROUTE_DEDUP_KEY"
    public static let replaceKey = "NOTIFY_ROUTE_REPLACE_KEY"
    public static let duplicateCount = "NOTIFY_ROUTE_DUPLICATE_COUNT"
    public static let progress = "NOTIFY_ROUTE_PROGRESS"
    public static let replaces = "NOTIFY_ROUTE_REPLACES"
    public static let duplicateOf = "NOTIFY_ROUTE_DUPLICATE_OF"
    public static let fieldName = "NOTIFY_ROUTE_FIELD_NAME"
    /// Fields of the sink's own diagnostics (see ``JournalCatalog``).
    public static let droppedCount = "NOTIFY_ROUTE_DROPPED_COUNT"
    public static let queueSize = "NOTIFY_ROUTE_QUEUE_SIZE"
    public static let failedSink = "NOTIFY_ROUTE_FAILED_SINK"
    public static let failedKind = "NOTIFY_ROUTE_FAILED_KIND"
    public static let failure = "NOTIFY_ROUTE_FAILURE"
    public static let error = "NOTIFY_ROUTE_ERROR"
    public static let eventTitle = "NOTIFY_ROUTE_EVENT_TITLE"

    /// Names the sink writes itself; user fields never take them.
    public static let reservedNames: Set<String> = [
        "MESSAGE", "MESSAGE_ID", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
        level, app, source, sink, tags, dedupKey, replaceKey, duplicateCount, progress, replaces, duplicateOf, fieldName,
        droppedCount, queueSize, failedSink, failedKind, failure, error, eventTitle,
    ]

    /// Names journald or journalctl take as facts about the record's origin, so an event may
    /// not set them: `OBJECT_*` (with `OBJECT_PID`, journald attributes a privileged client's
    /// record to that process and its unit; `journalctl -u` matches `OBJECT_SYSTEMD_UNIT`),
    /// `CODE_*` (the call site: the library's own, never the event's), `SYSLOG_*`
    /// (facility, pid, identifier), `COREDUMP_*` (matched by `journalctl -u` for crash
    /// records), and the other fields systemd.journal-fields(7) defines for clients
    /// (`UNIT`, `USER_UNIT`, `INVOCATION_ID`, `ERRNO`, `TID`, `DOCUMENTATION`, ...).
    public static func isProtected(_ name: String) -> Bool {
        reservedNames.contains(name) || protectedNames.contains(name)
            || protectedPrefixes.contains { name.hasPrefix($0) }
    }

    static let protectedNames: Set<String> = [
        "UNIT", "USER_UNIT", "INVOCATION_ID", "USER_INVOCATION_ID", "ERRNO", "TID", "DOCUMENTATION",
    ]
    static let protectedPrefixes = ["OBJECT_", "CODE_", "SYSLOG_", "COREDUMP_"]

    /// The record for one delivery, and notes for the report (renamed fields, ignored values).
    ///
    /// - Parameters:
    ///   - identifier: `SYSLOG_IDENTIFIER` for every record of this sink; `nil` uses the event's app.
    ///   - staticFields: fields from the sink's config, under the event's own fields.
    public static func record(
        for delivery: SinkDelivery, identifier: String? = nil, staticFields: [String: String] = [:]
    ) -> (record: JournalRecord, notes: [String]) {
        let event = delivery.event
        var notes: [String] = []
        var record = JournalRecord()
        record.append("MESSAGE", event.body.map { event.title + "\n" + $0 } ?? event.title)
        record.append("PRIORITY", String(min(7, max(0, event.style.journalPriority))))
        record.append("SYSLOG_IDENTIFIER", identifier ?? event.app)
        if let id = event.messageID {
            if isMessageID(id) {
                record.append("MESSAGE_ID", id.lowercased())
            } else {
                notes.append("MESSAGE_ID \"\(id)\" is not 32 hexadecimal digits; not written")
            }
        }
        if let site = event.callSite {
            record.append("CODE_FILE", site.file)
            record.append("CODE_LINE", String(site.line))
            record.append("CODE_FUNC", site.function)
        }
        record.append(level, event.level.rawValue)
        record.append(app, event.app)
        if let value = event.source { record.append(source, value) }
        record.append(sink, delivery.sinkName)
        for tag in event.tags.sorted() { record.append(tags, tag) }
        record.append(dedupKey, dedupKeyValue(event))
        if let value = event.replaceKey { record.append(replaceKey, value) }
        if delivery.duplicateCount > 1 { record.append(duplicateCount, String(delivery.duplicateCount)) }
        if let value = event.progress { record.append(progress, String(value)) }
        switch delivery.intent {
        case .show: break
        case .replace(let handle): record.append(replaces, handle.value)
        case .updateDuplicateCount(let handle, _): record.append(duplicateOf, handle.value)
        }
        let userFields = staticFields.isEmpty ? event.fields : staticFields.merging(event.fields) { _, fromEvent in fromEvent }
        appendUserFields(userFields, to: &record, notes: &notes)
        return (record, notes)
    }

    /// User fields in a stable order (by original name), renamed where journald would drop them.
    static func appendUserFields(_ fields: [String: String], to record: inout JournalRecord, notes: inout [String]) {
        guard !fields.isEmpty else { return }
        var taken = Set(record.fields.map(\.name))
        var renamed: [(written: String, original: String)] = []
        for (original, value) in fields.sorted(by: { $0.key < $1.key }) {
            var name = JournalFieldName.sanitize(original)
            // Prefixed until free: `UNIT` becomes `USER_UNIT`, itself protected, so `USER_USER_UNIT`.
            while isProtected(name) { name = JournalFieldName.prefixing("USER_", to: name) }
            // Two originals may sanitise alike (`disk.path`, `disk-path`): number the later ones.
            if taken.contains(name) {
                var counter = 2
                while taken.contains(JournalFieldName.appending("_\(counter)", to: name)) { counter += 1 }
                name = JournalFieldName.appending("_\(counter)", to: name)
            }
            taken.insert(name)
            record.append(name, value)
            if name != original { renamed.append((name, original)) }
        }
        for (written, original) in renamed {
            record.append(fieldName, "\(written)=\(original)")
            notes.append("field \"\(original)\" written as \(written) (journal names are A-Z, 0-9 and _)")
        }
    }

    /// An explicit dedup key as given. The default key joins level, source, title and body
    /// with control characters, which journalctl would show as a blob: it is written as
    /// `default:` and an FNV-1a hash instead, equal for equal events.
    static func dedupKeyValue(_ event: ResolvedEvent) -> String {
        let defaultKey = ResolvedEvent.defaultDedupKey(
            level: event.level, source: event.source, title: event.title, body: event.body, progress: event.progress)
        guard event.dedupKey == defaultKey else { return event.dedupKey }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in defaultKey.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "default:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func isMessageID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.allSatisfy(\.isHexDigit)
    }
}
