/// The config's matcher language on one line, as `silence add` and `history` take it:
/// `level>=warning source=backup* app=cron title=*failed* tag=ops`, one condition per
/// word. Several globs for one key (`source=a source=b`) mean any of them; several tags
/// mean all of them, as a config's `tags:` list does.
public enum MatcherLine {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static let keys = ["level", "source", "app", "title", "body", "category", "tag"]

    /// The matcher of `words`; a word that does not parse is named with what was expected.
    public static func parse(_ words: [String]) throws(Failure) -> EventMatcher {
        var matcher = EventMatcher()
        for word in words {
            guard let operatorStart = word.firstIndex(where: { "<>=".contains($0) }) else {
                throw Failure(description: "matcher \"\(word)\": expected KEY=VALUE or level>=LEVEL (keys: \(keys.joined(separator: ", ")))")
            }
            let key = String(word[..<operatorStart])
            let rest = String(word[operatorStart...])
            switch key {
            case "level":
                guard let condition = LevelCondition(parsing: rest) else {
                    throw Failure(description: "matcher \"\(word)\": \"\(rest)\" is not a level condition; expected one of "
                        + ">=, >, <=, <, = and a level (\(Level.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                guard matcher.level == nil else { throw Failure(description: "matcher \"\(word)\": the level is given twice") }
                matcher.level = condition
            case "source", "app", "title", "body", "category", "tag", "tags":
                guard rest.hasPrefix("="), !rest.hasPrefix("==") else {
                    throw Failure(description: "matcher \"\(word)\": \(key) takes = and a glob (\(key)=VALUE), not \"\(rest.prefix(2))\"")
                }
                let value = String(rest.dropFirst())
                guard !value.isEmpty else { throw Failure(description: "matcher \"\(word)\": the value after = is empty") }
                let glob: Glob
                do { glob = try Glob(value) } catch { throw Failure(description: "matcher \"\(word)\": \(error.description)") }
                switch key {
                case "source": matcher.source = (matcher.source ?? []) + [glob]
                case "app": matcher.app = (matcher.app ?? []) + [glob]
                case "title": matcher.title = (matcher.title ?? []) + [glob]
                case "body": matcher.body = (matcher.body ?? []) + [glob]
                case "category": matcher.category = (matcher.category ?? []) + [glob]
                default: matcher.tags.insert(value)
                }
            default:
                let hint = Suggestions.didYouMean(key, among: keys).map { " (\($0))" } ?? ""
                throw Failure(description: "matcher \"\(word)\": unknown key \"\(key)\"\(hint); expected one of: \(keys.joined(separator: ", "))")
            }
        }
        return matcher
    }

    /// `matcher` written back in this syntax (what `silence list` shows).
    public static func format(_ matcher: EventMatcher) -> String {
        var words: [String] = []
        if let level = matcher.level { words.append("level\(level)") }
        for (key, globs) in [("source", matcher.source), ("app", matcher.app), ("title", matcher.title),
                             ("body", matcher.body), ("category", matcher.category)] {
            for glob in globs ?? [] { words.append("\(key)=\(glob.pattern)") }
        }
        for tag in matcher.tags.sorted() { words.append("tag=\(tag)") }
        return words.isEmpty ? "(every event)" : words.joined(separator: " ")
    }
}
