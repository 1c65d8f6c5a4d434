import NotifyRoute

/// Formats one event as one line.
public enum TerminalLine {
    /// `⚠ warning  Disk full: 90% used ⏎ second line` with the level tinted; without
    /// colour, `[warning] Disk full: 90% used ⏎ second line`. A progress value follows the
    /// title as `[40%]`.
    public static func render(_ event: ResolvedEvent, color: Bool, count: Int = 1) -> String {
        let title = TerminalText.line(event.title)
        let body = event.body.map { TerminalText.lines($0).joined(separator: " ⏎ ") }
        var text = title
        if count > 1 { text += " (×\(count))" }
        if let progress = event.progress { text += " [\(progress)%]" }
        if let body, !body.isEmpty { text += ": " + body }
        guard color else { return "[\(event.level.rawValue)] \(text)" }
        let tint = event.style.tint.sgrParameters
        return "\u{1B}[\(tint)m\(glyph(event.level)) \(event.level.rawValue)\u{1B}[0m  \(text)"
    }

    public static func glyph(_ level: Level) -> String {
        switch level {
        case .debug: "·"
        case .info: "ℹ"
        case .notice: "•"
        case .success: "✔"
        case .warning: "⚠"
        case .error: "✖"
        case .critical: "‼"
        }
    }
}
