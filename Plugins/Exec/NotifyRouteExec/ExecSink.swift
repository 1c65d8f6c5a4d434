#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import Synchronization

/// A sink written as a separate program, in any language: the router writes one JSON
/// request per line on its stdin, and it answers one JSON line per request on its stdout.
///
/// One long-lived child per sink instance, started on the first event, restarted on the
/// next event after it dies (the delivery it was handling fails with the reason), and
/// killed with SIGKILL when it does not answer before the sink's deadline. The command is
/// run with argv, never through a shell; its stderr is passed through to ours, each line
/// prefixed with `notify-route: sink "NAME": `.
///
/// ```yaml
/// sinks:
///   pager:
///     kind: exec
///     command: [/usr/local/bin/page-oncall, --team, ops]
///     env: { PAGER_TOKEN_FILE: /etc/pager/token }
///     deadline: 5s
/// ```
///
/// An executable named `notify-route-sink-KIND` on `PATH` is found automatically for a
/// `kind` no built-in plugin provides (see ``discoveredPlugin(kind:executable:)``). The
/// protocol is described in the README (`External sink plugins`).
public final class ExecSink: NotificationSink {
    public let name: String
    /// argv: a program (an absolute path, or a name looked up in `PATH`) and its arguments.
    public let command: [String]
    /// Added to the environment the router runs in.
    public let environment: [String: String]

    private struct State {
        var process: PluginProcess?
        var nextID = 1
    }

    private let state = Mutex(State())

    public init(name: String, command: [String], environment: [String: String] = [:]) {
        precondition(!command.isEmpty, "an exec sink needs a command")
        self.name = name
        self.command = command
        self.environment = environment
    }

    /// The plugin decides what it can do with a replace or a count update; the router
    /// sends them, and actions, as they are.
    public var capabilities: SinkCapabilities {
        SinkCapabilities(canReplace: true, canClose: true, supportsActions: true, worthRetrying: true)
    }

    /// Available when the program can be found and executed; nothing is started to find out.
    public func availability() async -> SinkAvailability {
        executable() == nil ? .unavailable(reason: notFoundReason) : .available
    }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let (process, id) = try process()
        let line = ExecRequest.deliver(delivery, id: id).line()
        return try await process.request(id: id, line: line, deadline: delivery.deadline).get()
    }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        let (process, id) = try process()
        return try await process.request(id: id, line: ExecRequest.close(request, id: id).line(), deadline: request.deadline).get()
    }

    /// The plugin process runs: ``finish()`` ends it.
    public var hasPendingWork: Bool {
        guard let process = state.withLock({ $0.process }) else { return false }
        return !process.hasEnded
    }

    /// Closes the plugin's stdin and gives it two seconds to finish and exit; then kills it.
    public func finish() async {
        guard let process = state.withLock({ $0.process }), !process.hasEnded else { return }
        process.closeInput()
        if await !process.waitForExit(within: .seconds(2)) {
            process.kill(reason: "did not exit within 2s after its input was closed")
        }
    }

    /// The running plugin, started (or restarted) when there is none, and a request id.
    private func process() throws(SinkError) -> (PluginProcess, Int) {
        try state.withLock { state throws(SinkError) -> (PluginProcess, Int) in
            defer { state.nextID += 1 }
            if let process = state.process, !process.hasEnded { return (process, state.nextID) }
            guard let executable = executable() else { throw SinkError(.unavailable, notFoundReason) }
            if let previous = state.process {
                PluginProcess.report("restarting the plugin: \(previous.endReason ?? "it ended")", sink: name)
            }
            var environment = ProcessInfo.processInfo.environment
            environment.merge(self.environment) { _, new in new }
            environment["NOTIFY_ROUTE_SINK"] = name
            let process = try PluginProcess.start(
                executable: executable, arguments: command, environment: environment, sinkName: name)
            state.process = process
            return (process, state.nextID)
        }
    }

    private func executable() -> String? {
        ExecutableLookup.find(command[0], path: environment["PATH"] ?? ProcessEnvironment.value("PATH"))
    }

    private var notFoundReason: String {
        command[0].hasPrefix("/")
            ? "\(command[0]) is not an executable file"
            : "command not found: no executable \"\(command[0])\" in PATH"
    }
}

extension ExecSink {
    /// `kind: exec`: `command` (required: `[program, args...]`) and `env` (a mapping).
    public static let plugin = SinkPlugin(
        kind: "exec",
        summary: "an external program speaking JSON lines on stdin/stdout (command: [program, args...]); never a shell",
        options: [
            .option("command", .strings, default: .required, example: "[/usr/local/bin/page-oncall, --team, ops]",
                    "the program and its arguments, run without a shell"),
            .option("env", .stringMap, example: "{ ONCALL_TEAM: ops }", "environment variables added for the program"),
        ] + SinkRetry.keys
    ) { options in
        try SinkRetry.check(options)
        guard let command = try options.stringList("command"), let program = command.first, !program.isEmpty else {
            throw options.error("needs `command: [program, args...]`, for example command: [/usr/local/bin/page-oncall, --team, ops]", at: "command")
        }
        if !program.hasPrefix("/") && program.contains("/") {
            throw options.error(
                "command \"\(program)\" is a relative path; give an absolute path, or a bare name to look up in PATH", at: "command")
        }
        return ExecSink(name: options.sinkName, command: command, environment: try options.stringMap("env") ?? [:])
    }

    /// The plugin for a kind no built-in plugin provides, served by an executable named
    /// `notify-route-sink-KIND` found on `PATH` (its `executable` path). Options:
    /// `args` (a list appended to argv) and `env` (a mapping).
    ///
    /// ```swift
    /// var registry = try SinkRegistry(builtInPlugins)
    /// if let path = ExecutableLookup.find("notify-route-sink-ntfy", path: environment["PATH"]) {
    ///     try registry.register(ExecSink.discoveredPlugin(kind: "ntfy", executable: path))
    /// }
    /// ```
    public static func discoveredPlugin(kind: String, executable: String) -> SinkPlugin {
        SinkPlugin(kind: kind, summary: "external plugin \(executable) (found on PATH)", optionKeys: ["args", "env"] + SinkRetry.keys.map(\.name)) { options in
            try SinkRetry.check(options)
            return ExecSink(name: options.sinkName, command: [executable] + (try options.stringList("args") ?? []),
                     environment: try options.stringMap("env") ?? [:])
        }
    }

    /// The executable that would serve `kind`: `notify-route-sink-KIND`.
    public static func executableName(forKind kind: String) -> String { "notify-route-sink-\(kind)" }
}
