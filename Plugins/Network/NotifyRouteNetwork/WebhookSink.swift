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
    let host = AlertTemplate.hostName
    let transport = HTTPTransport()

    init(name: String, url: String, headers: [(String, String)], pendingTokenFile: String? = nil, timeout: Duration?) {
        self.name = name
        self.url = url
        self.headers = headers
        self.pendingTokenFile = pendingTokenFile
        self.timeout = timeout
    }

    /// A replace or a count update is posted like any event, its decision in the body.
    public var capabilities: SinkCapabilities { SinkCapabilities(canReplace: true) }

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
    public static let plugin = NetworkSinkSchema.webhook { options in
        guard let url = try options.string("url") else {
            throw options.error("needs `url`, for example url: https://hooks.example/notify", at: "url")
        }
        try NetworkOptions.checkRetry(options)
        var headers: [(String, String)] = []
        for (name, value) in (try options.stringMap("headers") ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
                throw options.error("headers: \"\(name)\" is not an HTTP header name", at: "headers")
            }
            guard !value.contains(where: \.isNewline) else {
                throw options.error("headers: the value of \(name) must be one line", at: "headers")
            }
            headers.append((name, value))
        }
        var pendingTokenFile: String?
        if let path = try options.string("token_file"), access(path, F_OK) != 0 && errno == ENOENT {
            pendingTokenFile = path
        } else if let path = try options.string("token_file") {
            do throws(TokenFile.Refused) {
                headers.append(("Authorization", "Bearer " + (try TokenFile.read(path))))
            } catch {
                throw options.error("token_file \(path): \(error.reason)", at: "token_file")
            }
        }
        return WebhookSink(name: options.sinkName, url: try NetworkOptions.baseURL(url, options: options, key: "url"),
                           headers: headers, pendingTokenFile: pendingTokenFile,
                           timeout: try NetworkOptions.positiveDuration("timeout", options: options))
    }
}

/// A secret in a file, held to the rules of a private key: owned by the user or root,
/// readable by no one else, writable by no group.
enum TokenFile {
    struct Refused: Error {
        var reason: String
    }

    static func read(_ path: String) throws(Refused) -> String {
        guard path.hasPrefix("/") else { throw Refused(reason: "give an absolute path") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Refused(reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        // fstat on the descriptor read from: the file cannot be swapped between check and read.
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Refused(reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Refused(reason: "not a regular file") }
        let me = getuid()
        if info.st_uid != me && info.st_uid != 0 {
            throw Refused(reason: "owned by uid \(info.st_uid), neither you (uid \(me)) nor root")
        }
        if info.st_mode & (S_IROTH | S_IWOTH | S_IWGRP) != 0 {
            throw Refused(reason: "others can read or write it (mode \(String(info.st_mode & 0o7777, radix: 8))); run: chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while bytes.count <= 65_536 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw Refused(reason: String(cString: strerror(errno))) }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingWhitespace
        guard !token.isEmpty else { throw Refused(reason: "the file is empty") }
        guard !token.contains(where: \.isNewline) else { throw Refused(reason: "the token must be one line") }
        return token
    }
}
