import NotifyRoute

/// The `journal` sink kind: one structured record per event in the systemd journal
/// (fields: ``JournalEventFormat``), written in journald's native protocol on a socket of
/// the sink's own, or, when that cannot be done at once, with libsystemd's
/// `sd_journal_sendv` on the sink's queue. libsystemd is loaded with dlopen the first time
/// a record needs it: making a sink, or a process that never writes, maps none of it.
///
/// It is never silent about a record it could not write:
/// - journald's socket absent (where `sd_journal_sendv` itself would return 0 and drop
///   the record): the sink is *unavailable*, with that reason;
/// - a stale socket: *failed*, "connection refused";
/// - journald hung (its socket buffer full, where `sd_journal_sendv` blocks forever):
///   the blocking write happens on the sink's own queue, never on the caller's, and the caller
///   has its answer a little before the delivery's deadline. With a queue
///   (``queueSize`` > 0, for a long-lived process) the record waits in a bounded FIFO
///   and the receipt says *queued* and why; records past the bound are dropped, counted
///   in ``statistics``, in the next receipts' notes and, once journald answers again, in
///   a catalogued journal record (``JournalCatalog/eventsDropped``). The queue is
///   flushed in order as soon as journald reads again. Without a queue (the config
///   default, for `notify-route send`, which exits right away) the caller gets a
///   retryable *timed-out* error, so the route's failover sinks get the event.
///
/// In a Swift service:
///
/// ```swift
/// let journal = JournalSink(identifier: "backupd", queueSize: 1_024, fields: ["UNIT_ROLE": "backup"])
/// let router = try NotificationRouter(configuration: config, sinks: ["journal": journal])
/// try await router.send("Backup finished") { $0.level = .success; $0.fields["BYTES"] = "42000000000" }
/// ```
///
/// In a config (`queue_size` defaults to 0 there: see above):
///
/// ```yaml
/// sinks:
///   journal: { kind: journal, identifier: backup, queue_size: 1024, fields: { UNIT_ROLE: backup } }
/// ```
public struct JournalSink: NotificationSink {
    /// The journald socket `sd_journal_sendv` writes to.
    public static let journaldSocket = JournalTransport.journaldSocket
    /// The queue bound of a sink made in code.
    public static let defaultQueueSize = 1_024

    /// What the sink's writer has done so far.
    public struct Statistics: Hashable, Sendable {
        /// Records journald took.
        public var written: Int
        /// Records handed over and not written yet (callers waiting, plus ``queued``).
        public var waiting: Int
        /// Records whose callers were told "queued", not written yet.
        public var queued: Int
        /// Records given up: the queue was full, journald rejected a queued record, or
        /// ``JournalSink/shutdown(within:)`` gave up on it.
        public var dropped: Int
        /// Of ``dropped``, those ``JournalSink/shutdown(within:)`` gave up on: records whose
        /// callers were told "queued" and that journald had not taken when the sink was finished.
        public var givenUp: Int = 0
        /// How long journald has not taken a record, when it is stalled.
        public var stalledFor: Duration?
        /// The last write error, until a write succeeds again.
        public var lastFailure: String?
    }

    /// `SYSLOG_IDENTIFIER` of every record; `nil` uses each event's app.
    public let identifier: String?
    /// Extra fields written with every event (the event's own fields win on equal names).
    public let fields: [String: String]
    /// The sink's name in diagnostics (`NOTIFY_ROUTE_SINK` of its own records).
    public let name: String
    let writer: JournalWriter

    /// - Parameters:
    ///   - identifier: `SYSLOG_IDENTIFIER`; `nil` for each event's app.
    ///   - queueSize: how many records may wait for a stalled journald; 0 for none.
    ///   - fields: written with every event; names are sanitised like event fields.
    ///   - name: the instance name, written as `NOTIFY_ROUTE_SINK` in the sink's own records.
    ///   - socketPath: the socket the fast path writes to and the queued path *checks*
    ///     (`sd_journal_sendv` always writes to ``journaldSocket``); change this only to
    ///     test the sink's answers.
    public init(
        identifier: String? = nil, queueSize: Int = JournalSink.defaultQueueSize, fields: [String: String] = [:],
        name: String = "journal", socketPath: String = JournalSink.journaldSocket
    ) {
        self.identifier = identifier
        self.fields = fields
        self.name = name
        let capacity = max(0, queueSize)
        self.writer = JournalWriter(label: name, capacity: capacity, transport: JournalTransport(socketPath: socketPath)) { dropped in
            JournalRecord([
                ("MESSAGE", "notify-route: the journal sink \"\(name)\" dropped \(dropped) event(s): journald did not answer "
                    + "and the queue (queue_size \(capacity)) was full"),
                ("PRIORITY", "4"),
                ("SYSLOG_IDENTIFIER", identifier ?? "notify-route"),
                ("MESSAGE_ID", JournalCatalog.eventsDropped),
                (JournalEventFormat.droppedCount, String(dropped)),
                (JournalEventFormat.queueSize, String(capacity)),
                (JournalEventFormat.sink, name),
            ])
        }
    }

    /// The plugin entry for a ``SinkRegistry``: options `identifier`, `queue_size`
    /// (default 0: no queue), `fields` (a map of valid journal field names to values).
    public static let plugin = SinkPlugin(
        kind: "journal",
        summary: "a structured record per event in the systemd journal (native protocol; sd_journal_sendv for big records), with a bounded queue for a hung journald",
        options: [
            .option("identifier", .string, default: .implicit("the event's app"), example: "backupd",
                    "the SYSLOG_IDENTIFIER of every record"),
            .option("queue_size", .int(0...1_000_000), default: .value("0"), example: "100",
                    "how many records may wait for a stalled journald (0: none)"),
            .option("fields", .stringMap, example: "{ TEAM: ops }", "journal fields added to every record"),
        ] + SinkRetry.keys
    ) { options in
        try SinkRetry.check(options)
        let identifier = try options.string("identifier")
        if let identifier, identifier.isEmpty || identifier.contains(where: \.isNewline) {
            throw options.error("identifier must be one non-empty line", at: "identifier")
        }
        let fields = try options.stringMap("fields") ?? [:]
        for key in fields.keys.sorted() {
            guard JournalFieldName.isValid(key) else {
                throw options.error(
                    "fields: \"\(key)\" is not a journal field name (A-Z, 0-9 and _, not starting with _ or a digit, "
                        + "at most 64 characters); did you mean \(JournalFieldName.sanitize(key))?", at: "fields")
            }
            guard !JournalEventFormat.reservedNames.contains(key) else {
                throw options.error("fields: \(key) is written by the journal sink itself; choose another name", at: "fields")
            }
            guard !JournalEventFormat.isProtected(key) else {
                throw options.error(
                    "fields: \(key) would make the record claim another process, unit, facility or call site; choose another name",
                    at: "fields")
            }
        }
        return JournalSink(
            identifier: identifier, queueSize: try options.int("queue_size", in: 0...1_000_000) ?? 0, fields: fields,
            name: options.sinkName)
    }

    /// How many records may wait for a stalled journald (0: none).
    public var queueSize: Int { writer.capacity }

    /// Counters of the sink's writer (shared by copies of this value).
    public var statistics: Statistics { writer.statistics }

    /// `deliversInline`: ``deliver(_:)`` enforces the delivery's deadline itself. It writes
    /// on the caller's thread only without blocking (a non-blocking datagram, at most
    /// 5 ms of poll(2) for room in journald's queue, never past the deadline); anything
    /// that can block (`sd_journal_sendv`) runs on the sink's own queue while the caller
    /// waits at most until a little before `delivery.deadline`, on a Dispatch timer. So
    /// the router may call it directly, without its deadline task and timer.
    public var capabilities: SinkCapabilities { SinkCapabilities(deliversInline: true, worthRetrying: true) }

    /// Available when journald's socket exists and someone is bound to it. Never waits:
    /// a hung journald still looks available here, and deliveries say "queued".
    public func availability() async -> SinkAvailability {
        if let problem = writer.transport.probe() { return .unavailable(reason: problem.message) }
        return .available
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let (record, notes) = JournalEventFormat.record(for: delivery, identifier: identifier, staticFields: fields)
        return try await write(record, deadline: delivery.deadline, notes: notes)
    }

    /// Writes a record of your own the way events are written (at once, or through the
    /// sink's queue), with the same answers as ``deliver(_:)``: fields whose values are
    /// bytes (not UTF-8) are written as they are.
    ///
    /// ```swift
    /// var record = JournalRecord([("MESSAGE", "firmware blob"), ("PRIORITY", "6")])
    /// record.append("BLOB", bytes: [0xde, 0xad, 0x00, 0xff])
    /// let receipt = try await journal.write(record)
    /// ```
    ///
    /// - Throws: ``SinkError``: unavailable, failed, or timed out (no queue).
    public func write(
        _ record: JournalRecord, deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(1)), notes: [String] = []
    ) async throws -> SinkReceipt {
        // Answer a little before the router's own deadline so it gets our word, not its time-out.
        let remaining = deadline - .now
        let margin = min(remaining / 10, .milliseconds(100))
        let outcome = await writer.submit(record, waitUntil: deadline.advanced(by: .zero - max(margin, .zero)))
        var notes = notes
        switch outcome {
        case .written:
            appendDropNote(&notes)
            return SinkReceipt(notes: notes)
        case .queued(let reason):
            appendDropNote(&notes)
            return SinkReceipt(disposition: .queued(reason), notes: notes)
        case .failed(let error):
            throw error
        }
    }

    /// Waits until every record handed to the sink is written (or given up), at most `timeout`.
    /// A long-lived process calls it when it shuts down.
    ///
    /// - Returns: `false` when records still wait for journald.
    public func flush(within timeout: Duration) async -> Bool {
        await writer.flush(within: timeout)
    }

    /// How long ``finish()`` waits for queued records: a process that exits must not wait
    /// for a stopped journald for long, and a journald that reads at all takes thousands of
    /// records a second.
    public static let shutdownWait = Duration.seconds(5)

    /// Before a short-lived process exits: ``shutdown(within:)`` with ``shutdownWait``.
    public func finish() async {
        _ = await shutdown(within: Self.shutdownWait)
    }

    /// Waits at most `timeout` (and not past the task's cancellation) for every record
    /// handed to the sink to be written, then gives up those journald has not taken: they
    /// are counted in ``Statistics/dropped`` and ``Statistics/givenUp``, so a record a
    /// receipt called queued is never lost uncounted. For a process about to exit.
    ///
    /// - Returns: how many records were given up (0: all written).
    @discardableResult
    public func shutdown(within timeout: Duration) async -> Int {
        if await writer.flush(within: timeout) { return 0 }
        return writer.giveUp()
    }

    /// Records wait for journald (a datagram sent on the caller's thread leaves nothing behind).
    public var hasPendingWork: Bool { writer.hasWaitingRecords }

    /// Records whose receipts said queued, not written yet, and those given up at the end.
    public var queue: SinkQueue? {
        let statistics = statistics
        return SinkQueue(capacity: queueSize, queued: statistics.queued, givenUp: statistics.givenUp,
                         stalledFor: statistics.stalledFor, destination: "journald")
    }

    public func drainQueue(within limit: Duration) async -> Int { await shutdown(within: limit) }

    /// Writes one catalogued record (``JournalCatalog/sinkFailed``) for each sink that
    /// failed in `report` (not for unavailable ones: a missing desktop on a server is not news).
    ///
    /// ```swift
    /// let report = try await router.send(event)
    /// await journal.recordFailures(in: report)
    /// ```
    ///
    /// - Returns: how many records were written or queued.
    @discardableResult
    public func recordFailures(in report: DeliveryReport, deadline: ContinuousClock.Instant = .now.advanced(by: .milliseconds(500))) async -> Int {
        var count = 0
        for outcome in report.outcomes {
            guard case .failed(let error) = outcome.status else { continue }
            let record = JournalRecord([
                ("MESSAGE", "notify-route: sink \"\(outcome.sink)\" (\(outcome.kind)) failed to deliver \"\(report.event.title)\": \(error.message)"),
                ("PRIORITY", "3"),
                ("SYSLOG_IDENTIFIER", identifier ?? "notify-route"),
                ("MESSAGE_ID", JournalCatalog.sinkFailed),
                (JournalEventFormat.failedSink, outcome.sink),
                (JournalEventFormat.failedKind, outcome.kind),
                (JournalEventFormat.failure, error.kind.rawValue),
                (JournalEventFormat.error, error.message),
                (JournalEventFormat.eventTitle, report.event.title),
                (JournalEventFormat.sink, name),
            ])
            if (try? await write(record, deadline: deadline)) != nil { count += 1 }
        }
        return count
    }

    private func appendDropNote(_ notes: inout [String]) {
        let drops = writer.takeUnreportedDrops()
        guard drops > 0 else { return }
        notes.append("\(drops) journal record(s) dropped since the last report: journald did not answer and the queue (queue_size \(queueSize)) was full")
    }
}
