import Foundation
import NotifyRoute
@testable import NotifyRouteJournal
import NotifyRouteTestSupport
import Testing

/// Runs where the private journald of Tests/with-components.sh is; under CI or inside
/// with-components.sh it runs anyway and fails when journald is missing.
let journaldTestsEnabled = PrivateJournal.isAvailable || TestEnvironment.componentsRequired

/// The journal sink against a real journald, read back with `journalctl -o json`.
/// Serialized, and every test holds the journal-test lock (exclusive when it stops journald).
@Suite(.serialized, .enabled(if: journaldTestsEnabled, "needs the private journald of Tests/with-components.sh"))
struct JournaldTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    static func delivery(
        _ title: String, run: String, level: Level = .info, body: String? = nil, fields: [String: String] = [:],
        deadline: Duration = .seconds(2)
    ) -> SinkDelivery {
        var fields = fields
        fields[PrivateJournal.runField] = run
        return SinkDelivery(
            event: ResolvedEvent(title: title, body: body, level: level, app: "journal-test", fields: fields),
            sinkName: "journal", deadline: .now.advanced(by: deadline))
    }

    static func entries(_ run: String, count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [PrivateJournal.Entry] {
        try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: count, timeout: timeout)
    }

    // MARK: Fields

    @Test func everyFieldArrives() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(fields: ["STATIC_ROLE": "db"])
            let event = ResolvedEvent(
                title: "Pool exhausted", body: "line 1\nline 2\n\n  indented", level: .error, app: "journal-test",
                source: "db.pool", tags: ["ops", "db"], dedupKey: "db-pool-exhausted", replaceKey: "db-status",
                fields: [
                    PrivateJournal.runField: run, "disk.path": "/dev/sda", "_hidden": "h", "2fa": "x", "PRIORITY": "0",
                    "MULTI": "a\nb\nc\n", "UNICODE": "grüße ✓",
                ],
                messageID: "8d45620c1a4348dbb17410da57c60c66",
                callSite: CallSite(file: "Service/Pool.swift", line: 77, function: "acquire(timeout:)"))
            let receipt = try await sink.deliver(SinkDelivery(event: event, sinkName: "journal", duplicateCount: 2))
            #expect(receipt.disposition == .delivered)
            #expect(receipt.notes.contains("field \"disk.path\" written as DISK_PATH (journal names are A-Z, 0-9 and _)"))

            let entry = try #require(try await Self.entries(run).first)
            #expect(entry["MESSAGE"] == "Pool exhausted\nline 1\nline 2\n\n  indented")
            #expect(entry["PRIORITY"] == "3")
            #expect(entry["SYSLOG_IDENTIFIER"] == "journal-test")
            #expect(entry["MESSAGE_ID"] == "8d45620c1a4348dbb17410da57c60c66")
            #expect(entry["CODE_FILE"] == "Service/Pool.swift")
            #expect(entry["CODE_LINE"] == "77")
            #expect(entry["CODE_FUNC"] == "acquire(timeout:)")
            #expect(entry["NOTIFY_ROUTE_LEVEL"] == "error")
            #expect(entry["NOTIFY_ROUTE_APP"] == "journal-test")
            #expect(entry["NOTIFY_ROUTE_SOURCE"] == "db.pool")
            // journald keeps the values of a repeated field, not their order.
            #expect(Set(entry.values("NOTIFY_ROUTE_TAGS")) == ["db", "ops"])
            #expect(entry["NOTIFY_ROUTE_DEDUP_KEY"] == "db-pool-exhausted")
            #expect(entry["NOTIFY_ROUTE_REPLACE_KEY"] == "db-status")
            #expect(entry["NOTIFY_ROUTE_DUPLICATE_COUNT"] == "2")
            #expect(entry["NOTIFY_ROUTE_SINK"] == "journal")
            // User fields: sanitised names, the originals kept, values intact.
            #expect(entry["STATIC_ROLE"] == "db")
            #expect(entry["DISK_PATH"] == "/dev/sda")
            #expect(entry["HIDDEN"] == "h")
            #expect(entry["FIELD_2FA"] == "x")
            #expect(entry["USER_PRIORITY"] == "0")
            #expect(entry["MULTI"] == "a\nb\nc\n")
            #expect(entry["UNICODE"] == "grüße ✓")
            #expect(Set(entry.values("NOTIFY_ROUTE_FIELD_NAME")) == [
                "DISK_PATH=disk.path", "HIDDEN=_hidden", "FIELD_2FA=2fa", "USER_PRIORITY=PRIORITY",
            ])
            // journald's own trusted fields are still its own.
            #expect(entry["_HIDDEN"] == nil)
            #expect(entry["_PID"] == String(getpid()))
        }
    }

    @Test func priorityForEveryLevel() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink()
            for level in Level.allCases {
                _ = try await sink.deliver(Self.delivery("level \(level.rawValue)", run: run, level: level))
            }
            // A level whose priority the config overrode (`levels: { warning: { priority: 1 } }`).
            var overridden = Self.delivery("overridden", run: run, level: .warning)
            overridden.event.style.journalPriority = 1
            _ = try await sink.deliver(overridden)

            let entries = try await Self.entries(run, count: Level.allCases.count + 1)
            let priorities = Dictionary(uniqueKeysWithValues: entries.map { ($0["MESSAGE"] ?? "", $0["PRIORITY"] ?? "") })
            #expect(priorities == [
                "level debug": "7", "level info": "6", "level notice": "5", "level success": "5",
                "level warning": "4", "level error": "3", "level critical": "2", "overridden": "1",
            ])
            #expect(entries.map { $0["NOTIFY_ROUTE_LEVEL"] ?? "" }.prefix(7) == Level.allCases.map(\.rawValue)[...])
        }
    }

    @Test func theIdentifierOptionAndTheDefaultDedupKey() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(identifier: "backup-\(run.prefix(8))")
            _ = try await sink.deliver(Self.delivery("same", run: run, body: "b"))
            _ = try await sink.deliver(Self.delivery("same", run: run, body: "b"))
            let entries = try await Self.entries(run, count: 2)
            #expect(entries.count == 2)
            #expect(entries.allSatisfy { $0["SYSLOG_IDENTIFIER"] == "backup-\(run.prefix(8))" })
            #expect(entries.allSatisfy { $0["NOTIFY_ROUTE_APP"] == "journal-test" })
            #expect(entries[0]["NOTIFY_ROUTE_DEDUP_KEY"]?.hasPrefix("default:") == true)
            #expect(entries[0]["NOTIFY_ROUTE_DEDUP_KEY"] == entries[1]["NOTIFY_ROUTE_DEDUP_KEY"])
        }
    }

    @Test func bytesThatAreNotUTF8ArriveIntact() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            var record = JournalRecord([("MESSAGE", "raw record"), (PrivateJournal.runField, run)])
            record.append("BLOB", bytes: [0xff, 0xfe, 0x00, 0x41, 0x0a, 0x42])
            record.append("latin1", bytes: Array("caf".utf8) + [0xe9])
            let receipt = try await JournalSink().write(record)
            #expect(receipt.disposition == .delivered)
            let entry = try #require(try await Self.entries(run).first)
            #expect(entry.fields["BLOB"] == [.bytes([0xff, 0xfe, 0x00, 0x41, 0x0a, 0x42])])
            #expect(entry.fields["LATIN1"] == [.bytes([0x63, 0x61, 0x66, 0xe9])])
        }
    }

    // MARK: Never silent

    @Test func availability() async throws {
        try await PrivateJournal.withAccess {
            #expect(await JournalSink().availability() == .available)
            let directory = try TestEnvironment.temporaryDirectory("journal-socket")
            defer { try? FileManager.default.removeItem(at: directory) }

            let absent = JournalSink(socketPath: directory.appendingPathComponent("socket").path)
            guard case .unavailable(let reason) = await absent.availability() else {
                Issue.record("an absent socket must make the sink unavailable")
                return
            }
            #expect(reason.contains("socket") && reason.contains("is absent"), "\(reason)")

            let stalePath = directory.appendingPathComponent("stale").path
            try PrivateJournal.makeStaleSocket(at: stalePath)
            guard case .unavailable(let stale) = await JournalSink(socketPath: stalePath).availability() else {
                Issue.record("a stale socket must make the sink unavailable")
                return
            }
            #expect(stale.contains("connection refused"), "\(stale)")
        }
    }

    @Test func anAbsentSocketIsUnavailableNotASilentSuccess() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(socketPath: "/nonexistent/notify-route/journal/socket")
            let started = ContinuousClock.now
            await #expect {
                _ = try await sink.deliver(Self.delivery("never written", run: run))
            } throws: { error in
                guard let error = error as? SinkError else { return false }
                return error.kind == .unavailable && error.message.contains("is absent") && error.isRetryable
            }
            #expect(ContinuousClock.now - started < .milliseconds(100))
            #expect(sink.statistics.waiting == 0, "nothing is queued for an absent journald")
            let found = try await Self.entries(run, timeout: .milliseconds(300))
            #expect(found.isEmpty)
        }
    }

    /// journald stopped (its socket queue full, as a hung journald's is): every caller has its
    /// answer before its deadline; records wait in the bounded queue, drops past the bound are
    /// counted, and everything queued is written, in order, once journald reads again.
    @Test func aHungJournaldQueuesInOrderAndFlushesWhenItAnswers() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let name = "hung-\(run.prefix(12))"
            let sink = JournalSink(queueSize: 20, name: name)
            var queued: [Int] = [], dropped: [Int] = [], delivered: [Int] = []
            var slowest = Duration.zero
            let deadline = Duration.milliseconds(300)
            try await PrivateJournal.whileStopped {
                let filled = try PrivateJournal.fillSocketQueue(run: run)
                #expect(filled > 0)
                for sequence in 0..<30 {
                    let started = ContinuousClock.now
                    do {
                        let receipt = try await sink.deliver(
                            Self.delivery("queued \(sequence)", run: run, fields: ["SEQUENCE": String(sequence)], deadline: deadline))
                        switch receipt.disposition {
                        case .queued(let reason):
                            queued.append(sequence)
                            #expect(reason.contains("waits in the journal queue"), "\(reason)")
                        case .delivered: delivered.append(sequence)
                        }
                    } catch let error as SinkError {
                        dropped.append(sequence)
                        #expect(error.kind == .failed && error.message.contains("the journal queue is full"), "\(error)")
                    }
                    slowest = max(slowest, ContinuousClock.now - started)
                }
                #expect(sink.statistics.queued == 20)
                #expect(sink.statistics.dropped == 10)
                #expect(sink.statistics.stalledFor != nil)
            }
            print("journal: hung journald, slowest caller answer \(slowest) for a \(deadline) deadline")
            #expect(slowest < deadline, "every caller has its answer before the deadline")
            #expect(delivered.isEmpty)
            #expect(queued == Array(0..<20))
            #expect(dropped == Array(20..<30))

            // journald reads again: the queue drains in order, and says what it dropped.
            #expect(await sink.flush(within: .seconds(10)))
            let entries = try await Self.entries(run, count: 20)
            #expect(entries.compactMap { $0["SEQUENCE"] }.compactMap(Int.init) == Array(0..<20))
            let report = try await PrivateJournal.entries(matching: ["MESSAGE_ID=\(JournalCatalog.eventsDropped)", "NOTIFY_ROUTE_SINK=\(name)"])
            #expect(report.first?["NOTIFY_ROUTE_DROPPED_COUNT"] == "10")
            #expect(report.first?["NOTIFY_ROUTE_QUEUE_SIZE"] == "20")
            #expect(report.first?["PRIORITY"] == "4")

            // The next caller is told about the drops, once.
            let after = try await sink.deliver(Self.delivery("after", run: run))
            #expect(after.disposition == .delivered)
            #expect(after.notes.contains { $0.contains("10 journal record(s) dropped") }, "\(after.notes)")
            let again = try await sink.deliver(Self.delivery("again", run: run))
            #expect(again.notes.isEmpty)
            #expect(sink.statistics.stalledFor == nil)
        }
    }

    /// journald stopped and the queue full: later callers are answered at once (dropped and
    /// counted), not after another wait each, until journald reads again; then the queue
    /// drains and new records are written again.
    @Test func aStoppedJournaldWithAFullQueueCostsLaterCallersNothing() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(queueSize: 5, name: "full-\(run.prefix(12))")
            var answers: [Duration] = []
            try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                for sequence in 0..<5 {
                    let receipt = try await sink.deliver(Self.delivery("queued \(sequence)", run: run, deadline: .milliseconds(300)))
                    guard case .queued = receipt.disposition else { Issue.record("not queued: \(receipt)"); return }
                }
                for sequence in 0..<40 {
                    let started = ContinuousClock.now
                    await #expect(throws: SinkError.self) {
                        _ = try await sink.deliver(Self.delivery("dropped \(sequence)", run: run, deadline: .milliseconds(300)))
                    }
                    answers.append(ContinuousClock.now - started)
                }
                #expect(sink.statistics.dropped == 40)
            }
            let slowest = answers.max() ?? .zero
            let total = answers.reduce(Duration.zero, +)
            print("journal: stopped journald, full queue: 40 callers answered in \(total) in all, the slowest in \(slowest)")
            #expect(slowest < .milliseconds(30), "each is answered at once (5 ms to show journald reads), not after a 50 ms wait: \(answers)")
            // journald reads again: the five queued records are written, and so is the next one.
            #expect(await sink.flush(within: .seconds(10)))
            let after = try await sink.deliver(Self.delivery("after", run: run))
            #expect(after.disposition == .delivered)
            let entries = try await Self.entries(run, count: 6)
            #expect(entries.compactMap { $0["MESSAGE"] } == (0..<5).map { "queued \($0)" } + ["after"])
        }
    }

    /// `shutdown(within:)`: bounded, and what journald did not take is given up and counted.
    @Test func shutdownGivesUpWhatJournaldDidNotTakeAndCountsIt() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(queueSize: 10, name: "shutdown-\(run.prefix(12))")
            let (givenUp, took) = try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                for sequence in 0..<4 {
                    _ = try await sink.deliver(Self.delivery("queued \(sequence)", run: run, deadline: .milliseconds(300)))
                }
                #expect(sink.statistics.queued == 4)
                let started = ContinuousClock.now
                let givenUp = await sink.shutdown(within: .milliseconds(300))
                return (givenUp, ContinuousClock.now - started)
            }
            #expect(givenUp == 4)
            #expect(took < .seconds(1), "\(took)")
            #expect(sink.statistics.givenUp == 4)
            #expect(sink.statistics.dropped == 4)
            #expect(sink.statistics.queued == 0)
            #expect(!sink.hasPendingWork)
            #expect(await sink.shutdown(within: .seconds(5)) == 0, "nothing left to give up")
        }
    }

    /// Without a queue (a one-shot process) a hung journald is a retryable time-out before the
    /// deadline, and later callers are told at once instead of waiting again.
    @Test func withoutAQueueAHungJournaldIsATimeOut() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(queueSize: 0)
            var durations: [Duration] = []
            try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                for sequence in 0..<2 {
                    let started = ContinuousClock.now
                    await #expect {
                        _ = try await sink.deliver(Self.delivery("timed out \(sequence)", run: run, deadline: .milliseconds(400)))
                    } throws: { error in
                        guard let error = error as? SinkError else { return false }
                        return error.kind == .timedOut && error.isRetryable && error.message.contains("not queued")
                            && !error.message.contains("for 0ms")
                    }
                    durations.append(ContinuousClock.now - started)
                }
            }
            #expect(durations[0] < .milliseconds(400) && durations[0] >= .milliseconds(300), "\(durations)")
            #expect(durations[1] < .milliseconds(30), "known stalled: answered at once, \(durations)")
            // Once journald reads again (the write stuck in it returns), the sink writes again;
            // the second record was never handed over.
            let resumed = ContinuousClock.now
            while sink.statistics.stalledFor != nil && ContinuousClock.now - resumed < .seconds(5) {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(sink.statistics.stalledFor == nil, "the stuck write returned once journald read again")
            let after = try await sink.deliver(Self.delivery("after", run: run))
            #expect(after.disposition == .delivered)
            let entries = try await Self.entries(run, count: 2)
            #expect(!entries.contains { $0["MESSAGE"] == "timed out 1" })
            #expect(entries.contains { $0["MESSAGE"] == "after" })
        }
    }

    /// The fast path (a write on the caller's thread when nothing waits) and a hung journald:
    /// the write that finds journald's queue full gives up within a few milliseconds and
    /// takes the queue, no caller waits past its deadline, and once journald reads again
    /// nothing written on the fast path overtakes a queued record.
    @Test func theFastPathNeverHangsAndNeverOvertakesTheQueue() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let sink = JournalSink(queueSize: 100, name: "fast-\(run.prefix(12))")
            let deadline = Duration.milliseconds(300)
            func send(_ sequence: Int) async throws -> (SinkReceipt, Duration) {
                let started = ContinuousClock.now
                let receipt = try await sink.deliver(
                    Self.delivery("fast \(sequence)", run: run, fields: ["SEQUENCE": String(sequence)], deadline: deadline))
                return (receipt, ContinuousClock.now - started)
            }

            // journald running: written on the caller's thread, no queue involved.
            let (first, firstTook) = try await send(0)
            #expect(first.disposition == .delivered)
            #expect(firstTook < .milliseconds(50), "\(firstTook)")
            #expect(sink.statistics.written == 1 && sink.statistics.waiting == 0)

            var slowest = Duration.zero
            try await PrivateJournal.whileStopped {
                #expect(try PrivateJournal.fillSocketQueue(run: run) > 0)
                for sequence in 1...5 {
                    let (receipt, took) = try await send(sequence)
                    slowest = max(slowest, took)
                    guard case .queued = receipt.disposition else {
                        Issue.record("record \(sequence) with journald stopped: \(receipt.disposition)")
                        continue
                    }
                }
                #expect(sink.statistics.queued == 5)
            }
            print("journal: fast path with journald stopped, slowest caller answer \(slowest) for a \(deadline) deadline")
            #expect(slowest < deadline, "no caller waits past its deadline")

            // journald reads again: records sent right away queue behind the 5, then the fast path resumes.
            for sequence in 6...15 {
                let (receipt, took) = try await send(sequence)
                #expect(took < deadline)
                if case .queued(let reason) = receipt.disposition { Issue.record("record \(sequence): \(reason)") }
            }
            #expect(await sink.flush(within: .seconds(10)))
            let entries = try await Self.entries(run, count: 16)
            #expect(entries.compactMap { $0["SEQUENCE"] }.compactMap(Int.init) == Array(0...15), "in the order sent")
            #expect(sink.statistics.written == 16)
            #expect(sink.statistics.dropped == 0)

            // And on the fast path again: nothing waits.
            let (after, afterTook) = try await send(16)
            #expect(after.disposition == .delivered && afterTook < .milliseconds(50))
            #expect(sink.statistics.waiting == 0)
        }
    }

    /// A record too big for one datagram takes `sd_journal_sendv`, which passes it in a memfd.
    @Test func aRecordTooBigForADatagramStillArrives() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let body = String(repeating: "0123456789abcdef", count: 1 << 16)  // 1 MiB: over the socket's send buffer
            let receipt = try await JournalSink().deliver(Self.delivery("big", run: run, body: body))
            #expect(receipt.disposition == .delivered)
            let entry = try #require(try await Self.entries(run).first)
            #expect(entry["MESSAGE"]?.utf8.count == "big\n".utf8.count + body.utf8.count)
        }
    }

    /// The whole pipeline: a router built from a config, its deadline timer, a hung journald.
    @Test func throughTheRouterTheCallerReturnsByTheDeadline() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let run = PrivateJournal.newRunID()
            let registry = try SinkRegistry([JournalSink.plugin])
            let yaml = """
                sinks:
                  journal: { kind: journal, deadline: 500ms, queue_size: 8, identifier: router-test, fields: { ROLE: test } }
                fallback: [journal]
                """
            let configuration = try RouterConfiguration.load(yaml: yaml, file: "test.yaml", registry: registry)
            let router = try NotificationRouter(configuration: configuration, registry: registry)
            var event = NotificationEvent(title: "through the router", level: .warning)
            event.fields = [PrivateJournal.runField: run]

            let report = try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                let started = ContinuousClock.now
                let report = try await router.send(event)
                let elapsed = ContinuousClock.now - started
                print("journal: router.send with journald stopped returned after \(elapsed) (deadline 500ms)")
                #expect(elapsed < .milliseconds(500))
                return report
            }
            let outcome = try #require(report.outcomes.first)
            guard case .queued(let reason) = outcome.status else {
                Issue.record("expected queued, got \(outcome.status)")
                return
            }
            #expect(reason.contains("journal queue (1 of 8)"), "\(reason)")
            #expect(report.summary == .delivered)

            let sink = try #require(router.sink(named: "journal") as? JournalSink)
            #expect(await sink.flush(within: .seconds(10)))
            let entry = try #require(try await Self.entries(run).first)
            #expect(entry["SYSLOG_IDENTIFIER"] == "router-test")
            #expect(entry["ROLE"] == "test")
            #expect(entry["PRIORITY"] == "4")
        }
    }

    @Test func sinkFailuresAreCataloguedRecords() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            let failedName = "desk-\(run.prefix(12))"
            let report = DeliveryReport(
                event: ResolvedEvent(title: "Backup failed"),
                outcomes: [
                    SinkOutcome(sink: failedName, kind: "desktop", status: .failed(SinkError(.timedOut, "no answer within 1s")), route: "route 1"),
                    SinkOutcome(sink: "tty", kind: "terminal", status: .delivered, route: "route 1"),
                    SinkOutcome(sink: "away", kind: "desktop", status: .unavailable(reason: "no session bus"), route: "route 1"),
                ])
            let written = await JournalSink(identifier: "notify-route").recordFailures(in: report)
            #expect(written == 1)
            let entries = try await PrivateJournal.entries(matching: ["MESSAGE_ID=\(JournalCatalog.sinkFailed)", "NOTIFY_ROUTE_FAILED_SINK=\(failedName)"])
            let entry = try #require(entries.first)
            #expect(entry["NOTIFY_ROUTE_FAILURE"] == "timed-out")
            #expect(entry["NOTIFY_ROUTE_ERROR"] == "no answer within 1s")
            #expect(entry["NOTIFY_ROUTE_EVENT_TITLE"] == "Backup failed")
            #expect(entry["PRIORITY"] == "3")
            #expect(entry["MESSAGE"] == "notify-route: sink \"\(failedName)\" (desktop) failed to deliver \"Backup failed\": no answer within 1s")
        }
    }

    // MARK: Numbers

    /// Records per second through the sink (one caller, then eight), next to a bare loop of
    /// sd_journal_sendv on the same journald. Printed, not asserted: the machine is shared.
    @Test func throughput() async throws {
        try await PrivateJournal.withAccess {
            let run = PrivateJournal.newRunID()
            // A full measurement only when asked: at volume it starves the other tests' 50 ms deadlines on 2 cores.
            let benchmark = ProcessInfo.processInfo.environment["NOTIFY_ROUTE_JOURNAL_BENCHMARK"] == "1"
            let count = benchmark ? 3_000 : 400
            let sink = JournalSink()

            var started = ContinuousClock.now
            for sequence in 0..<count {
                _ = try await sink.deliver(Self.delivery("sequential \(sequence)", run: run))
            }
            let sequential = ContinuousClock.now - started

            started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for sequence in 0..<(count / 8) {
                            _ = try await sink.deliver(Self.delivery("concurrent \(task).\(sequence)", run: run))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let concurrent = ContinuousClock.now - started

            let transport = JournalTransport(socketPath: JournalSink.journaldSocket)
            let bare = JournalEventFormat.record(for: Self.delivery("bare", run: run)).record
            started = ContinuousClock.now
            for _ in 0..<count { #expect(transport.write(bare) == nil) }
            let direct = ContinuousClock.now - started

            func rate(_ n: Int, _ duration: Duration) -> Int { Int(Double(n) / (Double(DurationParser.milliseconds(duration)) / 1000)) }
            print("journal: \(rate(count, sequential)) records/s through the sink (1 caller), "
                  + "\(rate(count / 8 * 8, concurrent)) records/s (8 callers), \(rate(count, direct)) records/s bare sd_journal_sendv")
            let total = count + count / 8 * 8 + count
            let entries = try await Self.entries(run, count: total, timeout: .seconds(20))
            #expect(entries.count == total, "nothing lost")
            #expect(sink.statistics.written == count + count / 8 * 8)
        }
    }
}
