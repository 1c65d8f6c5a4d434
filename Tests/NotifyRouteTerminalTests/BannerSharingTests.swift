import Foundation
import NotifyRouteTestSupport
import Testing

/// Banners of several `notify-route send` processes on one terminal, and of processes
/// that were killed or stopped with a banner up, read back from a real terminal (tmux).
extension BannerTerminalTests {
@Suite struct BannerSharingTests {
    @Test func twoProcessesEachTakeDownOnlyTheirOwnBanner() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            "$B" send --config "$C" -t 1s First 'first body' &
            sleep 0.3
            "$B" send --config "$C" -l warning -t 3s Second 'second body' &
            wait
            echo done > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        let cursorBefore = try session.cursor()
        try session.sendKeys("Enter")

        // Both: the newer on top, the older under it, the output under both.
        var rows = try session.waitForScreen { $0.contains("Second") && $0.contains("First") }.rows
        #expect(Array(rows[0...8]) == [" ⚠ Second", "   second body", " ℹ First", "   first body"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (4, 23))
        #expect(try session.cursor() == (cursorBefore.x, cursorBefore.y + 4))

        // The first goes at its timeout, and only it: the newer stays whole on top.
        rows = try session.waitForScreen { !$0.contains("First") }.rows
        #expect(Array(rows[0...6]) == [" ⚠ Second", "   second body"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        #expect(try session.cursor() == (cursorBefore.x, cursorBefore.y + 2))
        usleep(500_000)
        rows = try session.capture().rows
        #expect(Array(rows[0...6]) == [" ⚠ Second", "   second body"] + earlierOutput, "\(rows)")

        // Then the second: nothing stale left, the terminal exactly as before.
        #expect(fixture.waitForFile("status") == "done")
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.scrollRegion() == (0, 23))
        #expect(try session.cursor() == cursorBefore)
    }

    @Test func theNextBannerRemovesOneLeftByAKilledProcess() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            "$B" send --config "$C" -l error -t never Stale 'killed with its banner up' & echo $! > "$D/pid"
            wait $!
            echo $? > "$D/killed"
            read go
            "$B" send --config "$C" -t 600ms Next 'the banner after it'
            echo $? > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")
        try session.waitForScreen { $0.contains("Stale") }
        let pid = try #require(fixture.waitForFile("pid").flatMap { pid_t($0) })
        #expect(kill(pid, SIGKILL) == 0)
        #expect(fixture.waitForFile("killed") == "137")
        // Killed: nothing could give the rows back, the scroll region still holds them.
        #expect(try session.capture().rows[0] == " ✖ Stale")
        #expect(try session.scrollRegion() == (2, 23))
        try session.sendKeys("Enter")

        // The next banner takes the dead one's rows away and shows alone.
        let rows = try session.waitForScreen { $0.contains("Next") }.rows
        #expect(Array(rows[0...6]) == [" ℹ Next", "   the banner after it"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        #expect(fixture.waitForFile("status") == "0")
        try expectRestored(session, to: before, but: "Killed")
    }

    @Test func aStoppedProcessesBannerMakesWayAndComesBackOnContinue() throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(command: try fixture.script("""
            read go
            "$B" send --config "$C" -l error -t never Paused 'stopped with its banner up' & P=$!
            echo $P > "$D/pid"
            read go
            "$B" send --config "$C" -t 600ms Next 'a banner meanwhile'
            echo $? > "$D/next"
            wait $P
            echo $? > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        try session.sendKeys("Enter")
        try session.waitForScreen { $0.contains("Paused") }
        let pid = try #require(fixture.waitForFile("pid").flatMap { pid_t($0) })
        #expect(kill(pid, SIGSTOP) == 0)
        #expect(Self.waitUntilStopped(pid))
        try session.sendKeys("Enter")

        // SIGSTOP cannot be caught: the next banner takes the stopped one's rows away.
        var rows = try session.waitForScreen { $0.contains("Next") }.rows
        #expect(Array(rows[0...6]) == [" ℹ Next", "   a banner meanwhile"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        #expect(fixture.waitForFile("next") == "0")
        let after = try session.capture(attributes: true)
        #expect(after == before, "\(after.rows)")
        #expect(try session.scrollRegion() == (0, 23))

        // Continued, it draws its banner again, on top, with its scroll region.
        #expect(kill(pid, SIGCONT) == 0)
        rows = try session.waitForScreen { $0.contains("Paused") }.rows
        #expect(Array(rows[0...6]) == [" ✖ Paused", "   stopped with its banner up"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        #expect(kill(pid, SIGTERM) == 0)
        #expect(fixture.waitForFile("status") == "143")
        try expectRestored(session, to: before, but: "Terminated")
    }

    @Test func ctrlZGivesTheTerminalBackAndContinueDrawsAgain() throws {
        let fixture = try BannerFixture()
        // Job control on, as in an interactive shell: the banner runs as the foreground
        // job, so Ctrl-Z reaches it and the shell goes on once it stops; `fg` continues it.
        let session = try TmuxSession(command: try fixture.script("""
            set -m
            read go
            "$B" send --config "$C" -l error -t never Sticky 'until Ctrl-Z'
            echo $? > "$D/stopped"
            jobs -p > "$D/pid"
            read go
            fg
            echo $? > "$D/status"
            """))
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true).rows
        try session.sendKeys("Enter")
        try session.waitForScreen { $0.contains("Sticky") }
        try session.sendKeys("C-z")

        // Stopped by SIGTSTP (148): the rows were given back before it stopped, so the
        // shell's report of the stopped job follows the output on a whole screen.
        #expect(fixture.waitForFile("stopped") == "148")
        var rows = try session.capture(attributes: true).rows
        #expect(Array(rows[0...4]) == Array(before[0...4]), "\(rows)")
        #expect(rows[5].contains("Stopped"), "\(rows)")
        #expect(try session.scrollRegion() == (0, 23))

        try session.sendKeys("Enter")  // fg: SIGCONT, and the job is in the foreground again
        // The banner's own row: `fg` echoes the command line, which names "Sticky" too.
        rows = try session.waitForScreen { $0.rows.first == " ✖ Sticky" }.rows
        #expect(Array(rows[0...6]) == [" ✖ Sticky", "   until Ctrl-Z"] + earlierOutput, "\(rows)")
        #expect(try session.scrollRegion() == (2, 23))
        // (Not ^C: a script's shell dies with a job that dies of SIGINT.)
        let pid = try #require(fixture.waitForFile("pid").flatMap { pid_t($0) })
        #expect(kill(pid, SIGTERM) == 0)
        #expect(fixture.waitForFile("status") == "143")
        rows = try session.capture(attributes: true).rows
        #expect(Array(rows[0...4]) == Array(before[0...4]), "\(rows)")
        #expect(try session.scrollRegion() == (0, 23))
    }

    /// Polls `/proc/PID/stat` until the process shows as stopped (state T).
    static func waitUntilStopped(_ pid: pid_t, timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
               let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].dropFirst().first == "T" {
                return true
            }
            usleep(10_000)
        }
        return false
    }
}
}
