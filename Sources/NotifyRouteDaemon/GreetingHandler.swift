import Glibc
import NIOCore
import NotifyRoute
import NotifyRouteClient

/// Answers a connection's `hello` on its event loop, before any line reaches the
/// ``ConnectionHandler``: the greeting is then a read and a write, with no hop to the
/// router's threads and back (most of a `send`'s first round trip). A connection whose
/// peer is refused gets no such handler; its ``ConnectionHandler`` answers with the refusal.
///
/// A version-2 hello may come with its first request (``DaemonProtocol/Hello/greetBy``).
/// That request goes on to be routed only if the greeting was written before the client's
/// `greet_by`, read on the same clock after the write completed (a client that gave up by
/// then found no greeting to read, routed the event itself, and must not see it twice), and
/// only with the config the client named, if it named one.
final class GreetingHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame
    typealias OutboundOut = ByteBuffer

    private enum State {
        case awaitingHello
        /// A version-2 greeting is being written; what arrives meanwhile waits in ``held``.
        case writingGreeting
        /// The greeting is written; whether the first request it came with is routed.
        case firstRequest(inTime: Bool)
        case passing
    }

    private let welcome: @Sendable () -> RouterHost.Welcome
    private let peerPID: Int32
    private var state = State.awaitingHello
    private var held: [NIOAny] = []

    init(peerPID: Int32, welcome: @escaping @Sendable () -> RouterHost.Welcome) {
        self.peerPID = peerPID
        self.welcome = welcome
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .passing:
            context.fireChannelRead(data)
        case .writingGreeting:
            held.append(data)
        case .firstRequest(let inTime):
            guard case .line(let line) = unwrapInboundIn(data), !Self.isBlank(line) else {
                context.fireChannelRead(data)
                return
            }
            state = .passing
            if inTime {
                context.fireChannelRead(data)
            } else {
                let id = (try? DaemonProtocol.decodeObject(line.readableBytesView))?["id"]?.number.flatMap { Int(exactly: $0) }
                var answer = DaemonProtocol.Answer.failure(
                    "not routed: the greeting was written after greet_by, the client's clock could not be checked, or the daemon routes with another config; send the request again",
                    exit: 75, id: id)
                answer.resend = true
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: answer.line())), promise: nil)
            }
        case .awaitingHello:
            guard case .line(let line) = unwrapInboundIn(data), !Self.isBlank(line) else {
                context.fireChannelRead(data)
                return
            }
            let hello: DaemonProtocol.Hello
            switch Self.read(hello: line.readableBytesView) {
            case .failure(let problem):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(problem.description, exit: 64)))), promise: nil)
                return
            case .success(let read):
                hello = read
            }
            guard hello.version == DaemonProtocol.pipeliningVersion, let greetBy = hello.greetBy else {
                state = .passing
                let welcome = welcome()
                let greeting = hello.version == DaemonProtocol.pipeliningVersion ? welcome.pipeliningGreeting : welcome.greeting
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: greeting)), promise: nil)
                return
            }
            state = .writingGreeting
            let welcome = welcome()
            // A client that names its config (`--config`) wants the request routed with that file.
            let sameConfig = hello.config.map { welcome.configFile != nil && DaemonProtocol.FileIdentity(path: $0) == welcome.configFile } ?? true
            let written = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: welcome.pipeliningGreeting)), promise: written)
            // Runs on this loop; at once when the write went out within the call, as it does
            // on a fresh connection's empty socket buffer.
            written.futureResult.assumeIsolated().whenComplete { result in
                let inTime: Bool
                switch result {
                case .success: inTime = sameConfig && DaemonProtocol.monotonicMicroseconds() < greetBy && Self.sharesClock(with: self.peerPID)
                case .failure: inTime = false
                }
                self.state = .firstRequest(inTime: inTime)
                let waiting = self.held
                self.held = []
                for data in waiting { self.channelRead(context: context, data: data) }
                // Outside a read burst: what follows a read's lines is its read-complete.
                if !waiting.isEmpty { context.fireChannelReadComplete() }
            }
        }
    }

    /// Blank lines are skipped before and after the greeting alike.
    static func isBlank(_ line: ByteBuffer) -> Bool {
        !line.readableBytesView.contains { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }
    }

    /// A first line that should be our `hello`, or what is wrong with it. Read from the
    /// parsed members where they lie: a ``JSONValue`` tree of the line (its dictionary) was
    /// most of what the greeting cost the loop (Tests/Benchmarks/README.md, "Why the code is so").
    static func read(hello line: some Collection<UInt8>) -> Result<DaemonProtocol.Hello, DaemonProtocol.ProtocolError> {
        let parsed: JSONLine
        do {
            parsed = try DaemonProtocol.parseLine(line)
        } catch {
            return .failure(error)
        }
        var name, version, config, greetBy: JSONLine?
        if case .object(let members) = parsed {
            for (key, value) in members {
                switch key {
                case "hello": name = value
                case "version": version = value
                case "config": config = value
                case "greet_by": greetBy = value
                default: break
                }
            }
        }
        guard case .string(DaemonProtocol.name)? = name else {
            return .failure(DaemonProtocol.ProtocolError(
                "the first line must be {\"hello\":\"\(DaemonProtocol.name)\",\"version\":\(DaemonProtocol.version)}"))
        }
        guard case .number(let text)? = version, let number = DaemonProtocol.wholeNumber(text, Int.self), DaemonProtocol.versions.contains(number) else {
            return .failure(DaemonProtocol.ProtocolError(
                "protocol version \(version.map { String(decoding: JSONValue($0).line.dropLast(), as: UTF8.self) } ?? "missing"); this daemon speaks \(DaemonProtocol.versions.map(String.init).joined(separator: " and "))"))
        }
        var hello = DaemonProtocol.Hello(version: number)
        switch config {
        case nil, .null?: break
        case .string(let path)?: hello.config = path
        default: return .failure(DaemonProtocol.ProtocolError("\"config\": expected the path of a config file"))
        }
        switch greetBy {
        case nil, .null?: break
        default:
            guard case .number(let text)? = greetBy, let microseconds = DaemonProtocol.wholeNumber(text, Int64.self) else {
                return .failure(DaemonProtocol.ProtocolError("\"greet_by\": expected an integer (CLOCK_MONOTONIC, microseconds)"))
            }
            hello.greetBy = microseconds
        }
        return .success(hello)
    }

    /// Whether process `pid` reads the same `CLOCK_MONOTONIC` as this one: a client in
    /// another time namespace (a container's) has offsets of its own, and its `greet_by`
    /// means nothing here. Unknown (no such process here, or not ours to look at) is no.
    static func sharesClock(with pid: Int32) -> Bool {
        switch ownTimeNamespace {
        case .none: return true
        case .unknown: return false
        case .some(let own): return pid > 0 && namespaceLink("/proc/\(pid)/ns/time", equals: own)
        }
    }

    private enum Namespace { case none, unknown, some([UInt8]) }

    /// This process's time namespace; `none` on a kernel without them (before 5.6, or
    /// built without), where every process reads the one clock.
    private static let ownTimeNamespace: Namespace = {
        if let link = namespaceLink("/proc/self/ns/time") { return .some(link) }
        return errno == ENOENT && namespaceLink("/proc/self/ns/mnt") != nil ? .none : .unknown
    }()

    private static func namespaceLink(_ path: String) -> [UInt8]? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let count = readlink(path, buffer.baseAddress!, buffer.count)
            return count > 0 && count < buffer.count ? Array(buffer[..<count]) : nil
        }
    }

    /// Whether the link at `path` reads `expected`; compared in place, once per connection.
    private static func namespaceLink(_ path: String, equals expected: [UInt8]) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let count = readlink(path, buffer.baseAddress!, buffer.count)
            return count == expected.count && buffer[..<count].elementsEqual(expected)
        }
    }
}
