#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

/// Option checks the network sinks share.
enum NetworkOptions {
    /// `url` without a trailing slash, after checking it is an http(s) URL with a host.
    static func baseURL(_ url: String, options: SinkOptions, key: String) throws(ConfigError) -> String {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parsed.host, !host.isEmpty
        else {
            throw options.error("\"\(url)\" is not an http:// or https:// URL with a host", at: key)
        }
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    static func positiveDuration(_ key: String, options: SinkOptions) throws(ConfigError) -> Duration? {
        guard let duration = try options.duration(key) else { return nil }
        guard duration > .zero else { throw options.error("\(key) must be longer than 0s", at: key) }
        return duration
    }

    /// Checks the retry keys: each positive, the backoff's ceiling not below its start.
    static func checkRetry(_ options: SinkOptions) throws(ConfigError) {
        _ = try options.int("retry_queue", in: 0...1_000_000)
        _ = try positiveDuration("retry_max_age", options: options)
        let backoff = try positiveDuration("retry_backoff", options: options)
        if let maximum = try positiveDuration("retry_backoff_max", options: options), maximum < (backoff ?? .seconds(1)) {
            throw options.error(
                "retry_backoff_max (\(DurationParser.format(maximum))) must not be shorter than retry_backoff (\(DurationParser.format(backoff ?? .seconds(1))))",
                at: "retry_backoff_max")
        }
    }
}
