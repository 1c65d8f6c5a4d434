import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route notify-send` and a `notify-send` link to the binary, held to libnotify's own
/// `notify-send`: the same argument lists against python-dbusmock on a private bus, the
/// Notify calls compared field by field.
@Suite(
    "notify-send compatibility", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct NotifySendCompatibilityTests {
    static let desktopOnly = """
        sinks:
          desktop: { kind: desktop, deadline: 2s }
        routes:
          - match: {}
            to: [desktop]
        """

    static let argumentLists: [[String]] = [
        ["-u", "critical", "-t", "5000", "-h", "int:value:50", "-a", "backup", "-i", "drive-harddisk",
         "-c", "device.error,device", "-e", "Disk 92% full", "on /home\\nand /var"],
        ["-pu", "low", "--expire-time=0", "--app-name", "mailer", "-h", "string:desktop-entry:org.example.Mail",
         "-h", "boolean:suppress-sound:true", "-h", "byte:x-level:7", "-h", "int:x:10", "New mail"],
        ["--urgency=normal", "-t", "-1", "--hint=string:x-canonical-private-synchronous:volume", "-ep", "--", "-5 degrees"],
        ["Plain summary only"],
    ]

    @Test(arguments: argumentLists)
    func notifyCallsMatchLibnotifysNotifySend(_ arguments: [String]) throws {
        let theirs = try notifyCall(of: URL(fileURLWithPath: "/usr/bin/notify-send"), arguments)
        let ours = try notifyCall(of: TestEnvironment.notifyRouteBinary, ["notify-send"] + arguments)
        let linked = try notifyCall(of: nil, arguments)
        for call in [ours, linked] {
            #expect(call.appName == theirs.appName)
            #expect(call.appIcon == theirs.appIcon)
            #expect(call.summary == theirs.summary)
            #expect(call.body == theirs.body)
            #expect(call.actions == theirs.actions)
            #expect(call.expireTimeout == theirs.expireTimeout)
            #expect(call.replacesID == theirs.replacesID)
            #expect(hints(call) == hints(theirs), "ours: \(hints(call))\nlibnotify's: \(hints(theirs))")
        }
    }

    @Test func printIDThenReplaceThatID() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(daemon: daemon)
        defer { session.remove() }
        let first = try session.run(["-p", "-t", "0", "Copying 10%"])
        #expect(first.status == 0, "\(first.standardError)")
        let id = try #require(UInt32(first.standardOutput.trimmingCharacters(in: .newlines)), "printed: \(first.standardOutput)")
        let second = try session.run(["-p", "-r", String(id), "-t", "0", "Copying 90%"])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.standardOutput == "\(id)\n")
        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.summary) == ["Copying 10%", "Copying 90%"])
        #expect(calls.map(\.replacesID) == [0, id], "the second replaced the id the first printed")
    }

    @Test func actionsPrintTheChosenName() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(daemon: daemon)
        defer { session.remove() }
        let running = Task.detached { try session.run(["-A", "yes=Yes", "-A", "No", "Deploy?"]) }
        var id: UInt32?
        for _ in 0..<100 where id == nil {
            if let call = try daemon.notifyCalls().first {
                #expect(call.actions == ["yes", "Yes", "1", "No"], "named, then numbered by position as notify-send does")
                id = 1
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        try daemon.emitActionInvoked(id: try #require(id), action: "1")
        let result = try await running.value
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "1\n")
    }

    @Test func unsupportedOrMistypedOptionsSayWhatAndSendNothing() throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(daemon: daemon)
        defer { session.remove() }
        let cases: [([String], String)] = [
            (["-h", "double:x-ratio:0.5", "Title"], "double hints are not supported"),
            (["-h", "int:value", "Title"], "Use TYPE:NAME:VALUE"),
            (["-u", "urgent", "Title"], "Known urgency levels: low, normal, critical"),
            (["-t", "5s", "Title"], "Cannot parse integer value"),
            (["--id-fd", "3", "Title"], "--id-fd is not supported"),
            (["-x", "Title"], "Unknown option -x"),
            (["-ut", "low", "5", "Title"], "Error parsing option -t"),
            (["One", "Two", "Three"], "Invalid number of options"),
            (["-u", "low"], "No summary specified."),
        ]
        for (arguments, message) in cases {
            let result = try session.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains(message), "\(arguments): \(result.standardError)")
        }
        #expect(try daemon.notifyCalls().isEmpty)
        let help = try session.run(["-?"])
        #expect(help.status == 0 && help.standardOutput.contains("-h, --hint=TYPE:NAME:VALUE"))
    }

    /// The hints both send, but `sender-pid` (each process's own).
    private func hints(_ call: DBusMockDaemon.NotifyCall) -> [String: String] {
        call.hints.filter { $0.key != "sender-pid" }.mapValues { "\($0.type):\($0.text ?? "?")" }
    }

    /// The one Notify call `executable` (nil: a `notify-send` link to ours) made on a fresh daemon.
    private func notifyCall(of executable: URL?, _ arguments: [String]) throws -> DBusMockDaemon.NotifyCall {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let session = try Session(daemon: daemon)
        defer { session.remove() }
        let result = try executable.map { try ProcessRunner.run($0, arguments, environment: session.environment, timeLimit: .seconds(15)) }
            ?? session.run(arguments)
        #expect(result.status == 0, "\(executable?.path ?? "notify-send link") \(arguments): \(result.standardError)")
        let calls = try daemon.notifyCalls()
        #expect(calls.count == 1)
        return try #require(calls.first)
    }

    /// A desktop-only config and a `notify-send` link to the binary under test, in a temporary directory.
    struct Session {
        var directory: URL
        var environment: [String: String]

        init(daemon: DBusMockDaemon) throws {
            directory = try TestEnvironment.temporaryDirectory("notify-send-compat")
            let config = directory.appendingPathComponent("config.yaml")
            try NotifySendCompatibilityTests.desktopOnly.write(to: config, atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(
                at: directory.appendingPathComponent("notify-send"), withDestinationURL: TestEnvironment.notifyRouteBinary)
            let runtime = directory.appendingPathComponent("runtime")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            environment = daemon.environment.merging(
                ["NOTIFY_ROUTE_CONFIG": config.path, "XDG_RUNTIME_DIR": runtime.path]) { _, new in new }
        }

        /// The `notify-send` link with `arguments`.
        func run(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run(directory.appendingPathComponent("notify-send"), arguments, environment: environment, timeLimit: .seconds(15))
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }
}
