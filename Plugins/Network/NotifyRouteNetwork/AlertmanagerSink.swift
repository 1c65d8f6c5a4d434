#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

/// Posts each event as an alert to Prometheus Alertmanager's API v2, to every peer of a
/// cluster at once: delivered when at least one peer accepts it, as Prometheus' notifier
/// counts it, since the peers gossip what they were told.
///
/// ```yaml
/// sinks:
///   fleet:
///     kind: alertmanager
///     urls: [http://am-1:9093, http://am-2:9093]
///     labels: { team: ops }
///     resolve_after: 1h
/// ```
///
/// A replace updates the same alert (its labels, hence its fingerprint, are kept in the
/// router's state); `notify-route close --replace-key K` posts it again with `endsAt` now.
public final class AlertmanagerSink: NotificationSink {
    public let name: String
    /// The `POST /api/v2/alerts` endpoint of each peer.
    public let endpoints: [String]
    let template: AlertTemplate
    let timeout: Duration?
    let transport = HTTPTransport()

    init(name: String, endpoints: [String], template: AlertTemplate, timeout: Duration?) {
        self.name = name
        self.endpoints = endpoints
        self.template = template
        self.timeout = timeout
    }

    public var capabilities: SinkCapabilities {
        SinkCapabilities(canReplace: true, canClose: true)
    }

    /// Nothing runs after a delivery has answered.
    public var hasPendingWork: Bool { false }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let now = Date()
        var alert = template.alert(for: delivery.event, now: now, count: delivery.duplicateCount)
        var batch: [AlertmanagerAlert] = []
        switch delivery.intent {
        case .show:
            break
        case .replace(let handle), .updateDuplicateCount(let handle, _):
            if let earlier = AlertHandle(handle) {
                if earlier.labels == alert.labels {
                    alert.startsAt = earlier.startsAt ?? alert.startsAt
                } else {
                    // New labels are a new alert: the one it replaces must not linger until it times out.
                    batch.append(earlier.resolved(at: now))
                }
            }
        }
        batch.insert(alert, at: 0)
        let notes = try await post(batch, deadline: delivery.deadline)
        return SinkReceipt(handle: AlertHandle(alert).handle, notes: notes)
    }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        guard let earlier = AlertHandle(request.handle) else {
            throw SinkError(.failed, "the stored handle is not an Alertmanager alert: \(request.handle)")
        }
        let notes = try await post([earlier.resolved(at: Date())], deadline: request.deadline)
        return SinkReceipt(handle: request.handle, notes: notes)
    }

    /// Posts to every peer at once; returns a note per peer that failed when another
    /// accepted, and throws when none did (retryable when any failure was).
    func post(_ alerts: [AlertmanagerAlert], deadline: ContinuousClock.Instant) async throws(SinkError) -> [String] {
        let body = Self.encode(alerts)
        let failures = await withTaskGroup(of: SinkError?.self) { group in
            for endpoint in endpoints {
                group.addTask { [transport, timeout] () -> SinkError? in
                    do throws(SinkError) {
                        _ = try await transport.post(body, to: endpoint, headers: [], deadline: deadline, timeout: timeout)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            var failures: [SinkError] = []
            for await case let failure? in group { failures.append(failure) }
            return failures
        }
        if failures.count < endpoints.count { return failures.map { "peer \($0.message)" } }
        let kind: SinkError.Kind = failures.allSatisfy { $0.kind == .timedOut } ? .timedOut : .failed
        throw SinkError(kind, failures.map(\.message).joined(separator: "; "), isRetryable: failures.contains(where: \.isRetryable))
    }

    static func encode(_ alerts: [AlertmanagerAlert]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings only: encoding cannot fail.
        return Array((try? encoder.encode(alerts)) ?? Data("[]".utf8))
    }
}

extension AlertmanagerSink {
    /// `kind: alertmanager`.
    public static let plugin = SinkPlugin(
        kind: "alertmanager",
        summary: "each event as an alert to Prometheus Alertmanager's API v2 (url or urls: every peer of a cluster)",
        options: [
            .option("url", .string, example: "http://127.0.0.1:9093", "an Alertmanager to post to (added to `urls`)"),
            .option("urls", .strings, example: "[http://am-1:9093, http://am-2:9093]",
                    "every peer of an Alertmanager cluster; delivered when one accepts"),
            .option("labels", .stringMap, example: "{ team: ops }", "static labels added to every alert, sent as written"),
            .option("instance", .string, default: .implicit("the host name"), example: "web-1",
                    "the `instance` label; \"\" for none, so that every host's event is the same alert"),
            .option("alertname_field", .string, example: "check", "a field whose value is the `alertname` instead of the title"),
            .option("generator_url", .string, example: "https://grafana.example/d/disk", "the alert's generatorURL"),
            .option("timeout", .duration, default: .implicit("the sink's deadline"), example: "3s",
                    "how long one request may take"),
            .option("resolve_after", .duration, default: .implicit("Alertmanager's resolve_timeout"), example: "1h",
                    "when a one-shot event's alert resolves on its own"),
        ],
        defaultDeadline: .seconds(5)
    ) { options in
        // `url` and `urls` together are one list of peers.
        var endpoints: [String] = []
        for (key, urls) in [("url", try options.string("url").map { [$0] } ?? []), ("urls", try options.stringList("urls") ?? [])] {
            for url in urls {
                let endpoint = try NetworkOptions.baseURL(url, options: options, key: key) + "/api/v2/alerts"
                if !endpoints.contains(endpoint) { endpoints.append(endpoint) }
            }
        }
        guard !endpoints.isEmpty else {
            throw options.error("needs `url` (or `urls`: every peer of a cluster), for example url: http://127.0.0.1:9093", at: "url")
        }
        let field = try options.string("alertname_field")
        if let field, field.isEmpty { throw options.error("alertname_field must name a field", at: "alertname_field") }
        let template = AlertTemplate(
            staticLabels: try options.stringMap("labels") ?? [:],
            instance: try options.string("instance") ?? AlertTemplate.hostName,
            alertnameField: field, generatorURL: try options.string("generator_url"),
            resolveAfter: try NetworkOptions.positiveDuration("resolve_after", options: options))
        return AlertmanagerSink(name: options.sinkName, endpoints: endpoints, template: template,
                                timeout: try NetworkOptions.positiveDuration("timeout", options: options))
    }
}

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
}
