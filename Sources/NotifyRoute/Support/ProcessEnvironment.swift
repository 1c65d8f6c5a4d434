import Glibc

/// Environment variables read one by one with `getenv`.
///
/// `ProcessInfo.processInfo.environment` builds a dictionary of the whole environment on
/// every call (splitting each `NAME=value` with a generic search): 1.9 M instructions, 30%
/// of a whole `notify-route send` to the journal (callgrind), for the four or five variables
/// a command reads.
public enum ProcessEnvironment {
    /// The value of `name`, or `nil` when it is not set.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The variables among `names` that are set, by name: the dictionary APIs that take an
    /// environment (``ConfigSource/locate(explicitPath:environment:embedded:)``, say) need no more.
    public static func values(_ names: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            if let value = value(name) { values[name] = value }
        }
        return values
    }
}
