import NIOCore
import NotifyRouteHost

/// Answers a connection's `hello` on its event loop, before any line reaches the
/// connection's task: the greeting is then a read and a write, with no hop to the
/// router's threads and back (most of a `send`'s first round trip). A connection whose
/// peer is refused gets no such handler; its task answers with the refusal.
final class GreetingHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame
    typealias OutboundOut = ByteBuffer

    private let welcome: @Sendable () -> RouterHost.Welcome
    private var greeted = false

    init(welcome: @escaping @Sendable () -> RouterHost.Welcome) {
        self.welcome = welcome
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !greeted, case .line(let line) = unwrapInboundIn(data), !Self.isBlank(line) else {
            context.fireChannelRead(data)
            return
        }
        let answer: [UInt8]
        if let problem = Self.problem(withHello: line.readableBytesView) {
            answer = DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(problem, exit: 64))
        } else {
            greeted = true
            answer = welcome().greeting
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: answer)), promise: nil)
    }

    /// Blank lines are skipped before and after the greeting alike.
    static func isBlank(_ line: ByteBuffer) -> Bool {
        !line.readableBytesView.contains { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }
    }

    /// What is wrong with a first line that should be our `hello`, or `nil`.
    static func problem(withHello line: some Collection<UInt8>) -> String? {
        let value: JSONValue
        do {
            value = try DaemonProtocol.decodeObject(line)
        } catch {
            return error.description
        }
        guard value["hello"]?.string == DaemonProtocol.name else {
            return "the first line must be {\"hello\":\"\(DaemonProtocol.name)\",\"version\":\(DaemonProtocol.version)}"
        }
        guard case .number(let version)? = value["version"], Int(version) == DaemonProtocol.version else {
            return "protocol version \(value["version"].map { "\($0)" } ?? "missing"); this daemon speaks \(DaemonProtocol.version)"
        }
        return nil
    }
}
