import ArgumentParser
import NotifyRoute

/// `--config FILE` and `--verbose`, taken by every subcommand.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Read the config from FILE instead of the usual places.", valueName: "FILE"))
    var config: String?

    @Flag(name: .shortAndLong, help: "Print the router's diagnostics and the full report on stderr.")
    var verbose = false
}

/// The event flags shared by `send`, `explain` and `run`: everything but the title and body.
struct EventFlags: ParsableArguments {
    @Option(name: .shortAndLong, help: "The level; syslog's names (emerg alert crit err) and numbers (0-7) map onto ours.")
    var level: Level?

    // Taken whatever it looks like, so that `-t -5s` is refused for what it is, not as a missing value.
    @Option(name: .shortAndLong, parsing: .unconditional,
            help: ArgumentHelp("How long it stays: 1500ms, 5s, 2m, never or default.", valueName: "DURATION"))
    var timeout: String?

    @Option(name: .shortAndLong, help: "The producing program (desktop app name, journal identifier).")
    var app: String?

    @Option(name: .shortAndLong, help: "A free-form origin used by rules and keys (backup, db.pool).")
    var source: String?

    @Option(name: [.customShort("g"), .customLong("tag")], help: ArgumentHelp("A tag; repeat for more.", valueName: "TAG"))
    var tags: [String] = []

    @Option(name: [.customShort("k"), .customLong("dedup-key")], help: "Events with equal dedup keys are duplicates.")
    var dedupKey: String?

    @Option(name: [.customShort("r"), .customLong("replace-key")], help: "Replace the earlier notification with this key.")
    var replaceKey: String?

    @Option(name: .shortAndLong, help: "A desktop icon name or path.")
    var icon: String?

    @Option(name: .shortAndLong, help: "A desktop notification category.")
    var category: String?

    @Option(name: [.customShort("A"), .customLong("action")], help: ArgumentHelp("An action button; repeat for more.", valueName: "ID=LABEL"))
    var actions: [String] = []

    @Option(name: [.customShort("f"), .customLong("field")], help: ArgumentHelp("A structured field; repeat for more.", valueName: "KEY=VALUE"))
    var fields: [String] = []

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "How far a task has got, 0 to 100 (40 or 40%): a bar on the desktop and in the banner; with -r, each send updates one notification.",
        valueName: "PERCENT"))
    var progress: Percent?

    @Option(name: .long, help: ArgumentHelp("Send to this sink only, bypassing routes; repeat for more.", valueName: "NAME"))
    var sink: [String] = []

    /// What these flags say, as plain values.
    var arguments: EventArguments {
        EventArguments(
            level: level, timeout: timeout, app: app, source: source, tags: tags, dedupKey: dedupKey,
            replaceKey: replaceKey, icon: icon, category: category, actions: actions, fields: fields, sinks: sink,
            progress: progress?.value)
    }

    func validate() throws {
        if let problem = arguments.problem { throw ValidationError(problem) }
    }

    /// Sets what these flags say on `event`; fields given here are added to its own.
    func apply(to event: inout NotificationEvent) {
        arguments.apply(to: &event)
    }
}

/// `--progress`: a whole number, as people write a percentage too (`40%`).
struct Percent: ExpressibleByArgument, Sendable {
    var value: Int

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        self.value = value
    }

    /// `40` or `40%`; the range is checked with the other flags (``EventArguments/problem``).
    static func parse(_ text: String) -> Int? {
        Int(text.hasSuffix("%") ? String(text.dropLast()) : text)
    }
}

/// The event flags as plain values: what ArgumentParser's ``EventFlags`` and
/// ``FastSendParser`` both produce, so that one code path sends whichever parsed.
struct EventArguments: Equatable, Sendable {
    var level: Level?
    var timeout: String?
    var app: String?
    var source: String?
    var tags: [String] = []
    var dedupKey: String?
    var replaceKey: String?
    var icon: String?
    var category: String?
    var actions: [String] = []
    var fields: [String] = []
    var sinks: [String] = []
    var progress: Int?

    /// What is wrong with the values, in the words of the usage error; `nil` when nothing is.
    var problem: String? {
        if let timeout {
            do { _ = try NotificationTimeout(parsing: timeout) } catch {
                return "--timeout: \(error.description), or never, or default"
            }
        }
        if let progress, !NotificationEvent.progressRange.contains(progress) {
            return "--progress \(progress): expected a whole number from 0 to 100"
        }
        for action in actions where NotificationAction(parsing: action) == nil {
            return "--action \"\(action)\": expected ID=LABEL, for example -A ack=Acknowledge"
        }
        for field in fields where !field.contains("=") || field.hasPrefix("=") {
            return "--field \"\(field)\": expected KEY=VALUE, for example -f DISK=/dev/sda"
        }
        return nil
    }

    /// Sets these values on `event`; fields given here are added to its own.
    func apply(to event: inout NotificationEvent) {
        if let level { event.level = level }
        if let timeout { event.timeout = try? NotificationTimeout(parsing: timeout) }
        if let app { event.app = app }
        if let source { event.source = source }
        event.tags.formUnion(tags)
        if let dedupKey { event.dedupKey = dedupKey }
        if let replaceKey { event.replaceKey = replaceKey }
        if let icon { event.icon = icon }
        if let category { event.category = category }
        if let progress { event.progress = progress }
        event.actions += actions.compactMap(NotificationAction.init(parsing:))
        for field in fields {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            event.fields[String(parts[0])] = String(parts[1])
        }
    }

    /// The event with this title and body. Reads standard input for a body of `-`.
    func makeEvent(title: String, body: String?) -> NotificationEvent {
        var event = NotificationEvent(title: title)
        event.body = body == "-" ? StandardInput.readAll() : body
        apply(to: &event)
        return event
    }
}

/// The event options of `send` and `explain`: the flags, a title and a body.
struct EventOptions: ParsableArguments {
    @OptionGroup var flags: EventFlags

    @Argument(help: "The title: one line.")
    var title: String

    @Argument(help: "The body; - reads it from standard input.")
    var body: String?

    var sink: [String] { flags.sink }

    /// The event these options describe. Reads standard input for a body of `-`.
    func makeEvent() -> NotificationEvent {
        flags.arguments.makeEvent(title: title, body: body)
    }
}

extension Level: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(name: argument)
    }

    /// Ours, then syslog's names and numbers, in `--help` and the completions.
    public static var allValueStrings: [String] {
        allCases.map(\.rawValue) + syslogNames.map(\.name)
    }
}
