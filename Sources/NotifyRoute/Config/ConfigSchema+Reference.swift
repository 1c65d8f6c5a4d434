extension ConfigSchema {
    /// The key reference in Markdown, from the schema and the plugins' declared options:
    /// what `notify-route config reference` prints and `config/REFERENCE.md` holds.
    public static func reference(plugins: [SinkPlugin]) -> String {
        var text = """
            # Config keys

            Every key a notify-route config may hold: where it is allowed, what it takes, its
            default and what it does. Generated from the config schema
            (`Sources/NotifyRoute/Config/ConfigSchema.swift`) by `notify-route config reference`;
            a test fails when this file is out of date. An unknown key is an error, and
            `notify-route config show` prints every key of the config in effect with its default
            filled in.

            """
        func table(_ title: String, _ keys: [ConfigKey]) {
            text += "\n## \(title)\n\n| key | type | default | description | example |\n|---|---|---|---|---|\n"
            for key in keys {
                let cells = ["`\(key.name)`", key.type.description, key.defaultValue.description,
                             key.summary.isEmpty ? "–" : key.summary, key.example.isEmpty ? "–" : "`\(key.example)`"]
                text += "| " + cells.map { $0.replacingAll("|", with: "\\|") }.joined(separator: " | ") + " |\n"
            }
        }
        for section in sections { table(section.path, keys(in: section)) }
        for plugin in plugins where !plugin.options.isEmpty {
            table(ConfigSection.sinkOptions(kind: plugin.kind).path, plugin.options)
        }
        return text
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var output = ""
        for character in self { if character == target { output += replacement } else { output.append(character) } }
        return output
    }
}
