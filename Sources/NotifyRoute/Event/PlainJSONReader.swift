import Glibc

/// Reads JSON of the plain shape that clients write, in one pass over the bytes and
/// without the ``JSONLine`` tree: strings without escapes, whole numbers, `true`, `false`,
/// `null`, arrays of strings, and an event whose values are strings or its tags.
///
/// A daemon's request line goes through it first, because building the tree and decoding
/// the event from it weigh on a loaded daemon (Tests/Benchmarks/README.md, "Why the code
/// is so"). Every reading gives
/// `nil` for anything outside that shape (an escape, a fraction, an event's actions, a key
/// it does not know, any mistake): the caller then reads the line with ``JSONLine`` and
/// the decoder as before, so results and error messages are theirs. What it does read, it
/// reads as they do (the fuzz-event target checks that on every input).
package struct PlainJSONReader: ~Copyable {
    package let bytes: UnsafeBufferPointer<UInt8>
    package private(set) var index = 0

    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private static let quote = UInt8(ascii: "\"")

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Whether only whitespace is left.
    package mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    /// Takes `byte` if it comes next, after any whitespace.
    package mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Takes `word` (`null`, `true`, `false`) if it comes next, after any whitespace.
    package mutating func take(_ word: StaticString) -> Bool {
        skipWhitespace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count, memcmp(bytes.baseAddress! + index, word.utf8Start, count) == 0 else { return false }
        index += count
        return true
    }

    /// The bytes between the quotes of the string that comes next, which has no escape and
    /// no control character.
    package mutating func rawString() -> UnsafeBufferPointer<UInt8>? {
        guard take(Self.quote) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Self.quote {
                index += 1
                return UnsafeBufferPointer(rebasing: bytes[start..<index - 1])
            }
            if byte < 0x20 || byte == UInt8(ascii: "\\") { return nil }
            index += 1
        }
        return nil
    }

    /// The next string, made as ``JSONLine`` makes it: invalid UTF-8 repaired.
    package mutating func string() -> String? {
        guard let raw = rawString() else { return nil }
        return String(unsafeUninitializedCapacity: raw.count) { buffer in
            guard let target = buffer.baseAddress, let source = raw.baseAddress else { return 0 }
            target.initialize(from: source, count: raw.count)
            return raw.count
        }
    }

    /// A string, or `.some(nil)` for `null`.
    package mutating func stringOrNull() -> String?? {
        if take("null") { return .some(nil) }
        return string().map { .some($0) }
    }

    /// `true` or `false`, or `.some(nil)` for `null`.
    package mutating func boolOrNull() -> Bool?? {
        if take("null") { return .some(nil) }
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }

    /// A whole number from 0 to 999,999,999,999,999 (what an integer of the protocol may
    /// be), or `.some(nil)` for `null`. A sign, more digits, leading zeros, fractions and
    /// exponents are left to the tree, which says what is wrong with them.
    package mutating func integerOrNull() -> Int?? {
        if take("null") { return .some(nil) }
        let start = index
        var value = 0
        while index < bytes.count, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
            // Stop before the value could overflow: a line of a million digits is any client's to send.
            guard index - start < 15 else { return nil }
            value = value * 10 + Int(digit)
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] | 0x20 == UInt8(ascii: "e") { return nil }
        return .some(value)
    }

    /// An array of strings.
    package mutating func strings() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var items: [String] = []
        if take(UInt8(ascii: "]")) { return items }
        repeat {
            guard let item = string() else { return nil }
            items.append(item)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? items : nil
    }

    /// Whether `raw` spells `word`.
    package static func spells(_ raw: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
        raw.count == word.utf8CodeUnitCount && (raw.isEmpty || memcmp(raw.baseAddress!, word.utf8Start, raw.count) == 0)
    }

    /// An event object whose members are among the strings of ``NotificationEvent/jsonKeys``
    /// and `tags`, read as ``NotificationEvent/decode(jsonLine:)`` reads it.
    package mutating func event() -> NotificationEvent? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var title: String?
        var body, app, source, dedupKey, replaceKey, icon, category, messageID: String?
        var level: Level?
        var timeout: NotificationTimeout?
        var tags: Set<String> = []
        var seen: UInt16 = 0
        if !take(UInt8(ascii: "}")) {
            repeat {
                guard let key = rawString(), take(UInt8(ascii: ":")), let member = Self.eventMember(key) else { return nil }
                // A key twice: the tree refuses it, with its message.
                guard seen & 1 << member == 0 else { return nil }
                seen |= 1 << member
                switch member {
                case 0:
                    guard let text = string() else { return nil }
                    title = text
                case 1: guard let text = stringOrNull() else { return nil }; body = text
                case 2:
                    guard let text = stringOrNull() else { return nil }
                    if let text {
                        // Not lower case, or no level: the decoder lowers it, or says what is wrong.
                        guard let known = Level(rawValue: text) else { return nil }
                        level = known
                    }
                case 3:
                    guard let text = stringOrNull() else { return nil }
                    if let text {
                        guard let parsed = try? NotificationTimeout(parsing: text) else { return nil }
                        timeout = parsed
                    }
                case 4: guard let text = stringOrNull() else { return nil }; app = text
                case 5: guard let text = stringOrNull() else { return nil }; source = text
                case 6:
                    if take("null") { continue }
                    guard let items = strings() else { return nil }
                    tags = Set(items)
                case 7: guard let text = stringOrNull() else { return nil }; dedupKey = text
                case 8: guard let text = stringOrNull() else { return nil }; replaceKey = text
                case 9: guard let text = stringOrNull() else { return nil }; icon = text
                case 10: guard let text = stringOrNull() else { return nil }; category = text
                default: guard let text = stringOrNull() else { return nil }; messageID = text
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
        }
        guard let title else { return nil }
        return NotificationEvent(
            title: title, body: body, level: level, timeout: timeout, app: app, source: source, tags: tags,
            dedupKey: dedupKey, replaceKey: replaceKey, icon: icon, category: category, messageID: messageID)
    }

    /// The place of `key` in ``NotificationEvent/jsonKeys`` (`message_id` as 11), for the
    /// members read here: not `actions`, `fields` or `progress`.
    private static func eventMember(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        switch key.count {
        case 3: spells(key, "app") ? 4 : nil
        case 4: spells(key, "body") ? 1 : spells(key, "tags") ? 6 : spells(key, "icon") ? 9 : nil
        case 5: spells(key, "title") ? 0 : spells(key, "level") ? 2 : nil
        case 6: spells(key, "source") ? 5 : nil
        case 7: spells(key, "timeout") ? 3 : nil
        case 8: spells(key, "category") ? 10 : nil
        case 9: spells(key, "dedup_key") ? 7 : nil
        case 10: spells(key, "message_id") ? 11 : nil
        case 11: spells(key, "replace_key") ? 8 : nil
        default: nil
        }
    }
}

extension NotificationEvent {
    /// A line that is one plain event object (``PlainJSONReader``), or `nil` for
    /// ``decode(jsonLine:)`` to read.
    package static func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> NotificationEvent? {
        var reader = PlainJSONReader(bytes)
        guard let event = reader.event(), reader.atEnd() else { return nil }
        return event
    }
}
