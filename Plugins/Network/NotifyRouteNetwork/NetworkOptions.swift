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

    /// The bounds of `serve`'s retry queue for one sink. The daemon's `RetryQueue` reads
    /// them from the sink's declaration (it cannot see this module); the plugin declares
    /// them, so that the loader allows them and `config reference` lists them, and checks
    /// them when the config loads, so that a bad value is a config error at its key.
    static let retryKeys: [ConfigKey] = [
        .option("retry_queue", .int(0...1_000_000), default: .value("1000"), example: "100",
                "how many failed deliveries of this sink `serve` retries at once; one more is dropped (logged and counted in `status`); 0: none is retried"),
        .option("retry_max_age", .duration, default: .value("1h"), example: "10m",
                "a delivery still failing this long after its first failure is dropped (logged and counted)"),
        .option("retry_backoff", .duration, default: .value("1s"), example: "500ms",
                "the first retry comes after up to this long (a random wait between half and all of it); each next one twice as long"),
        .option("retry_backoff_max", .duration, default: .value("1m"), example: "30s",
                "the longest wait between two retries"),
    ]

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
