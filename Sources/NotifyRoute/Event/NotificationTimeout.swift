/// How long a notification stays visible.
///
/// Written in config and on the command line as a duration (`1500ms`, `5s`, `2m`,
/// `1h`), `never` (sticky: it stays until it is closed), or `default` (the
/// notification server decides).
///
/// ```swift
/// try NotificationTimeout(parsing: "1500ms")  // .after(.milliseconds(1500))
/// try NotificationTimeout(parsing: "never")   // .never
/// ```
public enum NotificationTimeout: Hashable, Sendable {
    /// Sticky: no automatic dismissal.
    case never
    /// Dismissed after the duration; the timer restarts when a replacement arrives.
    case after(Duration)
    /// Whatever the displaying server does by default.
    case serverDefault

    /// Parses `never`, `default`, or a duration (see ``DurationParser``).
    public init(parsing text: String) throws(DurationParser.Error) {
        switch text.lowercased() {
        case "never", "sticky": self = .never
        case "default": self = .serverDefault
        default: self = .after(try DurationParser.parse(text))
        }
    }

    /// The duration in whole milliseconds, `nil` for `never` and `default`.
    public var milliseconds: Int? {
        guard case .after(let duration) = self else { return nil }
        return DurationParser.milliseconds(duration)
    }
}

extension NotificationTimeout: CustomStringConvertible {
    public var description: String {
        switch self {
        case .never: "never"
        case .serverDefault: "default"
        case .after(let duration): DurationParser.format(duration)
        }
    }
}

extension NotificationTimeout: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try NotificationTimeout(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Parses and prints the durations of config files and options: `250ms`, `5s`,
/// `1.5s`, `2m`, `1h`, `1d`. A bare number is rejected, because `5` could mean
/// seconds or milliseconds and guessing wrong is worse than asking.
public enum DurationParser {
    public struct Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        public var text: String
        public var description: String {
            "invalid duration \"\(text)\"; expected a number with a unit: ms, s, m, h or d (for example 1500ms, 5s, 2m)"
        }
    }

    private static let units: [(suffix: String, milliseconds: Double)] = [
        ("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    public static func parse(_ text: String) throws(Error) -> Duration {
        let trimmed = text.trimmingWhitespace()
        // Longest suffix first so that "ms" is not read as "m".
        for unit in units.sorted(by: { $0.suffix.count > $1.suffix.count }) where trimmed.hasSuffix(unit.suffix) {
            let number = trimmed.dropLast(unit.suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  let value = Double(number), value.isFinite, value >= 0
            else { break }
            let ms = value * unit.milliseconds
            guard ms < 1e15 else { break }
            return .milliseconds(Int64(ms.rounded()))
        }
        throw Error(text: text)
    }

    public static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// The shortest exact spelling: `90s` stays `90s`, `120000ms` becomes `2m`.
    public static func format(_ duration: Duration) -> String {
        let ms = milliseconds(duration)
        var (value, unit): (Int, StaticString) = (ms, "ms")
        // Unit by unit, without an array of them: every event's report and record say its timeout.
        if ms != 0 {
            if ms % 86_400_000 == 0 {
                (value, unit) = (ms / 86_400_000, "d")
            } else if ms % 3_600_000 == 0 {
                (value, unit) = (ms / 3_600_000, "h")
            } else if ms % 60_000 == 0 {
                (value, unit) = (ms / 60_000, "m")
            } else if ms % 1_000 == 0 {
                (value, unit) = (ms / 1_000, "s")
            }
        }
        // Digits and unit written in place: `String(value) + unit` takes a generic integer
        // conversion and a concatenation, twice an event in the daemon.
        // The exact length, so that a short one is a small string (more capacity allocates).
        var length = (value < 0 ? 1 : 0) + unit.utf8CodeUnitCount + 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            length += 1
        }
        return String(unsafeUninitializedCapacity: length) { buffer in
            let digits = JSONWriter.decimal(value, at: buffer.baseAddress!)
            UnsafeMutableRawPointer(buffer.baseAddress! + digits).copyMemory(from: unit.utf8Start, byteCount: unit.utf8CodeUnitCount)
            return digits + unit.utf8CodeUnitCount
        }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> Substring {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return Substring(self[first...last])
    }
}

extension String {
    /// Fast path: ASCII that is not white space at either end has nothing to trim
    /// (a Unicode property lookup costs a binary search per scalar).
    func trimmingWhitespace() -> Substring {
        let bytes = utf8
        if let first = bytes.first, let last = bytes.last, first < 0x80, last < 0x80,
           !Self.isASCIIWhitespace(first), !Self.isASCIIWhitespace(last) {
            return self[...]
        }
        return self[...].trimmingWhitespace()
    }

    /// U+0009 to U+000D and the space: the ASCII scalars whose `isWhitespace` is true.
    @inline(__always)
    static func isASCIIWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) }
}
