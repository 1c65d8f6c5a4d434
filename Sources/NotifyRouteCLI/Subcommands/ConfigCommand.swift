import ArgumentParser
import NotifyRoute

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check or show the config.",
        subcommands: [Check.self, Show.self, Reference.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Check a config file (or the one in effect); errors name file:line:column and exit 78.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The file to check; default: the config in effect.")
        var file: String?

        func run() async throws {
            var options = global
            if let file { options.config = file }
            let (router, source) = try RouterLoader.load(options)
            let config = router.configuration
            func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
            Console.out("\(source.origin): ok (\(count(config.sinks.count, "sink")), \(count(config.rules.count, "rule")), \(count(config.routes.count, "route")))")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the effective config, with every default filled in.",
            discussion: """
                Values that may hold a secret (a network sink's URL, its headers) are shown as the URL's origin \
                (https://hooks.example/…) and <secret>; --show-secrets prints them as written.
                """)

        @OptionGroup var global: GlobalOptions

        @Flag(name: .long, help: "Print URLs and header values as written, secrets included.")
        var showSecrets = false

        func run() async throws {
            let (router, source) = try RouterLoader.load(global)
            let yaml = try router.configuration.effectiveYAML(redactingSecrets: !showSecrets)
            Console.out("# effective config from \(source.origin)\n" + yaml)
        }
    }

    struct Reference: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reference",
            abstract: "Print every config key (where it goes, its type, default and meaning) as Markdown.")

        func run() async throws {
            Console.out(ConfigSchema.reference(plugins: BuiltinPlugins.all))
        }
    }
}
