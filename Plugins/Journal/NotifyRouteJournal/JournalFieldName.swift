/// Journal field names: what journald accepts, and how any other name is made acceptable.
///
/// journald keeps a field only when its name is upper-case ASCII letters, digits and
/// `_`, does not start with `_` (those are trusted fields journald adds itself) or a
/// digit, and is at most 64 characters. It drops any other field *silently* (the write
/// still succeeds), so names are sanitised before they are written.
///
/// ```swift
/// JournalFieldName.sanitize("disk.path")   // "DISK_PATH"
/// JournalFieldName.sanitize("_secret")     // "SECRET"
/// JournalFieldName.sanitize("2fa-code")    // "FIELD_2FA_CODE"
/// JournalFieldName.isValid("DISK_PATH")    // true
/// ```
public enum JournalFieldName {
    /// The longest name journald accepts.
    public static let maximumLength = 64

    /// Whether journald keeps a field of this name.
    public static func isValid(_ name: String) -> Bool {
        // On the UTF-8 view, without a copy: every field of every record comes through here.
        let bytes = name.utf8
        guard let first = bytes.first, isUpper(first), bytes.count <= maximumLength else { return false }
        return bytes.allSatisfy { isUpper($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// The nearest valid name: letters upper-cased, every other character `_`, leading
    /// `_` removed, `FIELD_` put before a leading digit (or used alone for an empty
    /// result), cut to 64 characters. A valid name is returned unchanged.
    public static func sanitize(_ name: String) -> String {
        if isValid(name) { return name }
        var bytes: [UInt8] = []
        for scalar in name.unicodeScalars {
            if scalar.isASCII {
                let byte = UInt8(scalar.value)
                if isUpper(byte) || isDigit(byte) || byte == UInt8(ascii: "_") {
                    bytes.append(byte)
                } else if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") {
                    bytes.append(byte - 32)
                } else {
                    bytes.append(UInt8(ascii: "_"))
                }
            } else {
                bytes.append(UInt8(ascii: "_"))
            }
        }
        // journald reserves leading underscores for the fields it adds itself.
        while bytes.first == UInt8(ascii: "_") { bytes.removeFirst() }
        if bytes.isEmpty {
            bytes = Array("FIELD".utf8)
        } else if isDigit(bytes[0]) {
            bytes = Array("FIELD_".utf8) + bytes
        }
        return String(decoding: bytes.prefix(maximumLength), as: UTF8.self)
    }

    /// `name` with `suffix` appended, cutting `name` so the result stays within 64 characters.
    static func appending(_ suffix: String, to name: String) -> String {
        String(name.utf8.prefix(maximumLength - suffix.utf8.count).map { Character(UnicodeScalar($0)) }) + suffix
    }

    /// `prefix` put before `name`, cutting the end so the result stays within 64 characters.
    static func prefixing(_ prefix: String, to name: String) -> String {
        String((prefix + name).utf8.prefix(maximumLength).map { Character(UnicodeScalar($0)) })
    }

    private static func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
