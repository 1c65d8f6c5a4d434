import Glibc

/// Environment variables read one by one with `getenv`: `ProcessInfo.processInfo.environment`
/// builds a dictionary of the whole environment on every call, for the few variables a
/// command reads. `@usableFromInline`: a public default argument (`StateDirectory.resolve`) reads it.
@usableFromInline package enum ProcessEnvironment {
    /// The value of `name`, or `nil` when it is not set.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The variables among `names` that are set, by name: the dictionary APIs that take an
    /// environment (``ConfigSource/locate(explicitPath:environment:embedded:)``, say) need no more.
    @usableFromInline package static func values(_ names: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            if let value = value(name) { values[name] = value }
        }
        return values
    }
}
