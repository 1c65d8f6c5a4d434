#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AsyncHTTPClient
import Glibc
import NIOCore
import NIOHTTP1
import NIOSSL
import NotifyRoute

/// One JSON POST, answered within a deadline, with the answer sorted the way the router
/// needs it: delivered (2xx), a permanent failure (4xx: the same request would fail again),
/// or a retryable one (5xx, no connection, no answer in time).
///
/// Connections come from one client for the process, whose pool keeps them alive between
/// deliveries: a daemon posts over the same connection; a one-shot `send` opens one.
struct HTTPTransport: Sendable {
    /// `HTTPClient.shared`'s settings, except that a connection that cannot be made (refused,
    /// no route) fails its request at once instead of being tried again until the deadline:
    /// the route's failover, the other peers of a pair and `serve`'s retry queue are the
    /// retries, and a sink that waited out its deadline on a dead peer would leave them no time.
    /// Made on first use and never shut down, as `HTTPClient.shared` is.
    static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect would carry the event and the configured headers wherever it points:
        // none is followed, and ``post`` reports where it pointed.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// How much of an answer's body is read: enough for Alertmanager's message. A longer
    /// body is not read on; its connection is closed rather than drained.
    static let bodyLimit = 4_096

    struct Answer: Sendable {
        var status: Int
        var body: String
    }

    var client: HTTPClient = Self.sharedClient

    /// POSTs `body` to `url` and returns the answer when it is a 2xx, whatever its body;
    /// otherwise throws a ``SinkError`` that says what came back and whether trying again
    /// could help. Messages show `url` redacted (``SecretText/redactedURL(_:)``).
    func post(
        _ body: [UInt8], to url: String, headers: [(String, String)], deadline: ContinuousClock.Instant,
        timeout: Duration?
    ) async throws(SinkError) -> Answer {
        let shown = SecretText.redactedURL(url)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "notify-route")
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))

        var remaining = deadline - .now
        if let timeout, timeout < remaining { remaining = timeout }
        guard remaining > .zero else {
            throw SinkError(.timedOut, "no time left before the sink's deadline", isRetryable: true)
        }
        let answer: Answer
        let location: String?
        do {
            let response = try await client.execute(request, deadline: .now() + TimeAmount(remaining))
            let status = Int(response.status.code)
            location = response.headers.first(name: "Location")
            // A 2xx is a delivery whatever follows: its body is read only when it is small
            // enough to keep the connection for the next post.
            let read = !(200..<300).contains(status)
                || response.headers.first(name: "Content-Length").flatMap(Int.init).map { $0 <= Self.bodyLimit } == true
            answer = Answer(status: status, body: read ? await Self.prefix(of: response.body) : "")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw SinkError(.timedOut, "\(shown): no answer within \(DurationParser.format(remaining))", isRetryable: true)
        } catch is CancellationError {
            throw SinkError(.timedOut, "\(shown): cancelled at the sink's deadline", isRetryable: true)
        } catch {
            let (words, retryable) = Self.describe(error)
            throw SinkError(.failed, "\(shown): \(words)", isRetryable: retryable)
        }
        switch answer.status {
        case 200..<300:
            return answer
        case 300..<400:
            let target = location.map { $0.contains("://") ? SecretText.redactedURL($0) : "a path on the same server" } ?? "nowhere (no Location)"
            throw SinkError(.failed, "\(shown) redirected (\(answer.status)) to \(target); redirects are not followed: point the sink's url at where the events belong",
                            isRetryable: false)
        case 400..<500:
            throw SinkError(.failed, "\(shown) answered \(answer.status)\(Self.excerpt(answer.body))", isRetryable: answer.status == 408 || answer.status == 429)
        default:
            throw SinkError(.failed, "\(shown) answered \(answer.status)\(Self.excerpt(answer.body))", isRetryable: true)
        }
    }

    /// Up to ``bodyLimit`` bytes of a body, as text; what could not be read (a reset, the
    /// deadline) leaves what was.
    static func prefix(of body: HTTPClientResponse.Body) async -> String {
        var collected = ByteBuffer()
        do {
            for try await var chunk in body {
                if let slice = chunk.readSlice(length: min(chunk.readableBytes, bodyLimit - collected.readableBytes)) {
                    collected.writeImmutableBuffer(slice)
                }
                if collected.readableBytes >= bodyLimit { break }
            }
        } catch {}
        return String(buffer: collected)
    }

    /// The body of an error answer as one line: Alertmanager answers a JSON string for what
    /// it refuses itself (a 400), an object with a `message` for what its API schema refuses (a 422).
    static func excerpt(_ body: String) -> String {
        struct Problem: Decodable { var message: String }
        var text = body.trimmingWhitespace
        if let decoded = try? JSONDecoder().decode(String.self, from: Data(text.utf8)) {
            text = decoded
        } else if let problem = try? JSONDecoder().decode(Problem.self, from: Data(text.utf8)) {
            text = problem.message
        }
        text = String(text.map { $0.isNewline ? " " : $0 })
        if text.isEmpty { return "" }
        if text.utf8.count >= bodyLimit { text = String(text.prefix(bodyLimit / 4)) + "…" }
        return ": " + text
    }

    /// What went wrong in a few words ("connection refused"), not a library's type dump,
    /// and whether the same request could succeed later: a certificate that was not
    /// accepted will not be accepted on the next try.
    static func describe(_ error: any Error) -> (words: String, retryable: Bool) {
        switch error {
        case NIOSSLError.handshakeFailed(let cause):
            return ("the TLS handshake failed; the server's certificate was not accepted (\(cause))", false)
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return ("the server's TLS certificate is not for this host", false)
        case is NIOSSLError, is NIOSSLExtraError:
            return ("the TLS connection failed", true)
        case let error as HTTPClientError:
            switch error {
            case .remoteConnectionClosed: return ("the server closed the connection before answering", true)
            case .invalidURL, .emptyHost, .emptyScheme: return ("not a URL that can be posted to", false)
            case .tlsHandshakeTimeout: return ("no TLS handshake in time", true)
            default: return ("the request failed (\(error.shortDescription))", true)
            }
        case let error as IOError:
            return (String(cString: strerror(error.errnoCode)).lowercased(), true)
        default:
            let text = String(describing: error)
            if text.contains("connectionRefused") || text.contains("Connection refused") { return ("connection refused", true) }
            if text.contains("connectTimeout") { return ("no connection in time", true) }
            return ("the request failed (\(String(describing: type(of: error))))", true)
        }
    }
}

extension HTTPClientError {
    /// `HTTPClientError.remoteConnectionClosed` as `remote connection closed`.
    var shortDescription: String {
        let name = String(describing: self).split(separator: ".").last.map(String.init) ?? ""
        return name.reduce(into: "") { text, character in
            if character.isUppercase { text += " " + character.lowercased() } else { text.append(character) }
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
