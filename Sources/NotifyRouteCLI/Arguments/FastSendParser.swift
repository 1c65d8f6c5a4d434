import NotifyRoute

/// `notify-route send`'s usual argument forms, parsed without ArgumentParser.
///
/// ArgumentParser finds a command's options by reflection (a `Mirror` of every option
/// group, type metadata from mangled names, protocol-conformance scans over the binary's
/// records), which is most of what a journal send costs after the process has started
/// (Tests/Benchmarks/README.md, "Why the code is so"). A send from a script needs none of it.
///
/// This parser takes only what it can read without doubt: `--name VALUE`, `--name=VALUE`,
/// `-x VALUE`, the flags spelled alone, `--`, then the title and at most a body. Anything
/// else (help, an unknown or repeated option, a value that starts with `-`, short flags run
/// together, a value that does not validate, a missing title) returns `nil`, and the
/// arguments go to ArgumentParser, whose messages and exit codes are the reference. The
/// tests hold the two to the same ``SendRequest`` for every form this parser accepts.
enum FastSendParser {
    /// The request for the arguments after `send`, or `nil` to leave them to ArgumentParser.
    static func parse<Arguments: Collection<String>>(_ arguments: Arguments) -> SendRequest? {
        var flags = EventArguments()
        var config: String?
        var verbose = false, wait = false, noWait = false, dryRun = false, json = false, noDaemon = false
        var socket: String?
        var positionals: [String] = []
        var seen: UInt32 = 0  // a bit per Option (a Set would cost its generic metadata at start-up)

        var iterator = arguments.makeIterator()
        var onlyPositionals = false
        while let argument = iterator.next() {
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            let name: Substring
            var attached: String?
            if argument.hasPrefix("--") {
                let spelled = argument.dropFirst(2)
                if let equals = spelled.firstIndex(of: "=") {
                    name = spelled[..<equals]
                    attached = String(spelled[spelled.index(after: equals)...])
                } else {
                    name = spelled
                }
            } else {
                // `-x` alone: `-xVALUE`, `-x=VALUE` and `-vw` are ArgumentParser's to read.
                guard argument.utf8.count == 2 else { return nil }
                name = argument.dropFirst()
            }
            guard let option = Option(argument.hasPrefix("--") ? .long(name) : .short(name)) else { return nil }
            // A repeated option that takes one value, or a repeated flag: ArgumentParser decides.
            if !option.repeats {
                guard seen & option.bit == 0 else { return nil }
                seen |= option.bit
            }
            if option.isFlag {
                guard attached == nil else { return nil }
                switch option {
                case .verbose: verbose = true
                case .wait: wait = true
                case .noWait: noWait = true
                case .dryRun: dryRun = true
                case .json: json = true
                case .noDaemon: noDaemon = true
                default: return nil
                }
                continue
            }
            let value: String
            if let attached {
                // ArgumentParser reads `--name=` as `--name` and takes the next argument.
                guard !attached.isEmpty else { return nil }
                value = attached
            } else {
                guard let next = iterator.next(), !next.hasPrefix("-") else { return nil }
                value = next
            }
            switch option {
            case .config: config = value
            case .level:
                guard let level = Level(name: value) else { return nil }
                flags.level = level
            case .timeout: flags.timeout = value
            case .app: flags.app = value
            case .source: flags.source = value
            case .tag: flags.tags.append(value)
            case .dedupKey: flags.dedupKey = value
            case .replaceKey: flags.replaceKey = value
            case .icon: flags.icon = value
            case .category: flags.category = value
            case .action: flags.actions.append(value)
            case .field: flags.fields.append(value)
            case .sink: flags.sinks.append(value)
            case .progress:
                guard let progress = Percent.parse(value) else { return nil }
                flags.progress = progress
            case .socket: socket = value
            default: return nil
            }
        }
        // A title and maybe a body (`-` for standard input), neither of them `help`.
        guard (1...2).contains(positionals.count), !positionals.contains("help"), positionals[0] != "-",
              flags.problem == nil
        else { return nil }
        return SendRequest(
            config: config, verbose: verbose, flags: flags, title: positionals[0], body: positionals.count == 2 ? positionals[1] : nil,
            wait: wait, noWait: noWait, dryRun: dryRun, json: json, noDaemon: noDaemon, socket: socket)
    }

    /// Every option and flag of `send` (``GlobalOptions``, ``EventFlags`` and ``Send``'s own).
    enum Option: Int {
        case config, verbose, level, timeout, app, source, tag, dedupKey, replaceKey, icon, category, action, field, sink
        case wait, noWait, dryRun, json, noDaemon, socket, progress

        enum Spelling {
            case long(Substring)
            case short(Substring)
        }

        init?(_ spelling: Spelling) {
            switch spelling {
            case .long(let name):
                switch name {
                case "config": self = .config
                case "verbose": self = .verbose
                case "level": self = .level
                case "timeout": self = .timeout
                case "app": self = .app
                case "source": self = .source
                case "tag": self = .tag
                case "dedup-key": self = .dedupKey
                case "replace-key": self = .replaceKey
                case "icon": self = .icon
                case "category": self = .category
                case "action": self = .action
                case "field": self = .field
                case "sink": self = .sink
                case "wait": self = .wait
                case "no-wait": self = .noWait
                case "dry-run": self = .dryRun
                case "json": self = .json
                case "no-daemon": self = .noDaemon
                case "socket": self = .socket
                case "progress": self = .progress
                default: return nil
                }
            case .short(let name):
                switch name {
                case "v": self = .verbose
                case "l": self = .level
                case "t": self = .timeout
                case "a": self = .app
                case "s": self = .source
                case "g": self = .tag
                case "k": self = .dedupKey
                case "r": self = .replaceKey
                case "i": self = .icon
                case "c": self = .category
                case "A": self = .action
                case "f": self = .field
                case "w": self = .wait
                default: return nil
                }
            }
        }

        var bit: UInt32 { 1 << UInt32(rawValue) }

        var isFlag: Bool {
            switch self {
            case .verbose, .wait, .noWait, .dryRun, .json, .noDaemon: true
            default: false
            }
        }

        /// Options that collect every value given (`-g a -g b`).
        var repeats: Bool {
            switch self {
            case .tag, .action, .field, .sink: true
            default: false
            }
        }
    }
}
