#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient

/// One journal record as `journalctl -o json` prints it, matched against the config's
/// `sources:` the way the daemon's readers match what they read: for
/// `notify-route explain --journal-record`.
public struct JournalRecord: Sendable {
    /// The record's fields; a field given more than once keeps its first value, as a reader does.
    public let fields: [String: String]

    /// What is wrong with a line that is not a journal record.
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses one line of `journalctl -o json`: an object whose values are text, byte arrays
    /// (binary fields), lists of either (a field given more than once) or null (too large to print).
    public init(json line: some StringProtocol) throws(Malformed) {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
        } catch {
            throw Malformed(description: "not JSON: \(Self.reason(error))")
        }
        guard case .object(let entries) = value else {
            throw Malformed(description: "not a JSON object; expected one line of `journalctl -o json`")
        }
        var fields: [String: String] = [:]
        for (name, value) in entries {
            guard let text = try Self.text(value, field: name) else { continue }
            fields[name] = text
        }
        guard !fields.isEmpty else { throw Malformed(description: "the record has no fields") }
        self.fields = fields
    }

    public init(fields: [String: String]) {
        self.fields = fields
    }

    /// Which source takes the record, and what it makes of it.
    public struct Match: Sendable {
        public let source: SourceDeclaration
        public let event: NotificationEvent
    }

    /// Why no source takes the record.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case noSources
        case ownRecord
        case noMatch(sources: [String])

        public var description: String {
            switch self {
            case .noSources:
                "the config has no sources: no journal record becomes an event"
            case .ownRecord:
                "the record was written by notify-route itself (it has NOTIFY_ROUTE_ fields); sources never read those back"
            case .noMatch(let sources):
                "no source takes this record (tried \(sources.joined(separator: ", ")))"
            }
        }
    }

    /// The first source, in the config's order, that makes an event of this record. A
    /// `units` source takes a unit's failure (its body without the unit's last lines,
    /// which the daemon reads from the journal); a unit active again changes nothing
    /// unless the daemon saw it fail, so it is not explained here.
    public func match(_ sources: [SourceDeclaration]) throws(Refusal) -> Match {
        guard !sources.isEmpty else { throw .noSources }
        if fields.keys.contains(where: { $0.hasPrefix("NOTIFY_ROUTE_") }) { throw .ownRecord }
        for source in sources {
            switch source.kind {
            case .journal:
                if let event = JournalSource(declaration: source).event(for: fields) {
                    return Match(source: source, event: event)
                }
            case .units:
                let units = UnitSource(declaration: source, failed: [])
                if case .failed(let unit, _)? = units.change(for: fields) {
                    return Match(source: source, event: units.failureEvent(unit: unit, fields: fields, lines: []))
                }
            }
        }
        throw .noMatch(sources: sources.map(\.name))
    }

    private static func text(_ value: JSONValue, field: String) throws(Malformed) -> String? {
        switch value {
        case .null:
            return nil
        case .string(let text):
            return text
        case .array(let items) where items.allSatisfy({ $0.number != nil }):
            var bytes: [UInt8] = []
            for item in items {
                guard let number = item.number, let byte = UInt8(exactly: number) else {
                    throw Malformed(description: "field \(field): a byte array holds \(item), not a byte")
                }
                bytes.append(byte)
            }
            return String(decoding: bytes, as: UTF8.self)
        case .array(let items):
            guard let first = items.first else { return nil }
            return try text(first, field: field)
        case .bool, .number, .object:
            throw Malformed(description: "field \(field): expected text, a byte array or a list of them")
        }
    }

    private static func reason(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error { return context.debugDescription }
        return "\(error)"
    }
}
