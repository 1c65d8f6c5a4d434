import NotifyRoute

/// Event text made inert for a terminal, for the line and the banner alike: the
/// sanitiser's work (controls, escape sequences, bidi overrides and isolates), then
/// what it leaves that a terminal still acts on. The directional marks (LRM, RLM,
/// ALM) go, since they can reorder how neighbouring text reads; so do the characters
/// that show nothing at all and can hide text between what a reader sees (zero-width
/// space, word joiner and invisible operators, U+FEFF, the Mongolian vowel separator
/// and the tag characters U+E0000–U+E007F), while the joiners that emoji and scripts
/// need (U+200C, U+200D) stay. The Unicode line and paragraph separators (U+2028,
/// U+2029) count as line breaks: some terminals break the line there, and a one-line
/// layout must not.
enum TerminalText {
    /// One line: line breaks and tabs become spaces.
    static func line(_ text: String) -> String {
        filtered(TextSanitizer.clean(text, keepNewlines: false), lineBreak: " ")
    }

    /// The lines of `text`, empty ones left out; tabs stay.
    static func lines(_ text: String) -> [String] {
        filtered(TextSanitizer.clean(text), lineBreak: "\n")
            .split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    private static func filtered(_ text: String, lineBreak: Unicode.Scalar) -> String {
        guard text.unicodeScalars.contains(where: { needsAttention($0) }) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x200E, 0x200F, 0x061C: continue  // LRM, RLM, ALM
            case 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E, 0xE0000...0xE007F: continue
            case 0x2028, 0x2029: scalars.append(lineBreak)
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    private static func needsAttention(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x200E, 0x200F, 0x061C, 0x2028, 0x2029, 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E, 0xE0000...0xE007F: true
        default: false
        }
    }
}
