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

    /// A whole number that fits `Int`, or `nil`: what a daemon's counts are read as, so that
    /// a hostile or newer daemon's numbers (`1e300`, `-0.5`) never trap a client.
    public var integer: Int? {
        guard case .number(let value) = self, value.rounded() == value, abs(value) < 0x1p62 else { return nil }
        return Int(value)
    }
}

extension JSONValue {
    /// A value read by the ingest parser (the daemon's request lines).
    package init(_ line: JSONLine) {
        switch line {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let text): self = .number(Double(text) ?? .nan)
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let members): self = .object(Self.entries(members))
        }
    }

    /// An object's members by key; the first of duplicate keys wins, as in the ingest decoder.
    static func entries(_ members: [(key: String, value: JSONLine)]) -> [String: JSONValue] {
        Dictionary(members.map { ($0.key, JSONValue($0.value)) }, uniquingKeysWith: { first, _ in first })
    }
}
