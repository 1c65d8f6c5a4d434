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
            abstract: "Print the effective config, with every default filled in.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let (router, source) = try RouterLoader.load(global)
            Console.out("# effective config from \(source.origin)\n" + (try router.configuration.effectiveYAML()))
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
