/// Bad event data: the CLI exits 65 (`EX_DATAERR`) on one.
public struct EventError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Step 1 of the pipeline: validate and clean an event before any rule sees it.
///
/// Strings in Swift are always valid Unicode, so invalid UTF-8 has already been
/// repaired (with U+FFFD) wherever bytes became a `String`; what remains is to strip
/// NUL and control sequences (see ``TextSanitizer``), fold the title onto one line,
/// and cap lengths so that one enormous event cannot exhaust a sink.
public enum EventNormalizer {
    /// Longest title kept (characters); sinks may cap further.
    public static let maximumTitleLength = 1_024
    /// Longest body kept, in UTF-8 bytes (64 KiB); sinks may cap further.
    public static let maximumBodyLength = 65_536
    /// Most structured fields kept on one event.
    public static let maximumFieldCount = 256

    /// `consuming`: the event is cleaned in place; a caller that keeps its own copies it.
    public static func normalize(_ event: consuming NotificationEvent) throws(EventError) -> NotificationEvent {
        // Each value is written back only when cleaning changed it (a comparison of the
        // same string is a bit test): a clean event stays the caller's, its box not copied.
        if !isPlainLine(event.title, maximumLength: maximumTitleLength) {
            let cleaned = TextSanitizer.clean(event.title, keepNewlines: false).trimmingWhitespace()
            guard !cleaned.isEmpty else {
                throw EventError("the title is empty; an event needs a one-line title")
            }
            // Before the cap, whose marker would be something to see.
            guard cleaned.unicodeScalars.contains(where: isVisible) else {
                throw EventError(
                    "the title has nothing visible (only characters such as zero-width spaces, bidi marks or combining marks "
                        + "without a letter); an event needs a one-line title")
            }
            let title = TextSanitizer.truncate(String(cleaned), to: maximumTitleLength)
            if title != event.title { event.title = title }
        }
        let body = event.body.flatMap { body in
            let cleaned = TextSanitizer.clean(body)
            let trimmed = cleaned.trimmingWhitespace()
            return trimmed.isEmpty ? nil : TextSanitizer.truncate(String(trimmed), toUTF8Bytes: maximumBodyLength)
        }
        if body != event.body { event.body = body }
        let app = oneLine(event.app), source = oneLine(event.source)
        let icon = oneLine(event.icon), category = oneLine(event.category)
        if app != event.app { event.app = app }
        if source != event.source { event.source = source }
        if icon != event.icon { event.icon = icon }
        if category != event.category { event.category = category }
        let dedupKey = event.dedupKey.map { $0.replacingNUL() }, replaceKey = event.replaceKey.map { $0.replacingNUL() }
        if dedupKey != event.dedupKey { event.dedupKey = dedupKey }
        if replaceKey != event.replaceKey { event.replaceKey = replaceKey }
        if event.dedupKey?.isEmpty == true { throw EventError("the dedup key is empty") }
        if event.replaceKey?.isEmpty == true { throw EventError("the replace key is empty") }
        if !event.tags.isEmpty { event.tags = Set(event.tags.compactMap(oneLine)) }
        if !event.actions.isEmpty {
            event.actions = try event.actions.map { action throws(EventError) in
                let id = TextSanitizer.clean(action.id, keepNewlines: false)
                let label = TextSanitizer.clean(action.label, keepNewlines: false)
                guard !id.isEmpty, !label.isEmpty else {
                    throw EventError("action \"\(action)\" needs an id and a label, as id=Label")
                }
                return NotificationAction(id: id, label: label)
            }
        }
        guard event.fields.count <= maximumFieldCount else {
            throw EventError("the event has \(event.fields.count) fields; at most \(maximumFieldCount) are accepted")
        }
        for key in event.fields.keys where key.isEmpty {
            throw EventError("a field has an empty name; use -f NAME=VALUE")
        }
        if let progress = event.progress, !NotificationEvent.progressRange.contains(progress) {
            throw EventError("progress \(progress) is out of range; expected a whole number from 0 to 100")
        }
        if let id = event.messageID {
            guard id.count == 32, id.allSatisfy(\.isHexDigit) else {
                throw EventError("message id \"\(id)\" must be 32 hexadecimal digits")
            }
            event.messageID = id.lowercased()
        }
        return event
    }

    /// Whether `scalar` shows as something on a terminal or in a notification: not
    /// whitespace, not a mark (which only modifies the letter before it), not a format or
    /// other default-ignorable character (zero-width spaces, bidi marks, Hangul fillers),
    /// not the blank braille pattern.
    private static func isVisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        if properties.isWhitespace || properties.isDefaultIgnorableCodePoint || scalar == "\u{2800}" { return false }
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .format, .control, .spaceSeparator,
             .lineSeparator, .paragraphSeparator, .surrogate:
            return false
        default:
            return true
        }
    }

    private static func oneLine(_ text: String?) -> String? {
        guard let text else { return nil }
        if isPlainLine(text, maximumLength: nil) { return text }
        let cleaned = TextSanitizer.clean(text, keepNewlines: false).trimmingWhitespace()
        return cleaned.isEmpty ? nil : String(cleaned)
    }

    /// Whether cleaning, trimming and truncating to `maximumLength` leave `text` as it is,
    /// decided in one pass over its bytes: not empty, printable ASCII only (no control
    /// character, nothing to strip or fold), no space at either end, within the length.
    /// The usual title, app and source; the full treatment costs a substring and a
    /// string made from it per value.
    private static func isPlainLine(_ text: String, maximumLength: Int?) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let first = bytes.first, let last = bytes.last, first != 0x20, last != 0x20 else { return false }
            if let maximumLength, bytes.count > maximumLength { return false }
            for byte in bytes where byte < 0x20 || byte > 0x7E { return false }
            return true
        } ?? false
    }
}

extension String {
    fileprivate func replacingNUL() -> String {
        utf8.contains(0) ? String(unicodeScalars.filter { $0 != "\0" }.map(Character.init)) : self
    }
}
