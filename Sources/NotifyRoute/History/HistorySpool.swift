import Synchronization
import Glibc

/// `history.db-spool` beside the history: where a one-shot `send` with no silence or pause
/// to read appends its record, one line in one `write`, instead of opening history.db (the
/// open, the schema read, the transaction and the checkpoint at close cost a send more than
/// a millisecond). Whoever next opens history.db folds the lines into it, oldest first, in a
/// transaction of its own; the appender that finds the spool past ``foldBytes`` does that
/// itself, so the spool stays small. The daemon appends its records too (``RouterMemory/spoolRecords()``)
/// and folds them in batches: the spool's order is the order of the history.
///
/// Appenders hold a shared `flock` while they write, and write only while the file they hold
/// is still the one at the path. A fold, inside history.db's write transaction (so the two
/// locks are always taken in the same order), takes the lock exclusively just long enough to
/// move the file aside (``foldingName``); the next append makes a new spool, and the fold
/// reads, inserts and commits the moved lines while appenders go on. The moved file is
/// removed after the commit; a fold killed before that leaves it, and the next fold takes it
/// first. Each line carries a token, and a fold keeps the last it committed: a moved file
/// folded again after its commit inserts nothing twice. A line cut short by a writer killed
/// mid-write is dropped alone.
///
/// Fields are separated by bytes that UTF-8 never contains (0xFF between fields, 0xFD for
/// an absent value, 0xFE ending a line), so no text needs escaping and a fold only splits.
struct HistorySpool {
    static let fileName = "history.db-spool"
    /// The spool a fold moved aside, until its lines are committed.
    static let foldingName = "history.db-spool.folding"
    /// Past this size, the `send` that appended folds the spool into history.db.
    static let foldBytes = 256 << 10
    /// What a fold reads at most. An appender that finds the spool larger (history.db could
    /// not be written for a while) writes to history.db itself instead.
    static let maximumBytes = 16 << 20
    /// Lines of format 2 end with a record's ``HistoryRecord/Parts`` (three fields, absent
    /// for a whole record); lines of format 1 (written before) have none.
    static let format = "2"

    let directory: String
    var path: String { directory + "/" + Self.fileName }
    var foldingPath: String { directory + "/" + Self.foldingName }

    fileprivate static let field: UInt8 = 0xFF
    static let end: UInt8 = 0xFE
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
        /// Set when `record` holds only the record's outcome (``HistoryRecord/Parts``).
        var parts: HistoryRecord.Parts? = nil

        /// What `max_bytes` counts of the row: its record and input, and for a record in
        /// parts the event's values that the whole record would have held
        /// (``HistorySpool/Lines/bytes(ofLine:)`` for a line).
        var bytes: Int {
            var bytes = record.utf8.count + input.utf8.count
            if let parts {
                bytes += level.utf8.count + (source?.utf8.count ?? 0) + app.utf8.count + title.utf8.count
                bytes += (body?.utf8.count ?? 0) + (category?.utf8.count ?? 0) + tags.utf8.count
                bytes += parts.timeout.utf8.count + parts.dedupKey.utf8.count + (parts.droppedBy?.utf8.count ?? 0)
            }
            return bytes
        }

        /// A fresh token: a fold tells a line it committed by it. A random start per process
        /// and a count from it: distinct within the process, and across processes as random
        /// numbers are, without a `getrandom` call per record. 60 bits, 15 hex digits at
        /// most: a small string, which allocates nothing (16 took a heap object a record).
        static func token() -> String {
            var token = (tokenStart &+ tokenCount.wrappingAdd(1, ordering: .relaxed).oldValue) & tokenMask
            if token == 0 { token = 1 }
            // What String(token, radix: 16) spells, without its generic path (one per record).
            let digits = (UInt64.bitWidth - token.leadingZeroBitCount + 3) / 4
            return String(unsafeUninitializedCapacity: digits) { buffer in
                for index in 0..<digits {
                    let nibble = UInt8(truncatingIfNeeded: token >> UInt64(4 * (digits - 1 - index))) & 0xF
                    buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                }
                return digits
            }
        }

        private static let tokenMask: UInt64 = 1 << 60 - 1
        private static let tokenStart = UInt64.random(in: 1...tokenMask)
        private static let tokenCount = Atomic<UInt64>(0)

        func line() -> [UInt8] {
            // A one-shot send's line, once a process: the writer grows as it needs.
            var writer = JSONWriter(capacity: 512)
            HistorySpool.writeLine(
                into: &writer, token: token, time: time, level: level, source: source, app: app, title: title, body: body,
                category: category, tags: tags, maxEvents: maxEvents, maxBytes: maxBytes,
                record: { writer in
                    writer.raw(then: record)
                    return parts
                },
                input: { writer in writer.raw(then: input) }, summary: { writer in writer.raw(then: summary) })
            return writer.bytes
        }
    }

    /// A line of the spool's format (a ``Row``'s fields, in order, and its end) after what
    /// `writer` holds. `record` writes the record's field and gives its parts, `input` the
    /// event as given, `summary` the record's summary: a daemon writes them in place, where
    /// a `Row` would hold each as a String, copied again into the line.
    static func writeLine(
        into writer: inout JSONWriter, token: String, time: Double, level: String, source: String?, app: String, title: String,
        body: String?, category: String?, tags: String, maxEvents: Int, maxBytes: Int,
        record: (inout JSONWriter) -> HistoryRecord.Parts?, input: (inout JSONWriter) -> Void, summary: (inout JSONWriter) -> Void
    ) {
        writer.raw(then: format)
        put(token, into: &writer)
        writer.raw(field)
        writeTime(time, into: &writer)
        put(level, into: &writer)
        put(source, into: &writer)
        put(app, into: &writer)
        put(title, into: &writer)
        put(body, into: &writer)
        put(category, into: &writer)
        put(tags, into: &writer)
        writer.raw(field)
        let parts = record(&writer)
        writer.raw(field)
        input(&writer)
        writer.raw(field)
        summary(&writer)
        writer.raw(field)
        writer.raw(decimal: maxEvents)
        writer.raw(field)
        writer.raw(decimal: maxBytes)
        put(parts?.timeout, into: &writer)
        put(parts?.dedupKey, into: &writer)
        put(parts?.droppedBy, into: &writer)
        writer.raw(end)
    }

    /// `time` as a line holds it: whole seconds and six digits of microseconds, which read
    /// back within half a microsecond, written in place (`String(time)` finds the shortest
    /// spelling, dear for every record); other times as `String(time)` spells them.
    private static func writeTime(_ time: Double, into writer: inout JSONWriter) {
        let micros = (time * 1_000_000).rounded()
        guard micros >= 0, micros < 0x1p53 else { return writer.raw(then: String(time)) }
        let whole = Int(micros)
        writer.raw(decimal: whole / 1_000_000)
        writer.raw(UInt8(ascii: "."))
        writer.raw(decimal: whole % 1_000_000, width: 6)
    }

    /// A field after its separator. (The writer a parameter, not a captured variable,
    /// whose every access would be checked.)
    private static func put(_ value: String?, into writer: inout JSONWriter) {
        if let value { writer.raw(field, then: value) } else { writer.raw(field, absent) }
    }

    /// Appends `row` as one line; returns the spool's size after it, or `nil` when it
    /// could not (a fold under way, a file that is not ours, a spool too large, a failed
    /// write): the caller then writes to history.db itself.
    func append(_ row: Row) -> Int? {
        let line = row.line()
        // A fold may move the spool between the open and the lock: then once more, at the new one.
        for _ in 0..<2 {
            let file = openForAppending()
            guard file >= 0 else { return nil }
            defer { close(file) }
            switch append(line: line, to: file, keptOpen: false) {
            case .written(let size): return size
            case .moved: continue
            case .refused: return nil
            }
        }
        return nil
    }

    /// The spool opened for ``append(line:to:keptOpen:)``; -1 when it cannot be.
    func openForAppending() -> Int32 {
        // O_NONBLOCK: a FIFO in its place must not block the open.
        open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
    }

    /// How long a daemon's append waits for a fold to move the spool aside (a process just
    /// spawned may also hold a copy of the descriptor until its `exec`).
    static let keptOpenWait = Duration.milliseconds(200)

    enum Appended: Equatable {
        /// The spool's size after the line.
        case written(Int)
        /// The file is no longer the spool at the path (a fold moved it aside, or it was
        /// removed): nothing written; open the path again.
        case moved
        /// Not written (a spool too large or not ours, a failed write): the caller records the row itself.
        case refused
    }

    /// Appends `line` (``Row/line()``) to `file`, the spool as ``openForAppending()`` opened
    /// it, under a shared lock and only while it is the file at the path. A descriptor
    /// `keptOpen` between appends waits up to ``keptOpenWait`` for the lock, and is unlocked
    /// after the write.
    func append(line: [UInt8], to file: Int32, keptOpen: Bool) -> Appended {
        if flock(file, LOCK_SH | LOCK_NB) != 0 {
            guard keptOpen else { return .refused }
            let deadline = ContinuousClock.now + Self.keptOpenWait
            while flock(file, LOCK_SH | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else { return .refused }
                usleep(200)
            }
        }
        defer { if keptOpen { flock(file, LOCK_UN) } }
        var info = stat(), atPath = stat()
        guard fstat(file, &info) == 0 else { return .refused }
        // A fold moves the spool only under the exclusive lock: while this one is held, the
        // file at the path stays the file written to.
        guard info.st_nlink > 0, lstat(path, &atPath) == 0, atPath.st_dev == info.st_dev, atPath.st_ino == info.st_ino
        else { return .moved }
        guard StateFiles.problem(info, maximumBytes: Self.maximumBytes) == nil else { return .refused }
        let written = line.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        guard written == line.count else {
            // Ends a partial line, so that only it is lost; the caller records the row again.
            if written > 0 { var end = Self.end; _ = write(file, &end, 1) }
            return .refused
        }
        return .written(Int(info.st_size) + line.count)
    }

    /// Whether there may be lines to fold: one `stat`, two when the spool is empty or gone
    /// (a fold removes it) and a killed fold may have left its moved file.
    var mayHoldLines: Bool {
        var info = stat()
        if lstat(path, &info) == 0 && info.st_size > 0 { return true }
        return lstat(foldingPath, &info) == 0
    }

    /// `name` opened and locked (`operation`, waiting until `deadline`); `nil` when it is
    /// missing, not ours (then removed, and `notice` told) or the lock was not had in time.
    private func openLocked(_ name: String, _ operation: Int32, until deadline: ContinuousClock.Instant, notice: (String) -> Void) -> Int32? {
        let file = open(name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else {
            if errno == ELOOP, unlink(name) == 0 { notice("\(name) was a symbolic link; removed") }
            return nil
        }
        var info = stat()
        if fstat(file, &info) == 0, let problem = StateFiles.problem(info, maximumBytes: Int.max) {
            close(file)
            if unlink(name) == 0 { notice("\(name) \(problem); removed") }
            return nil
        }
        while flock(file, operation | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                close(file)
                return nil
            }
            usleep(500)
        }
        return file
    }

    /// Moves `from` to `to` unless something is at `to` (a link, then the old name removed:
    /// `rename` would replace it); `rename` where the file system has no hard links.
    private static func move(_ from: String, to: String) -> Bool {
        if link(from, to) == 0 { return unlink(from) == 0 }
        guard errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK else { return false }
        var info = stat()
        return lstat(to, &info) != 0 && errno == ENOENT && rename(from, to) == 0
    }

    /// Lines of the spool's format, each field a range of bytes that outlive the insert.
    protocol Lines {
        var count: Int { get }
        /// The bytes of field `index` of line `line`; `nil` for an absent value.
        func field(_ line: Int, _ index: Int) -> UnsafeBufferPointer<UInt8>?
        /// The time of line `line` (field 2).
        func time(_ line: Int) -> Double
    }

    /// Lines made in memory by ``Row/line()`` (a daemon's batch), their fields found by
    /// their separators alone: unlike a spool's, no other process wrote them.
    struct Buffered: Lines {
        private let bytes: UnsafeBufferPointer<UInt8>
        private var fields: [(start: Int, count: Int)] = []
        private let times: [Double]

        /// - Parameter times: each line's time, as its row had it.
        init(_ bytes: UnsafeBufferPointer<UInt8>, times: [Double]) {
            self.bytes = bytes
            self.times = times
            var fields: [(start: Int, count: Int)] = []
            fields.reserveCapacity(times.count * HistorySpool.fieldCount)
            defer { self.fields = fields }
            guard let base = bytes.baseAddress else { return }
            let count = bytes.count
            var start = 0, index = 0
            // One pass, eight bytes at a time, for the bytes from 0xFD up, which only the
            // marks are (rather than two `memchr` a field, for its separator and the line's
            // end, each over the same bytes). A byte's top bit and whether its low seven
            // bits reach 0x7D, without a carry into the next byte.
            let low: UInt64 = 0x7F7F_7F7F_7F7F_7F7F, threes: UInt64 = 0x0303_0303_0303_0303
            let tops: UInt64 = 0x8080_8080_8080_8080
            while index < count {
                if index + 8 <= count {
                    let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                    let marks = ((word & low) &+ threes) & word & tops
                    if marks == 0 {
                        index += 8
                        continue
                    }
                    index += marks.trailingZeroBitCount / 8
                }
                let byte = base[index]
                if byte == HistorySpool.field || byte == HistorySpool.end {
                    Self.add(start..<index, of: base, to: &fields)
                    start = index + 1
                }
                index += 1
            }
            // The last field of a line ends with the line.
            if start < count { Self.add(start..<count, of: base, to: &fields) }
        }

        private static func add(_ range: Range<Int>, of base: UnsafePointer<UInt8>, to fields: inout [(start: Int, count: Int)]) {
            let absent = range.count == 1 && base[range.lowerBound] == HistorySpool.absent
            fields.append((range.lowerBound, absent ? -1 : range.count))
        }

        var count: Int { times.count }

        func field(_ line: Int, _ index: Int) -> UnsafeBufferPointer<UInt8>? {
            let range = fields[line * HistorySpool.fieldCount + index]
            guard range.count >= 0 else { return nil }
            return UnsafeBufferPointer(rebasing: bytes[range.start..<range.start + range.count])
        }

        func time(_ line: Int) -> Double { times[line] }
    }

    /// A spool moved aside for a fold, and its complete, readable lines, each kept as the
    /// byte ranges of its fields in the bytes read: a daemon's fold takes thousands of lines,
    /// and binds them to its insert as they are. Removed by ``clear()`` once they are committed.
    final class Fold: Lines {
        private let file: Int32
        private let path: String
        /// Whether it is the moved spool of a fold killed before its end (its lines may be
        /// committed already): the fold that takes it takes the spool next, apart.
        let leftOver: Bool
        private let mapped: UnsafeMutableRawBufferPointer
        private let bytes: UnsafeBufferPointer<UInt8>
        /// ``fieldCount`` per line, into `bytes`; a count of -1 for an absent value.
        private let ranges: [(start: Int, count: Int)]
        /// Each line's time, read once by the scan that checked it.
        private let times: [Double]
        /// What was dropped, in words (a torn or unreadable line, what lay past the cap).
        let dropped: [String]

        fileprivate init(file: Int32, path: String, leftOver: Bool, mapped: UnsafeMutableRawBufferPointer, bytes: UnsafeBufferPointer<UInt8>,
                         ranges: [(start: Int, count: Int)], times: [Double], dropped: [String]) {
            self.file = file
            self.path = path
            self.leftOver = leftOver
            self.mapped = mapped
            self.bytes = bytes
            self.ranges = ranges
            self.times = times
            self.dropped = dropped
        }

        /// How many lines.
        var count: Int { ranges.count / HistorySpool.fieldCount }

        /// The bytes of field `index` of line `line`; `nil` for an absent value.
        func field(_ line: Int, _ index: Int) -> UnsafeBufferPointer<UInt8>? {
            let range = ranges[line * HistorySpool.fieldCount + index]
            guard range.count >= 0 else { return nil }
            return UnsafeBufferPointer(rebasing: bytes[range.start..<range.start + range.count])
        }

        /// The time of line `line` (field 2).
        func time(_ line: Int) -> Double { times[line] }

        /// Removes the moved file, still locked: a fold that found it meanwhile finds it gone.
        func clear() { _ = unlink(path) }

        deinit {
            munmap(mapped.baseAddress, mapped.count)
            close(file)
        }
    }

    /// Fields of a line (format 2); a line of format 1 has ``fieldCountOfFormat1``, and its
    /// ranges are padded with absent values to this count.
    static let fieldCount = 18
    static let fieldCountOfFormat1 = 15

    /// Appends the ranges of `line`'s fields (from `offset` in the bytes it lies in) to
    /// `ranges` when it is a line of ours: ``fieldCount`` fields of this format (or
    /// ``fieldCountOfFormat1`` of format 1, padded), the values a row needs present, UTF-8,
    /// numbers where they go. Its time, or `nil` (and nothing appended) when not.
    fileprivate static func scan(_ line: UnsafeBufferPointer<UInt8>, offset: Int, into ranges: inout [(start: Int, count: Int)]) -> Double? {
        guard let base = line.baseAddress else { return nil }
        let first = ranges.count
        var start = 0, tooMany = false
        while true {
            let end = memchr(base + start, Int32(field), line.count - start).map { UnsafeRawPointer(base).distance(to: $0) } ?? line.count
            if end - start == 1 && base[start] == absent { ranges.append((offset + start, -1)) } else { ranges.append((offset + start, end - start)) }
            if end == line.count { break }
            start = end + 1
            if ranges.count - first == fieldCount {
                tooMany = true
                break
            }
        }
        func value(_ index: Int) -> UnsafeBufferPointer<UInt8>? {
            let range = ranges[first + index]
            return range.count < 0 ? nil : UnsafeBufferPointer(start: base + (range.start - offset), count: range.count)
        }
        func number(_ index: Int) -> String? { value(index).map { String(decoding: $0, as: UTF8.self) } }
        let fields = ranges.count - first
        let lineFormat = fields > 0 ? number(0) : nil
        var readable = !tooMany && (lineFormat == format && fields == fieldCount || lineFormat == "1" && fields == fieldCountOfFormat1)
        if readable {
            // Only source (4), body (7), category (8) and the parts (15-17) may be absent;
            // the parts' timeout (15) and dedup key (16) are there together or not at all.
            for index in 0..<fields {
                if let bytes = value(index) {
                    if !isUTF8(bytes) { readable = false }
                } else if index != 4 && index != 7 && index != 8 && index < fieldCountOfFormat1 {
                    readable = false
                }
            }
            if fields == fieldCount && (value(15) == nil) != (value(16) == nil) { readable = false }
        }
        var time: Double?
        if readable {
            time = number(2).flatMap(Double.init)
            readable = time != nil && number(13).flatMap({ Int($0) }) != nil && number(14).flatMap({ Int($0) }) != nil
        }
        if readable && fields == fieldCountOfFormat1 {
            for _ in fields..<fieldCount { ranges.append((offset + line.count, -1)) }
        }
        if !readable { ranges.removeSubrange(first...) }
        return readable ? time : nil
    }

    /// Whether `bytes` are UTF-8: ASCII eight bytes at a time, the rest by the standard library.
    private static func isUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var index = 0
        while index + 8 <= bytes.count,
              UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
        }
        while index < bytes.count && base[index] < 0x80 { index += 1 }
        return index == bytes.count || String(validating: UnsafeBufferPointer(rebasing: bytes[index...]), as: UTF8.self) != nil
    }

    /// The lines to fold: the spool a killed fold left moved aside, else the spool, moved
    /// aside under its exclusive lock (appenders wait for it until `deadline`; the fold's
    /// inserts they do not wait for). Call it inside history.db's write transaction. `nil`
    /// when there is nothing to fold (or a lock was not had in time: the lines wait for the
    /// next fold); a file in its place that is not ours is removed, and `notice` told.
    ///
    /// The moved file stays locked (shared) until the fold has removed it: a fold that finds
    /// it meanwhile waits, then finds it removed, and a fold never moves the spool onto it.
    func takeForFold(until deadline: ContinuousClock.Instant, notice: (String) -> Void) -> Fold? {
        var info = stat()
        var leftOver = false
        var file: Int32 = -1
        if lstat(foldingPath, &info) == 0 {
            if let moved = openLocked(foldingPath, LOCK_EX, until: deadline, notice: notice) {
                // Removed by the fold that moved it, once committed: nothing left over.
                if fstat(moved, &info) == 0 && info.st_nlink > 0 && info.st_size > 0 {
                    file = moved
                    leftOver = true
                } else {
                    if info.st_nlink > 0 { unlink(foldingPath) }
                    close(moved)
                }
            } else if errno != ENOENT {
                return nil
            }
            // Else it was gone between the two looks (its fold removed it): on to the spool.
        }
        if !leftOver {
            guard let spool = openLocked(path, LOCK_EX, until: deadline, notice: notice) else { return nil }
            // Its size now that appenders wait for the lock. After the move none writes to it:
            // each checks, under its shared lock, that its file is still the one at the path.
            var atPath = stat()
            guard fstat(spool, &info) == 0, info.st_size > 0, lstat(path, &atPath) == 0,
                  atPath.st_dev == info.st_dev, atPath.st_ino == info.st_ino, Self.move(path, to: foldingPath)
            else {
                close(spool)
                return nil
            }
            // Shared from now on: appenders take theirs and find the file moved.
            flock(spool, LOCK_SH)
            file = spool
        }
        let name = leftOver ? foldingPath : path
        let tooLong = Int(info.st_size) > Self.maximumBytes
        let length = min(Int(info.st_size), Self.maximumBytes)
        // The file mapped, its pages taken from the page cache where the appends left them:
        // read into memory of our own, every page of it faulted in, zeroed and charged first
        // (a daemon folds megabytes a second). Nothing shortens the moved file while its fold
        // holds the lock, so the mapping stays whole.
        var done = length
        let mapped: UnsafeMutableRawPointer
        if let fileMapping = mmap(nil, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, file, 0), fileMapping != MAP_FAILED {
            mapped = fileMapping
        } else {
            // A file system that maps no files: read into an anonymous mapping, unmapped with
            // the fold (malloc would keep buffers of this size).
            guard let buffer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), buffer != MAP_FAILED else {
                close(file)
                notice("\(name) cannot be read: no memory for \(length) bytes")
                return nil
            }
            mapped = buffer
            done = 0
            while done < length {
                let count = read(file, buffer + done, length - done)
                if count > 0 {
                    done += count
                } else if count == 0 {
                    break
                } else if errno != EINTR {
                    let reason = String(cString: strerror(errno))
                    munmap(buffer, length)
                    close(file)
                    notice("\(name) cannot be read: \(reason)")
                    return nil
                }
            }
        }
        var dropped: [String] = []
        var unreadable = 0
        if tooLong { dropped.append("\(name) is more than \(Self.maximumBytes) bytes: what lies past that is dropped") }
        let kept = UnsafeMutableRawBufferPointer(start: mapped, count: length)
        let spool = UnsafeBufferPointer(start: mapped.assumingMemoryBound(to: UInt8.self), count: done)
        // The lines counted first: ranges grown as they are found are copied at each growth.
        var lines = 0
        var next = UnsafeRawPointer(spool.baseAddress!)
        let past = next + spool.count
        while next < past, let found = memchr(next, Int32(Self.end), next.distance(to: past)) {
            lines += 1
            next = UnsafeRawPointer(found) + 1
        }
        var ranges: [(start: Int, count: Int)] = []
        ranges.reserveCapacity(lines * Self.fieldCount)
        var times: [Double] = []
        times.reserveCapacity(lines)
        var start = 0
        while start < spool.count {
            guard let found = memchr(spool.baseAddress! + start, Int32(Self.end), spool.count - start) else {
                if !tooLong { dropped.append("a record cut short (its writer was killed mid-write) is dropped") }
                break
            }
            let end = UnsafeRawPointer(spool.baseAddress!).distance(to: found)
            if end > start {
                if let time = Self.scan(UnsafeBufferPointer(rebasing: spool[start..<end]), offset: start, into: &ranges) {
                    times.append(time)
                } else {
                    unreadable += 1
                }
            }
            start = end + 1
        }
        if unreadable > 0 { dropped.append("\(unreadable) unreadable line\(unreadable == 1 ? "" : "s") dropped") }
        return Fold(file: file, path: foldingPath, leftOver: leftOver, mapped: kept, bytes: spool, ranges: ranges, times: times, dropped: dropped)
    }
}

extension HistorySpool.Row {
    /// The row of one line (without its end byte); `nil` when it is not one.
    init?(line: ArraySlice<UInt8>) {
        let row = line.withUnsafeBufferPointer { bytes -> Self? in
            var ranges: [(start: Int, count: Int)] = []
            guard HistorySpool.scan(bytes, offset: 0, into: &ranges) != nil else { return nil }
            func text(_ index: Int) -> String? {
                let range = ranges[index]
                return range.count < 0 ? nil : String(decoding: UnsafeBufferPointer(rebasing: bytes[range.start..<range.start + range.count]), as: UTF8.self)
            }
            return Self(token: text(1) ?? "", time: text(2).flatMap(Double.init) ?? 0, level: text(3) ?? "", source: text(4),
                        app: text(5) ?? "", title: text(6) ?? "", body: text(7), category: text(8), tags: text(9) ?? "",
                        record: text(10) ?? "", input: text(11) ?? "", summary: text(12) ?? "",
                        maxEvents: text(13).flatMap { Int($0) } ?? 0, maxBytes: text(14).flatMap { Int($0) } ?? 0,
                        parts: text(15).map { HistoryRecord.Parts(timeout: $0, dedupKey: text(16) ?? "", droppedBy: text(17)) })
        }
        guard let row else { return nil }
        self = row
    }
}

extension HistorySpool.Lines {
    func text(_ line: Int, _ index: Int) -> String? { field(line, index).map { String(decoding: $0, as: UTF8.self) } }

    /// What `max_bytes` counts of line `line`, as ``HistorySpool/Row/bytes`` of its row:
    /// record and input (10, 11), and for a record in parts (15 present) fields 3-9 and 15-17.
    func bytes(ofLine line: Int) -> Int {
        var bytes = (field(line, 10)?.count ?? 0) + (field(line, 11)?.count ?? 0)
        if field(line, 15) != nil {
            for index in 3...9 { bytes += field(line, index)?.count ?? 0 }
            for index in 15...17 { bytes += field(line, index)?.count ?? 0 }
        }
        return bytes
    }

    /// The history's bounds that line `line` was recorded with (fields 13 and 14).
    func bounds(ofLine line: Int) -> HistorySettings {
        HistorySettings(maxEvents: text(line, 13).flatMap { Int($0) } ?? HistorySettings.defaultMaxEvents,
                        maxBytes: text(line, 14).flatMap { Int($0) } ?? HistorySettings.defaultMaxBytes)
    }
}
