import Foundation
import NotifyRouteTestSupport
import Testing

/// The line style answers by its deadline itself (it is called without the router's timer):
/// an output that does not take the line, here a pipe already full, times the delivery out
/// a little before the deadline, and the line is written once the pipe has room.
struct TerminalDeadlineTests {
    /// Fills a pipe, runs `send` with its stdout there, and reads the pipe two seconds later.
    static let fullPipe = """
        import fcntl, json, os, subprocess, sys, time
        binary, config, errors = sys.argv[1], sys.argv[2], sys.argv[3]
        r, w = os.pipe()
        fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
        filled = 0
        try:
            while True: filled += os.write(w, b'x' * 4096)
        except BlockingIOError: pass
        fcntl.fcntl(w, fcntl.F_SETFL, 0)
        with open(errors, 'wb') as err:
            p = subprocess.Popen([binary, 'send', '--json', '--config', config, 'Disk full'], stdout=w, stderr=err)
        os.close(w)
        time.sleep(2)
        out = b''
        while True:
            chunk = os.read(r, 65536)
            if not chunk: break
            out += chunk
        p.wait()
        print(json.dumps({"status": p.returncode, "output": out[filled:].decode()}))
        """

    @Test func aFullPipeTimesTheLineOutByItsDeadlineAndTakesItLater() throws {
        let directory = try TestEnvironment.temporaryDirectory("terminal-deadline")
        chmod(directory.path, 0o700)  // the runtime directory's check
        let config = directory.appendingPathComponent("config.yaml")
        try "sinks: { tty: { kind: terminal, output: stdout, deadline: 300ms } }\nroutes: [ { match: {}, to: [tty] } ]\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", Self.fullPipe, TestEnvironment.notifyRouteBinary.path, config.path, directory.appendingPathComponent("stderr").path],
            environment: ["XDG_RUNTIME_DIR": directory.path], timeLimit: .seconds(20))
        let outcome = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "\(result)")
        #expect(outcome["status"] as? Int == 1, "no sink delivered: \(outcome)")
        let output = try #require(outcome["output"] as? String)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "[info] Disk full", "the line, once the pipe had room: \(output)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any])
        let sink = try #require((report["sinks"] as? [[String: Any]])?.first)
        #expect(sink["status"] as? String == "failed")
        #expect(sink["reason"] as? String == "timed-out")
        let milliseconds = try #require(sink["duration_ms"] as? Double)
        #expect(milliseconds >= 200 && milliseconds < 300, "answered before the router's deadline: \(milliseconds) ms")
    }
}
