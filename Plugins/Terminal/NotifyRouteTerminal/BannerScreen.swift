/// The escape sequences that reserve rows at the top of a terminal for a banner and
/// give them back, leaving everything else where the reader left it.
///
/// Reserving `n` rows: make sure `n` rows exist below the cursor (an index, `ESC D`,
/// scrolls the screen up into the scrollback when the cursor sits on the last rows;
/// `ESC D` rather than a newline, so the tty's newline translation cannot move the
/// column), save the cursor (DECSC), insert `n` blank rows at the top (IL) so the
/// existing output moves down instead of being overwritten, confine scrolling to the
/// rows below (DECSTBM), draw, restore the cursor (DECRC) and move it down `n` rows to
/// follow its line. Releasing is the mirror image: delete the rows (DL), so the output
/// moves back up, reset the scroll region and move the cursor up. Autowrap is off while
/// a row is drawn, so text measured one column too narrow overwrites the last column
/// instead of wrapping onto the output below.
enum BannerScreen {
    static let escape = "\u{1B}"

    /// Goes from `reserved` rows at the top to `lines.count` rows showing `lines`
    /// (already painted) on a terminal `rows` high. With `resetRegion`, the scroll
    /// region is set even when the height does not change (after a resize).
    static func transition(from reserved: Int, to lines: [String], rows: Int, resetRegion: Bool = false) -> String {
        let target = min(lines.count, max(0, rows - 1))
        var out = ""
        if target > reserved {
            let grow = target - reserved
            out += String(repeating: "\(escape)D", count: grow) + "\(escape)[\(grow)A"
        }
        out += "\(escape)7"
        if target != reserved || resetRegion {
            out += "\(escape)[r"
            if target > reserved {
                out += "\(escape)[\(reserved + 1);1H\(escape)[\(target - reserved)L"
            } else if target < reserved {
                out += "\(escape)[\(target + 1);1H\(escape)[\(reserved - target)M"
            }
            if target > 0 { out += "\(escape)[\(target + 1);\(rows)r" }
        }
        if target > 0 {
            out += "\(escape)[?7l"
            for (index, line) in lines.prefix(target).enumerated() {
                out += "\(escape)[\(index + 1);1H" + line
            }
            out += "\(escape)[?7h"
        }
        out += "\(escape)8"
        if target > reserved {
            out += "\(escape)[\(target - reserved)B"
        } else if target < reserved {
            out += "\(escape)[\(reserved - target)A"
        }
        return out
    }
}
