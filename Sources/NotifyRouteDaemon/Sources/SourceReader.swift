import Glibc
import Logging
import NotifyRoute
import Synchronization

/// One source's reading loop, on a thread of its own (sd-journal blocks on disk and on
/// its wait): it reads the journal from where it stopped, hands each event to `deliver`
/// (which returns once the router has routed it), and saves the cursor after it, so a
/// restart neither misses nor repeats a record. ``stop()`` wakes it at once.
package final class SourceReader: Sendable {
    package let declaration: SourceDeclaration
    private let positions: SourcePositions
    private let deliver: @Sendable (SourceAction) -> Void
    private let logger: Logger
    private let stopPipe: (read: Int32, write: Int32)
    private let stopping = Atomic<Bool>(false)
    private let exited = Atomic<Bool>(false)

    /// How often a source that only skips records saves its place.
    package static let saveEvery = 5_000
    /// How long a source waits before opening the journal again after an error.
    package static let retryDelayMS: Int32 = 1_000
    /// Records notify-route wrote itself (the journal sink's fields) are never read back.
    package static let ownFieldPrefix = Array("NOTIFY_ROUTE_".utf8)

    package init(declaration: SourceDeclaration, positions: SourcePositions, logger: Logger,
         deliver: @escaping @Sendable (SourceAction) -> Void) throws {
        self.declaration = declaration
        self.positions = positions
        self.logger = logger
        self.deliver = deliver
        var fds: [Int32] = [-1, -1]
        // pipe2 needs _GNU_SOURCE, which Glibc's module is not built with.
        guard pipe(&fds) == 0 else {
            throw JournalReader.Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        stopPipe = (fds[0], fds[1])
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Starts the loop on a new thread; false when the system refuses one.
    package func start() -> Bool {
        DetachedThread.start { [self] in
            run()
            exited.store(true, ordering: .releasing)
        }
    }

    /// Asks the loop to end: it finishes the record at hand, sends what it holds and saves its place.
    package func stop() {
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    package var hasExited: Bool { exited.load(ordering: .acquiring) }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func run() {
        if declaration.kind == .units || declaration.journal == .system, let uid = SystemJournal.unreadableBy() {
            logger.warning("source \(declaration.name): uid \(uid) cannot read the system journal, so this source sees only this user's own records\(declaration.kind == .units ? " (no system unit's failure among them)" : ""); users in the groups 'systemd-journal' and 'adm' can read it, as journalctl says")
        }
        var throttle = SourceThrottle(rate: declaration.effectiveRate, sourceName: declaration.name)
        while !isStopping {
            do {
                try read(&throttle)
            } catch {
                logger.error("source \(declaration.name): \(error); opening the journal again in \(Self.retryDelayMS) ms")
                var poller = pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, Self.retryDelayMS)
            }
        }
        // What the throttle held is reported before the daemon stops, not lost with it.
        if let summary = throttle.summary(at: .now, force: true) { deliver(.send(summary)) }
    }

    /// Opens the journal, goes to where the source stopped, and reads until stopped.
    private func read(_ throttle: inout SourceThrottle) throws {
        let reader = try JournalReader(scope: declaration.journal)
        var units = declaration.kind == .units
            ? UnitSource(declaration: declaration, failed: try positions.failedUnits(declaration.name)) : nil
        let journal = JournalSource(declaration: declaration)
        let names = JournalReader.FieldNames(declaration.fieldsRead)
        // Every record is read and tested here: sd-journal with matches places a reader that
        // starts at the tail after the first records to come, and skips them.
        try position(reader)

        var unsaved = false
        var skipped = 0
        func save() {
            guard unsaved, let cursor = reader.rememberedCursor else { return }
            do {
                try positions.save(cursor: cursor, for: declaration.name)
                unsaved = false
            } catch {
                logger.error("source \(declaration.name): cannot save its place in the journal: \(error)")
            }
        }
        /// False when the throttle only counted it.
        func send(_ action: SourceAction) -> Bool {
            if case .send(let event) = action, !throttle.admit(event, at: .now) { return false }
            deliver(action)
            return true
        }

        while true {
            while !isStopping, try reader.next() {
                reader.rememberCursor()
                unsaved = true
                skipped += 1
                if skipped >= Self.saveEvery { save(); skipped = 0 }
                guard let fields = reader.fields(names, skippingPrefix: Self.ownFieldPrefix) else { continue }
                var actions: [SourceAction] = []
                if var unitSource = units {
                    actions = unitActions(&unitSource, fields: fields, at: reader.realtime)
                    units = unitSource
                } else if let event = journal.event(for: fields) {
                    actions = [.send(event)]
                }
                var delivered = false
                for action in actions where send(action) { delivered = true }
                // A record the throttle only counted is saved with the skipped ones: a save
                // (a transaction) per record of a flood would cost more than reading it.
                guard delivered else { continue }
                save()
                skipped = 0
            }
            save()
            if let summary = throttle.summary(at: .now) { deliver(.send(summary)) }
            if isStopping { return }
            let timeout = throttle.summaryDue.map { due -> Int32 in
                let left = due - .now
                return Int32(clamping: max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            } ?? -1
            if try reader.wait(stopFD: stopPipe.read, timeoutMS: timeout) { return }
        }
    }

    /// The first time at the end of the journal (its past is not news); after that just
    /// past the last record handled. A saved record that is gone (vacuumed), or a saved place
    /// that is no cursor, starts at the oldest record, and says so.
    private func position(_ reader: JournalReader) throws {
        guard let saved = try positions.cursor(declaration.name) else {
            try reader.seekTail()
            if try reader.previous(), let cursor = reader.cursor {
                try positions.save(cursor: cursor, for: declaration.name)
            } else {
                // An empty journal: everything that comes is new.
                try reader.seekHead()
            }
            logger.info("source \(declaration.name): reading new journal records from now on")
            return
        }
        if try !reader.seek(cursor: saved) {
            logger.warning("source \(declaration.name): its saved place is no longer in the journal (rotated, vacuumed, or not a cursor); reading from the oldest record there is")
            try reader.seekHead()
        }
    }

    private func unitActions(_ units: inout UnitSource, fields: [String: String], at realtime: UInt64?) -> [SourceAction] {
        guard let change = units.change(for: fields) else { return [] }
        do {
            switch change {
            case .failed(let unit, let userManager):
                let lines = (try? lastLines(unit: unit, userManager: userManager, before: realtime)) ?? []
                try positions.setUnit(unit, failed: true, source: declaration.name)
                units.failed.insert(unit)
                return [.send(units.failureEvent(unit: unit, fields: fields, lines: lines))]
            case .recovered(let unit):
                try positions.setUnit(unit, failed: false, source: declaration.name)
                units.failed.remove(unit)
                return [units.recoveryAction(unit: unit)]
            }
        } catch {
            logger.error("source \(declaration.name): cannot save the units' state: \(error)")
            return []
        }
    }

    /// The unit's last log lines up to its failure, oldest first (as `journalctl -u` shows them).
    private func lastLines(unit: String, userManager: Bool, before realtime: UInt64?) throws -> [String] {
        let reader = try JournalReader(scope: declaration.journal)
        try reader.addMatches(UnitSource.lineMatches(unit: unit, userManager: userManager))
        if let realtime { try reader.seek(realtime: realtime + 1) } else { try reader.seekTail() }
        var lines: [String] = []
        let names = JournalReader.FieldNames(["MESSAGE", "MESSAGE_ID"])
        while lines.count < UnitSource.lineCount, try reader.previous() {
            guard let fields = reader.fields(names, skippingPrefix: Self.ownFieldPrefix),
                  fields["MESSAGE_ID"] != UnitSource.failedMessageID, let message = fields["MESSAGE"]
            else { continue }
            lines.append(message)
        }
        return lines.reversed()
    }
}

/// Whether this process can read the system's journal, asked as journalctl does before its
/// hint: sd-journal opens what it can and is silent about the files it may not read.
enum SystemJournal {
    /// This process's uid when a system journal is there and it may not read it; `nil` when
    /// it may, or there is none (no journald, or its files out of sight).
    static func unreadableBy() -> UInt32? {
        let uid = getuid()
        guard uid != 0, let machineID = machineID() else { return nil }
        var refused = false
        for directory in ["/run/log/journal", "/var/log/journal"] {
            if access("\(directory)/\(machineID)/system.journal", R_OK) == 0 { return nil }
            if errno == EACCES { refused = true }
        }
        return refused ? uid : nil
    }

    private static func machineID() -> String? {
        guard let file = fopen("/etc/machine-id", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let id = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return id.utf8.count == 32 && id.allSatisfy(\.isHexDigit) ? id : nil
    }
}
