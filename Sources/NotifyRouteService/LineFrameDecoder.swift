import NIOCore

/// What a connection's byte stream is cut into.
enum LineFrame: Sendable {
    case line(ByteBuffer)
    /// A line longer than the limit: the rest of the stream is not read.
    case tooLong(Int)
}

/// Newline-delimited frames with a cap, so a client that never sends a newline cannot
/// make the daemon buffer without bound.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = LineFrame

    let limit: Int
    private var scanned = 0
    private var overflowed = false

    init(limit: Int) { self.limit = limit }

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
            context.fireChannelRead(wrapInboundOut(.line(line)))
            return .continue
        }
        scanned = view.count
        if scanned > limit { return overflow(context, scanned, &buffer) }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // Half a line and then a hang-up: there is nobody to answer, so it is dropped.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }

    private mutating func overflow(_ context: ChannelHandlerContext, _ length: Int, _ buffer: inout ByteBuffer) -> DecodingState {
        overflowed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireChannelRead(wrapInboundOut(.tooLong(length)))
        return .needMoreData
    }
}
