import Foundation
import NotifyRouteTestSupport
import Testing

/// Terminal sinks of sends handed to a real `notify-route serve`: the daemon draws banners
/// and lines on the terminal the send was typed at and keeps a banner there, so the send
/// returns at once and a replace key replaces across sends as within one process.
extension BannerTerminalTests {
@Suite struct DaemonTerminalTests {
    /// The daemon's client environment, for a pane's script to source (`$D/daemon.env`).
    private static func start(_ fixture: BannerFixture, sink: String = "{ kind: terminal, style: banner }") throws -> DaemonProcess {
        let daemon = try DaemonProcess.start(config: URL(fileURLWithPath: try fixture.config(sink)))
        let exports = daemon.environment.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value)'" }
        try (exports.joined(separator: "\n") + "\n").write(to: fixture.url("daemon.env"), atomically: true, encoding: .utf8)
        return daemon
    }

    @Test func twoSendsOfOneReplaceKeyShowOneBannerWhoseTimerStartsAgain() throws {
        let fixture = try BannerFixture()
        let daemon = try Self.start(fixture)
        defer { daemon.stop() }
        // No --config: the daemon's config is the client's through its environment.
        let session = try TmuxSession(command: try fixture.script("""
            . "$D/daemon.env"
            read go
            "$B" send --json -r build -t 2s First 'first body' > "$D/first.json"; echo $? > "$D/first"
            read go
            "$B" send --json -r build -t 2s Second 'second body' > "$D/second.json"; echo $? > "$D/second"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")

        var rows = try session.waitForScreen { $0.contains("First") }.rows
        let firstShown = ContinuousClock.now
        #expect(Array(rows[0...6]) == [" ℹ First", "   first body"] + earlierOutput, "\(rows)")
        // The send is done while its banner shows: the daemon keeps it, not the command.
        #expect(fixture.waitForFile("first", timeout: .seconds(1)) == "0")
        let first = try String(contentsOf: fixture.url("first.json"), encoding: .utf8)
        #expect(first.contains(#""via":"daemon""#) && first.contains(#""status":"delivered""#), "\(first)")

        usleep(1_000_000)
        try session.sendKeys("Enter")
        rows = try session.waitForScreen { $0.contains("Second") }.rows
        let secondShown = ContinuousClock.now
        // In place of the first: one banner, the output where it was.
        #expect(Array(rows[0...6]) == [" ℹ Second", "   second body"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        #expect(fixture.waitForFile("second", timeout: .seconds(1)) == "0")
        let second = try String(contentsOf: fixture.url("second.json"), encoding: .utf8)
        #expect(second.contains(#""via":"daemon""#) && second.contains(#""status":"replaced""#), "\(second)")

        // Past the first's 2 s the replacement still shows: its timer started again.
        let pastFirst = firstShown + .milliseconds(2_500)
        while ContinuousClock.now < pastFirst { usleep(20_000) }
        #expect(try session.capture().rows[0] == " ℹ Second")
        _ = try session.waitForScreen { !$0.contains("Second") }
        let shownFor = ContinuousClock.now - secondShown
        #expect(shownFor > .milliseconds(1_500) && shownFor < .seconds(4), "\(shownFor)")
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.scrollRegion() == (0, 23))
    }

    @Test func aSendFromAnotherTerminalNeverTouchesThisTerminalsBanner() throws {
        let fixture = try BannerFixture()
        let daemon = try Self.start(fixture)
        defer { daemon.stop() }
        let mine = try TmuxSession(command: try fixture.script("""
            . "$D/daemon.env"
            read go
            "$B" send -r build -t 4s Mine 'sent here'; echo $? > "$D/mine"
            """))
        try mine.waitForScreen { $0.contains("line 5") }
        try mine.sendKeys("Enter")
        _ = try mine.waitForScreen { $0.contains("Mine") }
        #expect(fixture.waitForFile("mine", timeout: .seconds(1)) == "0")

        // The same replace key from another terminal: a banner there, this one as it was.
        let other = try TmuxSession(command: try fixture.script("""
            . "$D/daemon.env"
            read go
            "$B" send -r build -t 4s Theirs 'sent there'; echo $? > "$D/theirs"
            """))
        try other.waitForScreen { $0.contains("line 5") }
        try other.sendKeys("Enter")
        let theirs = try other.waitForScreen { $0.contains("Theirs") }.rows
        #expect(Array(theirs[0...2]) == [" ℹ Theirs", "   sent there", "line 1"], "\(theirs)")
        #expect(fixture.waitForFile("theirs", timeout: .seconds(1)) == "0")
        let rows = try mine.capture().rows
        #expect(Array(rows[0...2]) == [" ℹ Mine", "   sent here", "line 1"], "\(rows)")
        #expect(!rows.joined().contains("Theirs"))

        // A daemon that stops takes its banners down on every terminal, without waiting.
        daemon.signal(SIGTERM)
        _ = try mine.waitForScreen(timeout: .seconds(3)) { !$0.contains("Mine") }
        _ = try other.waitForScreen(timeout: .seconds(3)) { !$0.contains("Theirs") }
        #expect(try mine.scrollRegion() == (0, 23))
        #expect(try other.scrollRegion() == (0, 23))
    }

    @Test func aTerminalTheClientDoesNotHoldIsNeverDrawnOn() throws {
        let fixture = try BannerFixture()
        let daemon = try Self.start(fixture)
        defer { daemon.stop() }
        let session = try TmuxSession(command: try fixture.script("read go"))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        // This test's process names the pane's terminal, which it does not have open.
        let answer = try Self.exchange(daemon.socketPath, [
            #"{"hello":"notify-route","version":1}"#,
            #"{"id":1,"request":"send","terminal":"\#(try session.paneTTY())","event":{"title":"Forged"}}"#,
        ])
        #expect(answer.contains(#""status":"unavailable""#) && answer.contains("has none the daemon may draw on"), "\(answer)")
        usleep(300_000)
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.scrollRegion() == (0, 23))
    }

    @Test func aLineIsWrittenOnTheSendersTerminalAndAPipedSendWritesItsOwn() throws {
        let fixture = try BannerFixture()
        let daemon = try Self.start(fixture, sink: "{ kind: terminal }")
        defer { daemon.stop() }
        let session = try TmuxSession(command: try fixture.script("""
            . "$D/daemon.env"
            read go
            "$B" send --json -l warning Disk 'nearly full' > "$D/tty.json"; echo $? > "$D/tty"
            "$B" send --json Piped 'to a file' > "$D/piped.json" 2> "$D/piped.err"; echo $? > "$D/piped"
            "$B" history --json title=Piped > "$D/history.json"; echo $? > "$D/history"
            """, sink: "{ kind: terminal }"))
        try session.waitForScreen { $0.contains("line 5") }
        try session.sendKeys("Enter")
        #expect(fixture.waitForFile("tty") == "0")
        #expect(fixture.waitForFile("piped") == "0")
        // Drawn by the daemon on the terminal the send was typed at, which is its stderr.
        let drawn = try String(contentsOf: fixture.url("tty.json"), encoding: .utf8)
        #expect(drawn.contains(#""via":"daemon""#) && drawn.contains(#"{"caller_draws":true,"#)
            && drawn.contains(#""sink":"tty","status":"delivered""#), "\(drawn)")
        let rows = try session.waitForScreen { $0.contains("Disk") }.rows
        #expect(rows.contains("⚠ warning  Disk: nearly full"), "\(rows)")
        // stderr is a file: the daemon may not draw on it, so the send draws its share there
        // itself, and the report is the daemon's with that outcome in it.
        let piped = try String(contentsOf: fixture.url("piped.json"), encoding: .utf8)
        #expect(piped.contains(#""via":"daemon""#) && piped.contains(#""summary":"delivered""#)
            && piped.contains(#""sink":"tty","status":"delivered""#), "\(piped)")
        #expect(fixture.waitForFile("piped.err") == "[info] Piped: to a file")
        #expect(!(try session.capture()).contains("Piped"))
        // Routed once: the daemon recorded it, the send only drew it.
        #expect(fixture.waitForFile("history") == "0")
        let history = try String(contentsOf: fixture.url("history.json"), encoding: .utf8)
        #expect(history.split(separator: "\n").count == 1 && history.contains(#""title":"Piped""#), "\(history)")
    }

    /// Writes `lines` to the daemon's socket and returns what it answered to the last.
    private static func exchange(_ path: String, _ lines: [String]) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0)
        let bytes = Array((lines.joined(separator: "\n") + "\n").utf8)
        #expect(write(fd, bytes, bytes.count) == bytes.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while received.filter({ $0 == 10 }).count < lines.count {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
    }
}
}
