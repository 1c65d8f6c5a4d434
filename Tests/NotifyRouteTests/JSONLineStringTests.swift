@testable import NotifyRoute
import Testing

/// The strings of ``JSONLine``: the run without escapes taken whole, escapes decoded, and
/// invalid UTF-8 repaired as `String(decoding:as:)` repairs it, whether the line comes as
/// bytes (the daemon's requests) or as a `String` (ingest).
@Suite struct JSONLineStringTests {
    /// The string inside `"..."`, read from bytes and from the line as a `String`.
    static func strings(_ inner: [UInt8]) throws -> (bytes: String?, text: String?) {
        let line = Array("[\"".utf8) + inner + Array("\"]".utf8)
        func string(_ value: JSONLine) -> String? {
            guard case .array(let items) = value, case .string(let text)? = items.first else { return nil }
            return text
        }
        return (string(try JSONLine.parse(utf8: line)), string(try JSONLine.parse(String(decoding: line, as: UTF8.self))))
    }

    @Test func escapesAndRuns() throws {
        let cases: [(String, String)] = [
            (#""#, ""), (#"plain text / é 💾"#, "plain text / é 💾"), (#"\n"#, "\n"), (#"a\tb"#, "a\tb"),
            (#"\"quoted\" and \\ back"#, "\"quoted\" and \\ back"), (#"\/\b\f\r"#, "/\u{08}\u{0C}\r"),
            (#"\u00e9\u0041 end"#, "éA end"), (#"disk \ud83d\udcbe full"#, "disk 💾 full"),
            (#"lone \ud800x"#, "lone \u{FFFD}x"), (#"low \udc00 alone"#, "low \u{FFFD} alone"), (#"é\n💾"#, "é\n💾"),
        ]
        for (json, expected) in cases {
            let read = try Self.strings(Array(json.utf8))
            #expect(read.bytes == expected, "\(json)")
            #expect(read.text == expected, "\(json)")
        }
    }

    /// Runs of every length to three words, with an escape, a quote's end, a raw control
    /// byte (an error) or a non-ASCII character at each place, and unterminated.
    @Test func runsOfEveryLengthEndWhereTheirFirstSpecialByteIs() throws {
        var checked = 0
        for length in 0...25 {
            for position in 0...length {
                let before = String(repeating: "a", count: position), after = String(repeating: "b", count: length - position)
                for (json, text) in [(#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), ("é", "é"), ("/", "/")] {
                    let read = try Self.strings(Array((before + json + after).utf8))
                    #expect(read.bytes == before + text + after && read.text == read.bytes, "\(json) at \(position) of \(length)")
                    checked += 1
                }
                let control = Array((before + "\u{01}" + after).utf8)
                #expect(throws: JSONLine.SyntaxError.self) { try JSONLine.parse(utf8: Array("[\"".utf8) + control + Array("\"]".utf8)) }
                // Unterminated: the line ends inside the string.
                #expect(throws: JSONLine.SyntaxError.self) { try JSONLine.parse(utf8: Array("[\"\(before)\(after)".utf8)) }
                checked += 2
            }
        }
        #expect(checked > 2_000)
    }

    /// Invalid bytes before an escape, after one, and with none: each run repaired alone.
    @Test func invalidUTF8IsRepairedAsStringDecodingRepairs() throws {
        let runs: [[UInt8]] = [[0xC3], [0xE2, 0x82], [0x80], [0xFF, 0x41], [0xF0, 0x9F, 0x92], [0x41, 0xC3], [0xC3, 0xA9]]
        let escapes: [(json: String, text: String)] = [(#"\n"#, "\n"), (#"\u00e9"#, "é"), (#"\ud83d\udcbe"#, "💾")]
        for run in runs {
            let repaired = String(decoding: run, as: UTF8.self)
            var cases: [([UInt8], String)] = [(run, repaired), (Array("x".utf8) + run, "x" + repaired)]
            for escape in escapes {
                cases.append((run + Array(escape.json.utf8), repaired + escape.text))
                cases.append((Array(escape.json.utf8) + run, escape.text + repaired))
                cases.append((Array(escape.json.utf8) + run + Array(escape.json.utf8), escape.text + repaired + escape.text))
            }
            for (inner, expected) in cases {
                let read = try Self.strings(inner)
                #expect(read.bytes == expected, "\(inner)")
                #expect(read.text == expected, "\(inner)")
            }
        }
    }
}
