/// Makes event text safe to show: no byte of an event may drive a terminal.
///
/// Removed: NUL and every other C0 control except tab and newline, DEL, the C1
/// controls (U+0080–U+009F), whole escape sequences (CSI `ESC [ ... final`, OSC
/// `ESC ] ... BEL|ST`, DCS/SOS/PM/APC strings up to ST, and two-byte `ESC x`), and
/// the bidirectional overrides and isolates that can reorder what a reader sees
/// (U+202A–U+202E, U+2066–U+2069). An event can therefore never move the cursor,
/// clear the screen, set the window title, ring the bell or write the clipboard.
///
/// ```swift
/// TextSanitizer.clean("ok\u{1B}]52;c;ZXZpbA==\u{07} done")  // "ok done"
/// ```
public enum TextSanitizer {
    /// Removes control sequences; keeps `\n` and `\t` when `keepNewlines` is true,
    /// otherwise turns them into spaces (for one-line titles).
    public static func clean(_ text: String, keepNewlines: Bool = true) -> String {
        // Fast paths: most text is plain ASCII with nothing to remove (decided on bytes),
        // and most of the rest has nothing to remove either (decided on scalars).
        if isPlainASCII(text, keepNewlines: keepNewlines) { return text }
        if !text.unicodeScalars.contains(where: { needsAttention($0) || (!keepNewlines && ($0 == "\n" || $0 == "\t")) }) {
            return text
        }

        var output = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil

        func next() -> Unicode.Scalar? {
            if let scalar = pending { pending = nil; return scalar }
            return scalars.next()
        }

        while let scalar = next() {
            switch scalar.value {
            case 0x1B:  // ESC
                skipEscapeSequence(&scalars, pending: &pending)
            case 0x9B:  // C1 CSI
                skipUntilFinalByte(&scalars)
            case 0x90, 0x98, 0x9D, 0x9E, 0x9F:  // C1 DCS, SOS, OSC, PM, APC: strings up to ST
                skipControlString(&scalars, pending: &pending)
            case 0x0A:
                output.append(keepNewlines ? scalar : " ")
            case 0x09:
                output.append(keepNewlines ? scalar : " ")
            case 0x0D:
                // A lone CR would let text overwrite the start of its own line.
                output.append(keepNewlines ? "\n" : " ")
                if let following = scalars.next() {
                    if following.value != 0x0A { pending = following }
                }
            case 0x00...0x1F, 0x7F, 0x80...0x9F:
                continue
            case 0x202A...0x202E, 0x2066...0x2069:
                continue
            default:
                output.append(scalar)
            }
        }
        return String(output)
    }

    /// True when every byte is ASCII and none is a control to remove (nor, for one-line
    /// text, a newline or tab to fold): a byte loop, no scalar decoding. False says
    /// nothing either way; the scalar check decides.
    @inline(__always)
    static func isPlainASCII(_ text: String, keepNewlines: Bool) -> Bool {
        // Over the contiguous bytes when there are (always, for native strings): iterating
        // the UTF-8 view itself costs an index step per byte.
        if let plain = text.utf8.withContiguousStorageIfAvailable({ isPlainASCII($0, keepNewlines: keepNewlines) }) {
            return plain
        }
        return isPlainASCII(text.utf8, keepNewlines: keepNewlines)
    }

    @inline(__always)
    private static func isPlainASCII(_ bytes: some Sequence<UInt8>, keepNewlines: Bool) -> Bool {
        for byte in bytes {
            if byte >= 0x20 {
                if byte >= 0x7F { return false }  // DEL, or the start of a non-ASCII scalar
            } else if !keepNewlines || (byte != 0x0A && byte != 0x09) {
                return false
            }
        }
        return true
    }

    @inline(__always)
    static func needsAttention(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 && value != 0x0A && value != 0x09
            || (value >= 0x7F && value <= 0x9F)
            || (value >= 0x202A && value <= 0x202E)
            || (value >= 0x2066 && value <= 0x2069)
    }

    private static func skipEscapeSequence(
        _ scalars: inout String.UnicodeScalarView.Iterator, pending: inout Unicode.Scalar?
    ) {
        guard let introducer = scalars.next() else { return }
        switch introducer {
        case "[":
            skipUntilFinalByte(&scalars)
        case "]", "P", "X", "^", "_":
            skipControlString(&scalars, pending: &pending)
        case " "..."/":
            // nF sequences: intermediates then one final byte.
            while let scalar = scalars.next() {
                if !(0x20...0x2F).contains(scalar.value) { break }
            }
        default:
            // Two-character sequences (ESC 7, ESC c, ESC =, ...): the introducer is the whole of it.
            if introducer.value < 0x20 || introducer.value == 0x7F {
                pending = nil  // control right after ESC: drop both
            }
        }
    }

    /// CSI parameters and intermediates run until a final byte in 0x40–0x7E.
    private static func skipUntilFinalByte(_ scalars: inout String.UnicodeScalarView.Iterator) {
        while let scalar = scalars.next() {
            if (0x40...0x7E).contains(scalar.value) { return }
            // Anything outside CSI's alphabet ends it, and is dropped with it.
            if !(0x20...0x3F).contains(scalar.value) { return }
        }
    }

    /// OSC/DCS/SOS/PM/APC strings end at BEL, ST (`ESC \`) or C1 ST (U+009C).
    private static func skipControlString(
        _ scalars: inout String.UnicodeScalarView.Iterator, pending: inout Unicode.Scalar?
    ) {
        while let scalar = scalars.next() {
            switch scalar.value {
            case 0x07, 0x9C:
                return
            case 0x1B:
                if let following = scalars.next(), following != "\\" { pending = following }
                return
            default:
                continue
            }
        }
    }

    /// Caps `text` at `limit` Unicode scalars, ending with `marker` when cut.
    ///
    /// Scalars, not characters: a terminal draws, and a daemon receives, every combining
    /// mark, so one base letter with 600,000 marks on it is 600,001, not one. The cut falls
    /// between characters, or inside the first one when that alone is over the limit.
    public static func truncate(_ text: String, to limit: Int?, marker: String = "…") -> String {
        // A scalar takes at least one UTF-8 byte: no more bytes than the limit, no cut.
        guard let limit, limit > 0, text.utf8.count > limit else { return text }
        let scalars = text.unicodeScalars
        guard let last = scalars.index(scalars.startIndex, offsetBy: limit, limitedBy: scalars.endIndex),
              last != scalars.endIndex
        else { return text }
        return cut(text, keeping: max(0, limit - marker.unicodeScalars.count), marker: marker) { _ in 1 }
    }

    /// ``truncate(_:to:marker:)`` counted in UTF-8 bytes, the marker's included: a body's
    /// cap is a size in memory, in a datagram and on disk, whatever its script.
    public static func truncate(_ text: String, toUTF8Bytes limit: Int, marker: String = "…") -> String {
        guard limit > 0, text.utf8.count > limit else { return text }
        return cut(text, keeping: max(0, limit - marker.utf8.count), marker: marker) { $0.utf8.count }
    }

    /// The whole characters of `text` whose scalars' sizes add up to at most `keep`, or, when
    /// the first alone is larger, as many of its scalars as fit; then `marker`.
    private static func cut(_ text: String, keeping keep: Int, marker: String, size: (Unicode.Scalar) -> Int) -> String {
        var kept = String.UnicodeScalarView()
        var count = 0
        for character in text {
            let characterSize = character.unicodeScalars.reduce(0) { $0 + size($1) }
            guard count + characterSize <= keep else {
                if count == 0 {
                    for scalar in character.unicodeScalars {
                        guard count + size(scalar) <= keep else { break }
                        kept.append(scalar)
                        count += size(scalar)
                    }
                }
                break
            }
            kept.append(contentsOf: character.unicodeScalars)
            count += characterSize
        }
        return String(kept) + marker
    }

    /// Makes a message that quotes untrusted text safe to write to a terminal, and keeps
    /// it readable: every control character but newline and tab, DEL, the C1 controls and
    /// every invisible formatting character (bidi marks, overrides and isolates, zero-width
    /// characters, U+2028/U+2029) is written as a `\u001B`-style escape. Error messages
    /// quote what came in (a JSON key, an option's value, a plugin's error), so that an
    /// `ESC ] 2 ; ... BEL` shows as text instead of setting the terminal's title.
    ///
    /// The escapes are JSON's own (`\uXXXX`, a surrogate pair above U+FFFF), so a JSON text
    /// passed through stays valid JSON with the same value. Apply it where a message is
    /// written out, once; ``clean(_:keepNewlines:)`` is for event text shown as content.
    ///
    /// ```swift
    /// TextSanitizer.escaped("unknown key \"\u{1B}]2;pwned\u{07}\"")  // unknown key "\u001B]2;pwned\u0007"
    /// ```
    public static func escaped(_ text: String) -> String {
        if isPlainASCII(text, keepNewlines: true) { return text }
        guard text.unicodeScalars.contains(where: needsEscaping) else { return text }
        var output = ""
        output.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard needsEscaping(scalar) else {
                output.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16, uppercase: true)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return output
    }

    /// What ``escaped(_:)`` writes as an escape.
    static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 { return value != 0x0A && value != 0x09 }
        if value < 0x7F { return false }
        if value <= 0x9F { return true }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
