/// A JSON value read from one line of input (`notify-route ingest`).
///
/// A parser of our own rather than Foundation's: it says *where* and *what* went
/// wrong ("column 17: expected \",\" or \"}\""), keeps object keys in order with
/// duplicates detectable, and costs one pass over the bytes.
package enum JSONLine: Sendable {
    case null
    case bool(Bool)
    /// The number as written (`progress`, and field values may be numbers).
    case number(String)
    case string(String)
    case array([JSONLine])
    case object([(key: String, value: JSONLine)])

    /// "a string", "a number", ... for "expected X, found Y".
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let text): "the number \(text)"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    package struct SyntaxError: Error, Sendable {
        package var message: String
        /// 1-based, in Unicode scalars of the line.
        package var column: Int
    }

    /// Parses exactly one JSON value, with only whitespace around it.
    package static func parse(_ text: String) throws(SyntaxError) -> JSONLine {
        try parse(utf8: Array(text.utf8))
    }

    /// ``parse(_:)`` of the line's bytes, without a `String` made of them first: invalid
    /// UTF-8 inside a string is repaired as `String(decoding:as:)` repairs it.
    package static func parse(utf8 bytes: [UInt8]) throws(SyntaxError) -> JSONLine {
        var parser = Parser(bytes: bytes)
        do throws(Parser.Failure) {
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == parser.bytes.count else {
                throw Parser.Failure(message: "unexpected text after the JSON value; put one event per line", offset: parser.index)
            }
            return value
        } catch {
            let column = String(decoding: parser.bytes[..<min(error.offset, parser.bytes.count)], as: UTF8.self).unicodeScalars.count + 1
            throw SyntaxError(message: error.message, column: column)
        }
    }

    /// The 1-based column (in Unicode scalars) where the value at `path` starts in a line
    /// that parses, as ``SyntaxError/column`` counts: `["event", "progress"]` is the event's
    /// `progress`. For error messages only; `nil` when the line has no such member.
    package static func column(of path: [String], in bytes: [UInt8]) -> Int? {
        var parser = Parser(bytes: bytes)
        var remaining = path[...]
        parser.skipWhitespace()
        while let key = remaining.popFirst() {
            guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{"),
                  (try? parser.seekMember(key)) == true
            else { return nil }
        }
        return String(decoding: bytes[..<parser.index], as: UTF8.self).unicodeScalars.count + 1
    }

    private struct Parser {
        struct Failure: Error {
            var message: String
            var offset: Int
        }

        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        static let maximumDepth = 32

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        func fail(_ message: String) -> Failure { Failure(message: message, offset: index) }

        mutating func value(depth: Int) throws(Failure) -> JSONLine {
            guard depth < Self.maximumDepth else { throw fail("nested more than \(Self.maximumDepth) levels deep") }
            guard index < bytes.count else { throw fail("unexpected end of the line; expected a value") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            case UInt8(ascii: "'"): throw fail("strings take double quotes in JSON, not single quotes")
            default: throw fail("expected a value (an object, array, string, number, true, false or null)")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
                throw fail("expected a value (an object, array, string, number, true, false or null)")
            }
            index += expected.count
        }

        mutating func object(depth: Int) throws(Failure) -> JSONLine {
            index += 1
            var entries: [(key: String, value: JSONLine)] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(entries) }
            // One allocation for the members of a request or an event, where growing by appends took three or four.
            entries.reserveCapacity(8)
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw fail(index < bytes.count ? "expected a key in double quotes" : "unexpected end of the line inside an object")
                }
                let keyOffset = index
                let key = try string()
                if entries.contains(where: { $0.key == key }) {
                    throw Failure(message: "duplicate key \"\(key)\"", offset: keyOffset)
                }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected \":\" after the key \"\(key)\"") }
                index += 1
                skipWhitespace()
                entries.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of the line inside an object; expected \",\" or \"}\"") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(entries) }
                throw fail("expected \",\" or \"}\" after a value")
            }
        }

        /// At an object's `{`: moves to the start of `key`'s value, or says there is none.
        mutating func seekMember(_ key: String) throws(Failure) -> Bool {
            index += 1
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return false }
                let name = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                skipWhitespace()
                if name == key { return true }
                _ = try value(depth: 1)
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return false }
                index += 1
            }
        }

        mutating func array(depth: Int) throws(Failure) -> JSONLine {
            index += 1
            var items: [JSONLine] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of the line inside an array; expected \",\" or \"]\"") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw fail("expected \",\" or \"]\" after a value")
            }
        }

        mutating func number() throws(Failure) -> String {
            let start = index
            func digits(_ parser: inout Parser) -> Int {
                let first = parser.index
                while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) {
                    parser.index += 1
                }
                return parser.index - first
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw fail("expected a digit") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail("expected a digit after the decimal point") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("expected a digit in the exponent") }
            }
            return Self.text(bytes, start..<index)
        }

        /// `String(decoding: bytes[range], as: UTF8.self)`, repaired as it repairs, without the
        /// generic initialiser's dynamic cast of its argument, a conformance lookup for each
        /// of a request's keys and values.
        static func text(_ bytes: [UInt8], _ range: Range<Int>) -> String {
            bytes.withUnsafeBufferPointer { all in
                String(unsafeUninitializedCapacity: range.count) { buffer in
                    guard let target = buffer.baseAddress, let source = all.baseAddress else { return 0 }
                    target.initialize(from: source + range.lowerBound, count: range.count)
                    return range.count
                }
            }
        }

        mutating func string() throws(Failure) -> String {
            index += 1  // the opening quote
            let start = index
            // Most strings have no escape: one `String` of their bytes.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return Self.text(bytes, start..<index - 1)
                }
                if byte < 0x20 || byte == UInt8(ascii: "\\") { break }
                index += 1
            }
            index = start
            return try escapedString()
        }

        /// The rest of a string with escapes, its bytes gathered and decoded once (invalid
        /// UTF-8 in a run repairs as it would alone: an escape's bytes never continue a sequence).
        mutating func escapedString() throws(Failure) -> String {
            var utf8: [UInt8] = []
            var runStart = index
            func flush(_ parser: Parser, to end: Int) {
                if end > runStart { utf8.append(contentsOf: parser.bytes[runStart..<end]) }
            }
            func append(_ scalar: Unicode.Scalar) {
                utf8.append(contentsOf: UTF8.encode(scalar)!)
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    flush(self, to: index)
                    index += 1
                    return Self.text(utf8, 0..<utf8.count)
                }
                if byte < 0x20 { throw fail("a control character inside a string; escape it (\\n, \\t, \\u0001)") }
                if byte != UInt8(ascii: "\\") { index += 1; continue }
                flush(self, to: index)
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): append("\"")
                case UInt8(ascii: "\\"): append("\\")
                case UInt8(ascii: "/"): append("/")
                case UInt8(ascii: "b"): append("\u{08}")
                case UInt8(ascii: "f"): append("\u{0C}")
                case UInt8(ascii: "n"): append("\n")
                case UInt8(ascii: "r"): append("\r")
                case UInt8(ascii: "t"): append("\t")
                case UInt8(ascii: "u"):
                    let unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit), index + 1 < bytes.count,
                       bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        let save = index
                        index += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
                        } else {
                            // A lone high surrogate: repaired, like invalid UTF-8.
                            append("\u{FFFD}")
                            index = save
                        }
                    } else {
                        append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                    }
                default:
                    index -= 1
                    throw fail("unknown escape \"\\\(Unicode.Scalar(escape))\" in a string")
                }
                runStart = index
            }
            throw fail("unexpected end of the line inside a string; a closing \" is missing")
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("expected four hexadecimal digits after \\u") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue else {
                    throw fail("expected four hexadecimal digits after \\u")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}
