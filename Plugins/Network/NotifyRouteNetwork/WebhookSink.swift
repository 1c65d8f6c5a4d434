#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute
import NotifyRouteNetworkSchema

/// POSTs each event as JSON to a URL: 2xx is delivered, 4xx a permanent failure (the
/// same request would fail again), 5xx, no connection or no answer in time retryable.
///
/// ```yaml
/// sinks:
///   hook:
///     kind: webhook
///     url: https://hooks.example/notify
///     headers: { X-Team: ops }
///     token_file: /etc/notify-route/hook.token   # sent as "Authorization: Bearer ..."
/// ```
public final class WebhookSink: NotificationSink {
    public let name: String
    public let url: String
    let headers: [(String, String)]
    /// A token file that did not exist when the config was loaded: read at each delivery until it does.
    let pendingTokenFile: String?
    let timeout: Duration?
    let host = NetworkSinkSchema.hostName
    let transport = HTTPTransport()

    init(name: String, url: String, headers: [(String, String)], pendingTokenFile: String? = nil, timeout: Duration?) {
        self.name = name
        self.url = url
        self.headers = headers
        self.pendingTokenFile = pendingTokenFile
        self.timeout = timeout
    }

    /// A replace or a count update is posted like any event, its decision in the body.
    public var capabilities: SinkCapabilities { SinkCapabilities(canReplace: true, worthRetrying: true) }

    public var hasPendingWork: Bool { false }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let body = WebhookPayload(delivery, host: host, time: Date()).json()
        var headers = headers
        if let path = pendingTokenFile {
            do throws(TokenFile.Refused) {
                headers.append(("Authorization", "Bearer " + (try TokenFile.read(path))))
            } catch {
                throw SinkError(.failed, "token_file \(path): \(error.reason)")
            }
        }
        _ = try await transport.post(body, to: url, headers: headers, deadline: delivery.deadline, timeout: timeout)
        return SinkReceipt(handle: delivery.event.replaceKey.map(SinkHandle.init))
    }
}

/// The body of a webhook: the keys of `notify-route ingest`'s schema, every value decided,
/// plus when and where it was sent and what the router decided for this sink.
///
/// ```json
/// {"app":"backupd","body":"42 GB","decision":{"count":1,"intent":"show","sink":"hook"},
///  "dedup_key":"...","fields":{},"host":"web-1","level":"success","tags":[],
///  "time":"2026-11-24T04:40:00.123Z","timeout":"5s","title":"Backup finished"}
/// ```
struct WebhookPayload: Encodable {
    struct Decision: Encodable {
        var sink: String
        var intent: String
        var count: Int
        var handle: String?
    }

    var event: ResolvedEvent.Payload
    var time: String
    var host: String
    var decision: Decision

    enum CodingKeys: String, CodingKey { case time, host, decision }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(time, forKey: .time)
        try container.encode(host, forKey: .host)
        try container.encode(decision, forKey: .decision)
    }

    init(_ delivery: SinkDelivery, host: String, time: Date) {
        event = ResolvedEvent.Payload(delivery.event)
        self.time = AlertTemplate.timestamp(time)
        self.host = host
        decision = Decision(sink: delivery.sinkName, intent: "show", count: delivery.duplicateCount)
        switch delivery.intent {
        case .show: break
        case .replace(let handle):
            decision.intent = "replace"
            decision.handle = handle.value
        case .updateDuplicateCount(let handle, _):
            decision.intent = "update-count"
            decision.handle = handle.value
        }
    }

    func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and lists of them: encoding cannot fail.
        return Array((try? encoder.encode(self)) ?? Data("{}".utf8))
    }
}

extension WebhookSink {
    /// `kind: webhook`.
    public static let plugin = NetworkSinkSchema.webhook { options, settings in
        WebhookSink(name: options.sinkName, url: settings.url, headers: settings.headers,
                    pendingTokenFile: settings.pendingTokenFile, timeout: settings.timeout)
    }
}
