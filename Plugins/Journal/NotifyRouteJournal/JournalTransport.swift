import Glibc
import CSystemdJournal
import NotifyRoute

/// The two ways a record reaches journald, and the checks that keep them from failing silently.
///
/// - ``send(_:socket:waitingAtMost:)``, the fast way: one datagram of journald's native
///   protocol on a non-blocking socket of the sink's own, connected to ``socketPath``. It
///   never waits longer than it is told: when journald's queue is full (journald hung or
///   overloaded) or the record is too big for one datagram, it says so and the record takes
///   the slow way.
/// - ``write(_:)``, the slow way: libsystemd's `sd_journal_sendv`, loaded with dlopen the
///   first time it is needed (never at start-up). It passes big records in a memfd, and
///   blocks for as long as journald does not read, so only the writer's own queue calls it.
///   It always writes to `/run/systemd/journal/socket`, and returns 0 and drops the record
///   when that socket is absent, so ``write(_:)`` looks at the socket first.
///
/// ``socketPath`` is where the fast way writes and what the slow way *checks*; tests point
/// it elsewhere to see the sink's answers without taking journald away from the whole test process.
struct JournalTransport: Sendable {
    static let journaldSocket = "/run/systemd/journal/socket"

    let socketPath: String

    /// What ``send(_:socket:waitingAtMost:)`` came to.
    enum Immediate {
        /// journald took the record.
        case written
        /// Not written, and not an error: journald's queue stayed full, or the record needs
        /// `sd_journal_sendv` (too big for one datagram). It must take the slow way.
        case deferred
        case failed(SinkError)
    }

    /// Whether journald can take a record: the socket exists and someone is bound to it.
    /// Never waits (see the C module), so it may run on the cooperative pool.
    func probe() -> SinkError? {
        let result = notify_route_journal_probe(socketPath)
        return result == 0 ? nil : error(for: -result)
    }

    /// The cheap half of ``probe()``: one stat(2).
    func socketPresent() -> SinkError? {
        let result = notify_route_journal_socket_present(socketPath)
        return result == 0 ? nil : error(for: -result)
    }

    /// Writes `record` as one datagram on `socket` (connected here when it is -1, and again
    /// once when the journald it was connected to is gone), waiting at most `wait` for room
    /// in journald's queue. Never blocks longer: safe on the caller's thread.
    func send(_ record: JournalRecord, socket: inout Int32, waitingAtMost wait: Duration) -> Immediate {
        guard !record.fields.isEmpty else { return .deferred }
        let datagram = record.datagram()
        let milliseconds = Int32(clamping: max(0, DurationParser.milliseconds(wait)))
        for attempt in 0..<2 {
            if socket < 0 {
                let connected = notify_route_journal_connect(socketPath)
                guard connected >= 0 else { return .failed(error(for: -connected)) }
                socket = connected
            }
            let result = notify_route_journal_send_nowait(socket, datagram, datagram.count, milliseconds)
            switch -result {
            case 0:
                return .written
            case EAGAIN, EWOULDBLOCK, EMSGSIZE, ENOBUFS:
                return .deferred
            case ECONNREFUSED, ENOTCONN, ECONNRESET:
                // The journald we connected to is gone: connect to the one there now (once).
                notify_route_journal_close(socket)
                socket = -1
                if attempt > 0 { return .failed(error(for: ECONNREFUSED)) }
            default:
                return .failed(error(for: -result))
            }
        }
        return .failed(error(for: ECONNREFUSED))
    }

    /// Writes one record with `sd_journal_sendv`. Blocks for as long as journald does not
    /// read its socket (forever when it is stopped): call it only from the writer's own queue.
    /// The first call loads libsystemd.
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
            return vectors.withUnsafeBufferPointer { notify_route_journal_sendv($0.baseAddress, Int32($0.count)) }
        }
        return result >= 0 ? nil : error(for: -result)
    }

    /// A sink error that says what happened in terms of journald, and whether a retry can help.
    func error(for code: Int32) -> SinkError {
        switch code {
        case ENOENT:
            return SinkError(.unavailable, "journald's socket \(socketPath) is absent (journald is not running here)", isRetryable: true)
        case ENOTSOCK:
            return notASocketError(notASocket)
        case ECONNREFUSED where notASocket != nil:
            // connect(2) on a file that is not a socket is also "connection refused": say what is there.
            return notASocketError(notASocket)
        case ECONNREFUSED:
            return SinkError(
                .failed, "journald refused the connection on \(socketPath) (connection refused: a stale socket, journald is gone)",
                isRetryable: true)
        case EACCES, EPERM:
            return SinkError(.unavailable, "no permission to write to \(socketPath) (\(Self.describe(code)))")
        case EINVAL:
            return SinkError(.failed, "journald rejected the record as invalid (\(Self.describe(code)))")
        case ELIBACC:
            let reason = notify_route_journal_load_error().map { String(cString: $0) } ?? "libsystemd.so.0 cannot be loaded"
            return SinkError(.unavailable, "libsystemd could not be loaded, and this record needs its sd_journal_sendv (\(reason))")
        default:
            return SinkError(.failed, "writing to journald failed: \(Self.describe(code))", isRetryable: true)
        }
    }

    private func notASocketError(_ what: String?) -> SinkError {
        let description = what.map { "is \($0), not a socket" } ?? "is not a socket"
        return SinkError(.unavailable, "\(socketPath) \(description) (journald is not running here)", isRetryable: true)
    }

    /// What sits at ``socketPath`` when it is not a socket ("a regular file"); `nil` when it
    /// is a socket or absent.
    var notASocket: String? {
        var info = stat()
        guard lstat(socketPath, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK: return nil
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK:
            var target = stat()
            if stat(socketPath, &target) == 0, target.st_mode & S_IFMT == S_IFSOCK { return nil }
            return "a symbolic link that does not lead to a socket"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR, S_IFBLK: return "a device"
        default: return "not a socket"
        }
    }

    static func describe(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
