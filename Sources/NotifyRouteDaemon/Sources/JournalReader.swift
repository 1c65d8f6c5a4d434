import CJournalReader
import Glibc
import NotifyRoute

/// An open journal (sd-journal), read on one thread only: sd-journal objects are not
/// thread-safe, and its reads block on disk. libsystemd is loaded on the first open.
final class JournalReader {
    private var journal: UnsafeMutableRawPointer?

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(scope: SourceDeclaration.JournalScope) throws(Failure) {
        let flags: Int32 = switch scope {
        case .all: 0
        case .user: Int32(NOTIFY_ROUTE_JOURNAL_CURRENT_USER)
        case .system: Int32(NOTIFY_ROUTE_JOURNAL_SYSTEM)
        }
        let status = notify_route_reader_open(&journal, flags)
        guard status >= 0, journal != nil else {
            if let reason = notify_route_reader_load_error() { throw Failure(description: "cannot read the journal: \(String(cString: reason))") }
            throw Failure(description: "cannot open the journal: \(Self.describe(status))")
        }
    }

    deinit { notify_route_reader_close(journal) }

    static func describe(_ status: Int32) -> String { String(cString: strerror(-status)) }

    private func check(_ status: Int32, _ what: String) throws(Failure) {
        guard status >= 0 else { throw Failure(description: "\(what): \(Self.describe(status))") }
    }

    /// `FIELD=value` records only; several values of one field match any of them, and
    /// different fields must all match. `nil` separates alternatives (a disjunction).
    func addMatches(_ matches: [String?]) throws(Failure) {
        for match in matches {
            if let match {
                let bytes = Array(match.utf8)
                try check(bytes.withUnsafeBytes { notify_route_reader_add_match(journal, $0.baseAddress, $0.count) }, "match \(match)")
            } else {
                try check(notify_route_reader_add_disjunction(journal), "match")
            }
        }
    }

    func seekHead() throws(Failure) { try check(notify_route_reader_seek_head(journal), "seek to the oldest record") }
    func seekTail() throws(Failure) { try check(notify_route_reader_seek_tail(journal), "seek to the newest record") }
    func seek(realtime microseconds: UInt64) throws(Failure) { try check(notify_route_reader_seek_realtime(journal, microseconds), "seek to a time") }

    /// Positions on the record `cursor` names: true when it is still in the journal; false
    /// too for text sd-journal cannot read as a cursor (a damaged state), which no reopening mends.
    func seek(cursor: String) throws(Failure) -> Bool {
        let status = notify_route_reader_seek_cursor(journal, cursor)
        if status == -EINVAL { return false }
        try check(status, "seek to the saved cursor")
        guard try next() else { return false }
        return notify_route_reader_test_cursor(journal, cursor) > 0
    }

    func next() throws(Failure) -> Bool {
        let status = notify_route_reader_next(journal)
        try check(status, "read the next record")
        return status > 0
    }

    func previous() throws(Failure) -> Bool {
        let status = notify_route_reader_previous(journal)
        try check(status, "read the previous record")
        return status > 0
    }

    var cursor: String? {
        var buffer = [CChar](repeating: 0, count: 512)
        let length = notify_route_reader_cursor(journal, &buffer, buffer.count)
        guard length >= 0 else { return nil }
        if Int(length) >= buffer.count {
            buffer = [CChar](repeating: 0, count: Int(length) + 1)
            guard notify_route_reader_cursor(journal, &buffer, buffer.count) >= 0 else { return nil }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private var remembered = [CChar](repeating: 0, count: 512)
    private var rememberedLength: Int32 = -1

    /// Keeps the current record's cursor in a buffer, without making a string of it: the
    /// place to save once the reader has moved past the last record (where sd-journal has
    /// no current record to ask).
    func rememberCursor() {
        rememberedLength = notify_route_reader_cursor(journal, &remembered, remembered.count)
        if Int(rememberedLength) >= remembered.count {
            remembered = [CChar](repeating: 0, count: Int(rememberedLength) + 1)
            rememberedLength = notify_route_reader_cursor(journal, &remembered, remembered.count)
        }
    }

    /// The cursor ``rememberCursor()`` kept last, if it could read one.
    var rememberedCursor: String? {
        guard rememberedLength >= 0 else { return nil }
        return String(decoding: remembered.prefix(Int(rememberedLength)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    var realtime: UInt64? {
        var usec: UInt64 = 0
        return notify_route_reader_realtime(journal, &usec) >= 0 ? usec : nil
    }

    /// The current record's fields among `names` (the first value of a repeated one), or
    /// `nil` when it carries a field starting with `skippingPrefix`. Only the fields asked
    /// for become strings: a flood is read at the cost of a byte comparison per field.
    func fields(_ names: FieldNames, skippingPrefix prefix: [UInt8]) -> [String: String]? {
        notify_route_reader_restart_data(journal)
        var fields: [String: String] = [:]
        var data: UnsafeRawPointer?
        var size = 0
        while notify_route_reader_enumerate_data(journal, &data, &size) > 0, let data {
            let bytes = UnsafeRawBufferPointer(start: data, count: size)
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = bytes[..<equals]
            if equals >= prefix.count, name.prefix(prefix.count).elementsEqual(prefix) { return nil }
            guard let wanted = names.name(matching: name), fields[wanted] == nil else { continue }
            fields[wanted] = String(decoding: bytes[(equals + 1)...], as: UTF8.self)
        }
        return fields
    }

    /// The field names a source reads, kept as bytes for ``fields(_:skippingPrefix:)``.
    struct FieldNames {
        private let names: [(bytes: [UInt8], name: String)]

        init(_ names: some Sequence<String>) {
            self.names = Set(names).map { (Array($0.utf8), $0) }
        }

        func name(matching bytes: Slice<UnsafeRawBufferPointer>) -> String? {
            names.first { $0.bytes.count == bytes.count && $0.bytes.elementsEqual(bytes) }?.name
        }
    }

    /// Waits for the journal to change, `stopFD` to be readable, or `timeoutMS` (-1: no
    /// limit): true when stopped.
    func wait(stopFD: Int32, timeoutMS: Int32) throws(Failure) -> Bool {
        let status = notify_route_reader_wait(journal, stopFD, timeoutMS)
        try check(status, "wait for the journal")
        return status == 1
    }
}
