import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route serve` as a process: the CLI hands it events over its socket, and the
/// private journald of Tests/with-components.sh shows which process wrote each record.
@Suite(.serialized, .enabled(if: PrivateJournal.isAvailable || TestEnvironment.componentsRequired,
                             "needs the private journald of Tests/with-components.sh"))
struct DaemonTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
    }

    static func config(identifier: String = "daemon-test", in directory: URL? = nil) throws -> URL {
        let directory = try directory ?? TestEnvironment.temporaryDirectory("daemon-config")
        let url = directory.appendingPathComponent("config.yaml")
        try """
            sinks:
              journal: { kind: journal, deadline: 500ms, identifier: \(identifier) }
            fallback: [journal]
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    static func run(_ arguments: [String], _ daemon: DaemonProcess, input: String? = nil) async throws -> ProcessResult {
        let environment = daemon.environment
        return try await PrivateJournal.offPool {
            try ProcessRunner.notifyRoute(arguments, environment: environment, input: input)
        }
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    @Test func sendHandsTheEventToTheDaemon() async throws {
        try await PrivateJournal.withAccess {
            let config = try Self.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()

            let handed = try await Self.run(
                ["send", "--json", "-l", "error", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=daemon", "Disk full", "92%"], daemon)
            #expect(handed.status == 0, "\(handed.standardError)")
            let report = try Self.json(handed.standardOutput)
            #expect(report["via"] as? String == "daemon")
            #expect(report["summary"] as? String == "delivered")

            let local = try await Self.run(
                ["send", "--no-daemon", "--json", "--config", config.path, "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=local", "Disk full"], daemon)
            #expect(local.status == 0, "\(local.standardError)")
            #expect(try Self.json(local.standardOutput)["via"] as? String == "local")

            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            let byDaemon = try #require(entries.first { $0["WHO"] == "daemon" })
            let byClient = try #require(entries.first { $0["WHO"] == "local" })
            // journald's trusted _PID says who wrote it: the daemon, then the client itself.
            #expect(byDaemon["_PID"] == String(daemon.pid))
            #expect(byClient["_PID"] != String(daemon.pid))
            #expect(byDaemon["MESSAGE"] == "Disk full\n92%")
            #expect(byDaemon["PRIORITY"] == "3")

            let status = try await Self.run(["status", "--json", "--socket", daemon.socketPath], daemon)
            #expect(status.status == 0, "\(status.standardError)")
            let counts = try #require((try Self.json(status.standardOutput)["sinks"] as? [String: Any])?["journal"] as? [String: Any])
            #expect(counts["delivered"] as? Int == 1)
            #expect(try Self.json(status.standardOutput)["pid"] as? Int == Int(daemon.pid))
        }
    }

    /// `--config` goes with the hello: the daemon routes the event only when it routes with
    /// that file (named any way); with another file the client routes it, and only the client.
    @Test func sendWithAConfigRoutesThroughTheDaemonOnlyWhenItIsTheDaemons() async throws {
        try await PrivateJournal.withAccess {
            let config = try Self.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let link = config.deletingLastPathComponent().appendingPathComponent("same.yaml").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: config.path)
            let other = try Self.config(identifier: "other-config")

            let same = try await Self.run(["send", "--json", "--config", link, "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=same", "Same"], daemon)
            #expect(try Self.json(same.standardOutput)["via"] as? String == "daemon", "\(same.standardError)")
            let different = try await Self.run(
                ["send", "--json", "--config", other.path, "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=other", "Other"], daemon)
            #expect(different.status == 0, "\(different.standardError)")
            #expect(try Self.json(different.standardOutput)["via"] as? String == "local")

            try await Task.sleep(for: .milliseconds(300))
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            #expect(entries.filter { $0["WHO"] == "same" }.map { $0["_PID"] } == [String(daemon.pid)])
            let routedHere = entries.filter { $0["WHO"] == "other" }
            #expect(routedHere.count == 1 && routedHere.first?["_PID"] != String(daemon.pid), "\(routedHere)")
            #expect(routedHere.first?["SYSLOG_IDENTIFIER"] == "other-config")
        }
    }

    @Test func theSameExitCodesAndMessagesEitherWay() async throws {
        let config = try Self.config()
        let daemon = try DaemonProcess.start(config: config)
        defer { daemon.stop() }
        for arguments in [["send", "--sink", "nope", "x"], ["send", "--dry-run", "Planned"], ["close", "-r", "never-sent"]] {
            let handed = try await Self.run(arguments, daemon)
            let local = try await Self.run(arguments + ["--no-daemon", "--config", config.path], daemon)
            #expect(handed.status == local.status, "\(arguments): \(handed.standardError) vs \(local.standardError)")
            #expect(handed.standardError == local.standardError, "\(arguments)")
            #expect(handed.standardOutput == local.standardOutput, "\(arguments)")
        }
        let bad = try await Self.run(["send", "--json", "-f", "=x", "Title"], daemon)
        #expect(bad.status == 64)
    }

    @Test func badLinesGetAnErrorAndEveryoneElseGoesOn() throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }

        let rude = try RawDaemonConnection(path: daemon.socketPath)
        try rude.write("{\"request\":\"status\"}\n")
        #expect((try rude.readAnswer()?["error"] as? String)?.contains("first line must be") == true)
        try rude.write("{\"hello\":\"notify-route\",\"version\":1}\n")
        #expect(try rude.readAnswer()?["version"] as? Int == 1)
        for (line, expected) in [
            ("not json at all", "not JSON"), ("[1,2]", "expected a JSON object"), ("{\"request\":\"send\",\"titel\":1}", "unknown key \"titel\""),
            ("{\"request\":\"fly\"}", "unknown request \"fly\""), ("{\"request\":\"send\",\"event\":{\"title\":\"\"}}", "bad event"),
            ("{\"request\":\"send\",\"event\":{\"title\":\"x\",\"level\":\"loud\"}}", "unknown level"),
        ] {
            try rude.write(line + "\n")
            let answer = try #require(try rude.readAnswer(), "no answer to \(line)")
            #expect((answer["error"] as? String)?.contains(expected) == true, "\(line): \(answer)")
        }

        // Half a line, then a hang-up: nobody to answer, and the daemon goes on.
        let halfway = try RawDaemonConnection(path: daemon.socketPath)
        try halfway.write("{\"hello\":\"notify-route\",\"version\":1}\n{\"request\":\"sta")
        halfway.close()

        // A line longer than the limit (1 MiB) is refused and the connection closed.
        let huge = try RawDaemonConnection(path: daemon.socketPath)
        try huge.write("{\"hello\":\"notify-route\",\"version\":1}\n")
        _ = try huge.readAnswer()
        try? huge.write(String(repeating: "x", count: 2 << 20))
        let refusal = try #require(try huge.readAnswer())
        #expect((refusal["error"] as? String)?.contains("at most 1048576") == true)
        #expect(try huge.readAnswer() == nil, "the connection is closed after a line over the limit")

        // A client that connected and says nothing holds up no one.
        let silent = try RawDaemonConnection(path: daemon.socketPath)
        defer { silent.close() }
        try rude.write("{\"id\":7,\"request\":\"status\"}\n")
        let status = try #require(try rude.readAnswer())
        #expect(status["id"] as? Int == 7)
        #expect(daemon.exitStatus() == nil, "the daemon is still running")
    }

    /// Every integer a request carries is bounded: digits past what fits, a sign, a fraction
    /// or an exponent get an error answer that names the member and its column (exit 64),
    /// and the daemon goes on answering this client and others.
    @Test func aRequestsNumbersCannotKillTheDaemon() throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let hostile = try RawDaemonConnection(path: daemon.socketPath)
        try hostile.write("{\"hello\":\"notify-route\",\"version\":1}\n")
        _ = try hostile.readAnswer()
        let digits = String(repeating: "9", count: 40)
        for (line, member, column) in [
            (#"{"request":"status","id":\#(digits)}"#, "id", 26),
            (#"{"id":99999999999999999999,"request":"send","event":{"title":"x"}}"#, "id", 7),
            (#"{"id":-1,"request":"status"}"#, "id", 7),
            (#"{"id":1.5,"request":"status"}"#, "id", 7),
            (#"{"id":1e400,"request":"status"}"#, "id", 7),
            (#"{"id":"7","request":"status"}"#, "id", 7),
            (#"{"request":"wait","for":18446744073709551616}"#, "for", 25),
            (#"{"request":"wait","for":-9223372036854775809}"#, "for", 25),
        ] {
            try hostile.write(line + "\n")
            let answer = try #require(try hostile.readAnswer(), "no answer to \(line): \(daemon.log)")
            let error = answer["error"] as? String ?? ""
            #expect(error.hasPrefix("\"\(member)\": expected a whole number"), "\(line): \(answer)")
            #expect(error.contains("(column \(column))"), "\(line): \(answer)")
            #expect(answer["exit"] as? Int == 64, "\(line): \(answer)")
        }
        try hostile.write("{\"id\":999999999999999,\"request\":\"status\"}\n")
        #expect(try hostile.readAnswer()?["id"] as? Int == 999_999_999_999_999, "the largest id is answered")
        let other = try ProcessRunner.notifyRoute(["status", "--json", "--socket", daemon.socketPath], environment: daemon.environment)
        #expect(other.status == 0, "\(other.standardError) \(daemon.log)")
        #expect(daemon.exitStatus() == nil, "the daemon is still running: \(daemon.log)")
    }

    /// A daemon's numbers are another process's: `status` reads a hostile or newer daemon's
    /// hello and answer (numbers past any integer, negative, fractional) without trapping:
    /// a greeting it cannot read is refused in words (69), counts it cannot read show as `?`.
    @Test func statusReadsAHostileDaemonsNumbersWithoutTrapping() async throws {
        let directory = try TestEnvironment.temporaryDirectory("hostile-daemon")
        let socket = directory.appendingPathComponent("socket").path
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); s.listen(2)
            for hello in (b'{"hello":"notify-route","version":1,"pid":1e300,"answer_within_ms":-99999999999999999999}\\n',
                          b'{"hello":"notify-route","version":1,"answer_within_ms":-5}\\n'):
                c, _ = s.accept()
                f = c.makefile("rwb")
                f.readline()
                f.write(hello); f.flush()
                if f.readline():
                    f.write(b'{"exit":0,"id":1,"status":{"pid":1e300,"uptime_seconds":-0.5,"in_flight":1e400,"config":"x",'
                            b'"sinks":{"journal":{"delivered":1e300,"failed":-1e300}},"queues":{"journal":{"depth":1e300}},'
                            b'"pause":{"below":"error","since":"now","held":1e300},'
                            b'"held":[{"sink":"s","route":"r","held":-7.5,"kind":"k","sources":{"a":1e300}}],'
                            b'"groups":[{"name":"g","count":1e300,"pending":-1e300}],"groups_open":1e300}}\\n'); f.flush()
                c.close()
            """
        async let server = PrivateJournal.offPool { try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, socket], timeLimit: .seconds(60)) }
        for _ in 0..<1000 where !FileManager.default.fileExists(atPath: socket) { try await Task.sleep(for: .milliseconds(10)) }
        let refused = try await PrivateJournal.offPool { try ProcessRunner.notifyRoute(["status", "--socket", socket], timeLimit: .seconds(20)) }
        #expect(refused.status == 69, "exit \(refused.status): \(refused.standardError)")
        #expect(refused.standardError.contains("answered the greeting with"), "\(refused.standardError)")
        let status = try await PrivateJournal.offPool { try ProcessRunner.notifyRoute(["status", "--socket", socket], timeLimit: .seconds(20)) }
        #expect(status.status == 0, "exit \(status.status): \(status.standardError)")
        #expect(status.standardOutput.contains("journal: delivered ?, failed ?"), "\(status.standardOutput)")
        #expect(try await server.status == 0)
    }

    @Test func aSecondServeOnTheSameSocketRefuses() throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let second = try ProcessRunner.notifyRoute(["serve", "--socket", daemon.socketPath, "--config", try Self.config().path], timeLimit: .seconds(10))
        #expect(second.status == 69)
        #expect(second.standardError.contains("already listening on \(daemon.socketPath)"), "\(second.standardError)")
        #expect(second.standardError.contains("pid \(daemon.pid)"), "\(second.standardError)")
        #expect(daemon.exitStatus() == nil && DaemonProcess.canConnect(daemon.socketPath), "the first daemon keeps its socket")
    }

    @Test func reloadSwapsTheConfigAndRefusesABrokenOne() async throws {
        try await PrivateJournal.withAccess {
            let directory = try TestEnvironment.temporaryDirectory("daemon-reload")
            let config = try Self.config(identifier: "before-reload", in: directory)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()

            try "sinks:\n  journal: { kind: journal, identifer: x }\nfallback: [journal]\n".write(to: config, atomically: true, encoding: .utf8)
            let broken = try await Self.run(["reload", "--socket", daemon.socketPath], daemon)
            #expect(broken.status == 78)
            #expect(broken.standardError.contains("\(config.path):2:"), "\(broken.standardError)")
            let stillOld = try await Self.run(["send", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "STEP=1", "one"], daemon)
            #expect(stillOld.status == 0, "\(stillOld.standardError)")

            _ = try Self.config(identifier: "after-reload", in: directory)
            let reloaded = try await Self.run(["reload", "--socket", daemon.socketPath], daemon)
            #expect(reloaded.status == 0, "\(reloaded.standardError)")
            let fresh = try await Self.run(["send", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "STEP=2", "two"], daemon)
            #expect(fresh.status == 0)

            _ = try Self.config(identifier: "after-hangup", in: directory)
            daemon.signal(SIGHUP)
            var reloads = 0
            for _ in 0..<100 where reloads < 2 {
                let status = try await Self.run(["status", "--json"], daemon)
                reloads = (try? Self.json(status.standardOutput)["reloads"] as? Int) ?? 0
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(reloads == 2, "SIGHUP reloads")
            _ = try await Self.run(["send", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "STEP=3", "three"], daemon)

            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 3)
            let identifiers = Dictionary(entries.map { ($0["STEP"] ?? "?", $0["SYSLOG_IDENTIFIER"] ?? "?") }) { first, _ in first }
            #expect(identifiers == ["1": "before-reload", "2": "after-reload", "3": "after-hangup"])
        }
    }

    @Test func sigtermDrainsAndExitsZero() throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let idle = try RawDaemonConnection(path: daemon.socketPath)
        defer { idle.close() }
        daemon.signal(SIGTERM)
        let exit = try #require(daemon.waitForExit(timeLimit: .seconds(5)), "serve did not exit after SIGTERM: \(daemon.log)")
        #expect(exit.status == 0, "\(daemon.log)")
        #expect(exit.after < .seconds(2))
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath), "the socket is removed")
    }

    /// A client that pipelines thousands of requests and reads no answer cannot hold the
    /// daemon past its drain limit after SIGTERM: it is dropped, and serve exits 0.
    @Test func aClientThatReadsNothingCannotHoldUpTheStop() async throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        // Another process: it writes its hello and 5,000 requests, blocking once the socket
        // is full, and never reads.
        let script = """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            line = b'{"request":"send","event":{"title":"pipelined","level":"debug"}}\\n'
            s.sendall(b'{"hello":"notify-route","version":1}\\n' + line * 5000)
            time.sleep(15)
            """
        let socket = daemon.socketPath
        async let greedy = PrivateJournal.offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, socket], timeLimit: .seconds(30))
        }
        try await Task.sleep(for: .milliseconds(500))
        daemon.signal(SIGTERM)
        let exit = try #require(daemon.waitForExit(timeLimit: .seconds(20)), "serve still running 20 s after SIGTERM: \(daemon.log)")
        #expect(exit.status == 0, "\(daemon.log)")
        #expect(exit.after < .seconds(10), "stopped after \(exit.after)")
        _ = try await greedy
    }

    /// A thousand connections that each send most of a megabyte and no newline: the daemon
    /// holds a bounded share of it (the rest are closed with the reason), stays under 100 MB
    /// and still routes a send from another client.
    @Test func aThousandUnterminatedMegabytesCannotExhaustTheDaemon() async throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let directory = try TestEnvironment.temporaryDirectory("unterminated")
        let (sent, done) = (directory.appendingPathComponent("sent").path, directory.appendingPathComponent("done").path)
        let script = """
            import json, os, socket, sys, time
            path, sent_file, done_file = sys.argv[1:4]
            data = memoryview(b'{"hello":"notify-route","version":1}\\n' + b'x' * 1000000)
            socks = []
            for _ in range(1000):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.setblocking(False)
                socks.append(s)
            sent = [0] * len(socks)
            closed = 0
            idle_since = time.time()
            while time.time() - idle_since < 1.5:
                for i, s in enumerate(socks):
                    if s is None or sent[i] >= len(data):
                        continue
                    try:
                        n = s.send(data[sent[i]:sent[i] + 65536])
                        sent[i] += n
                        idle_since = time.time()
                    except BlockingIOError:
                        pass
                    except OSError:
                        socks[i] = None
                        closed += 1
            with open(sent_file, "w") as f:
                json.dump({"bytes": sum(sent), "closed": closed}, f)
            while not os.path.exists(done_file):
                time.sleep(0.05)
            """
        let socket = daemon.socketPath
        async let hostile = PrivateJournal.offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, socket, sent, done], timeLimit: .seconds(120))
        }
        for _ in 0..<6000 where !FileManager.default.fileExists(atPath: sent) { try await Task.sleep(for: .milliseconds(20)) }
        // Until the daemon has read what the kernel holds for it: its CPU time stands still.
        func cpuTicks() -> Int {
            let stat = (try? String(contentsOfFile: "/proc/\(daemon.pid)/stat", encoding: .utf8)) ?? ""
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
        }
        var ticks = cpuTicks()
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(300))
            let now = cpuTicks()
            if now == ticks { break }
            ticks = now
        }
        let summary = try String(contentsOfFile: sent, encoding: .utf8)
        let status = try String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)
        let rssKiB = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? -1
        print("serve with 1,000 unterminated lines: \(summary), VmRSS \(rssKiB) KiB")
        #expect(rssKiB > 0 && rssKiB < 100 * 1024, "VmRSS \(rssKiB) KiB after \(summary)")
        let send = try await Self.run(["send", "--json", "still routed"], daemon)
        #expect(send.status == 0, "\(send.standardError)")
        #expect(try Self.json(send.standardOutput)["via"] as? String == "daemon", "\(send.standardOutput)")
        _ = FileManager.default.createFile(atPath: done, contents: nil)
        #expect(try await hostile.status == 0)
        #expect(daemon.exitStatus() == nil, "the daemon is still running: \(daemon.log)")
    }

    /// Half a request line, then nothing: answered with the reason once the line timeout
    /// has passed, and closed, while other clients are served all along.
    @Test func halfALineIsAnsweredAndClosedAfterTheLineTimeout() async throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let script = """
            import json, socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            s.sendall(b'{"hello":"notify-route","version":1}\\n{"request":"status"')
            start, data = time.time(), b''
            s.settimeout(30)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            print(json.dumps({"seconds": time.time() - start, "answer": data.decode(errors="replace")}))
            """
        let socket = daemon.socketPath
        async let held = PrivateJournal.offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, socket], timeLimit: .seconds(60))
        }
        try await Task.sleep(for: .seconds(1))
        let send = try await Self.run(["send", "--json", "served meanwhile"], daemon)
        #expect(try Self.json(send.standardOutput)["via"] as? String == "daemon", "\(send.standardOutput)")
        let result = try await held
        let outcome = try Self.json(result.standardOutput)
        let seconds = try #require(outcome["seconds"] as? Double, "\(result.standardOutput) \(result.standardError)")
        let answer = try #require(outcome["answer"] as? String)
        #expect(seconds > 9 && seconds < 14, "closed after \(seconds) s")
        #expect(answer.contains("a request line did not end within 10s; this connection is closed"), "\(answer)")
        #expect(answer.contains("\"exit\":64"), "\(answer)")
        #expect(daemon.exitStatus() == nil, "the daemon is still running: \(daemon.log)")
    }

    /// Past its connection cap the daemon closes a new connection unread (its client
    /// routes the event itself), and takes new ones again once some have closed.
    @Test func connectionsPastTheCapAreClosedUnread() async throws {
        let daemon = try DaemonProcess.start(config: try Self.config())
        defer { daemon.stop() }
        let directory = try TestEnvironment.temporaryDirectory("connection-cap")
        let (report, done) = (directory.appendingPathComponent("report").path, directory.appendingPathComponent("done").path)
        let script = """
            import json, os, socket, sys, time
            path, report, done = sys.argv[1:4]
            def connect():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                return s
            def greeting(s):
                s.settimeout(5)
                try:
                    s.sendall(b'{"hello":"notify-route","version":1}\\n')
                    return s.recv(4096)
                except (BrokenPipeError, ConnectionResetError):
                    return b''
                except OSError:
                    return b'?'
            held = [connect() for _ in range(4096)]
            greeted = sum(1 for s in held[-16:] if greeting(s).startswith(b'{'))
            extra = greeting(connect())
            held.pop().close()
            time.sleep(0.5)
            held.append(connect())
            again = greeting(held[-1])
            with open(report, "w") as f:
                json.dump({"greeted": greeted, "extra": extra.decode(errors="replace"), "again": again[:1].decode()}, f)
            while not os.path.exists(done):
                time.sleep(0.05)
            """
        let socket = daemon.socketPath
        async let hostile = PrivateJournal.offPool {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, socket, report, done], timeLimit: .seconds(120))
        }
        for _ in 0..<6000 where !FileManager.default.fileExists(atPath: report) { try await Task.sleep(for: .milliseconds(20)) }
        let outcome = try Self.json(try String(contentsOfFile: report, encoding: .utf8))
        #expect(outcome["greeted"] as? Int == 16, "the last 16 of 4,096 connections were greeted: \(outcome)")
        #expect(outcome["extra"] as? String == "", "the 4,097th is closed unread: \(outcome)")
        #expect(outcome["again"] as? String == "{", "taken again once one closed: \(outcome)")
        // At the cap: a send is routed by its own process, and says nothing went wrong.
        let send = try await Self.run(["send", "--json", "past the cap"], daemon)
        #expect(send.status == 0, "\(send.standardError)")
        #expect(try Self.json(send.standardOutput)["via"] as? String == "local", "\(send.standardOutput)")
        // Two runs of refusals (the 4,097th, then the send), one warning each, not one a connection.
        #expect(daemon.log.components(separatedBy: "refusing connections: the daemon serves at most 4096 at once").count == 3,
                "one warning a run of refusals: \(daemon.log)")
        #expect(daemon.log.contains("taking connections again, after refusing 1 at the cap"), "\(daemon.log)")
        _ = FileManager.default.createFile(atPath: done, contents: nil)
        #expect(try await hostile.status == 0)
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func aHungDaemonCostsAClientAtMostTheGreetingLimit() async throws {
        let config = try Self.config()
        let daemon = try DaemonProcess.start(config: config)
        defer { daemon.stop() }
        daemon.signal(SIGSTOP)
        let local = try await Self.run(["send", "--no-daemon", "--json", "Hung"], daemon)
        let handed = try await Self.run(["send", "--json", "--config", config.path, "Hung"], daemon)
        #expect(handed.status == 0, "\(handed.standardError)")
        #expect(try Self.json(handed.standardOutput)["via"] as? String == "local")
        #expect(handed.standardError.contains("did not answer in time"), "\(handed.standardError)")
        // The greeting's limit is 100 ms; the rest is the noise of a loaded test machine.
        #expect(handed.duration - local.duration < .milliseconds(400), "\(handed.duration) vs \(local.duration)")
        // It yields its CPU for the first 0.3 ms of the wait only (DaemonClient.yieldingMicroseconds),
        // then sleeps: a client that spun through the greeting's 100 ms would use them on the CPU.
        #expect(handed.cpuTime - local.cpuTime < .milliseconds(50), "CPU \(handed.cpuTime) vs \(local.cpuTime)")
    }

    /// A send's request goes with its hello. A daemon stopped past the greeting's limit must
    /// not route that request once it runs again (its greeting is late, or finds the client
    /// gone): the client has routed the event itself. RouterDaemonTests checks the late
    /// greeting alone, with a client that stays.
    @Test func aRequestSentWithTheHelloToAHungDaemonIsRoutedOnce() async throws {
        try await PrivateJournal.withAccess {
            let daemon = try DaemonProcess.start(config: try Self.config())
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            daemon.signal(SIGSTOP)
            let handed = try await Self.run(["send", "--json", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=stopped", "Hung"], daemon)
            daemon.signal(SIGCONT)
            #expect(handed.status == 0, "\(handed.standardError)")
            #expect(try Self.json(handed.standardOutput)["via"] as? String == "local")
            #expect(handed.standardError.contains("did not answer in time"), "\(handed.standardError)")
            // The daemon, running again, reads that connection's hello and request; a send after
            // it is routed by the daemon and marks the end of what it does with the first.
            let after = try await Self.run(["send", "--json", "-f", "\(PrivateJournal.runField)=\(run)", "-f", "WHO=resumed", "Resumed"], daemon)
            #expect(try Self.json(after.standardOutput)["via"] as? String == "daemon", "\(after.standardError)")
            try await Task.sleep(for: .milliseconds(300))
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            let hung = entries.filter { $0["WHO"] == "stopped" }
            #expect(hung.count == 1, "the event of the stopped daemon's client was written \(hung.count) times")
            #expect(hung.first?["_PID"] != String(daemon.pid))
            #expect(entries.filter { $0["WHO"] == "resumed" }.first?["_PID"] == String(daemon.pid))
        }
    }

    @Test func aDaemonKilledMidStreamLosesNoEvent() async throws {
        try await PrivateJournal.withAccess {
            let config = try Self.config()
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            let run = PrivateJournal.newRunID()
            let clients = 8, perClient = 25
            // The clients go on sending until the daemon is gone, so that the last ones are routed here.
            let gone = daemon.directory.appendingPathComponent("gone").path
            let results = try await DaemonFaultTests.sends(
                clients: clients, each: perClient, environment: daemon.environment, run: run, untilExists: gone
            ) {
                try await DaemonFaultTests.waitUntilDelivered(20, by: daemon)
                daemon.signal(SIGKILL)
                _ = daemon.waitForExit(timeLimit: .seconds(5))
                _ = FileManager.default.createFile(atPath: gone, contents: nil)
            }
            #expect(results.count >= clients * perClient)
            for result in results {
                #expect(result.status == 0, "\(result.standardError)")
                // Handed over, or routed here after the daemon died: well within the answer limit (2 s).
                #expect(result.duration < .seconds(3), "a client waited \(result.duration)")
            }
            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: results.count, timeout: .seconds(10))
            let delivered = Set(entries.compactMap { $0["SEQ"] })
            let missing = results.filter { result in !delivered.contains(where: { result.standardOutput.contains("\"title\":\"event \($0)\"") }) }
            #expect(delivered.count == results.count,
                    "\(results.count - delivered.count) events lost: \(missing.prefix(3).map { $0.standardOutput + $0.standardError })")
            let byDaemon = entries.filter { $0["_PID"] == String(daemon.pid) }.count
            #expect(byDaemon > 0 && byDaemon < results.count, "the daemon routed some (\(byDaemon)), the clients the rest")
        }
    }

    @Test func socketActivationAndReadiness() async throws {
        try await PrivateJournal.withAccess {
            let activate = try #require(ProcessRunner.which("systemd-socket-activate"), "systemd-socket-activate (package systemd)")
            let directory = try TestEnvironment.temporaryDirectory("daemon-notify")
            defer { try? FileManager.default.removeItem(at: directory) }
            let notifyPath = directory.appendingPathComponent("notify").path
            let notify = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(notify) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(notifyPath.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(notify, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(bound == 0)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(notify, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

            let socketPath = directory.appendingPathComponent("activated.socket").path
            let daemon = try DaemonProcess.start(
                config: try Self.config(), environment: ["NOTIFY_SOCKET": notifyPath],
                launcher: [activate.path, "-l", socketPath, "-E", "NOTIFY_SOCKET"], waitForSocket: false)
            defer { daemon.stop() }
            // systemd-socket-activate listens itself, starts the daemon on the first connection, and
            // passes on only the environment it is told to (-E).
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath) { try await Task.sleep(for: .milliseconds(20)) }
            let first = try RawDaemonConnection(path: socketPath)
            try first.write("{\"hello\":\"notify-route\",\"version\":1}\n")
            let hello = try #require(try first.readAnswer(), "the activated daemon answers: \(daemon.log)")
            #expect(hello["pid"] as? Int == Int(daemon.pid), "exec'd in place of systemd-socket-activate")

            var buffer = [UInt8](repeating: 0, count: 512)
            let count = recv(notify, &buffer, buffer.count, 0)
            let message = String(decoding: buffer[..<max(0, count)], as: UTF8.self)
            #expect(message.contains("READY=1"), "sd_notify: \(message)")
            #expect(message.contains("MAINPID=\(daemon.pid)"))

            let run = PrivateJournal.newRunID()
            let sent = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["send", "--json", "--socket", socketPath, "-f", "\(PrivateJournal.runField)=\(run)", "Activated"])
            }
            #expect(try Self.json(sent.standardOutput)["via"] as? String == "daemon", "\(sent.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry["_PID"] == String(daemon.pid))
        }
    }
}

/// The shipped user units, checked by systemd itself.
struct SystemdUnitTests {
    @Test func theUserUnitsVerify() throws {
        let analyze = try #require(ProcessRunner.which("systemd-analyze"), "systemd-analyze (package systemd)")
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = try TestEnvironment.temporaryDirectory("units")
        defer { try? FileManager.default.removeItem(at: directory) }
        var paths: [String] = []
        for name in ["notify-route.service", "notify-route.socket"] {
            let text = try String(contentsOf: repository.appendingPathComponent("config/systemd/\(name)"), encoding: .utf8)
            // verify checks that ExecStart= can be run: point it at the binary under test.
            let unit = directory.appendingPathComponent(name)
            try text.replacingOccurrences(of: "/usr/local/bin/notify-route", with: TestEnvironment.notifyRouteBinary.path)
                .write(to: unit, atomically: true, encoding: .utf8)
            paths.append(unit.path)
        }
        let result = try ProcessRunner.run(analyze, ["verify", "--user", "--man=no"] + paths, environment: ["XDG_RUNTIME_DIR": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
        #expect(try String(contentsOfFile: paths[0], encoding: .utf8).contains("Type=notify"))
    }
}
