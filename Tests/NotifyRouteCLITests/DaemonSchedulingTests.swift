import Foundation
import NotifyRouteTestSupport
import Testing

/// `serve` moves its threads to `SCHED_BATCH` (woken, the daemon does not preempt the client
/// that connected), keeps a policy it was started under, and starts the programs of its exec
/// sinks under `SCHED_OTHER`, as they would be started without it.
@Suite(.serialized)
struct DaemonSchedulingTests {
    static let other = 0, batch = 3, idle = 5

    /// The scheduling policy of each thread of `pid` (`/proc/PID/task/TID/stat`, field 41).
    static func policies(of pid: Int32) throws -> [String: Int] {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var policies: [String: Int] = [:]
        for task in tasks {
            let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)
            // After the command's name, which may hold spaces and parentheses: field 3 on.
            let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
            policies[task] = Int(fields[41 - 3])
        }
        return policies
    }

    /// An exec sink whose program writes its own policy to `policy`.
    static func config(writingPolicyTo policy: String, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              ex: { kind: exec, command: [/bin/sh, -c, 'cut -d")" -f2 /proc/$$/stat | cut -d" " -f40 > \(policy)'], deadline: 5s }
            fallback: [ex]
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func theDaemonsThreadsRunUnderBatchAndItsExecSinksProgramsDoNot() throws {
        let directory = try TestEnvironment.temporaryDirectory("daemon-scheduling")
        let policy = directory.appendingPathComponent("policy").path
        let daemon = try DaemonProcess.start(config: try Self.config(writingPolicyTo: policy, in: directory))
        defer { daemon.stop() }

        let sent = try ProcessRunner.notifyRoute(["send", "--json", "Disk almost full"], environment: daemon.environment)
        #expect(sent.standardOutput.contains(#""via":"daemon""#), "\(sent.standardOutput) \(sent.standardError)")
        // After a send, the threads it started (the loop, the pool's, the sink's) are there too.
        let threads = try Self.policies(of: daemon.pid)
        #expect(threads.count > 2, "\(threads)")
        #expect(threads.values.allSatisfy { $0 == Self.batch }, "\(threads)")
        let written = try String(contentsOfFile: policy, encoding: .utf8)
        #expect(Int(written.trimmingCharacters(in: .whitespacesAndNewlines)) == Self.other, "\(written)")
    }

    @Test func aPolicyTheDaemonWasStartedUnderIsKept() throws {
        let chrt = try #require(ProcessRunner.which("chrt"), "chrt (package util-linux)").path
        let directory = try TestEnvironment.temporaryDirectory("daemon-scheduling-idle")
        let policy = directory.appendingPathComponent("policy").path
        let daemon = try DaemonProcess.start(config: try Self.config(writingPolicyTo: policy, in: directory), launcher: [chrt, "--idle", "0"])
        defer { daemon.stop() }

        let sent = try ProcessRunner.notifyRoute(["send", "--json", "Disk almost full"], environment: daemon.environment)
        #expect(sent.standardOutput.contains(#""via":"daemon""#), "\(sent.standardOutput) \(sent.standardError)")
        let threads = try Self.policies(of: daemon.pid)
        #expect(threads.values.allSatisfy { $0 == Self.idle }, "\(threads)")
        // Inherited as the user asked: the daemon did not choose it.
        let written = try String(contentsOfFile: policy, encoding: .utf8)
        #expect(Int(written.trimmingCharacters(in: .whitespacesAndNewlines)) == Self.idle, "\(written)")
    }
}
