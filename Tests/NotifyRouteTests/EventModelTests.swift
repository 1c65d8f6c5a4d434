import Foundation
import NotifyRoute
import Testing

@Suite struct LevelTests {
    @Test func levelsAreOrderedBySeverity() {
        #expect(Level.allCases.map(\.rawValue) == ["debug", "info", "notice", "success", "warning", "error", "critical"])
        #expect(Level.debug < .info)
        #expect(Level.warning >= .notice)
        #expect(Level.critical > .error)
    }

    @Test func successSitsWithNotice() {
        #expect(Level.success.severity == Level.notice.severity)
        #expect(!(Level.success < .notice) && !(Level.notice < .success))
        #expect(Level.success >= .notice && Level.success < .warning)
    }

    @Test func levelTableDefaults() {
        let table = Level.allCases.map { level -> String in
            let style = LevelStyle.builtIn(for: level)
            return "\(level.rawValue) \(style.journalPriority) \(style.urgency.rawValue) \(style.tint.rawValue) \(style.timeout)"
        }
        #expect(table == [
            "debug 7 low dim 3s", "info 6 normal blue 5s", "notice 5 normal cyan 5s", "success 5 normal green 4s",
            "warning 4 normal yellow 8s", "error 3 normal red 15s", "critical 2 critical white-on-red never",
        ])
    }
}

@Suite struct DurationTests {
    @Test(arguments: [
        ("1500ms", 1_500), ("5s", 5_000), ("1.5s", 1_500), ("2m", 120_000), ("1h", 3_600_000), ("1d", 86_400_000), ("0s", 0),
    ])
    func parsesDurations(text: String, milliseconds: Int) throws {
        #expect(DurationParser.milliseconds(try DurationParser.parse(text)) == milliseconds)
    }

    @Test(arguments: ["5", "", "s", "-1s", "5 minutes", "1.2.3s", "abc", "5x"])
    func rejectsDurationsWithoutAUnit(text: String) {
        #expect(throws: DurationParser.Error.self) { try DurationParser.parse(text) }
    }

    @Test func formatsWithTheLargestExactUnit() throws {
        #expect(DurationParser.format(.milliseconds(120_000)) == "2m")
        #expect(DurationParser.format(.milliseconds(90_000)) == "90s")
        #expect(DurationParser.format(.milliseconds(1_500)) == "1500ms")
        #expect(DurationParser.format(.zero) == "0ms")
        #expect(DurationParser.format(.seconds(86_400 * 3)) == "3d")
        #expect(DurationParser.format(.seconds(7_200)) == "2h")
        #expect(DurationParser.format(.milliseconds(-1_500)) == "-1500ms")
        #expect(DurationParser.format(.seconds(Int64.max / 1_000)) == "\(Int64.max / 1_000 * 1_000 / 1_000)s")
        // Each spelling reads back as the duration it came from.
        for ms in [1, 999, 1_000, 59_999, 60_000, 3_599_999, 3_600_000, 86_399_999, 86_400_000, 123_456_789_000] {
            #expect(try DurationParser.parse(DurationParser.format(.milliseconds(ms))) == .milliseconds(ms))
        }
    }

    @Test func timeoutsParseNeverAndDefault() throws {
        #expect(try NotificationTimeout(parsing: "never") == .never)
        #expect(try NotificationTimeout(parsing: "default") == .serverDefault)
        #expect(try NotificationTimeout(parsing: "250ms").milliseconds == 250)
        #expect(NotificationTimeout.never.milliseconds == nil)
    }
}

@Suite struct TextSanitizerTests {
    @Test(arguments: [
        ("plain text", "plain text"),
        ("red \u{1B}[31mtext\u{1B}[0m", "red text"),                       // SGR
        ("up\u{1B}[2Aclear\u{1B}[2J", "upclear"),                          // cursor movement, clear screen
        ("title\u{1B}]0;pwned\u{07}!", "title!"),                           // OSC set title, BEL-terminated
        ("clip\u{1B}]52;c;ZXZpbA==\u{1B}\\board", "clipboard"),            // OSC 52 clipboard, ST-terminated
        ("dcs\u{1B}Pq#0;2;0;0;0\u{1B}\\done", "dcsdone"),                  // DCS (sixel)
        ("bell\u{07}", "bell"),
        ("nul\u{0}byte", "nulbyte"),
        ("c1\u{9B}31mcsi", "c1csi"),                                        // 8-bit CSI
        ("c1\u{9D}0;t\u{9C}osc", "c1osc"),                                  // 8-bit OSC with 8-bit ST
        ("rtl\u{202E}txt.exe", "rtltxt.exe"),                              // bidi override
        ("iso\u{2066}late\u{2069}", "isolate"),
        ("reset\u{1B}c", "reset"),                                          // RIS
        ("keep\ttab", "keep\ttab"),
        ("over\rwrite", "over\nwrite"),                                     // lone CR cannot overwrite
        ("del\u{7F}ete", "delete"),
    ])
    func removesEverythingThatDrivesATerminal(input: String, expected: String) {
        #expect(TextSanitizer.clean(input) == expected)
    }

    @Test func titlesAreFoldedOntoOneLine() {
        #expect(TextSanitizer.clean("a\nb\tc", keepNewlines: false) == "a b c")
    }

    @Test func leavesNoEscapeInRandomisedInput() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = ["\u{1B}", "[", "]", "\u{07}", "\\", "P", "a", "1", ";", "\u{9B}", "\u{9D}", "\u{9C}", "\u{202E}", "\n", "\r", "\u{0}"]
        for _ in 0..<2_000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...24, using: &generator) { text.append(alphabet.randomElement(using: &generator)!) }
            let cleaned = TextSanitizer.clean(String(text))
            #expect(!cleaned.unicodeScalars.contains { TextSanitizerProbe.isControl($0) }, "\(String(text).debugDescription)")
        }
    }

    @Test func truncatesWithAMarker() {
        #expect(TextSanitizer.truncate("abcdefghij", to: 5) == "abcd…")
        #expect(TextSanitizer.truncate("abc", to: 5) == "abc")
        #expect(TextSanitizer.truncate("abc", to: nil) == "abc")
    }

    /// The cap counts what a terminal draws and a daemon receives: every combining mark.
    @Test func theCapCountsCombiningMarks() {
        let zalgo = "a" + String(repeating: "\u{301}", count: 600_000)
        let capped = TextSanitizer.truncate(zalgo, to: 1_024)
        #expect(capped.unicodeScalars.count == 1_024)
        #expect(capped.unicodeScalars.starts(with: "a\u{301}\u{301}".unicodeScalars))
        #expect(capped.unicodeScalars.last == "…")
        // Between characters when it can: "é" (e + U+0301) is kept whole or not at all.
        let accents = String(repeating: "e\u{301}", count: 10)
        #expect(TextSanitizer.truncate(accents, to: 6) == "e\u{301}e\u{301}…")
        #expect(TextSanitizer.truncate(accents, to: 20) == accents)
        #expect(TextSanitizer.truncate("日本語のタイトル", to: 4) == "日本語…")
    }

    @Test(arguments: [
        ("plain text", "plain text"),
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),
        ("unknown key \"\u{1B}]2;pwned\u{07}\"", "unknown key \"\\u001B]2;pwned\\u0007\""),
        ("clip\u{1B}]52;c;ZXZpbA==\u{1B}\\", "clip\\u001B]52;c;ZXZpbA==\\u001B\\"),
        ("c1 \u{9B}2J and \u{9D}52;c;x\u{9C}", "c1 \\u009B2J and \\u009D52;c;x\\u009C"),
        ("cr\roverwrite\u{08}\u{7F}", "cr\\u000Doverwrite\\u0008\\u007F"),
        ("rtl \u{202E}exe.txt \u{2067}x\u{2069} \u{200F}\u{061C}", "rtl \\u202Eexe.txt \\u2067x\\u2069 \\u200F\\u061C"),
        ("zero\u{200B}width\u{FEFF} line\u{2028}para\u{2029}", "zero\\u200Bwidth\\uFEFF line\\u2028para\\u2029"),
        ("tag \u{E0041}", "tag \\uDB40\\uDC41"),
        ("ünïcödé ✓ 日本 e\u{301}", "ünïcödé ✓ 日本 e\u{301}"),
    ])
    func escapesWhatCouldDriveOrHideInAMessage(input: String, expected: String) {
        #expect(TextSanitizer.escaped(input) == expected)
    }

    /// Escaped JSON is still JSON, with the same value: `--json` output passes through it.
    @Test func escapingKeepsJSONValid() throws {
        let value = "a\u{9B}2J\u{202E}b\u{E0041}"
        let json = #"{"error":""# + value + #""}"#
        let escaped = TextSanitizer.escaped(json)
        #expect(!escaped.unicodeScalars.contains { TextSanitizerProbe.isControl($0) })
        let decoded = try JSONDecoder().decode([String: String].self, from: Data(escaped.utf8))
        #expect(decoded["error"] == value)
    }

    @Test func leavesNothingToEscapeInRandomisedInput() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = ["\u{1B}", "[", "]", "\u{07}", "\\", "a", "\u{9B}", "\u{9D}", "\u{202E}", "\n", "\r", "\u{0}", "\u{200B}", "é", "\u{2028}"]
        for _ in 0..<2_000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...24, using: &generator) { text.append(alphabet.randomElement(using: &generator)!) }
            let escaped = TextSanitizer.escaped(String(text))
            #expect(!escaped.unicodeScalars.contains { TextSanitizerProbe.isControl($0) || $0.properties.generalCategory == .format || $0 == "\u{2028}" })
        }
    }
}

enum TextSanitizerProbe {
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return (value < 0x20 && value != 0x0A && value != 0x09) || (0x7F...0x9F).contains(value)
            || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
    }
}

@Suite struct NormalizerTests {
    @Test func rejectsAnEmptyTitle() {
        #expect(throws: EventError.self) { try EventNormalizer.normalize(NotificationEvent(title: " \u{1B}[2J \n")) }
    }

    @Test func cleansAndCaps() throws {
        let event = try EventNormalizer.normalize(NotificationEvent(
            title: "Disk\nfull\u{1B}]0;x\u{07}", body: "  line 1\nline 2\u{0}  \n", app: " \n", tags: ["", "ops"]))
        #expect(event.title == "Disk full")
        #expect(event.body == "line 1\nline 2")
        #expect(event.app == nil)
        #expect(event.tags == ["ops"])
        let long = try EventNormalizer.normalize(NotificationEvent(title: String(repeating: "x", count: 5_000)))
        #expect(long.title.count == EventNormalizer.maximumTitleLength)
        #expect(long.title.hasSuffix("…"))
    }

    /// Nothing to see is as bad as nothing at all: zero-width spaces, bidi marks, a lone
    /// combining mark, fillers.
    @Test(arguments: [
        "\u{200B}\u{200B}", "\u{200E}\u{200F}\u{061C}", " \u{301}\u{301} ", "\u{FEFF}", "\u{2060}\u{2063}",
        "\u{3164}", "\u{115F}\u{1160}", "\u{2800}", "\u{34F}\u{FE0F}", "\u{202E}\u{200D}", "\u{E0041}\u{E007F}",
        "\u{3000}\u{2003}", "\u{20DD}", String(repeating: "\u{200B}", count: 5_000),
    ])
    func rejectsATitleWithNothingVisible(title: String) {
        #expect(throws: EventError.self) { try EventNormalizer.normalize(NotificationEvent(title: title)) }
    }

    @Test(arguments: ["a\u{200B}", "\u{200B}✓", "e\u{301}", "日本", "\u{E000}", "\u{200F}x", "·"])
    func keepsATitleWithSomethingVisible(title: String) throws {
        #expect(try EventNormalizer.normalize(NotificationEvent(title: title)).title == title)
    }

    @Test func capsATitleOfCombiningMarks() throws {
        let event = try EventNormalizer.normalize(NotificationEvent(title: "a" + String(repeating: "\u{301}", count: 600_000)))
        #expect(event.title.unicodeScalars.count == EventNormalizer.maximumTitleLength)
        let body = try EventNormalizer.normalize(NotificationEvent(title: "t", body: "b" + String(repeating: "\u{20DD}", count: 600_000)))
        #expect(body.body.map { (EventNormalizer.maximumBodyLength - 3...EventNormalizer.maximumBodyLength).contains($0.utf8.count) } == true)
    }

    /// The body's cap is 64 KiB of UTF-8, as documented, in any script: not 64 Ki characters.
    @Test(arguments: ["a", "é", "日", "😀"])
    func capsABodyAt64KiBOfUTF8(character: String) throws {
        let event = try EventNormalizer.normalize(NotificationEvent(title: "t", body: String(repeating: character, count: 70_000)))
        let body = try #require(event.body)
        #expect(body.utf8.count <= 65_536 && body.utf8.count > 65_536 - 8, "\(body.utf8.count) bytes")
        #expect(body.hasSuffix("…") && body.dropLast().allSatisfy { String($0) == character })
    }

    @Test func validatesMessageIDs() throws {
        #expect(throws: EventError.self) { try EventNormalizer.normalize(NotificationEvent(title: "t", messageID: "xyz")) }
        let event = try EventNormalizer.normalize(NotificationEvent(title: "t", messageID: "0123456789ABCDEF0123456789abcdef"))
        #expect(event.messageID == "0123456789abcdef0123456789abcdef")
    }
}
