import Foundation
import NotifyRouteTestSupport
import Testing

/// Issue 8, the fault suite: the built `notify-route` with three sinks at once (desktop
/// over a private session bus and python-dbusmock, journal against the private journald
/// of Tests/with-components.sh, terminal), and one component broken per test: the
/// notification daemon absent, hung and killed mid-run, the session bus absent, journald
/// absent, hung and restarted, the terminal gone (SIGHUP, EPIPE on stderr), the state
/// directory read-only and full.
///
/// In every case the CLI returns within its deadline with the documented exit code, the
/// sinks that work still deliver, the route's failover sink gets the event, and the
/// `--json` report accounts for every sink: delivered, queued, or failed / unavailable
/// with a reason. Faults that need root (a stopped journald, read-only or full mounts)
/// happen in a nested `unshare -m` of their own, so no other test sees them.
@Suite(
    "fault suite", .serialized,
    .enabled(if: TestEnvironment.componentsRequired || (PrivateJournal.isAvailable && DBusMockDaemon.missingComponents == nil),
             "needs Tests/with-components.sh (private journald, dbus-daemon, python3-dbusmock, tmux)"))
struct FaultSuiteTests {
    /// Desktop and journal for every event; the terminal stands in for either when it fails.
    static let threeSinks = """
        sinks:
          desktop: { kind: desktop, deadline: 1s }
          journal: { kind: journal, deadline: 500ms, identifier: fault-suite }
          tty: { kind: terminal }
        routes:
          - match: {}
            to: [desktop, journal]
            failover: [tty]
        """

    /// How long a call may take: the slowest sink deadline (1 s) plus process start-up on a
    /// loaded two-core machine. libnotify alone would take 25 s on a hung daemon.
    static let returnBudget: Duration = .milliseconds(2500)

    let directory: URL
    let run = PrivateJournal.newRunID()

    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
        try #require(DBusMockDaemon.missingComponents == nil, "\(DBusMockDaemon.missingComponents ?? "")")
        directory = try TestEnvironment.temporaryDirectory("notify-route-faults")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("runtime"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func config(_ yaml: String = Self.threeSinks) throws -> String {
        let url = directory.appendingPathComponent("config-\(UUID().uuidString.prefix(8)).yaml")
        try yaml.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    var environment: [String: String] {
        ["NO_COLOR": "1", "XDG_RUNTIME_DIR": directory.appendingPathComponent("runtime").path]
    }

    /// `send --json` with this test's run field, so its journal record can be found again.
    func sendArguments(_ config: String, _ title: String, _ extra: [String] = []) -> [String] {
        ["send", "--config", config, "--json", "-f", "\(PrivateJournal.runField)=\(run)"] + extra + [title]
    }

    func notifyRoute(_ arguments: [String], environment extra: [String: String] = [:], timeLimit: Duration = .seconds(30)) async throws -> ProcessResult {
        let environment = self.environment.merging(extra) { _, new in new }
        return try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(arguments, environment: environment, timeLimit: timeLimit)
        }
    }

    func journalRecords(_ count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [PrivateJournal.Entry] {
        try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: count, timeout: timeout)
    }

    // MARK: The account of every event

    /// Parses a `--json` report and checks that it accounts for every sink the event went to:
    /// each entry delivered, replaced, queued (with a reason), suppressed (with a reason),
    /// failed (with the error) or unavailable (with the reason). Returns the entries by sink.
    @discardableResult
    static func account(_ text: some StringProtocol, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: [String: Any]] {
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a report: \(text)", sourceLocation: sourceLocation)
        let sinks = try #require(report["sinks"] as? [[String: Any]], sourceLocation: sourceLocation)
        #expect(!sinks.isEmpty, "an event that went nowhere: \(text)", sourceLocation: sourceLocation)
        var bySink: [String: [String: Any]] = [:]
        for entry in sinks {
            let name = entry["sink"] as? String ?? "?"
            let status = entry["status"] as? String ?? "?"
            switch status {
            case "delivered", "replaced": break
            case "queued", "unavailable", "suppressed":
                #expect((entry["reason"] as? String)?.isEmpty == false, "\(name) \(status) without a reason", sourceLocation: sourceLocation)
            case "failed":
                #expect((entry["error"] as? String)?.isEmpty == false, "\(name) failed without an error", sourceLocation: sourceLocation)
                #expect(entry["reason"] as? String != nil, sourceLocation: sourceLocation)
            default:
                Issue.record("\(name): status \(status) is not an account of the event", sourceLocation: sourceLocation)
            }
            bySink[name] = entry
        }
        // Never "failed" while a sink delivered; never "delivered" when none did.
        let delivered = sinks.contains { ["delivered", "replaced", "queued"].contains($0["status"] as? String ?? "") }
        #expect((report["summary"] as? String == "delivered") == delivered, "\(text)", sourceLocation: sourceLocation)
        return bySink
    }

    static func status(_ entry: [String: Any]?) -> String? { entry?["status"] as? String }

    static func text(_ entry: [String: Any]?) -> String {
        [entry?["reason"], entry?["error"]].compactMap { $0 as? String }.joined(separator: " / ")
    }

    static func ms(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    // MARK: Notification daemon

    @Test func notificationDaemonAbsent() async throws {
        try await PrivateJournal.withAccess {
            let bus = try DBusMockDaemon.start(withDaemon: false)
            defer { bus.shutdown() }
            let result = try await notifyRoute(sendArguments(try config(), "daemon absent"), environment: bus.environment)
            print("fault: notification daemon absent: exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "journal and failover delivered: \(result.standardError)")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["desktop"]) == "unavailable")
            #expect(Self.text(sinks["desktop"]).contains("no notification daemon"))
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(sinks["tty"]?["failover_for"] as? String == "desktop")
            #expect(result.standardError.contains("[info] daemon absent"))
            #expect(try await journalRecords().first?["MESSAGE"] == "daemon absent")
        }
    }

    @Test func notificationDaemonHung() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DBusMockDaemon.start()
            defer { daemon.shutdown() }
            daemon.freezeDaemon()
            let result = try await notifyRoute(sendArguments(try config(), "daemon hung"), environment: daemon.environment)
            print("fault: notification daemon hung (SIGSTOP): exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget, "libnotify's 25 s must never reach the caller")
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["desktop"]) == "failed")
            #expect(Self.text(sinks["desktop"]).contains("may be hung"))
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(sinks["tty"]?["failover_for"] as? String == "desktop")
            #expect(try await journalRecords().first?["MESSAGE"] == "daemon hung")
        }
    }

    /// A long-lived `ingest`: the daemon answers the first event, then is killed (or stopped)
    /// between two events. Later events go to the journal and the failover; the process
    /// does not wait on the dead or stuck daemon, and every line has its report.
    @Test(arguments: ["KILL", "STOP"])
    func notificationDaemonLostMidRun(signal: String) async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DBusMockDaemon.start()
            defer { daemon.shutdown() }
            let pid = try #require(daemon.daemonPID)
            let line = { (title: String) in #"{"title":"\#(title)","fields":{"\#(PrivateJournal.runField)":"\#(run)"}}"# }
            let script = """
                { echo '\(line("first"))'; sleep 1; kill -\(signal) \(pid); sleep 0.3
                  echo '\(line("second"))'; echo '\(line("third"))'; } | "$0" ingest --config "$1" --json
                """
            let config = try config()
            let environment = self.environment.merging(daemon.environment) { _, new in new }
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, config],
                                      environment: environment, timeLimit: .seconds(30))
            }
            print("fault: notification daemon SIG\(signal) mid-run: ingest of 3 events exit \(result.status) after \(Self.ms(result.duration)) ms (1.3 s of it the producer's sleeps)")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < .milliseconds(1300) + Self.returnBudget + .seconds(1))
            let reports = try result.standardOutput.split(separator: "\n").map { try Self.account($0) }
            try #require(reports.count == 3, "one report per event: \(result.standardOutput)")
            #expect(Self.status(reports[0]["desktop"]) == "delivered")
            #expect(reports[0]["tty"] == nil, "no failover while the desktop works")
            for report in reports.dropFirst() {
                #expect(["failed", "unavailable"].contains(Self.status(report["desktop"])), "\(report)")
                #expect(Self.status(report["journal"]) == "delivered")
                #expect(Self.status(report["tty"]) == "delivered")
            }
            if signal == "STOP" {
                kill(pid, SIGCONT)
                #expect(try daemon.notifyCalls().map(\.summary).first == "first")
            }
            #expect(try await journalRecords(3).map { $0["MESSAGE"] } == ["first", "second", "third"])
            #expect(result.standardError.contains("[info] second\n[info] third\n"))
        }
    }

    @Test(arguments: ["unset", "missing socket"])
    func sessionBusAbsent(how: String) async throws {
        try await PrivateJournal.withAccess {
            let config = try config()
            var arguments = sendArguments(config, "no bus")
            var environment: [String: String] = [:]
            if how == "unset" {
                // No address, and an $XDG_RUNTIME_DIR without a `bus` socket; DISPLAY unset, so no autolaunch.
                arguments = ["-u", "DBUS_SESSION_BUS_ADDRESS", "-u", "DISPLAY", TestEnvironment.notifyRouteBinary.path] + arguments
            } else {
                environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory.path)/no-such-bus"
            }
            let env = self.environment.merging(environment) { _, new in new }
            let finalArguments = arguments
            let result = try await PrivateJournal.offPool {
                how == "unset"
                    ? try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), finalArguments, environment: env)
                    : try ProcessRunner.notifyRoute(finalArguments, environment: env)
            }
            print("fault: session bus absent (\(how)): exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["desktop"]) == "unavailable")
            #expect(Self.text(sinks["desktop"]).contains("no session bus"), "\(Self.text(sinks["desktop"]))")
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(try await journalRecords().first?["MESSAGE"] == "no bus")
        }
    }

    // MARK: journald

    @Test func journaldAbsent() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DBusMockDaemon.start()
            defer { daemon.shutdown() }
            let result = try await PrivateJournal.run(
                TestEnvironment.notifyRouteBinary, sendArguments(try config(), "no journald"), socket: .absent,
                environment: environment.merging(daemon.environment) { _, new in new })
            print("fault: journald absent: exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["journal"]) == "unavailable")
            #expect(Self.text(sinks["journal"]).contains("socket is absent") || Self.text(sinks["journal"]).contains("is absent"))
            #expect(Self.status(sinks["desktop"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(sinks["tty"]?["failover_for"] as? String == "journal")
            #expect(try daemon.notifyCalls().map(\.summary) == ["no journald"])
        }
    }

    @Test func journaldHung() async throws {
        try await PrivateJournal.withAccess(exclusive: true) {
            let daemon = try DBusMockDaemon.start()
            defer { daemon.shutdown() }
            let config = try config()
            let result = try await PrivateJournal.whileStopped {
                try PrivateJournal.fillSocketQueue(run: run)
                return try await notifyRoute(sendArguments(config, "journald hung"), environment: daemon.environment)
            }
            print("fault: journald hung (SIGSTOP, socket queue full): exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["journal"]) == "failed")
            #expect(sinks["journal"]?["reason"] as? String == "timed-out")
            #expect(sinks["journal"]?["retryable"] as? Bool == true)
            #expect(Self.status(sinks["desktop"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(try daemon.notifyCalls().map(\.summary) == ["journald hung"])
        }
    }

    /// journald stopped and started again while a long-lived `ingest` runs, in a nested mount
    /// namespace with a journald of the test's own: the events sent while it is down are
    /// accounted for (unavailable or failed, and delivered by the failover), and the sink
    /// writes to the new journald as soon as it is up, without restarting notify-route.
    @Test func journaldRestarted() async throws {
        let line = { (title: String) in #"{"title":"\#(title)","fields":{"\#(PrivateJournal.runField)":"\#(run)"}}"# }
        let script = """
            set -eu
            B=$1; C=$2; D=$3
            for d in /run/systemd/journal /run/log/journal /var/log/journal; do mkdir -p "$d"; mount -t tmpfs tmpfs "$d"; done
            start() {
              /lib/systemd/systemd-journald >/dev/null 2>&1 & echo $! > "$D/journald.pid"
              # Until something is bound: the old journald leaves its socket file behind.
              for _ in $(seq 100); do
                /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).connect("/run/systemd/journal/socket")' 2>/dev/null && return 0
                sleep 0.05
              done
              echo "journald did not start" >&2; exit 1
            }
            start
            {
              echo '\(line("before"))'; sleep 0.5
              kill "$(cat "$D/journald.pid")"; while kill -0 "$(cat "$D/journald.pid")" 2>/dev/null; do sleep 0.02; done
              echo '\(line("while down"))'; sleep 0.5
              start
              echo '\(line("after restart"))'; sleep 0.2
            } | "$B" ingest --config "$C" --json > "$D/reports" 2> "$D/stderr" || echo "ingest exited $?" >> "$D/stderr"
            for _ in $(seq 50); do
              [ "$(journalctl --no-pager -o cat \(PrivateJournal.runField)=\(run) | wc -l)" -ge 2 ] && break; sleep 0.05
            done
            journalctl --no-pager -o cat \(PrivateJournal.runField)=\(run) > "$D/journal"
            kill "$(cat "$D/journald.pid")"
            """
        let config = try config("""
            sinks:
              journal: { kind: journal, deadline: 500ms }
              tty: { kind: terminal }
            routes:
              - { match: {}, to: [journal], failover: [tty] }
            """)
        let directory = self.directory, environment = self.environment
        let result = try await PrivateJournal.offPool {
            try ProcessRunner.run(
                URL(fileURLWithPath: "/usr/bin/unshare"),
                ["-m", "--propagation", "private", "/bin/bash", "-c", script, "bash", TestEnvironment.notifyRouteBinary.path, config, directory.path],
                environment: environment, timeLimit: .seconds(60))
        }
        func file(_ name: String) -> String {
            (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
        print("fault: journald restarted under a running ingest: \(Self.ms(result.duration)) ms in all; \(file("stderr"))")
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!file("stderr").contains("ingest exited"), "\(file("stderr"))")
        let reports = try file("reports").split(separator: "\n").map { try Self.account($0) }
        try #require(reports.count == 3, "\(file("reports"))")
        #expect(Self.status(reports[0]["journal"]) == "delivered")
        #expect(["unavailable", "failed"].contains(Self.status(reports[1]["journal"])), "\(reports[1])")
        #expect(Self.status(reports[1]["tty"]) == "delivered", "the failover took the event while journald was down")
        #expect(Self.status(reports[2]["journal"]) == "delivered", "written to the new journald: \(reports[2])")
        #expect(file("journal") == "before\nafter restart\n")
    }

    // MARK: The terminal

    /// Alive and not a zombie: the test's `sh` dies of the same hang-up, so the dead
    /// process waits to be reaped by PID 1, which may take a second or more.
    static func isRunning(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: end)...].split(separator: " ").first != "Z"
    }

    /// The terminal goes away under a sticky banner: tmux is killed, the process gets SIGHUP.
    /// It dies of it promptly (as documented: exit status 129), after the journal and the
    /// desktop had the event and the report was printed.
    @Test func terminalHangsUp() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        try await PrivateJournal.withAccess {
            let config = try config("""
                sinks:
                  banner: { kind: terminal, style: banner }
                  journal: { kind: journal, deadline: 500ms }
                  desktop: { kind: desktop, deadline: 1s }
                routes:
                  - { match: {}, to: [banner, journal, desktop] }
                """)
            let d = directory.path
            let arguments = sendArguments(config, "terminal gone", ["-t", "never", "-l", "warning"]).map { "'\($0)'" }.joined(separator: " ")
            let session = try TmuxSession(
                command: "sh -c \"'\(TestEnvironment.notifyRouteBinary.path)' \(arguments) > '\(d)/report' & echo \\$! > '\(d)/pid'; wait\"",
                environment: ["TERM": "xterm", "XDG_RUNTIME_DIR": environment["XDG_RUNTIME_DIR"]!,
                              "DBUS_SESSION_BUS_ADDRESS": daemon.busAddress, "XDG_CONFIG_HOME": "/nonexistent-notify-route-test"])
            _ = try session.waitForScreen { $0.contains("terminal gone") }
            let pid = try #require(pid_t((try? String(contentsOfFile: "\(d)/pid", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""))
            // The hang-up comes once every sink has answered: the banner may show before the others have.
            let printed = ContinuousClock.now
            while (try? String(contentsOfFile: "\(d)/report", encoding: .utf8))?.hasSuffix("\n") != true && ContinuousClock.now - printed < .seconds(10) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let killed = ContinuousClock.now
            _ = try? session.command(["kill-server"])
            while Self.isRunning(pid) && ContinuousClock.now - killed < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
            let gone = ContinuousClock.now - killed
            print("fault: terminal hung up under a sticky banner: the process was gone \(Self.ms(gone)) ms after SIGHUP")
            #expect(!Self.isRunning(pid), "still running after the terminal went away")
            #expect(gone < .seconds(2))
            let sinks = try Self.account(try String(contentsOfFile: "\(d)/report", encoding: .utf8))
            #expect(Self.status(sinks["banner"]) == "delivered")
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["desktop"]) == "delivered")
            #expect(try await journalRecords().first?["MESSAGE"] == "terminal gone")
        }
    }

    /// stderr is a pipe nobody reads (the reader closed it before the first write): the
    /// terminal sink fails with EPIPE instead of killing the process by SIGPIPE, the other
    /// sinks deliver, and the report on stdout says so.
    @Test func stderrIsAClosedPipe() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DBusMockDaemon.start()
            defer { daemon.shutdown() }
            let config = try config("""
                sinks:
                  tty: { kind: terminal, output: stderr }
                  journal: { kind: journal, deadline: 500ms }
                  desktop: { kind: desktop, deadline: 1s }
                routes:
                  - { match: {}, to: [tty, journal, desktop] }
                """)
            let closedStderr = "import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 2); os.execv(sys.argv[1], sys.argv[1:])"
            let arguments = ["-c", closedStderr, TestEnvironment.notifyRouteBinary.path] + sendArguments(config, "epipe")
            let environment = self.environment.merging(daemon.environment) { _, new in new }
            let result = try await PrivateJournal.offPool {
                try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), arguments, environment: environment)
            }
            print("fault: EPIPE on stderr: exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "journal and desktop delivered")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["tty"]) == "failed")
            #expect(Self.text(sinks["tty"]).contains("EPIPE"), "\(Self.text(sinks["tty"]))")
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["desktop"]) == "delivered")
            #expect(try await journalRecords().first?["MESSAGE"] == "epipe")
        }
    }

    // MARK: The state directory

    /// Runs `notify-route send --json` in a nested mount namespace where `$XDG_RUNTIME_DIR`
    /// is a tmpfs prepared by `prepare` (a shell snippet, `$R` the runtime directory).
    func sendWithRuntime(_ prepare: String, title: String, config: String, extra: [String: String] = [:]) async throws -> ProcessResult {
        let runtime = directory.appendingPathComponent("mnt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let script = "set -e; R=$1; shift; \(prepare); exec \"$@\""
        let arguments = ["-m", "--propagation", "private", "/bin/sh", "-c", script, "sh", runtime.path,
                         TestEnvironment.notifyRouteBinary.path] + sendArguments(config, title)
        var environment = self.environment.merging(extra) { _, new in new }
        environment["XDG_RUNTIME_DIR"] = runtime.path
        let finalEnvironment = environment
        return try await PrivateJournal.offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/unshare"), arguments, environment: finalEnvironment)
        }
    }

    static let journalAndTerminal = """
        sinks:
          journal: { kind: journal, deadline: 500ms }
          tty: { kind: terminal }
        routes:
          - { match: {}, to: [journal, tty], dedup: { window: 1h } }
        """

    /// Read-only, both when the state directory does not exist yet (it cannot be made) and
    /// when it exists (its lock cannot be opened). chmod would not stop root: the tmpfs is
    /// remounted read-only.
    @Test(arguments: ["cannot create", "cannot write"])
    func stateDirectoryReadOnly(how: String) async throws {
        try await PrivateJournal.withAccess {
            let prepare = how == "cannot create"
                ? "mount -t tmpfs -o size=64k,mode=0700 tmpfs \"$R\"; mount -o remount,ro \"$R\""
                : "mount -t tmpfs -o size=64k,mode=0700 tmpfs \"$R\"; mkdir -m 700 \"$R/notify-route\"; mount -o remount,ro \"$R\""
            let result = try await sendWithRuntime(prepare, title: "read-only \(how)", config: try config(Self.journalAndTerminal))
            print("fault: state directory read-only (\(how)): exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget)
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            #expect(result.standardError.contains("[info] read-only \(how)"))
            // Said once, on stderr or in the report: dedup holds within this call only.
            let said = result.standardError + result.standardOutput
            #expect(said.contains("Read-only file system"), "\(said)")
            #expect(try await journalRecords().first?["MESSAGE"] == "read-only \(how)")
        }
    }

    /// A full tmpfs (filled up after a first call wrote its state): the send still
    /// delivers, says why dedup is skipped, and the earlier state is left whole.
    @Test func stateDirectoryFull() async throws {
        try await PrivateJournal.withAccess {
            let config = try config(Self.journalAndTerminal)
            let saved = directory.appendingPathComponent("saved-state").path
            let prepare = """
                mount -t tmpfs -o size=256k,mode=0700 tmpfs "$R"
                "$1" send --config "\(config)" "first" 2>/dev/null
                dd if=/dev/zero of="$R/filler" bs=1k 2>/dev/null || true
                # immutable: the database file as it is, read without the -shm a full disk has no room for
                sqlite3 "file:$R/notify-route/state.db?immutable=1" 'SELECT key, count FROM dedup' >"\(saved).before"
                trap 'sqlite3 "file:$R/notify-route/state.db?immutable=1" "SELECT key, count FROM dedup" >"\(saved).after"' EXIT
                "$@"
                """
            // `exec` is replaced by running the command, so the trap can copy the state afterwards.
            let result = try await sendWithRuntime(prepare + "; exit $?", title: "disk full", config: config)
            print("fault: state directory full: exit \(result.status) after \(Self.ms(result.duration)) ms")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.duration < Self.returnBudget * 2, "two sends")
            let sinks = try Self.account(result.standardOutput)
            #expect(Self.status(sinks["journal"]) == "delivered")
            #expect(Self.status(sinks["tty"]) == "delivered")
            let notes = "\(sinks["tty"]?["notes"] ?? "") \(result.standardError)"
            #expect(notes.contains("No space left on device"), "\(notes)")
            let before = try Data(contentsOf: URL(fileURLWithPath: saved + ".before"))
            let after = try Data(contentsOf: URL(fileURLWithPath: saved + ".after"))
            #expect(before == after, "the earlier state is left whole")
            #expect(String(decoding: after, as: UTF8.self).hasSuffix("\u{1F}first\u{1F}|1\n"), "\(String(decoding: after, as: UTF8.self))")
            #expect(try await journalRecords().first?["MESSAGE"] == "disk full")
        }
    }

    // MARK: notify-route itself killed

    /// `run` killed by a signal it cannot forward (SIGKILL): the command dies with it
    /// (PR_SET_PDEATHSIG) instead of running on as an orphan nobody reports on.
    @Test func aRunKilledWithSIGKILLLeavesNoOrphan() async throws {
        let config = try config("sinks: { tty: { kind: terminal } }\nfallback: [tty]\n")
        let pidFile = directory.appendingPathComponent("child.pid").path
        let script = """
            "$0" run --config "$1" -- /bin/sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$2" &
            run=$!
            for _ in $(seq 600); do [ -s "$2" ] && break; sleep 0.05; done
            child=$(cat "$2")
            kill -KILL $run; wait $run 2>/dev/null
            killed=$(date +%s%N)
            # Gone, or a zombie waiting for whoever adopted it: either way no longer running.
            for _ in $(seq 100); do
              state=$(awk '{print $3}' /proc/$child/stat 2>/dev/null || true)
              if [ -z "$state" ] || [ "$state" = Z ]; then echo "gone after $(( ($(date +%s%N) - killed) / 1000000 )) ms"; exit 0; fi
              sleep 0.02
            done
            echo "the command (pid $child) outlived run by 2 s" >&2; kill -KILL $child; exit 1
            """
        let environment = self.environment
        let result = try await PrivateJournal.offPool {
            try ProcessRunner.run(
                URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, config, pidFile],
                environment: environment, timeLimit: .seconds(60))
        }
        print("fault: run killed with SIGKILL: its command was \(result.standardOutput)")
        #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
        #expect(result.standardOutput.hasPrefix("gone after"))
    }
}
