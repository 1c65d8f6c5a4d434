import Foundation
@testable import NotifyRoute
import Testing

/// The daemon's answers carry the report written by ``JSONWriter``: these check that the
/// bytes are those `JSONEncoder` writes for the report's `Encodable` form (what `send
/// --json` prints and what clients of the daemon protocol read).
@Suite struct DeliveryReportJSONTests {
    static func encoded(_ report: DeliveryReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    @Test func reportIsWhatTheEncoderWrote() throws {
        var checked = 0
        for report in HistoryJSONTests.reports {
            #expect(String(decoding: report.json(), as: UTF8.self) == (try Self.encoded(report)))
            checked += 1
        }
        #expect(checked > 0)
    }

    /// Every outcome field: handles, failovers, notes, planned intents, and durations
    /// from none to hours (the encoder's number form: no `.0`, exponents where it writes them).
    @Test func outcomesAreWhatTheEncoderWrote() throws {
        let statuses = HistoryJSONTests.statuses + [
            .planned(.replace(SinkHandle("7"))), .planned(.updateDuplicateCount(SinkHandle("9 \"x\""), count: 12)),
            .failed(SinkError(.unavailable, "gone", isRetryable: true)),
        ]
        let durations: [Duration] = [
            .zero, .nanoseconds(1), .nanoseconds(499), .nanoseconds(500), .microseconds(1), .microseconds(7), .microseconds(120),
            .milliseconds(1), .milliseconds(5) + .nanoseconds(1234), .milliseconds(999), .seconds(1), .seconds(2) + .microseconds(333),
            .seconds(3600), .seconds(86_400 * 400) + .microseconds(1), .seconds(1_000_000_000), .seconds(Int64.max / 2),
        ]
        let event = ResolvedEvent(
            title: "t", body: nil, level: .warning, timeout: .never, app: "a", source: nil, tags: [], dedupKey: "d",
            replaceKey: nil, icon: nil, category: nil, actions: [], fields: [:], messageID: nil, progress: nil)
        for (index, status) in statuses.enumerated() {
            let outcomes = durations.enumerated().map { position, duration in
                SinkOutcome(
                    sink: "s\(position)", kind: "desktop", status: status, handle: position % 2 == 0 ? SinkHandle("h\(position)") : nil,
                    route: "route \(index)", failoverFor: position % 3 == 0 ? "desktop / \"x\"" : nil,
                    notes: position % 4 == 0 ? [] : ["note \(position)", "tab\there"], duration: duration)
            }
            let report = DeliveryReport(event: event, matchedRules: [], matchedRoutes: ["--sink"], outcomes: outcomes, notes: index % 2 == 0 ? [] : ["no route"])
            #expect(String(decoding: report.json(), as: UTF8.self) == (try Self.encoded(report)))
        }
    }

    /// Strings of every length up to three words, with each byte the encoder escapes (and
    /// some it does not) at each position: the writer checks and copies eight bytes at a time.
    @Test func stringsAreWhatTheEncoderWrote() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var checked = 0
        for length in 0...25 {
            for special in ["\"", "\\", "\n", "\t", "\u{01}", "\u{1F}", "\u{7F}", "é", "/", "✓"] {
                for position in 0...length {
                    var characters = Array(repeating: Character("a"), count: length)
                    characters.insert(Character(special), at: position)
                    let text = String(characters)
                    var writer = JSONWriter()
                    writer.string(text)
                    #expect(writer.text == String(decoding: try encoder.encode(text), as: UTF8.self), "\(text.debugDescription)")
                    checked += 1
                }
            }
        }
        #expect(checked > 3_000)
    }

    /// The numbers written from integers are spelled as the encoder spells them: a count
    /// as `String(_:)` does, thousandths as `Double(value) / 1000` is (the encoder's form
    /// of `duration_ms`), over every value below 100,000 and a spread of larger ones.
    @Test func integersAndThousandthsAreSpelledAsTheEncoderSpellsThem() throws {
        var generator = SystemRandomNumberGenerator()
        var values: [Int64] = Array(0..<100_000) + [Int64.max, Int64.min, Int64.min + 1]
        for edge: Int64 in [1 << 42, 1 << 43, 1 << 53] { values += [edge * 1_000 - 1, edge * 1_000, edge * 1_000 + 1] }
        for digits in 5...18 {
            let top = (0..<digits).reduce(Int64(1)) { value, _ in value * 10 }
            values += (0..<200).map { _ in Int64.random(in: 0..<top, using: &generator) }
        }
        values += values.map { $0 == .min ? .max : -$0 }
        let encoder = JSONEncoder()
        for value in values {
            var writer = JSONWriter()
            writer.integer(Int(value))
            #expect(writer.text == String(value))
            writer = JSONWriter()
            writer.thousandths(value)
            let encoded = String(decoding: try encoder.encode(Double(value) / 1_000), as: UTF8.self)
            #expect(writer.text == encoded, "\(value)")
        }
    }
}
