import Foundation
import NotifyRouteTestSupport
import Testing

/// The catalogued record of a failing sink (MESSAGE_ID 78de28de…, config/journal), written
/// by notify-route's own commands and by `serve` into the private journald of
/// Tests/with-components.sh: once per sink and window, not once per event.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct FailureRecordTests {
    static let sinkFailed = "78de28deb8fb46b9a1e9c93e587ce04d"

    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    /// A config whose sink `name` always fails (an exec sink running `false`), beside a
    /// terminal unless `alone` (through a daemon, a client with no terminal would draw the
    /// terminal's line itself, routing the event here).
    static func config(failing name: String, alone: Bool = false) throws -> URL {
        let url = try TestEnvironment.temporaryDirectory("failure-record").appendingPathComponent("config.yaml")
        try """
            sinks:
              \(name): { kind: exec, command: [/bin/false] }
              tty: { kind: terminal }
            routes:
              - to: [\(name)\(alone ? "" : ", tty")]
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// A runtime directory of its own: the window's stamps live there, and no daemon listens.
    static func runtime() throws -> [String: String] {
        let directory = try TestEnvironment.temporaryDirectory("failure-runtime")
        chmod(directory.path, 0o700)
        return ["XDG_RUNTIME_DIR": directory.path, "NOTIFY_ROUTE_SOCKET": directory.appendingPathComponent("no-daemon").path]
    }

    static func records(of sink: String, count: Int) async throws -> [PrivateJournal.Entry] {
        try await PrivateJournal.entries(
            matching: ["MESSAGE_ID=\(sinkFailed)", "NOTIFY_ROUTE_FAILED_SINK=\(sink)"], count: count, timeout: .seconds(2))
    }

    static func send(_ title: String, config: URL, environment: [String: String]) async throws -> String {
        let result = try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(["send", "--json", "--config", config.path, title], environment: environment)
        }
        return result.standardOutput
    }

    @Test func threeFailingSendsLeaveOneRecordUntilTheWindowStartsAgain() async throws {
        try await PrivateJournal.withAccess {
            let sink = "broken-\(PrivateJournal.newRunID().prefix(12))"
            let config = try Self.config(failing: sink)
            let environment = try Self.runtime()
            for title in ["first", "second", "third"] {
                let report = try await Self.send(title, config: config, environment: environment)
                #expect(report.contains(#""sink":"\#(sink)","status":"failed""#), "\(report)")
            }
            var records = try await Self.records(of: sink, count: 2)
            #expect(records.count == 1, "\(records.map { $0["NOTIFY_ROUTE_EVENT_TITLE"] ?? "" })")
            let record = try #require(records.first)
            #expect(record["NOTIFY_ROUTE_EVENT_TITLE"] == "first")
            #expect(record["NOTIFY_ROUTE_FAILED_KIND"] == "exec")
            #expect(record["NOTIFY_ROUTE_FAILURE"] == "failed")
            #expect(record["PRIORITY"] == "3")
            #expect(record["SYSLOG_IDENTIFIER"] == "notify-route")

            // Another user's session (another runtime directory) has a window of its own.
            _ = try await Self.send("elsewhere", config: config, environment: try Self.runtime())
            records = try await Self.records(of: sink, count: 3)
            #expect(records.map { $0["NOTIFY_ROUTE_EVENT_TITLE"] ?? "" }.sorted() == ["elsewhere", "first"])
        }
    }

    @Test func theDaemonRecordsAFailingSinkOnce() async throws {
        try await PrivateJournal.withAccess {
            let sink = "broken-\(PrivateJournal.newRunID().prefix(12))"
            let daemon = try DaemonProcess.start(config: try Self.config(failing: sink, alone: true))
            defer { daemon.stop() }
            for title in ["one", "two", "three"] {
                let report = try await Self.send(title, config: URL(fileURLWithPath: daemon.environment["NOTIFY_ROUTE_CONFIG"] ?? ""), environment: daemon.environment)
                #expect(report.contains(#""via":"daemon""#) && report.contains(#""sink":"\#(sink)","status":"failed""#), "\(report)")
            }
            let records = try await Self.records(of: sink, count: 2)
            #expect(records.map { $0["NOTIFY_ROUTE_EVENT_TITLE"] ?? "" } == ["one"])
            #expect(records.first?["_PID"] == String(daemon.pid))
        }
    }
}
