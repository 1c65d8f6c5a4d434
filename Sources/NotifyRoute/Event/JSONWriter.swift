/// Writes JSON with the bytes `JSONEncoder` writes with `.sortedKeys` and
/// `.withoutEscapingSlashes`, for lines built on every event (the history's rows, the
/// daemon's answers), where the encoder's boxing of each value would be most of the cost.
///
/// The caller writes keys in sorted order itself (by their UTF-8 bytes, as the encoder
/// sorts); ``member(_:object:)`` sorts a dictionary's.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the next value or key follows another at the same level.
    private var separated = false

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separate() {
        if separated { bytes.append(UInt8(ascii: ",")) }
    }

    /// `{`, what `body` writes, `}`.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        separated = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        separated = true
    }

    /// `[`, what `body` writes, `]`.
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        separated = false
        body(&self)
        bytes.append(UInt8(ascii: "]"))
        separated = true
    }

    /// A key written in the source: copied as it is, between quotes (keys are plain ASCII
    /// names, which need no escape), without the scan a string gets.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        separated = false
    }

    /// A key made at run time (a dictionary's), escaped as a string is.
    package mutating func key(escaping name: String) {
        separate()
        Self.string(name, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        separated = false
    }

    package mutating func string(_ value: String) {
        separate()
        Self.string(value, into: &bytes)
        separated = true
    }

    package mutating func integer(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        separated = true
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        separated = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        separated = true
    }

    /// A finite number as the encoder writes a `Double`: its shortest description, with no
    /// `.0` on a whole number.
    package mutating func number(_ value: Double) {
        separate()
        let text = value.description
        if text.hasSuffix(".0") { bytes.append(contentsOf: text.utf8.dropLast(2)) } else { bytes.append(contentsOf: text.utf8) }
        separated = true
    }

    /// `"name":"value"`, `"name":null` when `value` is `nil` (as `encode` of an optional).
    package mutating func member(_ name: StaticString, orNull value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    /// `"name":"value"`, nothing when `value` is `nil` (as `encodeIfPresent`).
    package mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    package mutating func member(_ name: StaticString, _ value: Int?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    package mutating func member(_ name: StaticString, strings: [String]) {
        key(name)
        array { writer in for value in strings { writer.string(value) } }
    }

    /// An object of strings, its keys sorted.
    package mutating func member(_ name: StaticString, object: [String: String]) {
        key(name)
        self.object { writer in
            for (key, value) in object.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                writer.key(escaping: key)
                writer.string(value)
            }
        }
    }

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ...
    /// or `\u00XX`, everything else (`/` and non-ASCII included) as it is.
    package static func string(_ text: String, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Most strings need no escape: one copy.
            if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                bytes.append(contentsOf: utf8)
                return
            }
            var run = 0  // the start of the bytes not yet copied
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                run = index + 1
                // Byte by byte: an array literal per escape costs an allocation and a generic append.
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex: StaticString = "0123456789abcdef"
                    bytes.append(UInt8(ascii: "u"))
                    bytes.append(UInt8(ascii: "0"))
                    bytes.append(UInt8(ascii: "0"))
                    bytes.append(hex.utf8Start[Int(byte >> 4)])
                    bytes.append(hex.utf8Start[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
