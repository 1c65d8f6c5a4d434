import Glibc
import Synchronization

/// Writes a record of a sink that failed (a catalogued journal record, in notify-route's
/// own commands and `serve`): at most once per sink and ``window``, whichever process saw
/// the failure, so that a sink failing for every event leaves one explanation, not one
/// per event.
///
/// The window is kept per sink in a stamp file in the state directory (its time is the
/// last record's), shared by every process of the user; without a directory, within this
/// process only. A failure is a ``SinkOutcome/Status/failed(_:)`` outcome: an unavailable
/// sink (no desktop on a server) is not news.
///
/// ```swift
/// let journal = JournalSink(identifier: "my-service")
/// router.recordFailures(with: SinkFailureLog(directory: nil) { await journal.recordFailures(in: $0) })
/// ```
public final class SinkFailureLog: Sendable {
    /// The least time between two records of one sink.
    public let window: Duration
    private let directory: String?
    private let write: @Sendable (DeliveryReport) async -> Void
    /// The last record of each sink by this process, by the wall clock.
    private let written = Mutex<[String: timespec]>([:])

    /// - Parameters:
    ///   - directory: where the stamp files go (the state directory); `nil`: this process only.
    ///   - write: writes the record of every failed outcome of the report it is given.
    public init(window: Duration = .seconds(300), directory: String?, write: @escaping @Sendable (DeliveryReport) async -> Void) {
        self.window = window
        self.directory = directory
        self.write = write
    }

    /// Records the failures of `report` whose sink has no record within the window.
    public func note(_ report: DeliveryReport) async {
        var due = report
        due.outcomes = report.outcomes.filter { outcome in
            guard case .failed = outcome.status else { return false }
            return claim(outcome.sink)
        }
        guard !due.outcomes.isEmpty else { return }
        await write(due)
    }

    /// Whether a record of `sink` is due now; if so, the window starts again.
    private func claim(_ sink: String) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let seconds = Int(window.components.seconds)
        let dueHere = written.withLock { written -> Bool in
            if let last = written[sink], now.tv_sec - last.tv_sec < seconds { return false }
            written[sink] = now
            return true
        }
        guard dueHere, let directory else { return dueHere }
        let path = "\(directory)/failure-\(Self.fileName(sink))"
        var info = stat()
        if lstat(path, &info) == 0, now.tv_sec - info.st_mtim.tv_sec < seconds, info.st_mtim.tv_sec <= now.tv_sec {
            return false
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            var times = [now, now]
            futimens(fd, &times)
            close(fd)
        }
        return true
    }

    /// A file name for any sink name: FNV-1a of its bytes, stable across processes
    /// (Swift's `hashValue` is seeded per process).
    static func fileName(_ sink: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sink.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}

extension NotificationRouter {
    /// Has `log` record the sinks that fail in this router's deliveries from now on.
    public func recordFailures(with log: SinkFailureLog) {
        failureLog.withLock { $0 = log }
    }

    nonisolated(nonsending) func noteFailures(_ report: DeliveryReport) async {
        await failureLog.withLock { $0 }?.note(report)
    }
}
