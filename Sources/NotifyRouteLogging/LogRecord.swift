import Logging
import NotifyRoute

/// A log record waiting in the bridge's buffer: what the caller's task had to supply
/// (the message, the merged metadata); the event is built later, on the drain task.
struct LogRecord: Sendable {
    var label: String
    var level: Logger.Level
    var message: String
    var error: (any Error)?
    var metadata: Logger.Metadata
    var source: String
    var file: String
    var function: String
    var line: UInt

    func notificationEvent(tags: Set<String>) -> NotificationEvent {
        let (title, body) = Self.split(message)
        var fields: [String: String] = [:]
        Self.flatten(metadata, prefix: nil, into: &fields)
        var fullBody = body
        if let error {
            let text = String(describing: error)
            fields["error"] = text
            // The error is often the one thing worth reading on the desktop.
            fullBody = (fullBody.map { $0 + "\n" } ?? "") + "error: " + text
        }
        return NotificationEvent(
            title: title, body: fullBody, level: Level(level), app: label, source: source, tags: tags,
            fields: fields, callSite: CallSite(file: file, line: Int(line), function: function))
    }

    /// The first non-blank line is the title; what follows it is the body. A blank
    /// message still needs a title, or the router would reject the event.
    static func split(_ message: String) -> (title: String, body: String?) {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { !$0.allSatisfy(\.isWhitespace) }) else {
            return ("(empty log message)", nil)
        }
        let title = lines[first].trimmingWhitespace()
        let rest = lines[(first + 1)...].joined(separator: "\n")
        let body = rest.trimmingWhitespace()
        return (title, body.isEmpty ? nil : body)
    }

    /// Nested metadata becomes dotted names (`db.pool`, `hosts.0`), since event fields
    /// (journal fields) are flat.
    static func flatten(_ metadata: Logger.Metadata, prefix: String?, into fields: inout [String: String]) {
        for (key, value) in metadata {
            flatten(value, name: prefix.map { "\($0).\(key)" } ?? key, into: &fields)
        }
    }

    private static func flatten(_ value: Logger.Metadata.Value, name: String, into fields: inout [String: String]) {
        switch value {
        case .string(let text): fields[name] = text
        case .stringConvertible(let value): fields[name] = value.description
        case .dictionary(let nested): flatten(nested, prefix: name, into: &fields)
        case .array(let values):
            for (index, value) in values.enumerated() { flatten(value, name: "\(name).\(index)", into: &fields) }
        }
    }
}

extension Level {
    /// The notification level for a swift-log level: `trace` and `debug` are `debug`;
    /// the others keep their names.
    public init(_ level: Logger.Level) {
        switch level {
        case .trace, .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> String {
        guard let start = firstIndex(where: { !$0.isWhitespace }),
              let end = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[start...end])
    }
}
