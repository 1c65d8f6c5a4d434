import Foundation
import NotifyRoute
@testable import NotifyRouteTerminal
import NotifyRouteTestSupport
import Testing

/// A progress value in the banner's layout, without a terminal.
@Suite struct ProgressLayoutTests {
    func event(_ title: String, progress: Int?, body: String? = nil, actions: [NotificationAction] = []) -> ResolvedEvent {
        ResolvedEvent(title: title, body: body, level: .info, actions: actions, progress: progress)
    }

    @Test func theBarIsFilledToTheNearestCell() {
        #expect(BannerRenderer.progressBar(0, width: 10) == "░░░░░░░░░░   0%")
        #expect(BannerRenderer.progressBar(40, width: 10) == "████░░░░░░  40%")
        #expect(BannerRenderer.progressBar(45, width: 10) == "█████░░░░░  45%")
        #expect(BannerRenderer.progressBar(100, width: 20) == String(repeating: "█", count: 20) + " 100%")
    }

    @Test func aWideBannerDrawsTheBarRightOfTheTitle() {
        let lines = BannerRenderer.lines(BannerContent(event("Copying", progress: 40, body: "3 of 8 files")), columns: 80, compact: false)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix(" ℹ Copying "))
        #expect(lines[0].hasSuffix("████████░░░░░░░░░░░░  40%"))
        #expect(DisplayWidth.of(lines[0]) == 79)
        #expect(lines[1] == "   3 of 8 files")
    }

    @Test func narrowerTheBarShrinksToThePercentageThenTheActionsGo() {
        let title = String(repeating: "T", count: 30)
        let actions = [NotificationAction(id: "ack", label: "Acknowledge"), NotificationAction(id: "snooze", label: "Snooze")]
        let content = BannerContent(event(title, progress: 50, actions: actions))
        func row(_ columns: Int) -> String { BannerRenderer.lines(content, columns: columns, compact: false)[0] }
        // Wide: a 20-cell bar and the hints; the title gives way, down to 20 columns of its own.
        #expect(row(80).hasSuffix("…  ██████████░░░░░░░░░░  50%  [Acknowledge] [Snooze]"), "\(row(80))")
        // The title keeps its first 20 columns: a 10-cell bar, then the percentage alone.
        #expect(row(70).hasSuffix("█████░░░░░  50%  [Acknowledge] [Snooze]"), "\(row(70))")
        #expect(row(60).hasSuffix("…  50%  [Acknowledge] [Snooze]") && !row(60).contains("█"), "\(row(60))")
        // Narrower still (compact: never): the hints go, the percentage stays.
        #expect(row(40) == " ℹ " + title + "   50%", "right-aligned as the hints are: \(row(40))")
        for columns in [80, 70, 60, 40] { #expect(DisplayWidth.of(row(columns)) <= columns - 1) }
    }

    @Test func compactAndLineStylesShowThePercentage() {
        let content = BannerContent(event("Copying", progress: 70, body: "big.iso"))
        #expect(BannerRenderer.lines(content, columns: 40, compact: true) == [" ℹ Copying 70% — big.iso"])
        #expect(TerminalLine.render(event("Copying", progress: 70), color: false) == "[info] Copying [70%]")
        #expect(TerminalLine.render(event("Copying", progress: nil), color: false) == "[info] Copying")
    }
}

extension BannerTerminalTests {
    /// The bar in a real terminal (tmux): wide, and compact in a narrow one.
    @Suite struct ProgressBannerScreenTests {
        @Test func theBannerShowsTheBar() throws {
            let fixture = try BannerFixture()
            let session = try TmuxSession(command: try fixture.script("""
                "$B" send --config "$C" --progress 30 -t 30s Copying '3 of 8 files'
                echo $? > "$D/status"
                """))
            let screen = try session.waitForScreen { $0.contains("30%") }
            #expect(screen.rows[0].hasPrefix(" ℹ Copying"), "\(screen.rows[0].debugDescription)")
            #expect(screen.rows[0].hasSuffix("██████░░░░░░░░░░░░░░  30%"), "\(screen.rows[0].debugDescription)")
            #expect(screen.rows[1].hasPrefix("   3 of 8 files"))
        }

        @Test func aNarrowTerminalShowsThePercentageInTheCompactRow() throws {
            let fixture = try BannerFixture()
            let session = try TmuxSession(command: try fixture.script("""
                "$B" send --config "$C" --progress 55 -t 30s Copying big.iso
                echo $? > "$D/status"
                """), width: 40)
            let screen = try session.waitForScreen { $0.contains("55%") }
            #expect(screen.rows[0].hasPrefix(" ℹ Copying 55% — big.iso"), "\(screen.rows[0].debugDescription)")
        }
    }
}
