import Foundation
import NotifyRoute
import NotifyRouteTerminal
import NotifyRouteTestSupport
import Testing

/// The banner as a library user's long-running process sees it: one sink shared by
/// tasks, drawing on a tmux pane's terminal (`device:` is the pane's `/dev/pts/N`), read
/// back with `capture-pane`. Here several events reach one process, so replacement,
/// the queue and closing can be watched on a real screen.
extension BannerTerminalTests {
@Suite struct BannerLibraryTests {
    /// A pane that printed the five lines and then sits still.
    func pane(width: Int = 80) throws -> (TmuxSession, String, before: String) {
        let session = try TmuxSession(command: #"stty -echo; i=1; while [ $i -le 5 ]; do echo "line $i"; i=$((i+1)); done; sleep 60"#, width: width)
        try session.waitForScreen { $0.contains("line 5") }
        return (session, try session.paneTTY(), try session.capture(attributes: true))
    }

    func sink(_ tty: String, policy: TerminalSink.BannerPolicy = .oneAtATime) -> TerminalSink {
        TerminalSink(style: .banner, policy: policy, device: tty, environment: ["TERM": "xterm"])
    }

    func event(_ title: String, body: String? = nil, level: Level = .info, ms: Int?) -> ResolvedEvent {
        ResolvedEvent(title: title, body: body, level: level, timeout: ms.map { .after(.milliseconds($0)) } ?? .never)
    }

    /// Polls without holding a thread of the cooperative pool between captures.
    func screen(_ session: TmuxSession, timeout: Duration = .seconds(10), _ predicate: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        var screen = try session.capture()
        while !predicate(screen) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(15))
            screen = try session.capture()
        }
        return screen
    }

    @Test func replacementRedrawsInPlaceAndRestartsTheTimer() async throws {
        let (session, tty, before) = try pane()
        let sink = sink(tty)
        let started = ContinuousClock.now
        let first = try await sink.deliver(SinkDelivery(event: event("Build 1 of 2", body: "compiling", ms: 1_000), sinkName: "tty"))
        var rows = try await screen(session) { $0.contains("Build 1") }.rows
        #expect(Array(rows[0...2]) == [" ℹ Build 1 of 2", "   compiling", "line 1"])

        try await Task.sleep(until: started + .milliseconds(250))
        let handle = try #require(first.handle)
        let replaced = ContinuousClock.now
        let second = try await sink.deliver(SinkDelivery(
            event: event("Build 2 of 2", body: "linking", level: .success, ms: 1_000), sinkName: "tty", intent: .replace(handle)))
        #expect(second.handle == handle, "\(second.notes)")
        rows = try await screen(session) { $0.contains("Build 2") }.rows
        // In place: same rows, the output not pushed any further.
        #expect(Array(rows[0...6]) == [" ✔ Build 2 of 2", "   linking"] + earlierOutput)
        #expect(try session.capture(attributes: true).rows[0].contains("\u{1B}[42m"))  // green now

        // The timer restarted: it goes a full timeout after the replacement, later than the
        // first banner's own timeout would have taken it.
        await sink.finish()
        let gone = ContinuousClock.now
        #expect(gone - replaced >= .milliseconds(1_000), "\(gone - replaced)")
        #expect(gone - started >= .milliseconds(1_250))
        #expect(try session.capture(attributes: true) == before)
        print("banner replacement: gone \(gone - replaced) after the replacement, \(gone - started) after the first banner (timeouts 1s)")
    }

    @Test func oneAtATimeReplacesWithTheNewestAndHeightFollows() async throws {
        let (session, tty, before) = try pane()
        let sink = sink(tty)
        _ = try await sink.deliver(SinkDelivery(event: event("First", body: "two rows", ms: 2_000), sinkName: "tty"))
        _ = try await screen(session) { $0.contains("First") }
        // A different event, no replace key: it takes the banner's place and its height.
        // Long enough to be on screen when it is read back on a loaded machine.
        _ = try await sink.deliver(SinkDelivery(event: event("Second", level: .error, ms: 1_500), sinkName: "tty"))
        let rows = try await screen(session) { $0.contains("Second") }.rows
        #expect(Array(rows[0...5]) == [" ✖ Second"] + earlierOutput)
        await sink.finish()
        #expect(try session.capture(attributes: true) == before)
    }

    @Test func queuePolicyShowsBannersInTurn() async throws {
        let (session, tty, before) = try pane()
        let sink = sink(tty, policy: .queue)
        let started = ContinuousClock.now
        // Lifetimes long enough that a loaded machine still sees each banner in turn.
        let first = try await sink.deliver(SinkDelivery(event: event("One", ms: 1_500), sinkName: "tty"))
        let second = try await sink.deliver(SinkDelivery(event: event("Two", ms: 1_500), sinkName: "tty"))
        #expect(first.disposition == .delivered)
        #expect(second.disposition == .queued("waiting behind 1 banner(s)"), "\(first.notes) \(second.notes)")
        let one = try await screen(session) { $0.contains("One") }.rows[0]
        #expect(one.hasPrefix(" ℹ One") && one.hasSuffix("+1 waiting"))
        let two = try await screen(session) { $0.contains("Two") }.rows
        #expect(two[0] == " ℹ Two" && two[1] == "line 1")
        #expect(ContinuousClock.now - started >= .milliseconds(1_500))
        await sink.finish()
        #expect(ContinuousClock.now - started >= .milliseconds(3_000))
        #expect(try session.capture(attributes: true) == before)
    }

    @Test func closeTakesAStickyBannerDownAndReportsIt() async throws {
        let (session, tty, before) = try pane()
        let sink = sink(tty)
        let interactions = try #require(sink.interactions())
        let receipt = try await sink.deliver(SinkDelivery(event: event("Sticky", level: .critical, ms: nil), sinkName: "tty"))
        let handle = try #require(receipt.handle)
        _ = try await screen(session) { $0.contains("Sticky") }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try session.capture().contains("Sticky"))  // no timer
        _ = try await sink.close(SinkCloseRequest(sinkName: "tty", handle: handle, replaceKey: "k", deadline: .now + .seconds(2)))
        await sink.finish()
        #expect(try session.capture(attributes: true) == before)
        var seen: [NotificationInteraction] = []
        for await item in interactions where item.handle == handle {
            seen.append(item.interaction)
            if seen.count == 2 { break }
        }
        #expect(seen == [.shown, .dismissed(.closed)])
    }

    @Test func aRouterSharedByManyTasks() async throws {
        let (session, tty, before) = try pane()
        var config = RouterConfiguration()
        config.fallback = ["tty"]
        let router = try NotificationRouter(configuration: config, sinks: ["tty": sink(tty)])
        // One call from anywhere: twenty tasks at once, one banner at a time on screen.
        let reports = await withTaskGroup(of: DeliveryReport?.self) { group in
            for index in 1...20 {
                group.addTask { try? await router.send(NotificationEvent(title: "Job \(index) done", level: .success, timeout: .after(.milliseconds(400)))) }
            }
            return await group.reduce(into: [DeliveryReport]()) { if let report = $1 { $0.append(report) } }
        }
        #expect(reports.count == 20 && reports.allSatisfy { $0.summary == .delivered })
        let rows = try await screen(session) { $0.contains(" done") }.rows
        #expect(rows[0].hasPrefix(" ✔ Job ") && rows[1] == "line 1")
        await router.finish(within: .seconds(5))
        #expect(try session.capture(attributes: true) == before)
    }

    @Test func injectionCorpusRedrawnInPlaceStaysInert() async throws {
        let fixture = try BannerFixture()
        let session = try TmuxSession(
            command: #"stty -echo; i=1; while [ $i -le 5 ]; do echo "line $i"; i=$((i+1)); done; sleep 60"#,
            configuration: fixture.tmuxConfiguration)
        try session.waitForScreen { $0.contains("line 5") }
        let before = try session.capture(attributes: true)
        let title = try session.display("#{pane_title}")
        let sink = sink(try session.paneTTY())
        var handle: SinkHandle? = nil
        for (index, item) in InjectionCorpus.cases.enumerated() {
            let event = ResolvedEvent(title: "T\(index) \(item.text) end", body: "B \(item.text)\n\(item.text) E", level: .warning, timeout: .never)
            let receipt = try await sink.deliver(SinkDelivery(event: event, sinkName: "tty", intent: handle.map { .replace($0) } ?? .show))
            handle = receipt.handle
            let shown = try await screen(session) { $0.hasPrefix(" ⚠ T\(index) ") }
            let rows = shown.rows
            #expect(rows[0].hasPrefix(" ⚠ T\(index) ") && rows[0].hasSuffix(" end"), "\(item.name): \(rows[0].debugDescription)")
            #expect(Array(rows[2...6]) == earlierOutput, "\(item.name) \(receipt.notes)")
            // What tmux stored: no mark, override or separator reached it.
            #expect(InjectionCorpus.leftovers(in: shown).isEmpty, "\(item.name): \(rows[0].debugDescription)")
            if item.name == "line-paragraph-separators" {
                // Line breaks, as a newline is: tmux would drop the separators themselves.
                #expect(rows[0] == " ⚠ T\(index) one two three end")
                #expect(rows[1] == "   B one ⏎ two ⏎ three ⏎ one ⏎ two ⏎ three E")
            }
        }
        _ = try await sink.close(SinkCloseRequest(sinkName: "tty", handle: try #require(handle), replaceKey: "k", deadline: .now + .seconds(2)))
        await sink.finish()
        #expect(try session.capture(attributes: true) == before)
        #expect(try session.display("#{pane_title}") == title)
        #expect(try session.buffers().isEmpty)
        #expect(!fixture.exists("bell"))
        #expect(try session.scrollRegion() == (0, 23))
    }
}
}
