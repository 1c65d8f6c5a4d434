#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSystemdJournal
import NotifyRoute

/// The calls into libsystemd, and the checks that keep them from failing silently.
///
/// `sd_journal_sendv` always writes to `/run/systemd/journal/socket`. When that socket
/// is absent it returns 0 and the record is lost, so ``write(_:)`` looks at the socket
/// first. ``socketPath`` is only what is *checked*; tests point it elsewhere to see the
/// sink's answer without taking journald away from the whole test process.
struct JournalTransport: Sendable {
    static let journaldSocket = "/run/systemd/journal/socket"

    let socketPath: String

    /// Whether journald can take a record: the socket exists and someone is bound to it.
    /// Never waits (see the shim), so it may run on the cooperative pool.
    func probe() -> SinkError? {
        let result = notify_route_journal_probe(socketPath)
        return result == 0 ? nil : error(for: -result)
    }

    /// The cheap half of ``probe()``: one stat(2).
    func socketPresent() -> SinkError? {
        let result = notify_route_journal_socket_present(socketPath)
        return result == 0 ? nil : error(for: -result)
    }

    /// Writes one record. Blocks for as long as journald does not read its socket
    /// (forever when it is stopped): call it only from the writer's own queue.
    func write(_ record: JournalRecord) -> SinkError? {
        if let absent = socketPresent() { return absent }
        let (bytes, ends) = record.serialized()
        let result: Int32 = bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return -EINVAL }
            var vectors: [iovec] = []
            vectors.reserveCapacity(ends.count)
            var start = 0
            for end in ends {
                // sd_journal_sendv only reads through iov_base; the mutable pointer is C's spelling.
                vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: base + start), iov_len: end - start))
                start = end
            }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
        }
        return result >= 0 ? nil : error(for: -result)
    }

    /// A sink error that says what happened in terms of journald, and whether a retry can help.
    func error(for code: Int32) -> SinkError {
        switch code {
        case ENOENT:
            return SinkError(.unavailable, "journald's socket \(socketPath) is absent (journald is not running here)", isRetryable: true)
        case ENOTSOCK:
            return SinkError(.unavailable, "\(socketPath) is not a socket (journald is not running here)", isRetryable: true)
        case ECONNREFUSED:
            return SinkError(
                .failed, "journald refused the connection on \(socketPath) (connection refused: a stale socket, journald is gone)",
                isRetryable: true)
        case EACCES, EPERM:
            return SinkError(.unavailable, "no permission to write to \(socketPath) (\(Self.describe(code)))")
        case EINVAL:
            return SinkError(.failed, "journald rejected the record as invalid (\(Self.describe(code)))")
        default:
            return SinkError(.failed, "sd_journal_sendv failed: \(Self.describe(code))", isRetryable: true)
        }
    }

    static func describe(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
