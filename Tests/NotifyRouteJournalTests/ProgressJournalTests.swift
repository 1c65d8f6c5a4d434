import Foundation
import NotifyRoute
import NotifyRouteJournal
import NotifyRouteTestSupport
import Testing

/// `NOTIFY_ROUTE_PROGRESS`: in the record's format, and written by the real CLI to the
/// private journald of Tests/with-components.sh, directly and through `notify-route serve`.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct ProgressJournalTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    @Test func theRecordCarriesTheProgressAndItsDefaultDedupKeyDiffers() {
        func record(_ progress: Int?) -> JournalRecord {
            JournalEventFormat.record(for: SinkDelivery(event: ResolvedEvent(title: "Copying", progress: progress), sinkName: "journal")).record
        }
        #expect(record(40).fields.first { $0.name == "NOTIFY_ROUTE_PROGRESS" }?.text == "40")
        #expect(!record(nil).fields.contains { $0.name == "NOTIFY_ROUTE_PROGRESS" })
        let keys = [record(40), record(41), record(nil)].map { record in
            record.fields.first { $0.name == "NOTIFY_ROUTE_DEDUP_KEY" }?.text ?? ""
        }
        #expect(keys.allSatisfy { $0.hasPrefix("default:") }, "the default key, hashed: \(keys)")
        #expect(Set(keys).count == 3)
    }

    @Test func sendWritesTheProgressField() async throws {
        try await PrivateJournal.withAccess {
            let directory = try TestEnvironment.temporaryDirectory("progress-journal")
            let config = directory.appendingPathComponent("config.yaml")
            try "sinks:\n  journal: { kind: journal, deadline: 1s, identifier: progress-test }\nfallback: [journal]\n"
                .write(to: config, atomically: true, encoding: .utf8)
            let run = PrivateJournal.newRunID()
            let direct = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["send", "--no-daemon", "--config", config.path, "--progress", "42", "-r", "copy",
                     "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=client", "Copying"],
                    environment: ["XDG_RUNTIME_DIR": directory.path])
            }
            #expect(direct.status == 0, "\(direct.standardError)")

            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let environment = daemon.environment
            let handed = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["send", "--json", "--progress", "43", "-r", "copy", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=daemon", "Copying"],
                    environment: environment)
            }
            #expect(handed.status == 0, "\(handed.standardError)")
            #expect(handed.standardOutput.contains("daemon"), "handed to the daemon: \(handed.standardOutput)")

            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            let byClient = try #require(entries.first { $0["WHO"] == "client" })
            let byDaemon = try #require(entries.first { $0["WHO"] == "daemon" })
            #expect(byClient["NOTIFY_ROUTE_PROGRESS"] == "42")
            #expect(byDaemon["NOTIFY_ROUTE_PROGRESS"] == "43")
            #expect(byDaemon["_PID"] == String(daemon.pid), "the daemon wrote it")
            #expect(byClient["MESSAGE"] == "Copying")
        }
    }
}
