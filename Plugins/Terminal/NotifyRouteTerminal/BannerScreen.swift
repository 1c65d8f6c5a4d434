/// The escape sequences that reserve rows at the top of a terminal for banners and
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
///
/// Several processes may hold banners on one terminal: ``BannerStack`` is their rows,
/// top to bottom, and every change is made against it, so a process inserts, resizes
/// and deletes only its own rows and the scroll region always covers all of them.
enum BannerScreen {
    static let escape = "\u{1B}"

    /// Goes from `reserved` rows at the top to `lines.count` rows showing `lines`
    /// (already painted) on a terminal `rows` high, when this process's banner is the
    /// only one. With `resetRegion`, the scroll region is set even when the height
    /// does not change (after a resize).
    static func transition(from reserved: Int, to lines: [String], rows: Int, resetRegion: Bool = false) -> String {
        var stack = BannerStack(blocks: reserved > 0 ? [.init(owner: "self", rows: reserved)] : [])
        return stack.transition(owner: "self", to: lines, rows: rows, resetRegion: resetRegion)
    }
}

/// The banner rows at the top of one terminal, top to bottom, each block held by one
/// owner (a sink of one process). The newest banner goes on top.
struct BannerStack: Hashable, Sendable {
    struct Block: Hashable, Sendable {
        var owner: String
        var rows: Int
    }

    var blocks: [Block]

    /// Rows held at the top in all.
    var total: Int { blocks.reduce(0) { $0 + $1.rows } }

    func rows(of owner: String) -> Int { blocks.first { $0.owner == owner }?.rows ?? 0 }

    /// Shows `lines` (already painted; none to give the rows back) as `owner`'s block,
    /// deleting the rows of every owner in `stale` on the way, and returns the bytes
    /// that do it. Blocks of other owners keep their place and their text; the scroll
    /// region ends up below all blocks. An owner without a block gets one on top.
    mutating func transition(
        owner: String, to lines: [String], removing stale: Set<String> = [], rows: Int, resetRegion: Bool = false
    ) -> String {
        let escape = BannerScreen.escape
        let old = blocks
        let oldTotal = total
        let others = old.filter { $0.owner != owner && !stale.contains($0.owner) }
        // At least one row stays for the output: a banner that finds no room left
        // under the others' is not drawn (it still expires as usual).
        let target = min(lines.count, max(0, rows - 1 - others.reduce(0) { $0 + $1.rows }))
        let had = old.contains { $0.owner == owner }
        var next: [Block] = []
        if !had && target > 0 { next.append(Block(owner: owner, rows: target)) }
        for block in old where !stale.contains(block.owner) {
            if block.owner == owner {
                if target > 0 { next.append(Block(owner: owner, rows: target)) }
            } else {
                next.append(block)
            }
        }
        blocks = next
        let newTotal = total

        var out = ""
        if newTotal > oldTotal {
            let grow = newTotal - oldTotal
            out += String(repeating: "\(escape)D", count: grow) + "\(escape)[\(grow)A"
        }
        out += "\(escape)7"
        if old != next || resetRegion {
            out += "\(escape)[r"
            // Deletions first, then insertions, so that no row is ever pushed off the
            // bottom of the screen in between. `top` is where a block starts by then.
            var top = 0
            var (mine, kept) = (0, 0)  // where this owner's rows start, and how many
            for block in old {
                if stale.contains(block.owner) {
                    out += "\(escape)[\(top + 1);1H\(escape)[\(block.rows)M"
                } else if block.owner == owner {
                    (mine, kept) = (top, block.rows)
                    if target < block.rows {
                        out += "\(escape)[\(top + target + 1);1H\(escape)[\(block.rows - target)M"
                    }
                    top += min(target, block.rows)
                } else {
                    top += block.rows
                }
            }
            if !had && target > 0 {
                out += "\(escape)[1;1H\(escape)[\(target)L"
            } else if target > kept {
                out += "\(escape)[\(mine + kept + 1);1H\(escape)[\(target - kept)L"
            }
            if newTotal > 0 { out += "\(escape)[\(newTotal + 1);\(rows)r" }
        }
        if target > 0 {
            var first = 0
            for block in next {
                if block.owner == owner { break }
                first += block.rows
            }
            out += "\(escape)[?7l"
            for (index, line) in lines.prefix(target).enumerated() {
                out += "\(escape)[\(first + index + 1);1H" + line
            }
            out += "\(escape)[?7h"
        }
        out += "\(escape)8"
        if newTotal > oldTotal {
            out += "\(escape)[\(newTotal - oldTotal)B"
        } else if newTotal < oldTotal {
            out += "\(escape)[\(oldTotal - newTotal)A"
        }
        return out
    }
}
