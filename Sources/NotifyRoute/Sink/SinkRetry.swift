/// The bounds of `serve`'s retries of one sink's failures. A plugin whose sinks are
/// ``SinkCapabilities/worthRetrying`` declares these keys among its options, so that the
/// loader allows them and `config reference` lists them, and checks them with
/// ``check(_:)`` when it makes a sink, so that a bad value is a config error at its key.
public enum SinkRetry {
    public static let keys: [ConfigKey] = [
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
    public static func check(_ options: SinkOptions) throws(ConfigError) {
        _ = try options.int("retry_queue", in: 0...1_000_000)
        _ = try positive("retry_max_age", options)
        let backoff = try positive("retry_backoff", options)
        if let maximum = try positive("retry_backoff_max", options), maximum < (backoff ?? .seconds(1)) {
            throw options.error(
                "retry_backoff_max (\(DurationParser.format(maximum))) must not be shorter than retry_backoff (\(DurationParser.format(backoff ?? .seconds(1))))",
                at: "retry_backoff_max")
        }
    }

    private static func positive(_ key: String, _ options: SinkOptions) throws(ConfigError) -> Duration? {
        guard let duration = try options.duration(key) else { return nil }
        guard duration > .zero else { throw options.error("\(key) must be longer than 0s", at: key) }
        return duration
    }
}
