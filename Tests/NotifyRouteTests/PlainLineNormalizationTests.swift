@testable import NotifyRoute
import Testing

/// The normaliser's one-pass check for plain one-line text gives what cleaning,
/// trimming and truncating give, for text on either side of it.
@Suite struct PlainLineNormalizationTests {
    @Test func plainAndNotPlainAgreeWithTheFullTreatment() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "Z", "0", " ", "~", "!", "\t", "\n", "\r", "\u{1B}", "\u{7F}", "é", "\u{202E}", "-"]
        for _ in 0..<2_000 {
            let length = Int.random(in: 1...12, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let expectedTitle = TextSanitizer.truncate(
                String(TextSanitizer.clean(text, keepNewlines: false).trimmingWhitespace()), to: EventNormalizer.maximumTitleLength)
            let cleanedSource = TextSanitizer.clean(text, keepNewlines: false).trimmingWhitespace()
            let expectedSource = cleanedSource.isEmpty ? nil : String(cleanedSource)
            guard !expectedTitle.isEmpty else { continue }
            let event = try EventNormalizer.normalize(NotificationEvent(title: text, source: text))
            #expect(event.title == expectedTitle, "\(text.debugDescription)")
            #expect(event.source == expectedSource, "\(text.debugDescription)")
        }
        let long = String(repeating: "x", count: EventNormalizer.maximumTitleLength + 5)
        #expect(try EventNormalizer.normalize(NotificationEvent(title: long)).title
            == TextSanitizer.truncate(long, to: EventNormalizer.maximumTitleLength))
    }
}
