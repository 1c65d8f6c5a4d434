import NotifyRoute

/// The colours a banner can use on this terminal, and the SGR that tints a banner row.
///
/// A banner is a bar, so the level's tint becomes its background with a readable
/// foreground. Without colour (`NO_COLOR`, `color: never`) the bar is drawn in reverse
/// video, which is an attribute, not a colour, so the banner still stands apart.
enum BannerPalette: String, Hashable, Sendable {
    case monochrome
    case ansi16
    case ansi256
    case trueColor

    /// What the environment allows: `NO_COLOR` (non-empty) turns colour off unless the
    /// config says `always`; `COLORTERM=truecolor|24bit` allows 24-bit colour;
    /// `TERM=*256color` (or `COLORTERM=256color`) allows 256; otherwise 16.
    static func detect(mode: TerminalSink.ColorMode, environment: [String: String]) -> BannerPalette {
        switch mode {
        case .never: return .monochrome
        case .auto:
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .monochrome }
        case .always: break
        }
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        if colorTerm == "truecolor" || colorTerm == "24bit" { return .trueColor }
        if colorTerm == "256color" || (environment["TERM"] ?? "").hasSuffix("256color") { return .ansi256 }
        return .ansi16
    }

    /// SGR parameters for a banner row tinted `tint`; `bold` for the title row.
    func sgr(_ tint: Tint, bold: Bool) -> String {
        let weight = bold ? "1;" : ""
        switch self {
        case .monochrome:
            return weight + "7"
        case .ansi16:
            let (foreground, background) = Self.ansi16(tint)
            return "\(weight)\(foreground);\(background)"
        case .ansi256:
            let (foreground, background) = Self.indexed(tint)
            return "\(weight)38;5;\(foreground);48;5;\(background)"
        case .trueColor:
            let (foreground, background) = Self.rgb(tint)
            return "\(weight)38;2;\(foreground.0);\(foreground.1);\(foreground.2);48;2;\(background.0);\(background.1);\(background.2)"
        }
    }

    /// Foreground and background of the 16-colour bar: dark text on light tints, white on dark.
    private static func ansi16(_ tint: Tint) -> (Int, Int) {
        switch tint {
        case .plain: (30, 47)
        case .dim: (97, 100)
        case .blue: (97, 44)
        case .cyan: (30, 46)
        case .green: (30, 42)
        case .yellow: (30, 43)
        case .red: (97, 41)
        case .magenta: (97, 45)
        case .white: (30, 107)
        case .whiteOnRed: (97, 41)
        }
    }

    private static func indexed(_ tint: Tint) -> (Int, Int) {
        switch tint {
        case .plain: (16, 252)
        case .dim: (254, 240)
        case .blue: (231, 25)
        case .cyan: (16, 37)
        case .green: (16, 71)
        case .yellow: (16, 220)
        case .red: (231, 124)
        case .magenta: (231, 127)
        case .white: (16, 255)
        case .whiteOnRed: (231, 160)
        }
    }

    private static func rgb(_ tint: Tint) -> ((Int, Int, Int), (Int, Int, Int)) {
        let white = (255, 255, 255), black = (0, 0, 0)
        switch tint {
        case .plain: return (black, (208, 208, 208))
        case .dim: return ((230, 230, 230), (88, 88, 88))
        case .blue: return (white, (29, 91, 196))
        case .cyan: return (black, (0, 170, 190))
        case .green: return (black, (76, 175, 80))
        case .yellow: return (black, (250, 200, 20))
        case .red: return (white, (190, 30, 30))
        case .magenta: return (white, (150, 50, 170))
        case .white: return (black, (240, 240, 240))
        case .whiteOnRed: return (white, (210, 0, 0))
        }
    }
}
