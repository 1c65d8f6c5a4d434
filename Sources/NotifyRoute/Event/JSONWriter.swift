/// Writes JSON with the bytes `JSONEncoder` writes with `.sortedKeys` and
/// `.withoutEscapingSlashes`, for lines built on every event (the history's rows, the
/// daemon's answers), where the encoder's boxing of each value would be most of the cost.
///
/// The caller writes keys in sorted order itself (by their UTF-8 bytes, as the encoder
/// sorts); ``member(_:object:)`` sorts a dictionary's.
package struct JSONWriter {
    /// The bytes written, in a buffer of the writer's own: an append is a bounds check and
    /// a copy, where `Array.append(contentsOf:)` takes its generic path on each key and value.
    private final class Storage {
        var base: UnsafeMutablePointer<UInt8>
        var count = 0
        var capacity: Int

        init(capacity: Int) {
            self.capacity = max(capacity, 16)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }

        @inline(__always) func reserve(_ more: Int) {
            if count + more > capacity { grow(count + more) }
        }

        private func grow(_ needed: Int) {
            let larger = max(needed, capacity * 2)
            let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
            moved.update(from: base, count: count)
            base.deallocate()
            base = moved
            capacity = larger
        }

        @inline(__always) func append(_ byte: UInt8) {
            reserve(1)
            base[count] = byte
            count += 1
        }

        @inline(__always) func append(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let start = bytes.baseAddress else { return }
            reserve(bytes.count)
            (base + count).update(from: start, count: bytes.count)
            count += bytes.count
        }

        var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }
    }

    private let storage: Storage
    package var bytes: [UInt8] { Array(storage.written) }
    /// Whether the next value or key follows another at the same level.
    private var separated = false

    package init(capacity: Int = 256) { storage = Storage(capacity: capacity) }

    package var text: String { String(decoding: storage.written, as: UTF8.self) }

    /// What was written, borrowed in place.
    package func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(storage.written)
    }

    /// A byte outside JSON (a separator of the spool's lines), after which a value starts afresh.
    package mutating func raw(_ byte: UInt8) {
        storage.append(byte)
        separated = false
    }

    /// Two bytes outside JSON.
    package mutating func raw(_ byte: UInt8, _ second: UInt8) {
        storage.reserve(2)
        storage.base[storage.count] = byte
        storage.base[storage.count + 1] = second
        storage.count += 2
        separated = false
    }

    /// Bytes outside JSON, or JSON written elsewhere, copied as they are (after `byte`,
    /// when given); a value starts afresh after them.
    package mutating func raw(_ byte: UInt8? = nil, then text: String) {
        let storage = storage
        func copy(_ utf8: UnsafeBufferPointer<UInt8>) {
            storage.reserve(utf8.count + 1)
            if let byte {
                storage.base[storage.count] = byte
                storage.count += 1
            }
            if let from = utf8.baseAddress { (storage.base + storage.count).update(from: from, count: utf8.count) }
            storage.count += utf8.count
        }
        // Read where it lies (a native String's bytes are contiguous): `withUTF8` would
        // need a mutable copy, retained and released for each field of a spool's line.
        if text.utf8.withContiguousStorageIfAvailable(copy) == nil {
            var text = text
            text.withUTF8(copy)
        }
        separated = false
    }

    /// `value`'s decimal digits, outside JSON; with zeros in front up to `width` digits.
    package mutating func raw(decimal value: Int, width: Int = 0) {
        storage.reserve(max(20, width))
        if value >= 0 {
            var digits = 1, scale = 10
            while digits < width && value >= scale {
                digits += 1
                scale = scale.multipliedReportingOverflow(by: 10).partialValue
            }
            for _ in digits..<max(digits, width) { storage.append(UInt8(ascii: "0")) }
        }
        storage.count += Self.decimal(value, at: storage.base + storage.count)
        separated = false
    }

    /// What was written and a newline: a line of the daemon's protocol.
    package var line: [UInt8] {
        storage.append(UInt8(ascii: "\n"))
        defer { storage.count -= 1 }
        return bytes
    }

    private mutating func separate() {
        if separated { storage.append(UInt8(ascii: ",")) }
    }

    /// `{`, what `body` writes, `}`.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        storage.append(UInt8(ascii: "{"))
        separated = false
        body(&self)
        storage.append(UInt8(ascii: "}"))
        separated = true
    }

    /// The members of `object`, a JSON object this writer wrote (`{...}`), in the object
    /// under way: its text between the braces, copied as it is.
    package mutating func members(of object: String) {
        var object = object
        object.withUTF8 { utf8 in
            guard utf8.count > 2 else { return }
            separate()
            storage.append(UnsafeBufferPointer(rebasing: utf8[1..<utf8.count - 1]))
            separated = true
        }
    }

    /// A value already written as JSON (by the encoder, or another writer), copied as it is.
    package mutating func encoded(_ json: some Collection<UInt8>) {
        separate()
        let copied: Void? = json.withContiguousStorageIfAvailable { storage.append($0) }
        if copied == nil { Array(json).withUnsafeBufferPointer { storage.append($0) } }
        separated = true
    }

    /// `[`, what `body` writes, `]`.
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        storage.append(UInt8(ascii: "["))
        separated = false
        body(&self)
        storage.append(UInt8(ascii: "]"))
        separated = true
    }

    /// A key written in the source: copied as it is, between quotes (keys are plain ASCII
    /// names, which need no escape), without the scan a string gets.
    package mutating func key(_ name: StaticString) {
        let count = name.utf8CodeUnitCount
        storage.reserve(count + 4)
        var at = storage.base + storage.count
        if separated {
            at.pointee = UInt8(ascii: ",")
            at += 1
        }
        at.pointee = UInt8(ascii: "\"")
        (at + 1).update(from: name.utf8Start, count: count)
        (at + 1 + count).pointee = UInt8(ascii: "\"")
        (at + 2 + count).pointee = UInt8(ascii: ":")
        storage.count = storage.base.distance(to: at + 3 + count)
        separated = false
    }

    /// A key made at run time (a dictionary's), escaped as a string is.
    package mutating func key(escaping name: String) {
        separate()
        Self.string(name, into: storage)
        storage.append(UInt8(ascii: ":"))
        separated = false
    }

    package mutating func string(_ value: String) {
        separate()
        Self.string(value, into: storage)
        separated = true
    }

    private mutating func ascii(_ text: String) {
        var text = text
        text.withUTF8 { storage.append($0) }
    }

    package mutating func integer(_ value: Int) {
        separate()
        storage.reserve(20)
        storage.count += Self.decimal(value, at: storage.base + storage.count)
        separated = true
    }

    /// A count of thousandths (`duration_ms` from microseconds) as the encoder writes
    /// `Double(value) / 1000`, from the integer, with no `Double.description` and no String
    /// (two a report). Below 2^42 (140,000 years of milliseconds) that Double's spacing is
    /// under 0.001, so the decimal is the one shortest spelling that reads back as it.
    package mutating func thousandths(_ value: Int64) {
        guard value.magnitude / 1_000 < 1 << 42 else { return number(Double(value) / 1_000) }
        separate()
        storage.reserve(24)
        var at = storage.base + storage.count
        if value < 0 {
            at.pointee = UInt8(ascii: "-")
            at += 1
        }
        let magnitude = value.magnitude
        at += Self.decimal(Int(magnitude / 1_000), at: at)
        var fraction = Int(magnitude % 1_000)
        if fraction != 0 {
            at.pointee = UInt8(ascii: ".")
            var digits = 3
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            for index in stride(from: digits, to: 0, by: -1) {
                at[index] = UInt8(ascii: "0") + UInt8(fraction % 10)
                fraction /= 10
            }
            at += digits + 1
        }
        storage.count = storage.base.distance(to: at)
        separated = true
    }

    /// The decimal digits of `value` (a `-` first when negative) at `at`, which has room for
    /// 20 bytes; how many were written. What `String(value)` spells, without the String.
    package static func decimal(_ value: Int, at: UnsafeMutablePointer<UInt8>) -> Int {
        var magnitude = value.magnitude
        var digits = 1
        var scale: UInt = 10
        // An Int's magnitude has 19 digits at most, and 10^19 fits in a UInt.
        while digits < 19 && magnitude >= scale {
            digits += 1
            scale *= 10
        }
        let sign = value < 0 ? 1 : 0
        if sign == 1 { at.pointee = UInt8(ascii: "-") }
        for index in stride(from: sign + digits - 1, through: sign, by: -1) {
            at[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        }
        return sign + digits
    }

    /// `value`'s decimal digits appended to `bytes`.
    package static func decimal(_ value: Int, into bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            let count = decimal(value, at: buffer.baseAddress!)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    package mutating func null() {
        separate()
        ascii("null")
        separated = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        ascii(value ? "true" : "false")
        separated = true
    }

    /// A finite number as the encoder writes a `Double`: its shortest description, with no
    /// `.0` on a whole number.
    package mutating func number(_ value: Double) {
        separate()
        let text = value.description
        ascii(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
        separated = true
    }

    /// `"name":"value"`, `"name":null` when `value` is `nil` (as `encode` of an optional).
    package mutating func member(_ name: StaticString, orNull value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    /// `"name":"value"` for bytes that need no escape (digits, plain ASCII made by us).
    package mutating func member(_ name: StaticString, plain value: UnsafeBufferPointer<UInt8>) {
        key(name)
        storage.append(UInt8(ascii: "\""))
        storage.append(value)
        storage.append(UInt8(ascii: "\""))
        separated = true
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

    /// `items` as a JSON array of strings.
    package static func strings(_ items: [String], into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(item, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ...
    /// or `\u00XX`, everything else (`/` and non-ASCII included) as it is.
    package static func string(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        let plain = text.withUTF8 { utf8 in
            guard !needsEscape(utf8) else { return false }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return true
        }
        guard !plain else { return }
        let storage = Storage(capacity: text.utf8.count + 8)
        string(text, into: storage)
        bytes.append(contentsOf: storage.written)
    }

    /// Whether `utf8` holds a byte that JSON escapes.
    private static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        var index = 0
        while index + 8 <= utf8.count {
            if escapes(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) { return true }
            index += 8
        }
        while index < utf8.count {
            if escapes(base[index]) { return true }
            index += 1
        }
        return false
    }

    /// Whether `word` has a byte below 0x20 or equal to `"` or `\`.
    @inline(__always) private static func escapes(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let control = (word &- ones &* 0x20) & ~word
        return (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs != 0
    }

    @inline(__always) private static func escapes(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func string(_ text: String, into bytes: Storage) {
        var text = text
        text.withUTF8 { utf8 in
            let count = utf8.count
            // The quotes, and room for a word stored whole past the last byte.
            bytes.reserve(count + 10)
            let quoted = bytes.base + bytes.count
            quoted.pointee = UInt8(ascii: "\"")
            // Checked and copied in one pass, eight bytes at a time (most strings need no
            // escape), rather than a scan and then a copy over the short strings of a report.
            var run = 0  // the bytes copied as they are
            if let base = utf8.baseAddress {
                let out = UnsafeMutableRawPointer(quoted + 1)
                while run + 8 <= count {
                    let word = UnsafeRawPointer(base + run).loadUnaligned(as: UInt64.self)
                    if escapes(word) { break }
                    out.storeBytes(of: word, toByteOffset: run, as: UInt64.self)
                    run += 8
                }
                if run < count, run + 8 > count {
                    // The last bytes in one word too: after spaces (which need no escape) in
                    // the bytes past the end, stored whole within the room reserved.
                    var word: UInt64 = 0x2020_2020_2020_2020
                    withUnsafeMutableBytes(of: &word) { $0.baseAddress!.copyMemory(from: base + run, byteCount: count - run) }
                    if !escapes(word) {
                        out.storeBytes(of: word, toByteOffset: run, as: UInt64.self)
                        run = count
                    }
                }
                while run < count, !escapes(base[run]) {
                    quoted[1 + run] = base[run]
                    run += 1
                }
            }
            bytes.count += 1 + run
            guard run < count else { return }
            for index in run..<count {
                let byte = utf8[index]
                guard escapes(byte) else { continue }
                bytes.append(UnsafeBufferPointer(rebasing: utf8[run..<index]))
                run = index + 1
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
            bytes.append(UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Text outside JSON, as ``JSONWriter/raw(_:then:)`` copies it: a record's summary is written
/// into the daemon's spool line by the code that makes it a String elsewhere.
extension JSONWriter: TextOutputStream {
    package mutating func write(_ string: String) { raw(then: string) }
}
