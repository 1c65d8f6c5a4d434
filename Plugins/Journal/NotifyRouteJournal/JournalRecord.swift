/// One journal record: an ordered list of fields whose values are bytes.
///
/// Values may hold newlines, NUL and bytes that are not UTF-8: `sd_journal_sendv`
/// gets one iovec per field and encodes such values with an explicit length, so they
/// arrive intact. Names are sanitised by ``JournalFieldName/sanitize(_:)`` on the way
/// in, because journald silently drops a field with an invalid name.
///
/// ```swift
/// var record = JournalRecord()
/// record.append("MESSAGE", "Backup finished\n42 GB in 7m")
/// record.append("PRIORITY", "5")
/// record.append("RAW_SAMPLE", bytes: [0xff, 0x00, 0x41])
/// try await journalSink.write(record)
/// ```
public struct JournalRecord: Hashable, Sendable {
    /// One `NAME=value` pair.
    public struct Field: Hashable, Sendable {
        public var name: String
        public var value: [UInt8]

        /// The value as text, when it is valid UTF-8.
        public var text: String? {
            String(validating: value, as: UTF8.self)
        }
    }

    public private(set) var fields: [Field] = []

    public init() {}

    /// A record from `(name, text)` pairs, in order.
    public init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { append(name, value) }
    }

    /// Appends a text field; returns the name it was written under (sanitised when needed).
    @discardableResult
    public mutating func append(_ name: String, _ value: String) -> String {
        append(name, bytes: Array(value.utf8))
    }

    /// Appends a field whose value is raw bytes; returns the name it was written under.
    @discardableResult
    public mutating func append(_ name: String, bytes: [UInt8]) -> String {
        let written = JournalFieldName.sanitize(name)
        fields.append(Field(name: written, value: bytes))
        return written
    }

    /// The values of every field with this name (journal fields may repeat), as text.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.compactMap(\.text)
    }

    /// The first value of this field, as text.
    public subscript(name: String) -> String? {
        values(name).first
    }

    /// Every field as `NAME=value` bytes, one after the other, with where each ends:
    /// one allocation, so the iovecs handed to `sd_journal_sendv` can all point into it.
    func serialized() -> (bytes: [UInt8], ends: [Int]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + 1 + $1.value.count })
        var ends: [Int] = []
        ends.reserveCapacity(fields.count)
        for field in fields {
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: field.value)
            ends.append(bytes.count)
        }
        return (bytes, ends)
    }

    /// The record as one datagram of journald's native protocol, as `sd_journal_sendv`
    /// builds it (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/): `NAME=value\n` per field,
    /// or, for a value holding a newline, `NAME\n`, its length as 64-bit little-endian,
    /// the value and `\n`.
    func datagram() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + 10 + $1.value.count })
        for field in fields {
            bytes.append(contentsOf: field.name.utf8)
            if field.value.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(field.value.count).littleEndian) { bytes.append(contentsOf: $0) }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes.append(contentsOf: field.value)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }
}
