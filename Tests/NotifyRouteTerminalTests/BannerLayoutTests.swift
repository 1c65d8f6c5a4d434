import NotifyRoute
@testable import NotifyRouteTerminal
import NotifyRouteTestSupport
import Testing

/// The banner's pieces without a terminal: measuring, laying out, colours, sequences.
@Suite struct BannerLayoutTests {
    // MARK: Display width

    @Test func widthsOfASCIIWideAndZeroWidthText() {
        #expect(DisplayWidth.of("Disk full") == 9)
        #expect(DisplayWidth.of("ディスク") == 8)
        #expect(DisplayWidth.of("磁盘已满") == 8)
        #expect(DisplayWidth.of("디스크") == 6)
        #expect(DisplayWidth.of("ＡＢ") == 4)  // fullwidth Latin
        #expect(DisplayWidth.of("🔥") == 2)
        #expect(DisplayWidth.of("e\u{301}") == 1)  // combining acute
        #expect(DisplayWidth.of("a\u{200B}b") == 2)  // zero-width space
        #expect(DisplayWidth.of("⚠✔✖‼ℹ•·") == 7)  // the level glyphs: one column each
    }

    @Test func truncatesByColumnsNotCharacters() {
        #expect(DisplayWidth.truncate("ディスク満杯", to: 7) == "ディス…")
        #expect(DisplayWidth.of(DisplayWidth.truncate("ディスク満杯", to: 8)) <= 8)
        #expect(DisplayWidth.truncate("short", to: 10) == "short")
        #expect(DisplayWidth.truncate("abcdef", to: 4) == "abc…")
        #expect(DisplayWidth.truncate("🔥🔥🔥", to: 4) == "🔥…")
        #expect(DisplayWidth.truncate("e\u{301}e\u{301}e\u{301}", to: 2) == "e\u{301}…")  // never splits a cluster
    }

    // MARK: Layout

    func event(_ title: String, body: String? = nil, level: Level = .warning, actions: [NotificationAction] = []) -> ResolvedEvent {
        ResolvedEvent(title: title, body: body, level: level, actions: actions)
    }

    @Test func fullStyleHasTitleRowAndBodyRow() {
        let lines = BannerRenderer.lines(BannerContent(event("Disk", body: "90% full\non /var")), columns: 80, compact: false)
        #expect(lines == [" ⚠ Disk", "   90% full ⏎ on /var"])
    }

    @Test func oneRowWithoutBody() {
        #expect(BannerRenderer.lines(BannerContent(event("Disk")), columns: 80, compact: false).count == 1)
    }

    @Test func actionHintsSitOnTheRight() {
        let content = BannerContent(event("Deploy", actions: [.init(id: "ok", label: "Approve"), .init(id: "no", label: "Reject")]))
        let first = BannerRenderer.lines(content, columns: 80, compact: false)[0]
        #expect(first.hasPrefix(" ⚠ Deploy"))
        #expect(first.hasSuffix("[Approve] [Reject]"))
        #expect(DisplayWidth.of(first) == 79)
    }

    @Test func aLongTitleIsCutForHintsDownToTwentyColumns() {
        let title = String(repeating: "t", count: 70)
        let one = BannerRenderer.lines(BannerContent(event(title, actions: [.init(id: "ok", label: "Approve")])), columns: 80, compact: false)[0]
        #expect(one.contains("t…  [Approve]"))
        #expect(DisplayWidth.of(one) == 79)

        let labels = (1...6).map { NotificationAction(id: "a\($0)", label: "Action number \($0)") }
        let many = BannerRenderer.lines(BannerContent(event(title + title, actions: labels)), columns: 80, compact: false)[0]
        #expect(!many.contains("[Action"))
        #expect(many.hasSuffix("t…"))
        #expect(DisplayWidth.of(many) == 79)
    }

    @Test func compactIsOneRowWithAnEllipsis() {
        let content = BannerContent(event("Disk almost full on the backup volume", body: "90% used on /srv/backup, 12 GB left"))
        let lines = BannerRenderer.lines(content, columns: 50, compact: true)
        #expect(lines.count == 1)
        #expect(lines[0].hasPrefix(" ⚠ Disk almost full on the backup volume — 90%"))
        #expect(lines[0].hasSuffix("…"))
        #expect(DisplayWidth.of(lines[0]) == 49)
    }

    @Test func wideTextFitsItsColumns() {
        for columns in [20, 33, 50, 61, 80] {
            let content = BannerContent(event("ディスクがいっぱいです🔥🔥", body: "磁盘已满，请清理备份目录中的旧文件"))
            for compact in [true, false] {
                for line in BannerRenderer.lines(content, columns: columns, compact: compact) {
                    #expect(DisplayWidth.of(line) <= columns - 1, "\(columns) \(compact): \(line)")
                }
            }
        }
    }

    @Test func compactWhenNarrowOrShort() {
        #expect(BannerRenderer.isCompact(columns: 59, rows: 24, mode: .auto))
        #expect(BannerRenderer.isCompact(columns: 80, rows: 9, mode: .auto))
        #expect(!BannerRenderer.isCompact(columns: 60, rows: 10, mode: .auto))
        #expect(BannerRenderer.isCompact(columns: 200, rows: 50, mode: .always))
        #expect(!BannerRenderer.isCompact(columns: 20, rows: 5, mode: .never))
    }

    @Test func duplicateCountAndQueueLength() {
        let lines = BannerRenderer.lines(BannerContent(event("Disk"), count: 3), columns: 80, compact: false, waiting: 2)
        #expect(lines[0].hasPrefix(" ⚠ Disk (×3)"))
        #expect(lines[0].hasSuffix("+2 waiting"))
    }

    // MARK: Inert text

    @Test func everyCorpusStringIsInert() {
        for item in InjectionCorpus.cases {
            let content = BannerContent(event("T" + item.text + "end", body: item.text + "\n" + item.text))
            for text in [content.title, content.body] {
                let bad = text.unicodeScalars.filter {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                        || (0x2066...0x2069).contains($0.value) || [0x200E, 0x200F, 0x061C].contains($0.value)
                }
                #expect(bad.isEmpty, "\(item.name): \(text.debugDescription)")
            }
            #expect(content.title.hasPrefix("T") && content.title.hasSuffix("end"), "\(item.name): \(content.title.debugDescription)")
            for line in BannerRenderer.lines(content, columns: 80, compact: false) {
                #expect(!line.contains("\u{1B}"))
            }
        }
        #expect(InjectionCorpus.cases.count >= 20)
    }

    // MARK: Colour

    @Test func paletteFollowsTheEnvironment() {
        #expect(BannerPalette.detect(mode: .auto, environment: ["TERM": "xterm"]) == .ansi16)
        #expect(BannerPalette.detect(mode: .auto, environment: ["TERM": "xterm-256color"]) == .ansi256)
        #expect(BannerPalette.detect(mode: .auto, environment: ["TERM": "xterm", "COLORTERM": "truecolor"]) == .trueColor)
        #expect(BannerPalette.detect(mode: .auto, environment: ["TERM": "xterm", "COLORTERM": "24bit"]) == .trueColor)
        #expect(BannerPalette.detect(mode: .auto, environment: ["COLORTERM": "truecolor", "NO_COLOR": "1"]) == .monochrome)
        #expect(BannerPalette.detect(mode: .auto, environment: ["TERM": "xterm", "NO_COLOR": ""]) == .ansi16)  // empty means unset
        #expect(BannerPalette.detect(mode: .always, environment: ["NO_COLOR": "1"]) == .ansi16)
        #expect(BannerPalette.detect(mode: .never, environment: ["COLORTERM": "truecolor"]) == .monochrome)
    }

    @Test func sgrPerPalette() {
        #expect(BannerPalette.ansi16.sgr(.yellow, bold: false) == "30;43")
        #expect(BannerPalette.ansi16.sgr(.whiteOnRed, bold: true) == "1;97;41")
        #expect(BannerPalette.ansi256.sgr(.red, bold: false) == "38;5;231;48;5;124")
        #expect(BannerPalette.trueColor.sgr(.blue, bold: false) == "38;2;255;255;255;48;2;29;91;196")
        #expect(BannerPalette.monochrome.sgr(.red, bold: false) == "7")
    }

    // MARK: Sequences

    @Test func reservingPushesOutputDownAndReleasingPullsItBack() {
        let show = BannerScreen.transition(from: 0, to: ["A", "B"], rows: 24)
        #expect(show == "\u{1B}D\u{1B}D\u{1B}[2A\u{1B}7\u{1B}[r\u{1B}[1;1H\u{1B}[2L\u{1B}[3;24r\u{1B}[?7l\u{1B}[1;1HA\u{1B}[2;1HB\u{1B}[?7h\u{1B}8\u{1B}[2B")
        let hide = BannerScreen.transition(from: 2, to: [], rows: 24)
        #expect(hide == "\u{1B}7\u{1B}[r\u{1B}[1;1H\u{1B}[2M\u{1B}8\u{1B}[2A")
        let redraw = BannerScreen.transition(from: 1, to: ["C"], rows: 24)
        #expect(redraw == "\u{1B}7\u{1B}[?7l\u{1B}[1;1HC\u{1B}[?7h\u{1B}8")
        let shrink = BannerScreen.transition(from: 2, to: ["C"], rows: 24, resetRegion: true)
        #expect(shrink == "\u{1B}7\u{1B}[r\u{1B}[2;1H\u{1B}[1M\u{1B}[2;24r\u{1B}[?7l\u{1B}[1;1HC\u{1B}[?7h\u{1B}8\u{1B}[1A")
    }

    @Test func twoOwnersEachChangeOnlyTheirOwnRows() {
        var stack = BannerStack(blocks: [])
        _ = stack.transition(owner: "a", to: ["A1", "A2"], rows: 24)
        // A newer banner goes on top; the scroll region covers both.
        let second = stack.transition(owner: "b", to: ["B"], rows: 24)
        #expect(second == "\u{1B}D\u{1B}[1A\u{1B}7\u{1B}[r\u{1B}[1;1H\u{1B}[1L\u{1B}[4;24r\u{1B}[?7l\u{1B}[1;1HB\u{1B}[?7h\u{1B}8\u{1B}[1B")
        #expect(stack.blocks == [.init(owner: "b", rows: 1), .init(owner: "a", rows: 2)])
        // The older one redraws and goes where it is now, below the newer one.
        let redraw = stack.transition(owner: "a", to: ["A3", "A4"], rows: 24)
        #expect(redraw == "\u{1B}7\u{1B}[?7l\u{1B}[2;1HA3\u{1B}[3;1HA4\u{1B}[?7h\u{1B}8")
        let gone = stack.transition(owner: "a", to: [], rows: 24)
        #expect(gone == "\u{1B}7\u{1B}[r\u{1B}[2;1H\u{1B}[2M\u{1B}[2;24r\u{1B}8\u{1B}[2A")
        #expect(stack.blocks == [.init(owner: "b", rows: 1)])
    }

    @Test func rowsOfOwnersThatCannotActGoWithTheNextChange() {
        var stack = BannerStack(blocks: [.init(owner: "dead", rows: 2), .init(owner: "live", rows: 1)])
        let shown = stack.transition(owner: "new", to: ["N"], removing: ["dead"], rows: 24)
        // Net one row fewer: no index to make room. The dead rows go before the new row
        // comes, so nothing at the bottom of the screen is pushed off in between.
        #expect(shown == "\u{1B}7\u{1B}[r\u{1B}[1;1H\u{1B}[2M\u{1B}[1;1H\u{1B}[1L\u{1B}[3;24r\u{1B}[?7l\u{1B}[1;1HN\u{1B}[?7h\u{1B}8\u{1B}[1A")
        #expect(stack.blocks == [.init(owner: "new", rows: 1), .init(owner: "live", rows: 1)])
        // One row always stays for the output.
        var full = BannerStack(blocks: [.init(owner: "other", rows: 3)])
        _ = full.transition(owner: "me", to: ["1", "2"], rows: 4)
        #expect(full.blocks == [.init(owner: "other", rows: 3)])
    }

    // MARK: The sink

    @Test func bannerOptionsAndCapabilities() throws {
        let options = SinkOptions(sinkName: "tty", kind: "terminal", ["style": "banner", "policy": "queue", "compact": "always", "device": "/dev/pts/9"])
        let sink = try #require(try TerminalSink.plugin.makeSink(options) as? TerminalSink)
        #expect(sink.style == .banner && sink.policy == .queue && sink.compact == .always && sink.device == "/dev/pts/9")
        #expect(sink.capabilities.canReplace && sink.capabilities.canClose && sink.capabilities.reportsInteractions)
        let line = TerminalSink(style: .line)
        #expect(!line.capabilities.canReplace && !line.capabilities.canClose)
        #expect(throws: ConfigError.self) {
            _ = try TerminalSink.plugin.makeSink(SinkOptions(sinkName: "tty", kind: "terminal", ["policy": "stack"]))
        }
        #expect(throws: ConfigError.self) {
            _ = try TerminalSink.plugin.makeSink(SinkOptions(sinkName: "tty", kind: "terminal", ["device": "pts/9"]))
        }
    }

    @Test func timeoutsFromTheEvent() {
        #expect(TerminalSink.bannerTimeout(ResolvedEvent(title: "t", timeout: .after(.milliseconds(300)))) == .milliseconds(300))
        #expect(TerminalSink.bannerTimeout(ResolvedEvent(title: "t", timeout: .never)) == nil)
        #expect(TerminalSink.bannerTimeout(ResolvedEvent(title: "t", level: .warning, timeout: .serverDefault)) == .seconds(8))
        #expect(TerminalSink.bannerTimeout(ResolvedEvent(title: "t", level: .critical, timeout: .serverDefault)) == nil)
    }

    @Test func withoutATerminalTheBannerIsALine() async throws {
        // A device that is not a terminal stands in for "no controlling terminal".
        let sink = TerminalSink(output: .standardError, color: .never, style: .banner, device: "/dev/null", environment: ["TERM": "xterm"])
        let receipt = try await sink.deliver(SinkDelivery(event: ResolvedEvent(title: "t"), sinkName: "tty"))
        #expect(receipt.notes == ["/dev/null is not a terminal: banner drawn as a line on stderr"])
        await sink.finish()  // nothing shows: returns at once
    }
}
