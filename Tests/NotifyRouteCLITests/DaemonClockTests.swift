import Foundation
import NotifyRouteTestSupport
import Synchronization
import Testing

/// The daemon owns the clock: what a rate limit or quiet hours held is summarised when the
/// period or the window ends, with no later event, on the real bus with dbusmock.
@Suite(
    "the daemon's clock", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct DaemonClockTests {
    static func config(_ yaml: String) throws -> URL {
        let url = try TestEnvironment.temporaryDirectory("clock-config").appendingPathComponent("config.yaml")
        try yaml.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    static func send(_ arguments: [String], _ daemon: DaemonProcess, bus: DBusMockDaemon) throws -> ProcessResult {
        try ProcessRunner.notifyRoute(["send", "--json"] + arguments, environment: daemon.environment.merging(bus.environment) { $1 })
    }

    /// Polls the mock until a Notify call's summary starts with `prefix`; when it was first seen.
    static func waitForNotify(_ bus: DBusMockDaemon, startingWith prefix: String, within limit: Duration) throws -> (Date, DBusMockDaemon.NotifyCall)? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let call = try bus.notifyCalls().first(where: { $0.summary.hasPrefix(prefix) }) { return (Date(), call) }
            usleep(20_000)
        }
        return nil
    }

    @Test func aRatePeriodsSummaryGoesOutWhenItEndsWithNoLaterEvent() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], rate: { max: 1, per: 2s } } ]
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }

        let before = Date()
        let first = try Self.send(["-s", "backup", "first"], daemon, bus: bus)
        #expect(first.standardOutput.contains("\"via\":\"daemon\""), "\(first.standardOutput) \(first.standardError)")
        let opened = Date()  // the period began between `before` and now
        for title in ["second", "third"] {
            let held = try Self.send(["-s", "backup", title], daemon, bus: bus)
            #expect(held.standardOutput.contains("\"reason\":\"rate-limited\""), "\(held.standardOutput)")
        }
        let seen = try #require(try Self.waitForNotify(bus, startingWith: "+2 more", within: .seconds(6)), "no summary: \(daemon.log)")
        #expect(seen.1.summary == "+2 more from backup")
        #expect(seen.1.body == "held over the rate limit: backup 2")
        // Not before the period ends, and within 1 s of its end.
        #expect(seen.0.timeIntervalSince(before) >= 2.0)
        #expect(seen.0.timeIntervalSince(opened) <= 3.0, "\(seen.0.timeIntervalSince(opened)) s after the period began")
        #expect(try bus.notifyCalls().map(\.summary) == ["first", "+2 more from backup"])

        // Summarised once: the next event of a new period carries nothing.
        let next = try Self.send(["-s", "backup", "fourth"], daemon, bus: bus)
        #expect(!next.standardOutput.contains("a summary of"), "\(next.standardOutput)")
        #expect(try bus.notifyCalls().map(\.summary) == ["first", "+2 more from backup", "fourth"])
    }

    @Test func quietHoursSummaryGoesOutWhenTheyEnd() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        // Quiet hours that end at the start of a coming minute (UTC), at least 5 s from now.
        let now = Date().timeIntervalSince1970
        var end = ((now / 60).rounded(.down) + 1) * 60
        if end - now < 5 { end += 60 }
        func clock(_ seconds: Double) -> String {
            let minutes = Int(seconds / 60) % (24 * 60)
            return String(format: "%02d:%02d", minutes / 60, minutes % 60)
        }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes:
              - to: [desktop]
                quiet: { hours: ["\(clock(end - 600))-\(clock(end))"], timezone: UTC, breakthrough: critical }
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let held = try Self.send(["-s", "backup", "-l", "error", "Backup failed"], daemon, bus: bus)
        #expect(held.standardOutput.contains("\"reason\":\"quiet-hours\""), "\(held.standardOutput) \(held.standardError)")
        #expect(held.standardOutput.contains("\"via\":\"daemon\""))

        let seen = try #require(try Self.waitForNotify(bus, startingWith: "+1 more", within: .seconds(75)), "no summary: \(daemon.log)")
        #expect(seen.1.summary == "+1 more from backup")
        #expect(seen.1.body == "held during quiet hours: backup 1")
        let late = seen.0.timeIntervalSince1970 - end
        #expect(late >= 0 && late <= 1.0, "sent \(late) s after quiet hours ended")
    }

    @Test func whatAKilledDaemonHeldIsSummarisedByTheNextOne() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], rate: { max: 1, per: 3s } } ]
            """)
        let first = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { first.stop() }
        for title in ["first", "second", "third"] {
            #expect(try Self.send(["-s", "backup", title], first, bus: bus).standardOutput.contains("\"via\":\"daemon\""))
        }
        first.signal(SIGKILL)
        #expect(first.waitForExit() != nil)

        // The next daemon, on the same state, sends what the killed one held once the period ends.
        let second = try DaemonProcess.start(config: config, environment: bus.environment, runtime: first.runtimeDirectory)
        defer { second.stop() }
        let seen = try #require(try Self.waitForNotify(bus, startingWith: "+2 more", within: .seconds(6)), "no summary: \(second.log)")
        #expect(seen.1.summary == "+2 more from backup")
        // And the dedup window and the period it kept: one more event is held, not shown.
        let after = try Self.send(["-s", "backup", "fourth"], second, bus: bus)
        #expect(try bus.notifyCalls().map(\.summary) == ["first", "+2 more from backup", "fourth"], "\(after.standardOutput)")
    }

    @Test func whatAKilledDaemonHeldGoesWithTheNextLocalSend() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], rate: { max: 1, per: 2s }, dedup: { window: 1h } } ]
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        #expect(try Self.send(["-s", "backup", "-k", "disk", "Disk full"], daemon, bus: bus).standardOutput.contains("\"via\":\"daemon\""))
        for title in ["second", "third"] {
            #expect(try Self.send(["-s", "backup", title], daemon, bus: bus).standardOutput.contains("\"reason\":\"rate-limited\""))
        }
        daemon.signal(SIGKILL)
        #expect(daemon.waitForExit() != nil)
        usleep(2_100_000)
        // No daemon: the local send reads the same state, so it sees the dedup window...
        let duplicate = try Self.send(["-s", "backup", "-k", "disk", "Disk full"], daemon, bus: bus)
        #expect(duplicate.standardOutput.contains("\"via\":\"local\""))
        #expect(duplicate.standardOutput.contains("\"reason\":\"duplicate\""), "\(duplicate.standardOutput)")
        // ...and the held events, whose summary goes first with the next event shown.
        let next = try Self.send(["-s", "web", "later"], daemon, bus: bus)
        #expect(next.standardOutput.contains("delivered first: a summary of 2 events held over the rate limit"), "\(next.standardOutput)")
        #expect(try bus.notifyCalls().map(\.summary).contains("+2 more from backup"))
    }

    /// A summary that its sink did not take stays held: the next summary counts it.
    @Test func aSummaryTheSinkRefusedIsNotLost() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let directory = try TestEnvironment.temporaryDirectory("clock-refused")
        let config = directory.appendingPathComponent("c.yaml")
        try """
            sinks: { desktop: { kind: desktop, deadline: 2s } }
            routes: [ { to: [desktop], rate: { max: 1, per: 1m } } ]
            """.write(to: config, atomically: true, encoding: .utf8)
        var environment = bus.environment
        environment["XDG_RUNTIME_DIR"] = directory.path
        func send(_ title: String, at seconds: Int) throws -> ProcessResult {
            environment["NOTIFY_ROUTE_TEST_NOW"] = String(1_800_000_000 + seconds)
            return try ProcessRunner.notifyRoute(["send", "--no-daemon", "--config", config.path, "--json", "-s", "backup", title],
                                                 environment: environment)
        }
        #expect(try send("first", at: 0).standardOutput.contains("\"status\":\"delivered\""))
        #expect(try send("held", at: 1).standardOutput.contains("\"reason\":\"rate-limited\""))
        bus.stopDaemon()
        let refused = try send("while the desktop is gone", at: 61)
        #expect(refused.status != 0)
        #expect(refused.standardOutput.contains("they stay held"), "\(refused.standardOutput)")
        try bus.startDaemon()
        #expect(try send("held too", at: 62).standardOutput.contains("\"reason\":\"rate-limited\""))
        let later = try send("an hour later", at: 3_600)
        #expect(later.standardOutput.contains("delivered first: a summary of 2 events held"), "\(later.standardOutput)")
        #expect(try bus.notifyCalls().map(\.summary) == ["+2 more from backup", "an hour later"])
    }

    /// 100,000 identical events from 8 clients: the first shows, one update tells a storm
    /// is on, and one more after it ends shows the exact total.
    @Test func aStormEndsShowingItsExactTotalInAtMostThreeNotifyCalls() throws {
        let bus = try DBusMockDaemon.start()
        defer { bus.shutdown() }
        let config = try Self.config("""
            sinks: { desktop: { kind: desktop, deadline: 5s } }
            routes: [ { to: [desktop], dedup: { window: 1h } } ]
            """)
        let daemon = try DaemonProcess.start(config: config, environment: bus.environment)
        defer { daemon.stop() }
        let clients = 8, each = 12_500
        let line = #"{"request":"send","event":{"title":"Database down","source":"db","level":"error"}}"# + "\n"
        let failures = Mutex(0)
        let path = daemon.socketPath
        DispatchQueue.concurrentPerform(iterations: clients) { _ in
            do {
                let answered = try Self.pipeline(line, count: each, to: path)
                failures.withLock { $0 += each - answered }
            } catch {
                failures.withLock { $0 += each }
            }
        }
        #expect(failures.withLock { $0 } == 0, "sends without an exit-0 answer")
        let last = try bus.notifyCalls().map(\.summary).suffix(3)
        let total = try #require(try Self.waitForNotify(bus, containing: "(×100000)", within: .seconds(10)), "last calls so far: \(last)")
        let calls = try bus.notifyCalls()
        #expect(calls.count <= 3, "\(calls.map(\.summary))")
        #expect(calls.last?.summary == total.1.summary)
        #expect(calls.first?.summary == "Database down")
        #expect(calls.dropFirst().allSatisfy { $0.replacesID != 0 }, "every later call updates the first notification")
    }

    static func waitForNotify(_ bus: DBusMockDaemon, containing text: String, within limit: Duration) throws -> (Date, DBusMockDaemon.NotifyCall)? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let call = try bus.notifyCalls().last(where: { $0.summary.contains(text) }) { return (Date(), call) }
            usleep(50_000)
        }
        return nil
    }

    /// Sends `count` copies of a request line on one connection, up to 256 in flight;
    /// returns how many answers said exit 0.
    static func pipeline(_ line: String, count: Int, to path: String) throws -> Int {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw PipelineError(description: "connect \(path): \(errno)") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func send(_ bytes: [UInt8]) throws {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard written > 0 else { throw PipelineError(description: "write: \(errno)") }
                offset += written
            }
        }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        /// Reads one answer line; whether it says exit 0.
        func answer() throws -> Bool {
            while true {
                if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let text = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    return text.contains(#""exit":0"#)
                }
                let read = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                guard read > 0 else { throw PipelineError(description: "the daemon hung up (\(errno))") }
                pending += buffer[..<read]
            }
        }
        try send(Array(#"{"hello":"notify-route","version":1}"#.utf8) + [UInt8(ascii: "\n")])
        _ = try answer()
        let request = Array(line.utf8)
        var sent = 0, answered = 0, succeeded = 0
        while answered < count {
            var batch: [UInt8] = []
            while sent < count && sent - answered < 256 {
                batch += request
                sent += 1
            }
            if !batch.isEmpty { try send(batch) }
            if try answer() { succeeded += 1 }
            answered += 1
        }
        return succeeded
    }

    struct PipelineError: Error, CustomStringConvertible {
        var description: String
    }
}
