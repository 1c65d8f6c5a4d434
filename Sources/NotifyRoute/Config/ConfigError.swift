/// A position in a config file. Lines and columns start at 1; columns count Unicode scalars.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// A config problem: where it is and what was expected.
///
/// Printed as `config.yaml:14:7: unknown sink "destkop" in route 1; did you mean "desktop"? known sinks: desktop, journal, tty`.
/// The CLI exits 78 (`EX_CONFIG`) on one and sends nothing.
public struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    public var location: SourceLocation?
    public var message: String

    public init(_ message: String, at location: SourceLocation?) {
        self.location = location
        self.message = message
    }

    public var description: String {
        guard let location else { return message }
        return "\(location): \(message)"
    }
}

enum Suggestions {
    /// `did you mean "desktop"?` when a candidate is close to what was typed: a few
    /// edits away, or what was typed is the start of it (`warn` for `warning`).
    static func didYouMean(_ typed: String, among candidates: some Sequence<String>) -> String? {
        let lowered = typed.lowercased()
        var best: (candidate: String, distance: Int, common: Int)?
        for candidate in candidates {
            let other = candidate.lowercased()
            var distance = editDistance(lowered, other)
            if lowered.count >= 3, other.hasPrefix(lowered) || lowered.hasPrefix(other) { distance = min(distance, 1) }
            let common = commonSubsequence(lowered, other)
            // Ties go to the candidate sharing most letters in order: "rutes" is "routes", not "rules".
            if best == nil || distance < best!.distance || (distance == best!.distance && common > best!.common) {
                best = (candidate, distance, common)
            }
        }
        guard let best else { return nil }
        let allowed = max(1, min(3, best.candidate.count / 3))
        return best.distance <= allowed ? "did you mean \"\(best.candidate)\"?" : nil
    }

    static func commonSubsequence(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 0..<a.count {
            var previousDiagonal = 0
            for j in 0..<b.count {
                let saved = row[j + 1]
                row[j + 1] = a[i] == b[j] ? previousDiagonal + 1 : max(row[j + 1], row[j])
                previousDiagonal = saved
            }
        }
        return row[b.count]
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions, and
    /// adjacent transpositions ("destkop" is one edit from "desktop").
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    /// `unknown key "timout" in defaults; did you mean "timeout"? expected one of: app, level, timeout`
    static func unknown(_ what: String, _ typed: String, in context: String? = nil, expected: [String]) -> String {
        var message = "unknown \(what) \"\(typed)\""
        if let context { message += " in \(context)" }
        if let hint = didYouMean(typed, among: expected) {
            message += "; \(hint)"
            if !expected.isEmpty { message += " expected one of: \(expected.joined(separator: ", "))" }
        } else if !expected.isEmpty {
            message += "; expected one of: \(expected.joined(separator: ", "))"
        }
        return message
    }
}
