import NotifyRoute

/// Any JSON value, for the parts of the daemon protocol that are passed through whole
/// (the event object, the delivery report, the status).
public enum JSONValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Integers stay integers on the wire (`"count":3`, not `3.0`).
            if value.rounded() == value, abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let entries) = self { entries[key] } else { nil }
    }

    public var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    public var number: Double? {
        if case .number(let value) = self { value } else { nil }
    }
}

extension JSONValue {
    /// Parses one JSON value with the core's own line parser: the CLI's side of the
    /// protocol does without Foundation's JSON, whose first use costs a one-shot `send`
    /// more than the exchange itself. Of duplicate keys the last wins, as with JSONDecoder.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONLine.SyntaxError) -> JSONValue {
        JSONValue(try JSONLine.parse(String(decoding: bytes, as: UTF8.self)))
    }

    init(_ line: JSONLine) {
        switch line {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let text): self = Double(text).map(JSONValue.number) ?? .null
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let entries):
            self = .object(Dictionary(entries.map { ($0.key, JSONValue($0.value)) }) { _, last in last })
        }
    }

    /// The value as one line of JSON with its newline, keys sorted: what `encodeLine`
    /// writes through JSONEncoder, written directly.
    public var line: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        write(to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private func write(to bytes: inout [UInt8]) {
        switch self {
        case .null: bytes += "null".utf8
        case .bool(let value): bytes += (value ? "true" : "false").utf8
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                bytes += String(Int64(value)).utf8
            } else if value.isFinite {
                bytes += String(value).utf8
            } else {
                bytes += "null".utf8
            }
        case .string(let text): Self.write(text, to: &bytes)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                item.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let entries):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.write(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                entries[key]!.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static func write(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += #"\""#.utf8
            case UInt8(ascii: "\\"): bytes += #"\\"#.utf8
            case UInt8(ascii: "\n"): bytes += #"\n"#.utf8
            case UInt8(ascii: "\r"): bytes += #"\r"#.utf8
            case UInt8(ascii: "\t"): bytes += #"\t"#.utf8
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += #"\u00"#.utf8
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
