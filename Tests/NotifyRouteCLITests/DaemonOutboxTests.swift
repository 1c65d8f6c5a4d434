import Foundation
import NotifyRouteTestSupport
import Testing

/// What `serve` accepted and had not written (journal records it answered `queued` while
/// journald was not reading) outlives the daemon: a stop or a kill, then a new `serve` with
/// journald back, writes every record once.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct DaemonOutboxTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    /// A journal sink with a queue, as a daemon's should have (`queue_size` is 0 by default).
    static func config() throws -> URL {
        let url = try TestEnvironment.temporaryDirectory("daemon-outbox").appendingPathComponent("config.yaml")
        try """
            sinks:
              journal: { kind: journal, deadline: 500ms, identifier: daemon-outbox, queue_size: 100 }
            fallback: [journal]
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// The daemon's outbox count once it is 0, or the last count seen within 5 s.
    static func outboxEmptied(_ daemon: DaemonProcess) async throws -> Int? {
        var left: Int?
        for _ in 0..<100 {
            left = try await outbox(daemon)
            if left == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return left
    }

    static func outbox(_ daemon: DaemonProcess) async throws -> Int? {
        let status = try await DaemonTests.run(["status", "--json"], daemon)
        return try DaemonTests.json(status.standardOutput)["outbox"] as? Int
    }

    @Test(arguments: [SIGTERM, SIGKILL])
    func recordsQueuedBehindAStoppedJournaldAreWrittenOnceByTheNextServe(signal: Int32) async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let config = try Self.config()
            let first = try DaemonProcess.start(config: config)
            defer { first.stop() }
            let run = PrivateJournal.newRunID()
            let count = 40
            let stopped = try await PrivateJournal.whileStopped { () async throws -> (status: Int32, after: Duration)? in
                try PrivateJournal.fillSocketQueue(run: run)
                for sequence in 0..<count {
                    let sent = try await DaemonTests.run(
                        ["send", "--json", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "SEQ=\(sequence)", "record \(sequence)"], first)
                    let report = try DaemonTests.json(sent.standardOutput)
                    #expect(report["via"] as? String == "daemon", "\(sent.standardError)")
                    #expect(report["summary"] as? String == "delivered", "\(sent.standardOutput)")
                    let outcome = (report["sinks"] as? [[String: Any]])?.first
                    #expect(outcome?["status"] as? String == "queued", "\(sent.standardOutput)")
                }
                #expect(try await Self.outbox(first) == count)
                let text = try await DaemonTests.run(["status"], first)
                #expect(text.standardOutput.contains("\(count) accepted deliveries not done yet (queued or retrying), kept across a restart"),
                        "\(text.standardOutput)")
                first.signal(signal)
                return first.waitForExit(timeLimit: .seconds(10))
            }
            let exit = try #require(stopped, "serve did not exit: \(first.log)")
            if signal == SIGTERM {
                #expect(exit.status == 0, "\(first.log)")
                // The drain limit: twice the 500 ms deadline plus a second.
                #expect(exit.after < .seconds(3), "\(exit.after)")
                #expect(first.log.contains("deliveries kept in the outbox for the next serve"), "\(first.log)")
            }
            // journald reads again; nothing the first daemon held reached it.
            try await Task.sleep(for: .milliseconds(300))
            #expect(try PrivateJournal.read(matching: ["\(PrivateJournal.runField)=\(run)"]).isEmpty)

            let second = try DaemonProcess.start(config: config, socket: first.socketPath, runtime: first.runtimeDirectory)
            defer { second.stop() }
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: count, timeout: .seconds(10))
            #expect(entries.compactMap { $0["SEQ"] }.sorted() == (0..<count).map(String.init).sorted(), "\(second.log)")
            #expect(entries.allSatisfy { $0["_PID"] == String(second.pid) && $0["SYSLOG_IDENTIFIER"] == "daemon-outbox" })
            #expect(try await Self.outboxEmptied(second) == 0, "\(second.log)")
            // Written in the order they were accepted, and none twice, also after a while.
            try await Task.sleep(for: .milliseconds(500))
            let again = try PrivateJournal.read(matching: ["\(PrivateJournal.runField)=\(run)"])
            #expect(again.compactMap { $0["SEQ"] } == (0..<count).map(String.init), "\(again.compactMap { $0["SEQ"] })")
            #expect(second.log.contains("delivered what the last daemon left"), "\(second.log)")

            // A third daemon finds nothing left to deliver.
            second.signal(SIGTERM)
            _ = second.waitForExit(timeLimit: .seconds(5))
            let third = try DaemonProcess.start(config: config, socket: first.socketPath, runtime: first.runtimeDirectory)
            defer { third.stop() }
            #expect(try await Self.outbox(third) == 0)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try PrivateJournal.read(matching: ["\(PrivateJournal.runField)=\(run)"]).count == count)
        }
    }

    /// Records queued while journald was briefly stopped and written once it read again are
    /// gone from the outbox: a restart writes none of them a second time.
    @Test func recordsJournaldTookAreNotWrittenAgain() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let config = try Self.config()
            let first = try DaemonProcess.start(config: config)
            defer { first.stop() }
            let run = PrivateJournal.newRunID()
            try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                for sequence in 0..<5 {
                    _ = try await DaemonTests.run(["send", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "SEQ=\(sequence)", "record \(sequence)"], first)
                }
                #expect(try await Self.outbox(first) == 5)
            }
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 5, timeout: .seconds(10))
            #expect(entries.count == 5)
            #expect(try await Self.outboxEmptied(first) == 0, "the rows go once journald has taken the records")
            first.signal(SIGKILL)
            _ = first.waitForExit(timeLimit: .seconds(5))
            let second = try DaemonProcess.start(config: config, socket: first.socketPath, runtime: first.runtimeDirectory)
            defer { second.stop() }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try PrivateJournal.read(matching: ["\(PrivateJournal.runField)=\(run)"]).count == 5)
            #expect(!second.log.contains("delivering what the last daemon accepted"), "\(second.log)")
        }
    }
}
