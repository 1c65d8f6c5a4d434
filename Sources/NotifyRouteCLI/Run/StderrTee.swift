import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NotifyRoute

/// Passes a child's stderr through to ours as it comes, and keeps its last few KiB
/// for the body of a failure notification.
///
/// It reads on a thread of its own: a blocking `read` must never hold a thread of
/// Swift's cooperative pool.
final class StderrTee: Sendable {
    /// Bytes kept from the end of the stream; the body takes at most ``maximumBodyBytes`` of them.
    static let keptBytes = 8_192
    static let maximumLines = 10
    static let maximumBodyBytes = 2_048

    /// The end the child writes to; close it in this process once the child has it.
    let writeEnd: Int32
    private let readEnd: Int32
    private let tail = Mutex<[UInt8]>([])
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Other children (exec sink plugins) must not inherit either end.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func start() {
        DetachedThread.start { [self] in
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                Self.writeAll(STDERR_FILENO, buffer[..<count])
                tail.withLock { tail in
                    tail += buffer[..<count]
                    if tail.count > Self.keptBytes { tail.removeFirst(tail.count - Self.keptBytes) }
                }
            }
            close(readEnd)
            done.signal()
        }
    }

    /// Waits for the end of the stream, at most `seconds`: a daemon the command started
    /// may keep the pipe open long after the command itself exited.
    func waitForEnd(seconds: Double) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    /// The last lines (at most ``maximumLines`` and ``maximumBodyBytes``), invalid UTF-8 repaired.
    var lastLines: String? {
        let text = String(decoding: tail.withLock { $0 }, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        while let last = lines.last, last.allSatisfy(\.isWhitespace) { lines.removeLast() }
        guard !lines.isEmpty else { return nil }
        var body = lines.suffix(Self.maximumLines).joined(separator: "\n")
        if body.utf8.count > Self.maximumBodyBytes {
            // Keep the end (the error is usually last), cut at a character boundary, and mark the cut.
            var bytes = Array(body.utf8.suffix(Self.maximumBodyBytes - 3))[...]
            while let first = bytes.first, first & 0xC0 == 0x80 { bytes = bytes.dropFirst() }
            body = "…" + String(decoding: bytes, as: UTF8.self)
        }
        return body
    }

    private static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
        var rest = bytes
        while !rest.isEmpty {
            let written = rest.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }  // our stderr is gone: keep capturing, stop passing through
            rest = rest.dropFirst(written)
        }
    }
}
