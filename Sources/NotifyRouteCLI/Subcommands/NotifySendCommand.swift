import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute
import NotifyRouteDesktop

/// `notify-route notify-send ...`, and the binary called through a link named `notify-send`:
/// libnotify 0.8's `notify-send` options with their meaning, the event routed by the config
/// like any other. Parsed by ``NotifySendArguments`` (GOption's rules), not ArgumentParser:
/// this type is here for `--help`, the man page and the completions.
struct NotifySendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-send",
        abstract: "Send a notification with notify-send's options, through the configured routes.",
        discussion: """
            Options (as libnotify 0.8's notify-send): -u, --urgency=low|normal|critical (the level: \
            low is info, normal notice, critical critical; the desktop gets that urgency); \
            -t, --expire-time=MS (0 never, -1 the server's default, the default); -a, --app-name=NAME; \
            -i, --icon=ICON; -c, --category=TYPE[,TYPE...]; -e, --transient; \
            -h, --hint=TYPE:NAME:VALUE (TYPE int, string, byte or boolean; repeatable); -p, --print-id; \
            -r, --replace-id=ID (an id printed by notify-route notify-send -p); -w, --wait; \
            -A, --action=[NAME=]LABEL (repeatable; implies --wait, prints the chosen action's name); \
            -v, --version; -?, --help. Also --config FILE. \
            Not supported, a usage error (64): double and variant hints, -n/--app-icon, --id-fd, \
            --selected-action-fd, --activation-token-fd. \
            Exit codes: 0 delivered or suppressed on purpose, 1 no sink delivered, 64 usage, \
            69 no sink available, 78 config error.
            """,
        helpNames: [])

    @Argument(parsing: .captureForPassthrough, help: "notify-send's options, then SUMMARY and an optional BODY.")
    var arguments: [String] = []

    func run() async throws {
        await Self.main(arguments)
    }

    /// Parses and sends; ends the process.
    static func main(_ arguments: some Sequence<String>) async {
        switch NotifySendArguments.parse(arguments) {
        case .failure(let error):
            Console.error("notify-send: \(error.message)\n\(usageLine)")
            Glibc.exit(ExitStatus.usage.rawValue)
        case .success(let parsed):
            if parsed.help {
                Console.out(usageLine + "\n\n" + configuration.discussion)
                Glibc.exit(0)
            }
            if parsed.version {
                Console.out("notify-send (notify-route) \(NotifyRouteVersion.current)")
                Glibc.exit(0)
            }
            do {
                try await parsed.run()
            } catch let code as ExitCode {
                Glibc.exit(code.rawValue)
            } catch {
                Console.error("notify-send: \(error)")
                Glibc.exit(ExitStatus.noneDelivered.rawValue)
            }
            Glibc.exit(0)
        }
    }

    static let usageLine = "Usage: notify-send [OPTION...] SUMMARY [BODY] (notify-route notify-send --help for the options)"
}

/// notify-send's command line, read as GOption reads it: options anywhere among the
/// summary and body, `-uVALUE` or `-u VALUE`, `--urgency=VALUE` or `--urgency VALUE`, short
/// flags run together (`-ep`), `--` before a summary that starts with `-`.
struct NotifySendArguments: Equatable, Sendable {
    var urgency: Urgency?
    var expireTime: Int32?
    var appName: String?
    var icon: String?
    var category: String?
    var transient = false
    var hints: [String: DesktopHint] = [:]
    /// `-h int:value:N` with N from 0 to 100: the event's progress, which every sink shows.
    var progress: Int?
    var printID = false
    var replaceID: UInt32?
    var wait = false
    var actions: [NotificationAction] = []
    var version = false
    var help = false
    var config: String?
    var summary = ""
    var body: String?

    struct Problem: Error, Equatable {
        var message: String
    }

    /// Each option by its long name; the short ones map onto these.
    private static let shortNames: [Character: String] = [
        "u": "urgency", "t": "expire-time", "a": "app-name", "i": "icon", "c": "category", "e": "transient",
        "h": "hint", "p": "print-id", "r": "replace-id", "w": "wait", "A": "action", "v": "version", "?": "help",
    ]
    private static let flags: Set<String> = ["transient", "print-id", "wait", "version", "help"]
    private static let valued: Set<String> = ["urgency", "expire-time", "app-name", "icon", "category", "hint", "replace-id", "action", "config"]
    /// Options of newer notify-send versions that have no counterpart here.
    private static let unsupported: [String: String] = [
        "app-icon": "-n/--app-icon (libnotify 0.8.4's application icon) is not supported; use -i",
        "id-fd": "--id-fd is not supported; use -p, which prints the id on stdout",
        "selected-action-fd": "--selected-action-fd is not supported; the chosen action's name is printed on stdout",
        "activation-token-fd": "--activation-token-fd is not supported",
    ]

    static func parse(_ arguments: some Sequence<String>) -> Result<NotifySendArguments, Problem> {
        var parsed = NotifySendArguments()
        var positionals: [String] = []
        var iterator = arguments.makeIterator()
        var onlyPositionals = false
        do {
            while let argument = iterator.next() {
                if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                    positionals.append(argument)
                } else if argument == "--" {
                    onlyPositionals = true
                } else if argument.hasPrefix("--") {
                    let spelled = argument.dropFirst(2)
                    let name = String(spelled.prefix { $0 != "=" })
                    let attached = spelled.firstIndex(of: "=").map { String(spelled[spelled.index(after: $0)...]) }
                    if flags.contains(name) {
                        guard attached == nil else { throw Problem(message: "\(argument): --\(name) takes no value") }
                        parsed.setFlag(name)
                    } else if valued.contains(name) {
                        guard let value = attached ?? iterator.next() else { throw Problem(message: "Missing argument for --\(name)") }
                        try parsed.set(name, value, spelled: "--\(name)")
                    } else {
                        throw Problem(message: unsupported[name] ?? "Unknown option \(argument)")
                    }
                } else {
                    // A run of short options (`-ep`). As in GOption, a value is always the next
                    // argument (`-ulow` is not `-u low`), and only one option of a run takes one.
                    var tookValue = false
                    for letter in argument.dropFirst() {
                        guard let name = shortNames[letter] else {
                            throw Problem(message: letter == "n" ? unsupported["app-icon"]! : "Unknown option -\(letter)")
                        }
                        if flags.contains(name) {
                            parsed.setFlag(name)
                            continue
                        }
                        guard !tookValue else { throw Problem(message: "Error parsing option -\(letter): \(argument) has two options that take a value") }
                        guard let value = iterator.next() else { throw Problem(message: "Missing argument for -\(letter)") }
                        try parsed.set(name, value, spelled: "-\(letter)")
                        tookValue = true
                    }
                }
            }
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(message: "\(error)"))
        }
        if parsed.help || parsed.version { return .success(parsed) }
        guard let summary = positionals.first else { return .failure(Problem(message: "No summary specified.")) }
        guard positionals.count <= 2 else {
            return .failure(Problem(message: "Invalid number of options: a summary and at most a body, got \(positionals.count) arguments"))
        }
        parsed.summary = summary
        parsed.body = positionals.count == 2 ? Self.compress(positionals[1]) : nil
        if parsed.transient { parsed.hints["transient"] = .boolean(true) }
        return .success(parsed)
    }

    private mutating func setFlag(_ name: String) {
        switch name {
        case "transient": transient = true
        case "print-id": printID = true
        case "wait": wait = true
        case "version": version = true
        default: help = true
        }
    }

    private mutating func set(_ name: String, _ value: String, spelled: String) throws {
        switch name {
        case "urgency":
            guard let urgency = Urgency(rawValue: value.lowercased()) else {
                throw Problem(message: "Unknown urgency \(value) specified. Known urgency levels: low, normal, critical.")
            }
            self.urgency = urgency
        case "expire-time":
            guard let milliseconds = Int32(value) else { throw Problem(message: "Cannot parse integer value “\(value)” for \(spelled)") }
            expireTime = milliseconds
        case "app-name": appName = value
        case "icon": icon = value
        case "category": category = value
        case "hint": try addHint(value)
        case "replace-id":
            guard let id = Int32(value) else { throw Problem(message: "Cannot parse integer value “\(value)” for \(spelled)") }
            replaceID = id > 0 ? UInt32(id) : nil
        case "action":
            // As notify-send: NAME=LABEL, or LABEL named by its index; an empty side is skipped.
            let parts = value.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let trimmed = parts.map { String($0.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()) }
            let (id, label) = parts.count == 1 ? (String(actionIndex), trimmed[0]) : (trimmed[0], trimmed[1])
            actionIndex += 1
            if !id.isEmpty && !label.isEmpty { actions.append(NotificationAction(id: id, label: label)) }
        default: config = value
        }
    }

    /// notify-send numbers unnamed actions by their position among all `-A`s.
    private var actionIndex = 0

    /// `TYPE:NAME:VALUE`, typed as libnotify types it.
    private mutating func addHint(_ text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw Problem(message: "Invalid hint syntax specified. Use TYPE:NAME:VALUE.") }
        let (type, name, value) = (parts[0], parts[1], parts[2])
        let hint: DesktopHint
        switch type {
        case "int":
            guard let number = Int32(value) else { throw Problem(message: "Invalid hint value \"\(value)\": int hints take a whole number") }
            hint = .int32(number)
        case "byte":
            guard let number = UInt8(value) else { throw Problem(message: "Invalid hint value \"\(value)\": byte hints take 0 to 255") }
            hint = .byte(number)
        case "boolean":
            switch value.lowercased() {
            case "true", "1": hint = .boolean(true)
            case "false", "0": hint = .boolean(false)
            default: throw Problem(message: "Invalid hint value \"\(value)\": boolean hints take true or false")
            }
        case "string": hint = .string(value)
        case "double", "variant":
            throw Problem(message: "-h \(text): \(type) hints are not supported (int, string, byte and boolean are); nothing was sent")
        default:
            throw Problem(message: "Invalid hint type \"\(type)\". Valid types are int, double, string, byte, boolean and variant.")
        }
        if name == "urgency", case .byte(let level) = hint, let urgency = Urgency(byte: level) {
            self.urgency = urgency
        } else if name == "value", case .int32(let value) = hint, NotificationEvent.progressRange.contains(Int(value)) {
            // The desktop sink sends it back as the same int hint; out of range it stays a plain hint, as notify-send passes it.
            progress = Int(value)
        } else {
            hints[name] = hint
        }
    }

    /// The body as `g_strcompress` reads it: C escapes (`\n`, `\t`, `\\`, octal) become characters.
    static func compress(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "\\"), let next = input.popFirst() else {
                bytes.append(byte)
                continue
            }
            switch next {
            case UInt8(ascii: "b"): bytes.append(8)
            case UInt8(ascii: "f"): bytes.append(12)
            case UInt8(ascii: "n"): bytes.append(10)
            case UInt8(ascii: "r"): bytes.append(13)
            case UInt8(ascii: "t"): bytes.append(9)
            case UInt8(ascii: "v"): bytes.append(11)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var value = Int(next - UInt8(ascii: "0"))
                for _ in 0..<2 {
                    guard let digit = input.first, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(digit) else { break }
                    value = value * 8 + Int(digit - UInt8(ascii: "0"))
                    input = input.dropFirst()
                }
                bytes.append(UInt8(truncatingIfNeeded: value))
            default: bytes.append(next)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The level the urgency stands for: what rules and routes see.
    var level: Level? {
        switch urgency {
        case .low: .info
        case .normal: .notice
        case .critical: .critical
        case nil: nil
        }
    }

    /// The send this stands for: libnotify's defaults where notify-send leaves a value unset.
    var request: SendRequest {
        var flags = EventArguments()
        flags.level = level
        // notify-send's default is the server's (-1); 0 is never.
        switch expireTime {
        case nil: flags.timeout = "default"
        case let milliseconds? where milliseconds < 0: flags.timeout = "default"
        case 0: flags.timeout = "never"
        case let milliseconds?: flags.timeout = "\(milliseconds)ms"
        }
        flags.app = appName ?? "notify-send"
        flags.icon = icon
        flags.category = category
        flags.actions = actions.map(\.description)
        flags.replaceKey = replaceID.map(Self.replaceKey(forID:))
        flags.progress = progress
        return SendRequest(
            config: config, flags: flags, title: summary, body: body, wait: wait || !actions.isEmpty, noDaemon: true)
    }

    /// The replace key that remembers a desktop notification id this command printed.
    static func replaceKey(forID id: UInt32) -> String { "notify-send:\(id)" }

    /// The hints the desktop sinks add to this event: `-h` and `-e`, and the urgency asked
    /// for (libnotify's notify-send always sends one; normal when not given).
    var desktopHints: [String: DesktopHint] {
        var hints = hints
        hints["urgency"] = .byte((urgency ?? .normal).byteValue)
        return hints
    }

    func run() async throws {
        let store = RouterLoader.stateStore()
        let (router, _) = try RouterLoader.load(
            config: config, verbose: false, sharedState: true, store: store, plugins: Self.registry(adding: desktopHints), perEvent: true)
        try await request.route(nil, with: router, printsDismissal: false) { report in
            let shown = report.outcomes.filter { $0.kind == DesktopSink.plugin.kind && $0.status.isSuccess }
            let ids = shown.compactMap { outcome in outcome.handle.flatMap { UInt32($0.value.prefix { $0 != "@" }) } }
            if printID { Console.out(String(ids.first ?? 0)) }
            // So that `-r ID` finds the notification by the id printed here.
            try? store.withState { state in
                for (outcome, id) in zip(shown, ids) {
                    guard let handle = outcome.handle else { continue }
                    state.storeHandle(
                        RouterState.HandleRecord(handle: handle, lastUsed: Date()),
                        forKey: RouterState.Key(sink: outcome.sink, key: Self.replaceKey(forID: id)))
                }
            }
        }
    }

    /// The built-in plugins, with every desktop sink adding `hints` to what its config sets.
    static func registry(adding hints: [String: DesktopHint]) -> SinkRegistry {
        let desktop = DesktopSink.plugin
        let plugins = BuiltinPlugins.all.map { plugin in
            guard plugin.kind == desktop.kind else { return plugin }
            return SinkPlugin(kind: desktop.kind, summary: desktop.summary, options: desktop.options, defaultDeadline: desktop.defaultDeadline) {
                options in
                var configuration = try DesktopSink(options: options).configuration
                configuration.hints.merge(hints) { _, given in given }
                return DesktopSink(configuration: configuration)
            }
        }
        return try! SinkRegistry(plugins)
    }
}

extension Urgency {
    init?(byte: UInt8) {
        switch byte {
        case 0: self = .low
        case 1: self = .normal
        case 2: self = .critical
        default: return nil
        }
    }
}
