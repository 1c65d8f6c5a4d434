import Foundation
import NotifyRouteTestSupport
import Testing

/// `notify-route ingest`: JSON lines in, reports out, bad lines counted by number.
@Suite struct IngestCommandTests {
    static func terminalConfig(_ sinks: String = "tty: { kind: terminal }") throws -> URL {
        let directory = try TestEnvironment.temporaryDirectory()
        let url = directory.appendingPathComponent("config.yaml")
        try "sinks: { \(sinks) }\nfallback: [tty]\n".write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    func ingest(_ input: String, _ options: [String] = [], config: URL? = nil, timeLimit: Duration = .seconds(60)) throws -> ProcessResult {
        let config = try config ?? Self.terminalConfig()
        let runtime = config.deletingLastPathComponent().appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        chmod(runtime.path, 0o700)
        return try ProcessRunner.notifyRoute(
            ["ingest", "--config", config.path] + options, environment: ["NO_COLOR": "1", "XDG_RUNTIME_DIR": runtime.path],
            input: input, timeLimit: timeLimit)
    }

    /// Lines share one state transaction per batch: a line's report is printed only once
    /// its state is committed, and an input that pauses holds back neither its report nor
    /// the database (another process's `send` sees the window at once).
    @Test func aReportComesOnceItsStateIsCommittedAndAPauseReleasesTheDatabase() throws {
        let directory = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("config.yaml")
        try "sinks: { tty: { kind: terminal } }\nroutes: [ { to: [tty], dedup: { window: 10m } } ]\n".write(to: config, atomically: true, encoding: .utf8)
        let runtime = directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        chmod(runtime.path, 0o700)
        let environment = ["NO_COLOR": "1", "XDG_RUNTIME_DIR": runtime.path, "NOTIFY_ROUTE_SOCKET": "/nonexistent-notify-route-test/socket"]

        let process = Process()
        process.executableURL = TestEnvironment.notifyRouteBinary
        process.arguments = ["ingest", "--json", "--config", config.path]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        input.fileHandleForWriting.write(Data("{\"title\": \"disk full\", \"dedup_key\": \"disk\"}\n".utf8))

        // The report of the line, while the input stays open.
        let report = LockedLine()
        Thread.detachNewThread { report.set(output.fileHandleForReading.availableData) }
        let deadline = ContinuousClock.now + .seconds(20)
        while report.get() == nil && ContinuousClock.now < deadline { usleep(5_000) }
        let line = try #require(report.get(), "no report while the input pauses")
        #expect(line.contains("\"line\":1") && line.contains("\"status\":\"delivered\""), "\(line)")

        let send = try ProcessRunner.notifyRoute(
            ["send", "--json", "--config", config.path, "-k", "disk", "disk full"], environment: environment)
        #expect(send.standardOutput.contains("\"summary\":\"suppressed\""), "\(send.standardOutput) \(send.standardError)")
        #expect(!send.standardError.contains("state unavailable"), "\(send.standardError)")

        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    final class LockedLine: @unchecked Sendable {
        private let lock = NSLock()
        private var text: String?
        func set(_ data: Data) { lock.lock(); text = String(decoding: data, as: UTF8.self); lock.unlock() }
        func get() -> String? { lock.lock(); defer { lock.unlock() }; return text }
    }

    @Test func goodLinesAreDeliveredInOrder() throws {
        let input = """
            {"title": "first", "level": "warning"}

            {"title": "second", "body": "two\\nlines", "tags": ["a"], "fields": {"N": 2, "OK": true}, "actions": ["ack=Ack", {"id": "x", "label": "X"}]}
            {"title": "third", "timeout": "never", "level": null, "dedup_key": "k", "replace_key": "r", "message_id": "0123456789abcdef0123456789ABCDEF"}
            """
        let result = try ingest(input)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError == "[warning] first\n[info] second: two ⏎ lines\n[info] third\n")
    }

    @Test func badLinesAreReportedWithTheirNumbersAndTheRestDelivered() throws {
        let input = [
            #"{"title": "ok one"}"#,
            #"{"titel": "typo"}"#,
            #"{"title": "bad level", "level": "warn"}"#,
            "not json",
            #"{"title": "ok two"}"#,
            #"{"title": "x", "timeout": 5}"#,
            #"{"title": "x", "tags": "ops"}"#,
            #"{"title": "x", "fields": {"A": [1]}}"#,
            #"{"body": "no title"}"#,
            #"["title"]"#,
            #"{"title": "x",}"#,
            #"{"title": " \u001b[2J "}"#,
        ].joined(separator: "\n") + "\n"
        let result = try ingest(input)
        #expect(result.status == 65)
        let expected = [
            "notify-route: stdin:2: unknown key \"titel\" (did you mean \"title\"?)",
            "notify-route: stdin:3: \"level\": unknown level \"warn\" (did you mean \"warning\"?); expected one of: debug, info, notice, success, warning, error, critical",
            "notify-route: stdin:4: invalid JSON at column 1: expected a value (an object, array, string, number, true, false or null)",
            "notify-route: stdin:6: \"timeout\": expected a string, found the number 5",
            "notify-route: stdin:7: \"tags\": expected an array of strings, found a string",
            "notify-route: stdin:8: \"fields\".\"A\": expected a string, number or boolean, found an array",
            "notify-route: stdin:9: missing \"title\"; every event needs a one-line title",
            "notify-route: stdin:10: expected a JSON object such as {\"title\": \"Disk full\"}, found an array",
            "notify-route: stdin:11: invalid JSON at column 15: expected a key in double quotes",
            "notify-route: stdin:12: the title is empty; an event needs a one-line title",
        ]
        let lines = result.standardError.split(separator: "\n").map(String.init)
        for line in expected { #expect(lines.contains(line), "missing: \(line)\n\(result.standardError)") }
        #expect(lines.contains("[info] ok one"))
        #expect(lines.contains("[info] ok two"))
        #expect(lines.last == "notify-route: 10 of 12 lines were bad")
    }

    @Test func jsonPrintsOneLinePerInputLine() throws {
        let result = try ingest("{\"title\": \"a\"}\n{\"nope\": 1}\n\n{\"title\": \"b\"}", ["--json"])
        #expect(result.status == 65)
        let lines = try result.standardOutput.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.map { $0["line"] as? Int } == [1, 2, 4])
        #expect(lines[0]["summary"] as? String == "delivered")
        #expect((lines[0]["event"] as? [String: Any])?["title"] as? String == "a")
        #expect((lines[1]["error"] as? String)?.hasPrefix("unknown key \"nope\"") == true)
        #expect(lines[2]["summary"] as? String == "delivered")
    }

    @Test func invalidUTF8IsRepairedAndAnOverlongLineSkipped() throws {
        let config = try Self.terminalConfig()
        // Bytes no Swift string can carry: fed through printf.
        let script = #"{ printf '{"title":"caf\351 \377ok"}\n'; head -c 1100000 /dev/zero | tr '\0' 'x'; printf '\n{"title":"after"}\n'; } | "$0" ingest --config "$1""#
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.notifyRouteBinary.path, config.path],
            environment: ["NO_COLOR": "1"], timeLimit: .seconds(60))
        #expect(result.status == 65, "\(result.standardError)")
        #expect(result.standardError.contains("[info] caf\u{FFFD} \u{FFFD}ok\n"))
        #expect(result.standardError.contains("notify-route: stdin:2: the line is 1100000 bytes long; at most 1048576 are read"))
        #expect(result.standardError.contains("[info] after\n"))
        #expect(result.standardError.hasSuffix("1 of 3 lines were bad\n"))
    }

    @Test func exitCodesFollowTheReports() throws {
        #expect(try ingest("").status == 0)
        // Every sink unavailable: 69.
        let directory = try TestEnvironment.temporaryDirectory()
        let config = directory.appendingPathComponent("c.yaml")
        try "sinks: { desk: { kind: desktop } }\nfallback: [desk]\n".write(to: config, atomically: true, encoding: .utf8)
        let unavailable = try ProcessRunner.notifyRoute(
            ["ingest", "--config", config.path], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path)/no-bus", "DISPLAY": ""],
            input: "{\"title\": \"x\"}\n")
        #expect(unavailable.status == 69, "\(unavailable.standardError)")
    }

    /// Memory must not grow with the input: the peak RSS after 100,000 lines is about what it is after 10,000.
    @Test func aHundredThousandLinesInBoundedMemory() throws {
        let config = try Self.terminalConfig("tty: { kind: terminal, output: stdout }")
        func peak(_ count: Int) throws -> (kib: Int, stats: String) {
            var input = ""
            input.reserveCapacity(count * 80)
            for index in 0..<count {
                input += "{\"title\": \"event \(index)\", \"level\": \"info\", \"fields\": {\"N\": \"\(index)\"}}\n"
            }
            let result = try ingest(input, ["--stats", "--no-wait"], config: config, timeLimit: .seconds(600))
            #expect(result.status == 0, "\(result.standardError.suffix(500))")
            let stats = try #require(result.standardError.split(separator: "\n").last { $0.contains("stats:") })
            #expect(stats.contains("\(count) lines, 0 bad, \(count) delivered"), "\(stats)")
            let kib = try #require(stats.split(separator: " ").split(separator: "RSS").last?.first.flatMap { Int($0) })
            return (kib, String(stats))
        }
        let small = try peak(10_000)
        let large = try peak(100_000)
        print("ingest 10k: \(small.stats)\ningest 100k: \(large.stats)")
        #expect(large.kib < 128 * 1024, "\(large.stats)")
        // Ten times the input, at most a few MiB more (allocator noise, not per-line state).
        #expect(large.kib - small.kib < 8 * 1024, "10k: \(small.stats)\n100k: \(large.stats)")
    }
}
