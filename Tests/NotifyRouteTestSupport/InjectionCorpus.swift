/// Text that tries to drive a terminal: every kind of sequence the banner must show
/// inert or drop, and every message that quotes input must escape. Bytes, not strings,
/// so that invalid UTF-8 can reach argv as is.
public enum InjectionCorpus {
    public struct Case: Sendable, CustomStringConvertible {
        public var name: String
        public var bytes: [UInt8]
        /// What a terminal would decode (invalid UTF-8 repaired, as argv decoding does).
        public var text: String { String(decoding: bytes, as: UTF8.self) }
        public var description: String { name }
    }

    public static let esc = "\u{1B}"

    public static let cases: [Case] = [
        ("osc0-title-bel", "\(esc)]0;pwned\u{07}"),
        ("osc2-title-st", "\(esc)]2;pwned\(esc)\\"),
        ("osc1-icon-title", "\(esc)]1;pwned\u{07}"),
        ("osc52-clipboard-bel", "\(esc)]52;c;ZXZpbA==\u{07}"),
        ("osc52-clipboard-st", "\(esc)]52;p;ZXZpbA==\(esc)\\"),
        ("c1-osc52-utf8", "\u{9D}52;c;ZXZpbA==\u{9C}"),
        ("osc8-hyperlink", "\(esc)]8;;https://evil.example\(esc)\\link\(esc)]8;;\(esc)\\"),
        ("csi-clear-screen", "\(esc)[2J"),
        ("csi-clear-scrollback", "\(esc)[3J"),
        ("csi-home-overwrite", "\(esc)[HOVERWRITTEN"),
        ("csi-cursor-position", "\(esc)[12;30HX\(esc)[5A\(esc)[3B\(esc)[20C\(esc)[4D"),
        ("csi-scroll-region", "\(esc)[1;3r"),
        ("csi-insert-delete-lines", "\(esc)[5L\(esc)[3M"),
        ("csi-alternate-screen", "\(esc)[?1049h"),
        ("csi-status-report", "\(esc)[6n\(esc)[21t\(esc)[c"),
        ("c1-csi-clear", "\u{9B}2J"),
        ("decsc-decrc-ris", "\(esc)7\(esc)8\(esc)c"),
        ("sgr-conceal", "\(esc)[8m\(esc)[31m"),
        ("bell", "\u{07}\u{07}\u{07}"),
        ("backspace-cr-overwrite", "safe\rEVIL abc\u{08}\u{08}\u{08}XYZ"),
        ("newline-vt-ff", "one\ntwo\u{0B}three\u{0C}four"),
        ("dcs-tmux-passthrough", "\(esc)Ptmux;\(esc)\(esc)]52;c;ZXZpbA==\u{07}\(esc)\\"),
        ("apc-pm-sos", "\(esc)_apc\(esc)\\\(esc)^pm\(esc)\\\(esc)Xsos\(esc)\\"),
        ("bidi-override", "\u{202E}exe.txt\u{202C} \u{202D}ltr\u{202C}"),
        ("bidi-isolates-marks", "\u{2067}abc\u{2069}\u{2066}d\u{2069}\u{200F}\u{061C}"),
        ("bidi-marks-between-words", "left\u{200E}mid\u{200F}right\u{061C}end"),
        ("line-paragraph-separators", "one\u{2028}two\u{2029}three"),
        ("escape-then-escape", "tail\(esc)\(esc)"),
        ("invisible-zero-width-and-tags", "pay\u{200B}pal\u{2060}x\u{FEFF}y\u{180E}z\u{E0041}\u{E0042}\u{E007F}end"),
    ].map { Case(name: $0.0, bytes: Array($0.1.utf8)) } + [
        Case(name: "invalid-utf8-lone-c1-byte", bytes: [0x9D] + Array("52;c;ZXZpbA==".utf8) + [0x07]),
        Case(name: "invalid-utf8-bytes", bytes: [0xFF, 0xFE, 0xC0, 0xAF, 0xE2, 0x82, 0x41, 0xED, 0xA0, 0x80]),
        Case(name: "invalid-utf8-8bit-csi", bytes: [0x9B, 0x32, 0x4A, 0x1B, 0x5B, 0x32, 0x4A]),
    ]
}
