import NotifyRoute
import NIOCore
import Synchronization

/// What a connection's byte stream is cut into.
enum LineFrame: Sendable {
    case line(ByteBuffer)
    /// A line that will not be read (too long, or past the daemon's budget for unterminated
    /// input), and why: the rest of the stream is not read.
    case refused(String)
}

/// Newline-delimited frames with a cap, so a client that never sends a newline cannot
/// make the daemon buffer without bound; and a share of ``LineBudget`` past a small
/// allowance, so a thousand such clients cannot either.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = LineFrame

    let limit: Int
    private let charge: LineBudget.Charge
    private var scanned = 0
    private var overflowed = false

    init(limit: Int, budget: LineBudget) {
        self.limit = limit
        self.charge = LineBudget.Charge(budget)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if overflowed {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        if let newline = view[(view.startIndex + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            scanned = 0
            guard length <= limit else { return overflow(context, length, &buffer) }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            charge.hold(0)
            context.fireChannelRead(wrapInboundOut(.line(line)))
            return .continue
        }
        scanned = view.count
        if scanned > limit { return overflow(context, scanned, &buffer) }
        // What the connection holds is its buffer, which a few bytes of a line may keep at a read's size.
        guard charge.hold(max(scanned, buffer.capacity)) else {
            return refuse(context, &buffer, "the daemon holds as much unterminated input from its clients as it will; this connection is closed")
        }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // Half a line and then a hang-up: there is nobody to answer, so it is dropped.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        charge.hold(0)
        return .needMoreData
    }

    private mutating func overflow(_ context: ChannelHandlerContext, _ length: Int, _ buffer: inout ByteBuffer) -> DecodingState {
        refuse(context, &buffer, "a request line of more than \(length) bytes; at most \(limit) are read")
    }

    private mutating func refuse(_ context: ChannelHandlerContext, _ buffer: inout ByteBuffer, _ reason: String) -> DecodingState {
        overflowed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        charge.hold(0)
        context.fireChannelRead(wrapInboundOut(.refused(reason)))
        return .needMoreData
    }
}

/// The bytes of unterminated lines that all of a daemon's connections may make it hold
/// together, past a small allowance each (a request line fits in it).
final class LineBudget: Sendable {
    /// What each connection may hold without drawing on the shared budget.
    let allowance: Int
    /// What all of them may hold together past their allowances.
    let shared: Int
    private let used = Atomic<Int>(0)

    init(allowance: Int = 8 << 10, shared: Int = 16 << 20) {
        self.allowance = allowance
        self.shared = shared
    }

    /// What is drawn on the shared budget now.
    var inUse: Int { used.load(ordering: .relaxed) }

    /// One connection's draw on the budget, given back when the connection's decoder goes.
    final class Charge: @unchecked Sendable {
        // Used on the connection's event loop only, and released once, at deinit.
        private let budget: LineBudget
        private var drawn = 0

        init(_ budget: LineBudget) { self.budget = budget }

        /// Holds `bytes` of an unterminated line; `false` (and nothing drawn) when the
        /// budget cannot take what they need past the allowance.
        @discardableResult
        func hold(_ bytes: Int) -> Bool {
            let needed = max(0, bytes - budget.allowance)
            guard needed != drawn else { return true }
            let total = budget.used.add(needed - drawn, ordering: .relaxed).newValue
            if needed > drawn && total > budget.shared {
                budget.used.subtract(needed, ordering: .relaxed)
                drawn = 0
                return false
            }
            drawn = needed
            return true
        }

        deinit { if drawn > 0 { budget.used.subtract(drawn, ordering: .relaxed) } }
    }
}

/// Ends a connection whose request line does not arrive whole within `limit` of its first
/// bytes: half a line held open keeps a connection and its buffer, whatever the budgets say.
/// Before the decoder, it sees the raw reads: a read that does not end in a newline leaves
/// a line unfinished. At the limit, ``Expired`` goes down the pipeline for the connection
/// to answer in turn and close.
final class LineTimeout: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    struct Expired: Sendable {
        let limit: Duration
    }

    private let limit: Duration
    private var timer: Scheduled<Void>?

    init(_ limit: Duration) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if let last = buffer.getInteger(at: buffer.writerIndex &- 1, as: UInt8.self), buffer.readableBytes > 0 {
            if last == UInt8(ascii: "\n") {
                timer?.cancel()
                timer = nil
            } else if timer == nil {
                let limit = limit
                let nanoseconds = Int64(limit.components.seconds) * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
                timer = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(nanoseconds)) {
                    context.fireUserInboundEventTriggered(Expired(limit: limit))
                }
            }
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}
