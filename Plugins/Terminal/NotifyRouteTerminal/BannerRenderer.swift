import NotifyRoute

/// What a banner shows, already made inert: every string here is safe to write to a
/// terminal (no control, escape or bidi character survives ``init(_:count:)``).
struct BannerContent: Hashable, Sendable {
    var level: Level
    var tint: Tint
    var title: String
    /// The body on one line, its lines joined with ` ⏎ `; empty when there is none.
    var body: String
    var count: Int
    var actionLabels: [String]
    /// 0 to 100: a bar on the title row (just the percentage where there is no room).
    var progress: Int?

    init(_ event: ResolvedEvent, count: Int = 1) {
        level = event.level
        tint = event.style.tint
        title = Self.inert(event.title)
        body = event.body.map { body in
            TerminalText.lines(body).map(Self.inert).filter { !$0.isEmpty }.joined(separator: " ⏎ ")
        } ?? ""
        self.count = count
        actionLabels = event.actions.map { Self.inert($0.label) }.filter { !$0.isEmpty }
        progress = event.progress.map { min(100, max(0, $0)) }
    }

    /// One line of inert text (``TerminalText/line(_:)``), trimmed, since a banner
    /// lays its rows out by itself.
    static func inert(_ text: String) -> String {
        TerminalText.line(text).trimmingCharacters(in: " ")
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        guard let first = firstIndex(where: { $0 != character }) else { return "" }
        let last = lastIndex(where: { $0 != character })!
        return String(self[first...last])
    }
}

/// Lays a banner out in rows of exactly the terminal's width, measured in display
/// columns (``DisplayWidth``), and paints them in the level's colours.
///
/// Full style (the terminal is at least 60 columns wide and 10 rows high): the title
/// row with the glyph, the title, a duplicate count and action hints on the right, and
/// the body on a second row when there is one. A progress value draws a bar with the
/// percentage on the right of the title row, shorter or as the percentage alone where
/// the title would lose its first 20 columns. Compact style: one row, title, percentage
/// and body run together and cut with an ellipsis.
enum BannerRenderer {
    static let minimumFullColumns = 60
    static let minimumFullRows = 10

    /// Whether the compact one-row style applies on a terminal this size.
    static func isCompact(columns: Int, rows: Int, mode: TerminalSink.CompactMode) -> Bool {
        switch mode {
        case .always: true
        case .never: false
        case .auto: columns < minimumFullColumns || rows < minimumFullRows
        }
    }

    /// The banner's rows as plain text, each at most `columns` wide (one or two rows).
    /// `waiting` is how many banners queue behind this one.
    static func lines(_ content: BannerContent, columns: Int, compact: Bool, waiting: Int = 0) -> [String] {
        guard columns > 0 else { return [] }
        let glyph = TerminalLine.glyph(content.level)
        let count = content.count > 1 ? " (×\(content.count))" : ""
        if compact {
            var text = content.title + count
            if let progress = content.progress { text += " \(progress)%" }
            if !content.body.isEmpty { text += " — " + content.body }
            return [DisplayWidth.truncate(" \(glyph) " + text, to: columns - 1)]
        }

        // Title row: the title gives way to hints only down to 20 columns of its own.
        let lead = " \(glyph) "
        let room = columns - DisplayWidth.of(lead) - 1
        var actions = content.actionLabels.map { "[\($0)]" }.joined(separator: " ")
        if waiting > 0 { actions += (actions.isEmpty ? "" : "  ") + "+\(waiting) waiting" }
        let titleText = content.title + count
        let keptTitle = min(20, DisplayWidth.of(titleText))
        // The widest right-hand side that leaves the title its first 20 columns: the bar
        // shrinks down to the percentage alone, then the action hints go.
        let bars = content.progress.map { progress in [20, 10].map { progressBar(progress, width: $0) } + ["\(progress)%"] } ?? [""]
        let candidates = bars.map { join($0, actions) } + (actions.isEmpty ? [] : bars)
        let hints = candidates.first { $0.isEmpty || room - DisplayWidth.of($0) - 2 >= keptTitle } ?? ""
        let hintWidth = DisplayWidth.of(hints)
        let titleRoom = hintWidth > 0 ? room - hintWidth - 2 : room
        let title = DisplayWidth.truncate(titleText, to: titleRoom)
        var first = lead + title
        if hintWidth > 0 {
            first += String(repeating: " ", count: columns - 1 - DisplayWidth.of(first) - hintWidth) + hints
        }
        var rows = [first]
        if !content.body.isEmpty {
            rows.append(DisplayWidth.truncate("   " + content.body, to: columns - 1))
        }
        return rows
    }

    /// `██████░░░░░░░░  40%`: `width` cells, filled to the nearest cell, then the percentage.
    /// Block characters rather than colour, so the bar shows on a monochrome banner too.
    static func progressBar(_ progress: Int, width: Int) -> String {
        let filled = (progress * width + 50) / 100
        let percent = "\(progress)%"
        return String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            + String(repeating: " ", count: 5 - percent.count) + percent
    }

    private static func join(_ left: String, _ right: String) -> String {
        left.isEmpty || right.isEmpty ? left + right : left + "  " + right
    }

    /// One row painted: the tint, the text, then the rest of the row erased in the same
    /// background (EL fills with the current background on xterm, VTE and tmux) rather
    /// than padded with spaces, so a terminal that reflows on resize has nothing to rewrap.
    /// Reverse video is not a background, so a monochrome bar is padded instead.
    static func paint(_ text: String, columns: Int, tint: Tint, palette: BannerPalette, bold: Bool) -> String {
        let padding = palette == .monochrome ? String(repeating: " ", count: max(0, columns - DisplayWidth.of(text))) : ""
        return "\u{1B}[0;\(palette.sgr(tint, bold: bold))m\(text)\(padding)\u{1B}[K\u{1B}[0m"
    }
}
