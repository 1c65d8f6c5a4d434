#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
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
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// How much of an error answer is kept for the report: enough for Alertmanager's message.
    static let errorBodyLimit = 4_096

    struct Answer: Sendable {
        var status: Int
        var body: String
    }

    var client: HTTPClient = Self.sharedClient

    /// POSTs `body` to `url` and returns the answer when it is a 2xx; otherwise throws a
    /// ``SinkError`` that says what came back and whether trying again could help.
    func post(
        _ body: [UInt8], to url: String, headers: [(String, String)], deadline: ContinuousClock.Instant,
        timeout: Duration?
    ) async throws(SinkError) -> Answer {
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
        do {
            let response = try await client.execute(request, deadline: .now() + TimeAmount(remaining))
            let text = try await response.body.collect(upTo: Self.errorBodyLimit * 16)
            answer = Answer(status: Int(response.status.code), body: String(buffer: text))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw SinkError(.timedOut, "\(url): no answer within \(DurationParser.format(remaining))", isRetryable: true)
        } catch is CancellationError {
            throw SinkError(.timedOut, "\(url): cancelled at the sink's deadline", isRetryable: true)
        } catch {
            throw SinkError(.failed, "\(url): \(Self.describe(error))", isRetryable: true)
        }
        switch answer.status {
        case 200..<300:
            return answer
        case 400..<500:
            throw SinkError(.failed, "\(url) answered \(answer.status)\(Self.excerpt(answer.body))", isRetryable: answer.status == 408 || answer.status == 429)
        default:
            throw SinkError(.failed, "\(url) answered \(answer.status)\(Self.excerpt(answer.body))", isRetryable: true)
        }
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
        if text.utf8.count > errorBodyLimit { text = String(text.prefix(errorBodyLimit)) + "…" }
        return ": " + text
    }

    /// A connection error in a few words ("connection refused"), not NIO's type dump.
    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused" }
        if let error = error as? HTTPClientError { return "\(error)" }
        return text
    }
}

extension String {
    var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
