import NotifyRoute

/// The network sinks' kinds as the config sees them (name, summary, options, deadline),
/// without their HTTP code: the `notify-route` CLI lists, documents and recognises them
/// without linking SwiftNIO, async-http-client and BoringSSL, which only
/// `notify-route-network` carries (see the CLI's `NetworkHandOff`).
public enum NetworkSinkSchema {
    /// Every network kind, for the CLI's check of a config's `kind:` values.
    public static let kinds: Set<String> = [alertmanagerKind, webhookKind]

    public static let alertmanagerKind = "alertmanager"
    public static let webhookKind = "webhook"

    /// `kind: alertmanager`, made by `makeSink` from its options once they are checked
    /// (``AlertmanagerSettings``): in both executables, whatever `makeSink` does.
    public static func alertmanager(
        makeSink: @escaping @Sendable (SinkOptions, AlertmanagerSettings) throws -> any NotificationSink
    ) -> SinkPlugin {
        SinkPlugin(
            kind: alertmanagerKind,
            summary: "each event as an alert to Prometheus Alertmanager's API v2 (url or urls: every peer of a cluster)",
            options: [
                .option("url", .string, example: "http://127.0.0.1:9093", secret: .url, "an Alertmanager to post to (added to `urls`)"),
                .option("urls", .strings, example: "[http://am-1:9093, http://am-2:9093]", secret: .url,
                        "every peer of an Alertmanager cluster; delivered when one accepts"),
                .option("labels", .stringMap, example: "{ team: ops }",
                        "static labels added to every alert; each name `[a-zA-Z_][a-zA-Z0-9_]*`, as Alertmanager requires"),
                .option("instance", .string, default: .implicit("the host name"), example: "web-1",
                        "the `instance` label; \"\" for none, so that every host's event is the same alert"),
                .option("alertname_field", .string, example: "check", "a field whose value is the `alertname` instead of the title"),
                .option("generator_url", .string, example: "https://grafana.example/d/disk", "the alert's generatorURL"),
                .option("timeout", .duration, default: .implicit("the sink's deadline"), example: "3s",
                        "how long one request may take"),
                .option("resolve_after", .duration, default: .implicit("Alertmanager's resolve_timeout"), example: "1h",
                        "how long an alert stays active after a post: a one-shot event's then ends; an open one's (a replace key) is posted again before, until `close`, while the process lives"),
            ] + SinkRetry.keys,
            defaultDeadline: .seconds(5),
            makeSink: { options in try makeSink(options, try AlertmanagerSettings(options)) })
    }

    /// `kind: webhook`, made by `makeSink` from its options once they are checked (``WebhookSettings``).
    public static func webhook(
        makeSink: @escaping @Sendable (SinkOptions, WebhookSettings) throws -> any NotificationSink
    ) -> SinkPlugin {
        SinkPlugin(
            kind: webhookKind,
            summary: "each event as JSON POSTed to a URL (2xx delivered, 4xx permanent, 5xx and timeouts retryable)",
            options: [
                .option("url", .string, default: .required, example: "https://hooks.example/notify", secret: .url, "where to POST"),
                .option("headers", .stringMap, example: "{ X-Team: ops }", secret: .values, "HTTP headers added to every request"),
                .option("token_file", .string, example: "/etc/notify-route/hook.token",
                        "a file holding a bearer token (Authorization: Bearer); refused when others can read it; read at each delivery while it does not exist"),
                .option("timeout", .duration, default: .implicit("the sink's deadline"), example: "3s",
                        "how long one request may take"),
            ] + SinkRetry.keys,
            defaultDeadline: .seconds(5),
            makeSink: { options in try makeSink(options, try WebhookSettings(options)) })
    }
}
