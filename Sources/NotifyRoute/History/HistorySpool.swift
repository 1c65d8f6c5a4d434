import Glibc

/// `history.db-spool` beside the history: where a one-shot `send` with no silence or pause
/// to read appends its record, one line in one `write`, instead of opening history.db (the
/// open, the schema read, the transaction and the checkpoint at close cost a send more than
/// a millisecond). Whoever next opens history.db folds the lines into it, oldest first, in a
/// transaction of its own; the appender that finds the spool past ``foldBytes`` does that
/// itself, so the spool stays small.
///
/// Appenders hold a shared `flock` while they write; a fold holds it exclusively from
/// before it reads until after the rows are committed and the file is emptied, and takes it
/// only inside history.db's write transaction, so the two locks are always taken in the
/// same order. Each line carries a token, and a fold keeps the tokens it committed: a fold
/// killed between its commit and the emptying of the file does not insert the lines twice.
/// A line cut short by a writer killed mid-write is dropped alone.
///
/// Fields are separated by bytes that UTF-8 never contains (0xFF between fields, 0xFD for
/// an absent value, 0xFE ending a line), so no text needs escaping and a fold only splits.
struct HistorySpool {
    static let fileName = "history.db-spool"
    /// Past this size, the `send` that appended folds the spool into history.db.
    static let foldBytes = 256 << 10
    /// What a fold reads at most. An appender that finds the spool larger (history.db could
    /// not be written for a while) writes to history.db itself instead.
    static let maximumBytes = 16 << 20
    static let format = "1"

    let directory: String
    var path: String { directory + "/" + Self.fileName }

    fileprivate static let field: UInt8 = 0xFF
    fileprivate static let end: UInt8 = 0xFE
    fileprivate static let absent: UInt8 = 0xFD

    /// One recorded event, as history.db's `events` table takes it, with the bounds of the
    /// config that recorded it (the fold drops the oldest past them).
    struct Row: Equatable {
        var token: String
        var time: Double
        var level: String
        var source: String?
        var app: String
        var title: String
        var body: String?
        var category: String?
        var tags: String
        var record: String
        var input: String
        var summary: String
        var maxEvents: Int
        var maxBytes: Int

        var bytes: Int { record.utf8.count + input.utf8.count }

        /// A fresh token: a fold tells a line it committed by it.
        static func token() -> String { String(UInt64.random(in: 1...UInt64.max), radix: 16) }

        func line() -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(record.utf8.count + input.utf8.count + title.utf8.count + (body?.utf8.count ?? 0) + 96)
            let values: [String?] = [HistorySpool.format, token, String(time), level, source, app, title, body, category, tags,
                                     record, input, summary, String(maxEvents), String(maxBytes)]
            for value in values {
                if !bytes.isEmpty { bytes.append(HistorySpool.field) }
                if let value { bytes.append(contentsOf: value.utf8) } else { bytes.append(HistorySpool.absent) }
            }
            bytes.append(HistorySpool.end)
            return bytes
        }
    }

    /// Appends `row` as one line; returns the spool's size after it, or `nil` when it
    /// could not (a fold under way, a file that is not ours, a spool too large, a failed
    /// write): the caller then writes to history.db itself.
    func append(_ row: Row) -> Int? {
        let line = row.line()
        // O_NONBLOCK: a FIFO in its place must not block the open.
        let file = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard file >= 0 else { return nil }
        defer { close(file) }
        guard flock(file, LOCK_SH | LOCK_NB) == 0 else { return nil }
        var info = stat()
        guard fstat(file, &info) == 0, StateFiles.problem(info, maximumBytes: Self.maximumBytes) == nil else { return nil }
        let written = line.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        guard written == line.count else {
            // Ends a partial line, so that only it is lost; the caller records the row again.
            if written > 0 { var end = Self.end; _ = write(file, &end, 1) }
            return nil
        }
        return Int(info.st_size) + line.count
    }

    /// Whether there may be lines to fold: one `stat`.
    var mayHoldLines: Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_size > 0
    }

    /// The spool, locked for a fold, and its complete lines. Emptied by ``clear()`` once
    /// they are committed; unlocked when released.
    final class Fold {
        private let file: Int32
        let rows: [Row]
        /// What was dropped, in words (a torn or unreadable line, what lay past the cap).
        let dropped: [String]

        fileprivate init(file: Int32, rows: [Row], dropped: [String]) {
            self.file = file
            self.rows = rows
            self.dropped = dropped
        }

        func clear() { _ = ftruncate(file, 0) }

        deinit { close(file) }
    }

    /// Locks the spool and reads it, waiting for appenders until `deadline`. Call it inside
    /// history.db's write transaction. `nil` when there is nothing to fold (or the lock was
    /// not had in time: the lines wait for the next fold); a file in its place that is not
    /// ours is removed, and `notice` told.
    func lockForFold(until deadline: ContinuousClock.Instant, notice: (String) -> Void) -> Fold? {
        let file = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else {
            if errno == ELOOP, unlink(path) == 0 { notice("\(path) was a symbolic link; removed") }
            return nil
        }
        var info = stat()
        if fstat(file, &info) == 0, let problem = StateFiles.problem(info, maximumBytes: Int.max) {
            close(file)
            if unlink(path) == 0 { notice("\(path) \(problem); removed") }
            return nil
        }
        while flock(file, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                close(file)
                return nil
            }
            usleep(500)
        }
        let bytes: [UInt8]
        switch FileContents.read(file, limit: Self.maximumBytes, expectedSize: Int(info.st_size)) {
        case .success(let read): bytes = read
        case .failure(let failure):
            close(file)
            notice("\(path) cannot be read: \(String(cString: strerror(failure.errno)))")
            return nil
        }
        guard !bytes.isEmpty else {
            close(file)
            return nil
        }
        var rows: [Row] = []
        var dropped: [String] = []
        var unreadable = 0
        let tooLong = bytes.count > Self.maximumBytes
        if tooLong { dropped.append("\(path) is more than \(Self.maximumBytes) bytes: what lies past that is dropped") }
        let lines = bytes.prefix(Self.maximumBytes).split(separator: Self.end, omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where !line.isEmpty {
            if index == lines.count - 1 {
                if !tooLong { dropped.append("a record cut short (its writer was killed mid-write) is dropped") }
            } else if let row = Row(line: line) {
                rows.append(row)
            } else {
                unreadable += 1
            }
        }
        if unreadable > 0 { dropped.append("\(unreadable) unreadable line\(unreadable == 1 ? "" : "s") dropped") }
        return Fold(file: file, rows: rows, dropped: dropped)
    }
}

extension HistorySpool.Row {
    /// The row of one line (without its end byte); `nil` when it is not one.
    init?(line: ArraySlice<UInt8>) {
        let fields = line.split(separator: HistorySpool.field, omittingEmptySubsequences: false)
        guard fields.count == 15 else { return nil }
        var values: [String?] = []
        values.reserveCapacity(15)
        for field in fields {
            if field.count == 1 && field.first == HistorySpool.absent {
                values.append(nil)
            } else {
                guard let text = String(validating: field, as: UTF8.self) else { return nil }
                values.append(text)
            }
        }
        guard values[0] == HistorySpool.format, let token = values[1], let time = values[2].flatMap(Double.init),
              let level = values[3], let app = values[5], let title = values[6], let tags = values[9],
              let record = values[10], let input = values[11], let summary = values[12],
              let maxEvents = values[13].flatMap({ Int($0) }), let maxBytes = values[14].flatMap({ Int($0) })
        else { return nil }
        self.init(token: token, time: time, level: level, source: values[4], app: app, title: title, body: values[7],
                  category: values[8], tags: tags, record: record, input: input, summary: summary,
                  maxEvents: maxEvents, maxBytes: maxBytes)
    }
}
