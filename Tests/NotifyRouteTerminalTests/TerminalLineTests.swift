import NotifyRoute
import NotifyRouteTerminal
import NotifyRouteTestSupport
import Testing

@Suite struct TerminalLineTests {
    @Test func plainLine() {
        let event = ResolvedEvent(title: "Disk", body: "90% full\non /var", level: .warning)
        #expect(TerminalLine.render(event, color: false) == "[warning] Disk: 90% full ⏎ on /var")
    }

    @Test func tintedPerLevel() {
        let expected: [Level: String] = [
            .debug: "2", .info: "34", .notice: "36", .success: "32", .warning: "33", .error: "31", .critical: "97;41",
        ]
        for level in Level.allCases {
            let line = TerminalLine.render(ResolvedEvent(title: "t", level: level), color: true)
            #expect(line == "\u{1B}[\(expected[level]!)m\(TerminalLine.glyph(level)) \(level.rawValue)\u{1B}[0m  t")
        }
    }

    @Test func duplicateCountShows() {
        #expect(TerminalLine.render(ResolvedEvent(title: "Disk full"), color: false, count: 3) == "[info] Disk full (×3)")
    }

    @Test func sanitisesOnceMoreBeforeWriting() {
        // A ResolvedEvent built by hand (not through the router) is still made inert.
        let event = ResolvedEvent(title: "a\u{1B}[2Jb", body: "c\u{1B}]52;c;eA==\u{07}d")
        #expect(TerminalLine.render(event, color: false) == "[info] ab: cd")
    }

    @Test func removesWhatTheBannerRemoves() {
        for item in InjectionCorpus.cases {
            let line = TerminalLine.render(ResolvedEvent(title: "T \(item.text) end", body: "\(item.text)\n\(item.text)"), color: false)
            #expect(InjectionCorpus.leftovers(in: line).isEmpty, "\(item.name): \(line.debugDescription)")
        }
        let event = ResolvedEvent(title: "a\u{2028}b\u{200F}c", body: "d\u{2029}e\u{200E}f\u{061C}g")
        #expect(TerminalLine.render(event, color: false) == "[info] a bc: d ⏎ efg")
        let hidden = ResolvedEvent(title: "pay\u{200B}pal\u{E0041}", body: "x\u{2060}y\u{FEFF}z 👨\u{200D}👩")
        #expect(TerminalLine.render(hidden, color: false) == "[info] paypal: xyz 👨\u{200D}👩", "the joiners emoji need stay")
    }

    @Test func pluginRejectsUnknownOptionValues() {
        let options = SinkOptions(sinkName: "tty", kind: "terminal", ["output": "printer"])
        #expect(throws: ConfigError.self) { _ = try TerminalSink.plugin.makeSink(options) }
    }

    @Test func availabilityOfAClosedControllingTerminal() async {
        // Under `swift test` in CI there is no controlling terminal; on a developer's
        // terminal there is one. Either way the answer must say which.
        let availability = await TerminalSink(output: .controllingTerminal).availability()
        switch availability {
        case .available: break
        case .unavailable(let reason): #expect(reason.hasPrefix("no controlling terminal"))
        }
    }
}
