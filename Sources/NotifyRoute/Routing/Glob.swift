/// A shell-style pattern: `*` any run, `?` one character, `[abc]`/`[a-z]`/`[!x]` a set.
/// Compiled once when the config loads (dunst's own TODO was to stop recompiling).
public struct Glob: Hashable, Sendable, CustomStringConvertible {
    public let pattern: String

    private enum Shape: Hashable, Sendable {
        case exact(String)
        case prefix(String)
        case suffix(String)
        case contains(String)
        case anything
        case general([Token])
    }

    private enum Token: Hashable, Sendable {
        case literal(Character)
        case any
        case anyRun
        case set([ClosedRange<Character>], negated: Bool)
    }

    private let shape: Shape
    /// The first byte of an exact or prefix literal that starts with an ASCII character:
    /// a text whose first byte is another ASCII byte cannot match (its first character
    /// starts with that byte, under any canonical equivalence), decided without touching
    /// the literal. Most routes fail on their first character.
    let leadingASCII: UInt8?

    public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        public var pattern: String
        public var description: String { "invalid pattern \"\(pattern)\": a [ is not closed by ]" }
    }

    public init(_ pattern: String) throws(SyntaxError) {
        self.pattern = pattern
        let tokens = try Glob.tokenize(pattern)
        self.shape = Glob.shape(of: tokens, pattern: pattern)
        switch shape {
        case .exact(let literal), .prefix(let literal):
            leadingASCII = literal.utf8.first.flatMap { $0 < 0x80 ? $0 : nil }
        default:
            leadingASCII = nil
        }
    }

    public var description: String { pattern }

    public func matches(_ text: String) -> Bool {
        if let leadingASCII {
            guard let first = text.utf8.first else { return false }  // an empty text, a non-empty literal
            if first != leadingASCII && first < 0x80 { return false }
        }
        switch shape {
        case .exact(let literal): return text == literal
        case .prefix(let literal): return Glob.hasPrefix(text, literal)
        case .suffix(let literal): return text.hasSuffix(literal)
        case .contains(let literal): return text.contains(literal)
        case .anything: return true
        case .general(let tokens): return Glob.match(tokens[...], Array(text)[...])
        }
    }

    /// `text.hasPrefix(literal)`, decided on bytes when that gives the same answer:
    /// every config's prefixes are ASCII, and so are most sources and apps. A mismatch
    /// on an ASCII byte of the text settles it (no non-ASCII sequence is involved); a
    /// full match settles it when the text goes on with an ASCII byte (a grapheme
    /// boundary, unless the literal ends in CR and the text goes on with LF). Anything
    /// else (a non-ASCII byte where it matters) takes String's own comparison, which
    /// honours canonical equivalence (U+212A KELVIN SIGN equals "K").
    static func hasPrefix(_ text: String, _ literal: String) -> Bool {
        let answer: Bool?? = literal.utf8.withContiguousStorageIfAvailable { prefix in
            text.utf8.withContiguousStorageIfAvailable { bytes in asciiPrefix(bytes, prefix) } ?? nil
        }
        if case .some(.some(let answer)) = answer { return answer }
        return text.hasPrefix(literal)
    }

    /// The byte decision of ``hasPrefix(_:_:)``; nil when it cannot be made on bytes.
    @inline(__always)
    private static func asciiPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard let last = prefix.last, last < 0x80, last != 0x0D else { return nil }
        var index = 0
        while index < prefix.count {
            guard index < bytes.count else { return false }
            let byte = bytes[index], expected = prefix[index]
            if byte != expected { return byte < 0x80 && expected < 0x80 ? false : nil }
            if byte >= 0x80 { return nil }
            index += 1
        }
        guard index < bytes.count else { return true }
        return bytes[index] < 0x80 ? true : nil
    }

    private static func tokenize(_ pattern: String) throws(SyntaxError) -> [Token] {
        var tokens: [Token] = []
        var characters = Array(pattern)[...]
        while let character = characters.popFirst() {
            switch character {
            case "*":
                if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?":
                tokens.append(.any)
            case "\\":
                tokens.append(.literal(characters.popFirst() ?? "\\"))
            case "[":
                var negated = false
                if let first = characters.first, first == "!" || first == "^" {
                    negated = true
                    characters.removeFirst()
                }
                var ranges: [ClosedRange<Character>] = []
                var closed = false
                var isFirst = true
                while let member = characters.popFirst() {
                    if member == "]" && !isFirst { closed = true; break }
                    isFirst = false
                    if characters.count >= 2, characters.first == "-", characters.dropFirst().first != "]" {
                        characters.removeFirst()
                        let upper = characters.removeFirst()
                        if member <= upper { ranges.append(member...upper) }
                    } else {
                        ranges.append(member...member)
                    }
                }
                guard closed else { throw SyntaxError(pattern: pattern) }
                tokens.append(.set(ranges, negated: negated))
            default:
                tokens.append(.literal(character))
            }
        }
        return tokens
    }

    private static func shape(of tokens: [Token], pattern: String) -> Shape {
        func literal(_ slice: ArraySlice<Token>) -> String? {
            var text = ""
            for token in slice {
                guard case .literal(let character) = token else { return nil }
                text.append(character)
            }
            return text
        }
        if tokens == [.anyRun] { return .anything }
        if let text = literal(tokens[...]) { return .exact(text) }
        if tokens.last == .anyRun, let text = literal(tokens.dropLast()) {
            if tokens.first == .anyRun, tokens.count > 1, let inner = literal(tokens.dropFirst().dropLast()) {
                return .contains(inner)
            }
            return .prefix(text)
        }
        if tokens.first == .anyRun, let text = literal(tokens.dropFirst()) { return .suffix(text) }
        if tokens.first == .anyRun, tokens.last == .anyRun, tokens.count > 2,
           let text = literal(tokens.dropFirst().dropLast()) {
            return .contains(text)
        }
        return .general(tokens)
    }

    private static func match(_ tokens: ArraySlice<Token>, _ text: ArraySlice<Character>) -> Bool {
        var tokens = tokens, text = text
        // Iterative with one backtrack point for the last `*`, which is enough for globs.
        var star: (tokens: ArraySlice<Token>, text: ArraySlice<Character>)?
        while true {
            if let token = tokens.first {
                switch token {
                case .anyRun:
                    star = (tokens.dropFirst(), text)
                    tokens = tokens.dropFirst()
                    continue
                case .any:
                    if !text.isEmpty { tokens = tokens.dropFirst(); text = text.dropFirst(); continue }
                case .literal(let character):
                    if text.first == character { tokens = tokens.dropFirst(); text = text.dropFirst(); continue }
                case .set(let ranges, let negated):
                    if let character = text.first, ranges.contains(where: { $0.contains(character) }) != negated {
                        tokens = tokens.dropFirst(); text = text.dropFirst(); continue
                    }
                }
            } else if text.isEmpty {
                return true
            }
            // Mismatch: let the last `*` swallow one more character, if there is one.
            guard let saved = star, !saved.text.isEmpty else { return false }
            star = (saved.tokens, saved.text.dropFirst())
            tokens = saved.tokens
            text = saved.text.dropFirst()
        }
    }
}
