import NotifyRoute
import NotifyRouteTesting
import Testing

/// The YAML layer of the config: libyaml's events composed into ``ConfigNode`` (locations,
/// anchors, nulls, limits, errors) and `config show`'s emitter loading back to the same config.
@Suite struct ConfigParsingTests {
    static func parse(_ yaml: String) throws(ConfigError) -> ConfigNode {
        try ConfigNode.parse(yaml: yaml, file: "t.yaml")
    }

    static func error(_ yaml: String) -> String? {
        do {
            _ = try parse(yaml)
            return nil
        } catch {
            return error.description
        }
    }

    static func value(_ node: ConfigNode, _ key: String) -> ConfigNode? {
        guard case .mapping(let entries) = node.value else { return nil }
        return entries.first { $0.key == key }?.value
    }

    @Test func valuesKeepTheirTextAndLocation() throws {
        let root = try Self.parse("a: 1\nb:\n  - \"yes\"\n  - x y\n")
        guard case .mapping(let entries) = root.value else { Issue.record("not a mapping"); return }
        #expect(entries.map(\.key) == ["a", "b"])
        #expect(entries[0].keyLocation == SourceLocation(file: "t.yaml", line: 1, column: 1))
        #expect(entries[0].value == ConfigNode(.scalar("1"), at: SourceLocation(file: "t.yaml", line: 1, column: 4)))
        guard case .sequence(let items) = entries[1].value.value else { Issue.record("not a list"); return }
        #expect(items.map(\.value) == [.scalar("yes"), .scalar("x y")])
        #expect(items[1].location == SourceLocation(file: "t.yaml", line: 4, column: 5))
    }

    @Test func onlyPlainNullSpellingsAreNull() throws {
        let root = try Self.parse("a:\nb: ~\nc: null\nd: NULL\ne: \"null\"\nf: ''\ng: 'null'\nh: nil\n")
        for key in ["a", "b", "c", "d"] { #expect(Self.value(root, key)?.value == .null, "\(key)") }
        #expect(Self.value(root, "e")?.value == .scalar("null"))
        #expect(Self.value(root, "f")?.value == .scalar(""))
        #expect(Self.value(root, "g")?.value == .scalar("null"))
        #expect(Self.value(root, "h")?.value == .scalar("nil"))
    }

    @Test func scalarsKeepTheirTextWhateverTheirTag() throws {
        let root = try Self.parse("a: !!str 5\nb: !!int 07\nc: !custom x\nd: \"a\\0b\\u00e9\"\ne: |\n  one\n  two\n")
        #expect(Self.value(root, "a")?.value == .scalar("5"))
        #expect(Self.value(root, "b")?.value == .scalar("07"))
        #expect(Self.value(root, "c")?.value == .scalar("x"))
        #expect(Self.value(root, "d")?.value == .scalar("a\u{0}bé"))
        #expect(Self.value(root, "e")?.value == .scalar("one\ntwo\n"))
    }

    @Test func anAliasIsItsAnchoredValueWhereTheAnchorIs() throws {
        let root = try Self.parse("x: &v {k: 1}\ny: *v\nz: &v 2\nw: *v\n")
        #expect(Self.value(root, "y") == Self.value(root, "x"))
        #expect(Self.value(root, "y")?.location == SourceLocation(file: "t.yaml", line: 1, column: 4))
        #expect(Self.value(root, "w")?.value == .scalar("2"))  // a later anchor of the same name wins
        #expect(Self.error("x: *nope\n") == "t.yaml:1:4: invalid YAML: found undefined alias")
        #expect(Self.error("x: &a [*a]\n") == "t.yaml:1:8: invalid YAML: found undefined alias")
    }

    @Test func emptyTextIsAnEmptyConfig() throws {
        for text in ["", "# only a comment\n", "---\n", "---\n...\n"] {
            #expect(try Self.parse(text).value == .null, "\(text)")
        }
    }

    @Test func oneDocumentOnly() {
        #expect(Self.error("a: 1\n---\nb: 2\n") == "t.yaml:2:1: invalid YAML: expected a single document in the stream: but found another document")
    }

    @Test func libyamlsProblemAtItsLineAndColumn() {
        #expect(Self.error("a: [1, 2\nb: 3\n") == "t.yaml:2:2: invalid YAML: while parsing a flow sequence: did not find expected ',' or ']'")
        #expect(Self.error("a: 1\n\tb: 2\n") == "t.yaml:2:1: invalid YAML: while scanning a plain scalar: found a tab character that violates indentation")
        #expect(Self.error("a: \"open\n") == "t.yaml:2:1: invalid YAML: while scanning a quoted scalar: found unexpected end of stream")
    }

    @Test func aControlCharacterIsPlacedInUnicodeScalars() {
        // libyaml reports a byte offset; "é" is two bytes and one column.
        #expect(Self.error("a: 1\nb: \"héllo\u{1}\"\n") == "t.yaml:2:10: invalid YAML: control characters are not allowed")
    }

    @Test func duplicateKeysAreReportedWhereTheyRepeatWithWhereTheyFirstWere() {
        #expect(Self.error("b: 1\na: 2\nb: 3\na: 4\n") == "t.yaml:3:1: duplicate key \"b\" (first at 1:1), \"a\" (first at 2:1) in one mapping; each key may appear once")
        // Compared as the config reads them: the same string, quoted or not.
        #expect(Self.error("x:\n  yes: 1\n  \"yes\": 2\n") == "t.yaml:3:3: duplicate key \"yes\" (first at 2:3) in one mapping; each key may appear once")
        #expect(Self.error("x: {a: 1}\ny: {a: 2}\n") == nil)
    }

    @Test func aKeyMustBeAString() {
        #expect(Self.error("? [a]\n: 1\n") == "t.yaml:1:3: a mapping key must be a plain string")
        #expect(Self.error("~: 1\n") == "t.yaml:1:1: a mapping key must be a plain string")
    }

    @Test func nestingStopsAtTheFirstValueTooDeep() {
        func tooDeep(_ column: Int) -> String {
            "t.yaml:1:\(column): config is nested more than 64 levels deep; expected a shallow mapping"
        }
        // Depth 64 is the 64th "[" at column 64: the top-level mapping is depth 0, "a: [" is 1.
        #expect(Self.error("a: " + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "\n") == nil)
        #expect(Self.error("a: " + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "\n")
                == tooDeep(67))
        // Far deeper than any libyaml limit: stops at the same place, at once, without recursion.
        let deep = "a: " + String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000) + "\n"
        #expect(Self.error(deep) == tooDeep(67))
        // Through an alias (depth 29 here), at the place in the anchored value: its 36th "[".
        let nested = String(repeating: "[", count: 40) + "1" + String(repeating: "]", count: 40)
        let alias = String(repeating: "[", count: 28) + "*n" + String(repeating: "]", count: 28)
        #expect(Self.error("x: &n \(nested)\ny: \(alias)\n") == tooDeep(42))
    }

    @Test func aliasBombsAreRefused() {
        var yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<6 {
            yaml += "l\(level): &l\(level) [" + Array(repeating: "*\(level == 1 ? "a" : "l\(level - 1)")", count: 10).joined(separator: ", ") + "]\n"
        }
        #expect(Self.error(yaml)?.hasSuffix("config expands to more than 100000 values (YAML aliases nested too deep?); refusing to load it") == true)
    }

    static let registry = try! SinkRegistry([
        SinkPlugin(kind: "recording", summary: "records deliveries", optionKeys: ["label", "extra"]) { _ in RecordingSink() },
    ])

    /// Strings that need quoting or escaping in YAML, each loaded back unchanged.
    static let awkward = [
        "null", "~", "", " leading space", "trailing space ", "a: b", "# not a comment", "- dash", "*star", "&amp", "!bang",
        "quote \" and 'single'", "back\\slash", "line\nbreak", "tab\there", "é and 😀", "{brace}", "[bracket]", "%percent",
        "@at", "`tick`", "yes", "true", "0x10", "1e3", "?", ":", ",", String(repeating: "long ", count: 30),
    ]

    @Test(arguments: awkward)
    func configShowLoadsBackToTheSameConfig(text: String) throws {
        let quoted = "\"" + text.unicodeScalars.map { scalar -> String in
            switch scalar {
            case "\"": "\\\""
            case "\\": "\\\\"
            case "\n": "\\n"
            case "\t": "\\t"
            default: String(scalar)
            }
        }.joined() + "\""
        let yaml = """
            defaults: { app: \(quoted), source: \(quoted) }
            sinks:
              one: { kind: recording, label: \(quoted), extra: [\(quoted), { k: \(quoted) }] }
            rules:
              - match: { title: \(quoted), tags: [\(quoted)] }
                set: { category: \(quoted), tags: [\(quoted)], fields: { f: \(quoted), \(quoted): x } }
            routes:
              - match: { body: \(quoted) }
                to: [one]
            fallback: [one]
            """
        let config = try RouterConfiguration.load(yaml: yaml, file: "t.yaml", registry: Self.registry)
        #expect(config.defaults.app == text)
        let shown = try config.effectiveYAML()
        let again = try RouterConfiguration.load(yaml: shown, file: "shown.yaml", registry: Self.registry)
        #expect(again.defaults.app == text)
        #expect(again.defaults.source == config.defaults.source)
        #expect(again.rules.map(\.matcher) == config.rules.map(\.matcher))
        #expect(again.rules.map(\.effects) == config.rules.map(\.effects))
        #expect(again.routes.map(\.matcher) == config.routes.map(\.matcher))
        #expect(again == config)
        #expect(try again.effectiveYAML() == shown)
    }

    @Test func configShowWritesTheSameLayoutAsBefore() throws {
        let config = try RouterConfiguration.load(yaml: """
            sinks:
              one: { kind: recording, label: x }
            routes:
              - match: {}
                to: [one]
                continue: true
                dedup: { window: 10s }
            fallback: [one]
            """, file: "t.yaml", registry: Self.registry)
        let shown = try config.effectiveYAML()
        for line in ["defaults:\n  level: info\n", "  warning: {timeout: 8s, priority: 4, urgency: normal, tint: yellow}\n",
                     "sinks:\n  one:\n    kind: recording\n", "    label: \"x\"\n", "routes:\n- match: {}\n  to: [one]\n  continue: true\n  failover: []\n  dedup: {window: 10s}\n  set: {}\n",
                     "fallback: [one]\n", "state:\n  max_entries: "] {
            #expect(shown.contains(line), "missing \(line)")
        }
    }
}
