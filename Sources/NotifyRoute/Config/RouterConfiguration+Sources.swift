import YAMLDocument

extension RouterConfiguration {
    /// `sources:`: a mapping of source names to their settings (section `sources.NAME`).
    static func parseSources(_ node: ConfigNode) throws(ConfigError) -> [SourceDeclaration] {
        guard case .mapping(let entries) = node.value else {
            if case .null = node.value { return [] }
            throw ConfigError("sources: expected a mapping of source names to their settings, found \(node.kindDescription)", at: node.location)
        }
        var sources: [SourceDeclaration] = []
        for entry in entries {
            let name = entry.key
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic && $0.isASCII || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }) else {
                throw ConfigError("invalid source name \"\(name)\"; use letters, digits, - and _", at: entry.keyLocation)
            }
            sources.append(try parseSource(entry.value, name: name, location: entry.keyLocation))
        }
        return sources
    }

    private static func parseSource(_ node: ConfigNode, name: String, location: SourceLocation?) throws(ConfigError) -> SourceDeclaration {
        let context = "source \"\(name)\""
        let map = try ConfigMapping(node, context: context, section: .source)
        guard let kindText = try map.choice("kind"), let kind = SourceDeclaration.Kind(rawValue: kindText) else {
            throw ConfigError("\(context): expected a `kind`: \(SourceDeclaration.Kind.allCases.map(\.rawValue).joined(separator: " or "))",
                              at: node.location ?? location)
        }
        func template(_ key: String) throws(ConfigError) -> FieldTemplate? {
            guard let text = try map.string(key) else { return nil }
            do { return try FieldTemplate(text) } catch {
                throw ConfigError("\(context) \(key): \(error.description)", at: map[key]?.location)
            }
        }
        var source = SourceDeclaration(name: name, kind: kind, location: location)
        if let scope = try map.choice("journal") { source.journal = SourceDeclaration.JournalScope(rawValue: scope)! }
        if let matchNode = map["match"] {
            guard case .mapping(let fields) = matchNode.value else {
                throw ConfigError("\(context) match: expected a mapping of journal field names to conditions, such as { PRIORITY: \"<=3\" }, found \(matchNode.kindDescription)",
                                  at: matchNode.location)
            }
            for field in fields {
                guard FieldCondition.isFieldName(field.key) else {
                    throw ConfigError("\(context) match: \"\(field.key)\" is not a journal field name; expected upper-case letters, digits and _ (such as PRIORITY or _SYSTEMD_UNIT)",
                                      at: field.keyLocation)
                }
                let values = try field.value.stringList("\(context) match \(field.key)")
                do { source.match.append(try FieldCondition(field: field.key, values: values)) } catch {
                    throw ConfigError("\(error.description) in \(context) match", at: field.value.location)
                }
            }
        }
        if let unitsNode = map["units"] {
            var globs: [Glob] = []
            for pattern in try unitsNode.stringList("\(context) units") {
                do { globs.append(try Glob(pattern)) } catch {
                    throw ConfigError("\(error.description) in \(context) units", at: unitsNode.location)
                }
            }
            source.units = globs
        }
        source.level = try map.level("level")
        if let maxLevel = try map.level("max_level") { source.maxLevel = maxLevel }
        source.title = try template("title")
        source.body = try template("body")
        source.app = try template("app")
        source.source = try map.string("source")
        source.tags = Set(try map.stringList("tags") ?? [])
        source.dedupKey = try template("dedup_key")
        source.replaceKey = try template("replace_key")
        if let rate = map["rate"] {
            let rateMap = try ConfigMapping(rate, context: "\(context) rate", section: .rate)
            guard let max = try rateMap.int("max"), let per = try rateMap.duration("per"), per > .zero else {
                throw ConfigError("\(context) rate: expected both `max` (a whole number) and `per` (a duration), as { max: 5, per: 1m }",
                                  at: rate.location)
            }
            source.rate = RateLimit(max: max, per: per)
        }
        if let recovery = try map.choice("recovered") { source.recovery = SourceDeclaration.Recovery(rawValue: recovery)! }
        return source
    }
}

extension SourceDeclaration {
    var yamlOutput: YAMLOutput {
        func globs(_ globs: [Glob]) -> YAMLOutput {
            globs.count == 1 ? .scalar(globs[0].pattern, .doubleQuoted) : .sequence(globs.map { .scalar($0.pattern, .doubleQuoted) }, flow: true)
        }
        return .section(.source) { key in
            switch key {
            case "kind": .key(kind.rawValue)
            case "journal": .key(journal.rawValue)
            case "match": match.isEmpty ? nil : .mapping(match.map { condition in
                let value: YAMLOutput = switch condition.test {
                case .globs(let list): globs(list)
                case .number: .scalar(condition.description, .doubleQuoted)
                }
                return (.key(condition.field), value)
            }, flow: true)
            case "units": units.map(globs)
            case "level": level.map { .key($0.rawValue) }
            case "max_level": .key(maxLevel.rawValue)
            case "title": .quoted(title?.template)
            case "body": .quoted(body?.template)
            case "app": .quoted(app?.template)
            case "source": .quoted(source)
            case "tags": tags.isEmpty ? nil : .names(tags.sorted())
            case "dedup_key": .quoted(dedupKey?.template)
            case "replace_key": .quoted(replaceKey?.template)
            case "rate": rate?.yamlOutput
            case "recovered": .key(recovery.rawValue)
            default: nil
            }
        }
    }
}
