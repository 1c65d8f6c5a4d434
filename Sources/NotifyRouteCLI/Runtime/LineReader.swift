import Glibc
import Dispatch
import NotifyRoute

/// Lines of a file descriptor as an async sequence, read on a thread of their own
/// (a blocking `read` must not hold a thread of the cooperative pool) with a bounded
/// number of lines buffered: memory stays flat however long the input is.
///
/// A line longer than ``maximumLineBytes`` is not kept: it is reported as
/// ``Item/tooLong(number:bytes:)`` and skipped up to its newline.
struct LineReader: AsyncSequence, Sendable {
    enum Item: Sendable {
        /// The bytes of line `number` (1-based), without the newline.
        case line(number: Int, bytes: [UInt8])
        case tooLong(number: Int, bytes: Int)
    }

    static let maximumLineBytes = 1 << 20
    /// Lines read ahead of the consumer, at most.
    static let readAhead = 64

    let fd: Int32
    var maximumLineBytes = LineReader.maximumLineBytes

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Item>.Iterator
        let slots: DispatchSemaphore

        mutating func next() async -> Item? {
            let item = await base.next()
            // One line taken: the reader may read one more.
            if item != nil { slots.signal() }
            return item
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        let slots = DispatchSemaphore(value: Self.readAhead)
        let (stream, continuation) = AsyncStream<Item>.makeStream()
        let fd = fd, limit = maximumLineBytes
        DetachedThread.start {
            Self.read(fd, limit: limit) { item in
                slots.wait()
                continuation.yield(item)
            }
            continuation.finish()
        }
        return AsyncIterator(base: stream.makeAsyncIterator(), slots: slots)
    }

    /// Splits the input into lines, calling `emit` for each; blocks in `read` and in `emit`.
    static func read(_ fd: Int32, limit: Int, emit: (Item) -> Void) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var current: [UInt8] = []
        var discarding = 0  // > 0: bytes of an over-long line skipped so far
        var number = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            var start = 0
            while start < count {
                let newline = chunk[start..<count].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? count
                if discarding > 0 {
                    discarding += end - start
                } else if current.count + (end - start) > limit {
                    discarding = current.count + (end - start)
                    current = []
                } else {
                    current += chunk[start..<end]
                }
                guard newline != nil else { break }
                number += 1
                if discarding > 0 {
                    emit(.tooLong(number: number, bytes: discarding))
                    discarding = 0
                } else {
                    emit(.line(number: number, bytes: current))
                    current = []
                }
                start = end + 1
            }
        }
        // A last line without a newline still counts.
        if discarding > 0 {
            emit(.tooLong(number: number + 1, bytes: discarding))
        } else if !current.isEmpty {
            emit(.line(number: number + 1, bytes: current))
        }
    }
}
