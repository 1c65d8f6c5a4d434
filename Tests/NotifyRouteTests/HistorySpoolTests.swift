import Foundation
@testable import NotifyRoute
import NotifyRouteTestSupport
import Synchronization
import Testing

/// The history's spool: a one-shot `send` with no silence or pause appends its record to
/// `history.db-spool` without opening history.db, and whoever opens history.db next folds
/// it in. Each `RouterMemory` here is its own connection, as another process's would be.
@Suite struct HistorySpoolTests {
    let directory: String
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-spool").path
        chmod(directory, 0o700)
    }

    func memory(notices: NoticeLog? = nil) -> RouterMemory {
        RouterMemory(directory: directory, keepsOpen: false, notice: { message in
            if let notices { notices.append(message) } else { Issue.record("notice: \(message)") }
        })
    }

    final class NoticeLog: @unchecked Sendable {
        private let lock = NSLock()
        private var messages: [String] = []
        func append(_ message: String) { lock.withLock { messages.append(message) } }
        var all: [String] { lock.withLock { messages } }
    }

    func record(_ memory: RouterMemory, _ title: String, body: String? = nil, at time: Date,
                settings: HistorySettings = HistorySettings(), in batch: StateBatch? = nil) {
        let report = DeliveryReport(event: ResolvedEvent(title: title, body: body), outcomes: [
            SinkOutcome(sink: "tty", kind: "terminal", status: .delivered, route: "route 1"),
        ])
        memory.record(report, input: NotificationEvent(title: title, body: body), settings: settings, now: time, keep: true, batch: batch)
    }

    var spoolPath: String { directory + "/history.db-spool" }
    var spoolSize: Int { (try? FileManager.default.attributesOfItem(atPath: spoolPath)[.size] as? Int) ?? -1 }
    var foldingPath: String { spoolPath + ".folding" }
    /// Folded: the spool moved aside and removed (or empty), and nothing left moved aside.
    var folded: Bool { spoolSize <= 0 && !FileManager.default.fileExists(atPath: foldingPath) }

    func openDatabases() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == directory + "/history.db"
        }.count
    }

    func titles() throws -> [String] {
        try memory().entries(since: nil, limit: nil).map(\.subject.title)
    }

    @Test func aSendWithNoControlsAppendsWithoutOpeningTheDatabase() throws {
        // The first record opens history.db (no marker yet says there are no controls) and writes the marker.
        record(memory(), "first", at: start)
        #expect(spoolSize <= 0)
        let sender = memory()
        record(sender, "second", at: start.addingTimeInterval(1))
        #expect(spoolSize > 0)
        #expect(try openDatabases() == 0)
        // Reading the history folds the spool in, in order, and empties it.
        #expect(try titles() == ["first", "second"])
        #expect(folded)
        record(sender, "third", at: start.addingTimeInterval(2))
        #expect(try titles() == ["first", "second", "third"])
    }

    /// A daemon's connection stays open: what a one-shot send spooled meanwhile is folded
    /// before the daemon's next record, so the history keeps the order of the events.
    @Test func aConnectionKeptOpenFoldsWhatWasSpooledMeanwhile() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        record(daemon, "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        #expect(spoolSize > 0)
        record(daemon, "third", at: start.addingTimeInterval(2))
        #expect(folded)
        #expect(try titles() == ["first", "second", "third"])
    }

    /// A daemon that spools its records (``RouterMemory/spoolRecords()``) appends them as
    /// one-shot sends do and folds them in batches: in the order of the spool, whoever
    /// reads the history first; the fold says there are no controls, as a record's
    /// transaction would.
    @Test func aDaemonSpoolsItsRecordsAndFoldsThemInBatches() async throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        var batches = try #require(daemon.spoolRecords()).makeAsyncIterator()
        record(daemon, "first", at: start)
        #expect(spoolSize > 0)
        #expect(try openDatabases() == 0)
        // Told once for the batch, however many records follow before the fold.
        #expect(await batches.next() != nil)
        record(memory(), "second", at: start.addingTimeInterval(1))
        record(daemon, "third", at: start.addingTimeInterval(2))
        // Reading (another process's connection) folds the spool, in order.
        #expect(try titles() == ["first", "second", "third"])
        #expect(folded)
        #expect(FileManager.default.fileExists(atPath: directory + "/history.db-nocontrols"))
        record(daemon, "fourth", at: start.addingTimeInterval(3))
        record(memory(), "fifth", at: start.addingTimeInterval(4))
        record(daemon, "sixth", at: start.addingTimeInterval(5))
        #expect(spoolSize > 0)
        daemon.foldSpooledRecords()
        #expect(folded)
        #expect(try titles() == ["first", "second", "third", "fourth", "fifth", "sixth"])
    }

    /// A daemon's records routed in a ``StateBatch`` wait in a buffer and are written in one
    /// append when the batch commits, before its publications (the answers) run; a record
    /// outside a batch writes what waits first, so the spool keeps the order of the records.
    @Test func aDaemonsRecordsInABatchAreWrittenBeforeItsAnswers() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        let batch = StateBatch(maximumAge: .seconds(60))
        record(daemon, "first", at: start, in: batch)
        record(daemon, "second", at: start.addingTimeInterval(1), in: batch)
        #expect(spoolSize <= 0)
        let sizeWhenAnswered = Mutex(-1)
        batch.publish { [spoolPath] in
            let size = (try? FileManager.default.attributesOfItem(atPath: spoolPath)[.size] as? Int) ?? -1
            sizeWhenAnswered.withLock { $0 = size }
        }
        batch.commit()
        #expect(sizeWhenAnswered.withLock { $0 } > 0)
        record(daemon, "third", at: start.addingTimeInterval(2), in: batch)
        // Outside a batch (a pause's release): after what waits, in one append.
        record(daemon, "fourth", at: start.addingTimeInterval(3))
        batch.commit()
        record(daemon, "fifth", at: start.addingTimeInterval(4), in: batch)
        // The shutdown's fold writes what waits first.
        daemon.foldSpooledRecords()
        #expect(folded)
        #expect(try titles() == ["first", "second", "third", "fourth", "fifth"])
    }

    /// A fold inserts many rows per statement: a fold of more lines than one statement
    /// takes keeps their order and each row's running total of bytes.
    @Test func aLargeFoldKeepsOrderAndRunningTotals() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "before", at: start)
        daemon.foldSpooledRecords()
        let count = RouterMemory.Connection.foldRowsPerStatement * 2 + 7
        for index in 0..<count { record(daemon, "event \(index)", body: index % 3 == 0 ? nil : "body \(index)", at: start.addingTimeInterval(Double(index) + 1)) }
        daemon.foldSpooledRecords()
        #expect(try titles() == ["before"] + (0..<count).map { "event \($0)" })
        let database = try SQLiteDatabase(path: directory + "/history.db", busyTimeout: 1000)
        #expect(try database.integer("SELECT count(*) FROM events WHERE upto != (SELECT sum(bytes) FROM events AS e WHERE e.id <= events.id)") == 0)
        // "before" has no body either.
        #expect(try database.integer("SELECT count(*) FROM events WHERE body IS NULL") == 1 + (0..<count).filter { $0 % 3 == 0 }.count)
        #expect(try database.integer("SELECT count(*) FROM events WHERE body = 'body ' || substr(title, 7)") == count - (0..<count).filter { $0 % 3 == 0 }.count)
        #expect(try database.integer("SELECT count(*) FROM events WHERE time = \(start.timeIntervalSince1970 + Double(count))") == 1)
    }

    /// A daemon's batch of ``RouterMemory/insertedLines`` records or more goes into
    /// history.db when the batch commits, after what the spool held (folded first), with
    /// the running totals a fold writes; while another connection holds history.db's write
    /// lock, the batch is spooled at once instead of waiting for it.
    @Test func aLoadedBatchIsInsertedAfterTheSpoolOrSpooledWhenTheDatabaseIsBusy() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(memory(), "first", at: start)  // opens history.db: no marker yet
        // The daemon's connection open before a one-shot send spools "second".
        #expect(try daemon.entries(since: nil, limit: nil).count == 1)
        record(memory(), "second", at: start.addingTimeInterval(1))
        #expect(spoolSize > 0)
        let count = RouterMemory.insertedLines + 3
        func batch(_ name: String, from offset: Int) {
            let batch = StateBatch(maximumAge: .seconds(60))
            for index in 0..<count {
                record(daemon, "\(name) \(index)", body: index % 3 == 0 ? nil : "body \(index)",
                       at: start.addingTimeInterval(Double(offset + index)), in: batch)
            }
            batch.commit()
        }
        batch("loaded", from: 2)
        #expect(folded, "the spool's lines were not folded before the batch, or the batch was spooled")
        let database = try SQLiteDatabase(path: directory + "/history.db", busyTimeout: 1000)
        #expect(try database.integer("SELECT count(*) FROM events") == 2 + count)

        // Another writer holds history.db: the next batch is spooled, without waiting for it.
        try database.execute("BEGIN IMMEDIATE")
        let elapsed = ContinuousClock().measure { batch("busy", from: 2 + count) }
        #expect(elapsed < .milliseconds(500), "the batch waited for the other writer: \(elapsed)")
        #expect(spoolSize > 0)
        try database.execute("ROLLBACK")

        let expected = ["first", "second"] + (0..<count).map { "loaded \($0)" } + (0..<count).map { "busy \($0)" }
        #expect(try titles() == expected)
        #expect(try database.integer("SELECT count(*) FROM events WHERE upto != (SELECT sum(bytes) FROM events AS e WHERE e.id <= events.id)") == 0)
        #expect(try database.integer("SELECT count(*) FROM events WHERE body IS NULL") == 2 + 2 * (0..<count).filter { $0 % 3 == 0 }.count)
        #expect(try database.integer("SELECT count(*) FROM events WHERE body = 'body ' || substr(title, instr(title, ' ') + 1)")
                == 2 * (count - (0..<count).filter { $0 % 3 == 0 }.count))
    }

    /// A batch that commits while another thread of the daemon holds history.db's connection
    /// (a fold, a reader) is spooled at once: no thread of the pool waits for it.
    @Test func aBatchIsSpooledWhileAnotherThreadHoldsTheConnection() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "first", at: start)
        daemon.foldSpooledRecords()
        #expect(folded)
        let (holding, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holder = Thread {
            // Bounded, so that a batch that waits for the lock shows as slow instead of hanging.
            _ = try? daemon.withConnection { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + 2)
            }
        }
        holder.start()
        holding.wait()
        let count = RouterMemory.insertedLines + 1
        let batch = StateBatch(maximumAge: .seconds(60))
        let elapsed = ContinuousClock().measure {
            for index in 0..<count { record(daemon, "held \(index)", at: start.addingTimeInterval(Double(1 + index)), in: batch) }
            batch.commit()
        }
        release.signal()
        #expect(elapsed < .milliseconds(500), "the batch waited for the connection: \(elapsed)")
        #expect(spoolSize > 0, "the batch's lines are in the spool")
        daemon.foldSpooledRecords()
        #expect(try titles() == ["first"] + (0..<count).map { "held \($0)" })
    }

    /// Commits `batch` on a thread of its own and returns once that commit has taken the
    /// buffered lines into its insert; the semaphore is signalled when the commit returns.
    func commitOnAThread(_ batch: StateBatch, until daemon: RouterMemory) -> DispatchSemaphore {
        let committed = DispatchSemaphore(value: 0)
        Thread {
            batch.commit()
            committed.signal()
        }.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while daemon.bufferedRecords > 0 && ContinuousClock.now < deadline { usleep(50) }
        #expect(daemon.bufferedRecords == 0, "the first batch's commit did not take the buffered lines")
        return committed
    }

    /// A loaded daemon's batches go to history.db: one that commits during another batch's
    /// insert waits for it and inserts after it, and a small one soon after an insert is
    /// inserted too. Spooled, their lines would have the next insert fold them back.
    @Test func aLoadedDaemonsBatchesAreInsertedNotSpooled() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        func batch(_ name: String, _ count: Int, from offset: Int) -> StateBatch {
            let batch = StateBatch(maximumAge: .seconds(600))
            for index in 0..<count { record(daemon, "\(name) \(index)", at: start.addingTimeInterval(Double(offset + index) / 1000), in: batch) }
            return batch
        }
        // Alone (no insert lately), a small batch is spooled: one write on its answers' path.
        batch("alone", 2, from: 0).commit()
        #expect(spoolSize > 0)
        daemon.foldSpooledRecords()
        #expect(folded)

        // Enough that the first batch's insert lasts well past the second batch's commit.
        let long = 10_000
        let inserted = commitOnAThread(batch("long", long, from: 10), until: daemon)
        let during = RouterMemory.insertedLines + 1
        batch("during", during, from: 10 + long).commit()
        #expect(inserted.wait(timeout: .now() + 20) == .success)
        #expect(spoolSize <= 0, "the batch that committed during the insert was spooled")

        let small = 2
        batch("soon", small, from: 10 + long + during).commit()
        #expect(spoolSize <= 0, "the small batch soon after an insert was spooled")
        // In order (the history's bound dropped the oldest).
        let titles = try titles()
        #expect(Array(titles.suffix(during + small)) == (0..<during).map { "during \($0)" } + (0..<small).map { "soon \($0)" })
        #expect(titles.dropLast(during + small).last == "long \(long - 1)")
    }

    /// Two batches commit at once: the first to commit takes every buffered line, the other
    /// batch's too, into its insert. The other batch's answers must wait for that insert's
    /// commit, or one of them could be published for a record a kill would then lose.
    @Test func aBatchWhoseLinesAnotherBatchInsertsAnswersAfterThatInsertCommits() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "first", at: start)
        daemon.foldSpooledRecords()
        let first = StateBatch(maximumAge: .seconds(600)), second = StateBatch(maximumAge: .seconds(600))
        // Enough that the first batch's insert lasts well past the second batch's commit.
        let count = 10_000
        for index in 0..<count { record(daemon, "a \(index)", at: start.addingTimeInterval(1 + Double(index) / 1000), in: first) }
        record(daemon, "b", at: start.addingTimeInterval(100), in: second)
        let committed = commitOnAThread(first, until: daemon)
        let committedWhenAnswered = Mutex(-1)
        second.publish { [directory] in
            // Another connection sees only what is committed.
            let reader = try? SQLiteDatabase(path: directory + "/history.db", busyTimeout: 5000)
            committedWhenAnswered.withLock { $0 = (try? reader?.integer("SELECT count(*) FROM events WHERE title = 'b'")) ?? -1 }
        }
        second.commit()
        #expect(committedWhenAnswered.withLock { $0 } == 1, "answered before the insert that holds its record committed")
        #expect(committed.wait(timeout: .now() + 20) == .success)
        #expect(try titles().last == "b")
    }

    /// The same for a daemon's batch, which defers: its commit returns at once (the pool
    /// thread goes on routing), and its answers are published once that insert committed.
    @Test func aDeferringBatchWhoseLinesAnotherBatchInsertsReturnsAtOnceAndAnswersAfterThatInsert() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "first", at: start)
        daemon.foldSpooledRecords()
        let first = StateBatch(maximumAge: .seconds(600))
        let second = StateBatch(maximumAge: .seconds(600), deferring: true)
        let count = 10_000
        for index in 0..<count { record(daemon, "a \(index)", at: start.addingTimeInterval(1 + Double(index) / 1000), in: first) }
        record(daemon, "b", at: start.addingTimeInterval(100), in: second)
        let inserted = commitOnAThread(first, until: daemon)
        let answered = DispatchSemaphore(value: 0)
        let committedWhenAnswered = Mutex(-1)
        second.publish { [directory] in
            let reader = try? SQLiteDatabase(path: directory + "/history.db", busyTimeout: 5000)
            committedWhenAnswered.withLock { $0 = (try? reader?.integer("SELECT count(*) FROM events WHERE title = 'b'")) ?? -1 }
            answered.signal()
        }
        second.commit()
        if inserted.wait(timeout: .now()) == .timedOut {
            #expect(committedWhenAnswered.withLock { $0 } == -1, "answered before the insert that holds its record ended")
        }
        #expect(answered.wait(timeout: .now() + 20) == .success, "never answered")
        #expect(committedWhenAnswered.withLock { $0 } == 1, "answered before the insert that holds its record committed")
        #expect(try titles().last == "b")
    }

    /// The spool's descriptor is kept open between appends: a spool removed meanwhile is
    /// made again, and no record goes to the removed file.
    @Test func aDaemonsSpoolRemovedMeanwhileIsMadeAgain() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "first", at: start)
        daemon.foldSpooledRecords()
        record(daemon, "second", at: start.addingTimeInterval(1))
        #expect(unlink(spoolPath) == 0)
        // Lost with the file, as a one-shot send's line would be: what follows is not.
        record(daemon, "third", at: start.addingTimeInterval(2))
        record(daemon, "fourth", at: start.addingTimeInterval(3))
        #expect(try titles() == ["first", "third", "fourth"])
    }

    @Test func aRowReadsBackAsWritten() throws {
        let row = HistorySpool.Row(
            token: HistorySpool.Row.token(), time: 1_790_000_000.125, level: "warning", source: nil, app: "backup",
            title: "Disk \u{FFFD} full\nwith a newline", body: "", category: nil, tags: "a\u{1F}b", record: #"{"x":"\u00ff"}"#,
            input: "{}", summary: "tty delivered", maxEvents: 7, maxBytes: 8192)
        let line = row.line()
        #expect(line.last == 0xFE)
        #expect(HistorySpool.Row(line: line.dropLast()) == row)
        #expect(HistorySpool.Row(line: line.dropLast(5)) == nil)
    }

    @Test func aRowInPartsReadsBackAsWritten() throws {
        var row = HistorySpool.Row(
            token: HistorySpool.Row.token(), time: 1_790_000_000.125, level: "info", source: "cron", app: "backup",
            title: "Backup done", body: nil, category: nil, tags: "", record: #"{"routes":[],"rules":[],"sinks":[]}"#,
            input: "{}", summary: "no sink", maxEvents: 7, maxBytes: 8192,
            parts: HistoryRecord.Parts(timeout: "never", dedupKey: "info\u{1F}cron\u{1F}Backup done", droppedBy: nil))
        #expect(HistorySpool.Row(line: row.line().dropLast()) == row)
        row.parts?.droppedBy = "rule 2"
        #expect(HistorySpool.Row(line: row.line().dropLast()) == row)
        // max_bytes counts what the whole record would have held of the event, as a line's does.
        #expect(row.bytes == row.record.utf8.count + 2 + "info".utf8.count + "cron".utf8.count + "backup".utf8.count
                    + "Backup done".utf8.count + "never".utf8.count + "info\u{1F}cron\u{1F}Backup done".utf8.count + "rule 2".utf8.count)
        let line = row.line()
        try line.withUnsafeBufferPointer { bytes in
            let lines = HistorySpool.Buffered(bytes, times: [row.time])
            try #require(lines.count == 1)
            #expect(lines.bytes(ofLine: 0) == row.bytes)
        }
    }

    /// A line spells its time to the microsecond (within half of one when read back); one
    /// outside what that spelling holds, as Swift spells a Double.
    @Test func aLinesTimeReadsBackToTheMicrosecond() throws {
        for time in [0, 0.000_001, 1_790_000_000.123_456_789, 1_790_000_000.999_999_6, 1_790_000_000.000_000_2, -5.25, 1e300] {
            let row = HistorySpool.Row(
                token: "1", time: time, level: "info", source: nil, app: "a", title: "t", body: nil, category: nil, tags: "",
                record: "{}", input: "{}", summary: "no sink", maxEvents: 1, maxBytes: 1)
            let read = try #require(HistorySpool.Row(line: row.line().dropLast()))
            #expect(abs(read.time - time) <= 0.000_000_5, "\(time) read back as \(read.time)")
            if time < 0 || time > 1e10 { #expect(read.time == time) }
        }
        let line = HistorySpool.Row(
            token: "1", time: 1_790_000_000.000_25, level: "info", source: nil, app: "a", title: "t", body: nil, category: nil,
            tags: "", record: "{}", input: "{}", summary: "", maxEvents: 1, maxBytes: 1).line()
        #expect(String(decoding: line, as: UTF8.self).contains("1790000000.000250"))
    }

    /// A daemon's batch splits into the fields its rows had, whatever the bytes around the
    /// marks: non-ASCII text (whose bytes have the top bit, as the marks do), absent and
    /// empty values, fields that end on and off an eight-byte boundary.
    @Test func aBatchOfLinesSplitsIntoTheFieldsOfItsRows() throws {
        let texts = ["", "a", "ÿ\u{FFFD}\u{7FF}", "Disk full 😀", "1234567", "12345678", "123456789", String(repeating: "é", count: 13)]
        var rows: [HistorySpool.Row] = []
        for (index, text) in texts.enumerated() {
            rows.append(HistorySpool.Row(
                token: HistorySpool.Row.token(), time: 1_790_000_000.125 + Double(index), level: "info", source: index % 2 == 0 ? nil : text,
                app: text, title: text + "!", body: index % 3 == 0 ? nil : text, category: index % 2 == 1 ? nil : text, tags: text,
                record: "{\"x\":\"\(text)\"}", input: "{}", summary: text, maxEvents: 10 + index, maxBytes: 8192,
                parts: index % 2 == 0 ? nil : HistoryRecord.Parts(timeout: text, dedupKey: "k" + text, droppedBy: index % 4 == 1 ? nil : text)))
        }
        let buffer = rows.flatMap { $0.line() }
        try buffer.withUnsafeBufferPointer { bytes in
            let lines = HistorySpool.Buffered(bytes, times: rows.map(\.time))
            try #require(lines.count == rows.count)
            for (line, row) in rows.enumerated() {
                #expect(lines.text(line, 2).flatMap(Double.init) == row.time)
                let fields: [String?] = [
                    HistorySpool.format, row.token, lines.text(line, 2), row.level, row.source, row.app, row.title, row.body, row.category,
                    row.tags, row.record, row.input, row.summary, String(row.maxEvents), String(row.maxBytes), row.parts?.timeout,
                    row.parts?.dedupKey, row.parts?.droppedBy]
                #expect((0..<HistorySpool.fieldCount).map { lines.text(line, $0) } == fields, "line \(line)")
                #expect(lines.bytes(ofLine: line) == row.bytes)
            }
        }
    }

    /// A line an earlier notify-route appended (format 1: fifteen fields, the whole record)
    /// is folded beside the lines of this one, and reads back as it was recorded.
    @Test func aLineOfTheFirstFormatIsFolded() throws {
        let whole = #"{"event":{"level":"info","title":"old"},"routes":[],"rules":[],"sinks":[],"time":"2026-09-21T14:13:20.000Z"}"#
        let old = HistorySpool.Row(
            token: HistorySpool.Row.token(), time: start.timeIntervalSince1970, level: "info", source: nil, app: "notify-route",
            title: "old", body: nil, category: nil, tags: "", record: whole, input: #"{"title":"old"}"#, summary: "no sink",
            maxEvents: 100, maxBytes: 1 << 20)
        // Format 2's line of a whole record ends with three absent parts: without them, and
        // with format 1's mark, it is the line format 1 wrote.
        var line = old.line()
        #expect(line.first == UInt8(ascii: "2") && Array(line.suffix(7)) == [0xFF, 0xFD, 0xFF, 0xFD, 0xFF, 0xFD, 0xFE])
        line[0] = UInt8(ascii: "1")
        line.removeLast(7)
        line.append(0xFE)
        #expect(FileManager.default.createFile(atPath: spoolPath, contents: Data(line), attributes: [.posixPermissions: 0o600]))
        record(memory(), "new", at: start.addingTimeInterval(1))
        let entries = try memory().entries(since: nil, limit: nil)
        #expect(entries.map(\.subject.title) == ["old", "new"])
        #expect(entries.first?.record == whole)
        #expect(entries.last?.record.hasPrefix(#"{"event":{"actions":[],"app":"notify-route","dedup_key":"#) == true)
        #expect(folded)
    }

    @Test func aFoldKilledAfterItsCommitDoesNotInsertTwice() throws {
        record(memory(), "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        let lines = try Data(contentsOf: URL(fileURLWithPath: spoolPath))
        #expect(try titles() == ["first", "second"])
        // As if the fold had been killed between its commit and emptying the file.
        try lines.write(to: URL(fileURLWithPath: spoolPath))
        #expect(try titles() == ["first", "second"])
        // And the next lines after such a fold are folded as usual.
        record(memory(), "third", at: start.addingTimeInterval(2))
        #expect(try titles() == ["first", "second", "third"])
    }

    /// The lines such a fold committed are a prefix of what the next fold reads: those
    /// appended after it are folded, the committed ones not again.
    @Test func aFoldKilledAfterItsCommitKeepsTheLinesAppendedSince() throws {
        record(memory(), "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        record(memory(), "third", at: start.addingTimeInterval(2))
        let lines = try Data(contentsOf: URL(fileURLWithPath: spoolPath))
        #expect(try titles() == ["first", "second", "third"])
        try lines.write(to: URL(fileURLWithPath: spoolPath))
        record(memory(), "fourth", at: start.addingTimeInterval(3))
        #expect(try titles() == ["first", "second", "third", "fourth"])
    }

    /// A fold moves the spool aside before its inserts: killed before its commit, it leaves
    /// the moved lines, which the next fold inserts first, before the spool made since.
    @Test func aFoldKilledBeforeItsCommitLeavesItsLinesForTheNext() throws {
        record(memory(), "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        // As if a fold had moved the spool aside and been killed in its transaction.
        #expect(rename(spoolPath, foldingPath) == 0)
        record(memory(), "third", at: start.addingTimeInterval(2))
        #expect(spoolSize > 0)
        #expect(try titles() == ["first", "second", "third"])
        #expect(folded)
    }

    /// Killed after its commit and before removing what it moved aside: the next fold finds
    /// those lines committed (their last token is kept) and inserts none of them again.
    @Test func aMovedSpoolFoundAfterItsCommitIsNotInsertedTwice() throws {
        record(memory(), "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        let lines = try Data(contentsOf: URL(fileURLWithPath: spoolPath))
        #expect(try titles() == ["first", "second"])
        try lines.write(to: URL(fileURLWithPath: foldingPath))
        chmod(foldingPath, 0o600)
        record(memory(), "third", at: start.addingTimeInterval(2))
        #expect(try titles() == ["first", "second", "third"])
        #expect(folded)
    }

    /// A daemon's descriptor kept open across a fold: the fold moved the file it held, and
    /// its next records go to the spool made anew, not to the moved file.
    @Test func aDaemonsAppendsAfterAFoldGoToTheNewSpool() throws {
        let daemon = RouterMemory(directory: directory, keepsOpen: true, notice: { Issue.record("notice: \($0)") })
        _ = daemon.spoolRecords()
        record(daemon, "first", at: start)
        // Another process folds (a `history` reading, a send past the bound).
        #expect(try titles() == ["first"])
        record(daemon, "second", at: start.addingTimeInterval(1))
        #expect(spoolSize > 0)
        record(daemon, "third", at: start.addingTimeInterval(2))
        daemon.foldSpooledRecords()
        #expect(try titles() == ["first", "second", "third"])
        #expect(folded)
    }

    /// The spool moved aside stays locked while its fold inserts it: appenders are not held
    /// up by the inserts (they find the file moved and make a new spool), and another fold
    /// waits for it, then finds it removed.
    @Test func appendsGoOnWhileAFoldInsertsTheMovedLines() throws {
        record(memory(), "first", at: start)  // opens history.db: no marker yet
        record(memory(), "second", at: start.addingTimeInterval(1))
        let spool = HistorySpool(directory: directory)
        // A fold's first half, in this test's hands: the spool moved aside, locked shared.
        let fold = try #require(spool.takeForFold(until: .now + .seconds(1), notice: { Issue.record("notice: \($0)") }))
        #expect(fold.count == 1 && !fold.leftOver)
        #expect(spoolSize < 0)
        let clock = ContinuousClock()
        let elapsed = clock.measure { record(memory(), "third", at: start.addingTimeInterval(2)) }
        #expect(elapsed < .milliseconds(100), "an append waited for the fold: \(elapsed)")
        #expect(spoolSize > 0)
        // Another fold waits for the moved file while it is locked (here: not past its deadline).
        #expect(spool.takeForFold(until: .now + .milliseconds(20), notice: { Issue.record("notice: \($0)") }) == nil)
        // Committed (as if) and removed: the next fold takes only the new spool.
        fold.clear()
        #expect(try titles() == ["first", "third"])
        #expect(folded)
    }

    @Test func aLineCutShortIsDroppedAlone() throws {
        record(memory(), "first", at: start)
        record(memory(), "second", at: start.addingTimeInterval(1))
        let handle = try #require(FileHandle(forWritingAtPath: spoolPath))
        handle.seekToEndOfFile()
        handle.write(Data([0x31, 0xFF, 0x61, 0x62]))
        try handle.close()
        let notices = NoticeLog()
        #expect(try memory(notices: notices).entries(since: nil, limit: nil).map(\.subject.title) == ["first", "second"])
        #expect(notices.all.contains { $0.contains("cut short") }, "\(notices.all)")
        #expect(folded)
    }

    @Test func theSenderThatFindsTheSpoolLargeFoldsItWithItsBounds() throws {
        record(memory(), "first", at: start)
        let bounds = HistorySettings(maxEvents: 5)
        var count = 1
        while spoolSize + 40_000 < HistorySpool.foldBytes {
            record(memory(), "event \(count)", body: String(repeating: "x", count: 8_000), at: start.addingTimeInterval(Double(count)),
                   settings: bounds)
            count += 1
        }
        #expect(count > 5 && spoolSize > 0)
        // The next one crosses the bound: the spool is folded, and the oldest dropped past max_events.
        record(memory(), "last", body: String(repeating: "y", count: 20_000), at: start.addingTimeInterval(1000), settings: bounds)
        #expect(folded)
        #expect(try openDatabases() == 0)
        let titles = try titles()
        #expect(titles == (count - 4..<count).map { "event \($0)" } + ["last"])
    }

    @Test func aSpoolThatIsNotARegularFileOfOursIsRemoved() throws {
        record(memory(), "first", at: start)
        try FileManager.default.createSymbolicLink(atPath: spoolPath, withDestinationPath: "/etc/passwd")
        // Not appended to: recorded in history.db, which removes the link as it opens.
        let notices = NoticeLog()
        record(memory(notices: notices), "second", at: start.addingTimeInterval(1))
        #expect(try titles() == ["first", "second"])
        #expect(notices.all.contains { $0.contains("symbolic link") }, "\(notices.all)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: spoolPath)) == nil)
    }
}
