import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient
import Glibc
import Dispatch

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command, then notify: success with its duration, or error with its status and the end of its stderr.",
        discussion: """
            The command runs directly (argv, PATH lookup, never a shell); its stdin and stdout are ours, \
            its stderr passes through and its last lines become the body of a failure. SIGINT, SIGTERM, \
            SIGHUP and SIGQUIT are forwarded to it.

            Exit status: the command's own (128+N when a signal N ended it; 127 when it was not found, 126 \
            when it could not be executed), never the notification's: a delivery problem is printed on \
            stderr. A config error exits 78 before the command starts.

            Example: notify-route run -s backup -- restic backup /home
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var event: EventFlags

    @Option(name: .long, help: ArgumentHelp("What the title calls the command (default: the command line).", valueName: "NAME"))
    var name: String?

    @Flag(name: .long, help: "Leave the command's stderr alone (for example a terminal it draws progress on); a failure then has no body.")
    var noCapture = false

    @Flag(name: .long, help: "Send nothing when the command succeeds.")
    var failuresOnly = false

    @Flag(name: .long, help: "Exit as soon as the event is handed over, without waiting for banners to time out or queues to drain.")
    var noWait = false

    @OptionGroup var handOff: HandOffOptions

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "CMD"))
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else {
            throw ValidationError("expected a command after --, for example: notify-route run -- make test")
        }
    }

    func run() async throws {
        // A daemon routes the event if it answers now; otherwise the config is loaded here
        // first, so that a broken one is reported (78) before the command runs, not after it.
        let daemon = handOff.noDaemon ? nil : try DaemonHandOff.connect(socket: handOff.socket, config: global.config, verbose: global.verbose)
        if let usage = daemon?.validate(sinks: event.sink) { throw usage }
        let local = daemon == nil ? try LocalRoute(global, sinks: event.sink, installingExitFlush: false) : nil

        let started = ContinuousClock.now
        let outcome = await execute()
        let duration = ContinuousClock.now - started

        if !(failuresOnly && outcome.status == 0) {
            var notification = outcome.event(commandLine: CommandLineText.display(command), name: name, duration: duration)
            event.apply(to: &notification)
            if outcome.status == 0 { notification.level = .success }  // -l sets the level of a failure only
            if let handed = daemon {
                // The command may have run for hours: a daemon restarted meanwhile gets a new connection.
                var routed = handed.route(notification, sinks: event.sink)
                if case .gone = routed, let again = try DaemonHandOff.connect(socket: handOff.socket, config: global.config, verbose: global.verbose) {
                    routed = again.route(notification, sinks: event.sink)
                }
                switch routed {
                case .answered(let answer):
                    report(answer, status: outcome.status)
                    throw ExitCode(outcome.status)
                case .share(let answer, let sinks):
                    let here = try CallerShare(config: global.config, verbose: global.verbose)
                    report(await here.merged(answer, drawing: notification, on: sinks), status: outcome.status)
                    await here.exit.finish(here.router, noWait: noWait)
                    throw ExitCode(outcome.status)
                case .gone: break
                }
            }
            let here = try local ?? LocalRoute(global, sinks: event.sink, installingExitFlush: false)
            // Installed once the command is gone: until then SIGTERM and SIGINT are its.
            here.exit.install()
            _ = here.exit.beginEvent()
            do {
                let report = try await here.router.send(notification, only: here.sinks)
                if global.verbose { Console.error(ReportPrinter.text(report)) } else { ReportPrinter.problems(report) }
                if report.summary != .delivered && report.summary != .suppressed {
                    Console.error("the notification was not delivered; the exit status stays the command's (\(outcome.status))")
                }
            } catch {
                Console.error("bad event: \(error.description)")
            }
            here.exit.endEvent()
            await here.exit.finish(here.router, noWait: noWait)
        }
        throw ExitCode(outcome.status)
    }

    /// What a local run prints for its report, from the daemon's answer.
    private func report(_ answer: DaemonProtocol.Answer, status: Int32) {
        if let error = answer.error {
            Console.error(error)
            return
        }
        if global.verbose, let text = answer.text { Console.error(text) } else { for line in answer.problems ?? [] { Console.error(line) } }
        let summary = answer.summary
        if summary != DeliveryReport.Summary.delivered.rawValue && summary != DeliveryReport.Summary.suppressed.rawValue {
            Console.error("the notification was not delivered; the exit status stays the command's (\(status))")
        }
    }

    /// Starts the command, passes its signals on, waits for it off the cooperative pool.
    private func execute() async -> RunOutcome {
        let path: String
        do {
            path = try CommandLauncher.resolve(command[0], path: ProcessEnvironment.value("PATH"))
        } catch {
            Console.error(error.status == 127 ? "\(command[0]): command not found (\(error.message))" : error.message)
            return RunOutcome(status: error.status, launchFailure: error.message)
        }
        let tee: StderrTee?
        do { tee = noCapture ? nil : try StderrTee() } catch {
            Console.error("cannot capture stderr (\(error)); passing it through untouched")
            tee = nil
        }
        SignalForwarder.prepare()
        var child = Self.start(path, arguments: command, standardError: tee?.writeEnd).makeAsyncIterator()
        let first = await child.next()
        guard case .started(let pid) = first else {
            SignalForwarder.restoreDefaults()
            var failure = CommandLauncher.LaunchError(status: 126, message: "\(path): no thread to start it on")
            if case .failed(let error) = first { failure = error }
            Console.error(failure.message)
            return RunOutcome(status: failure.status, launchFailure: failure.message)
        }
        if let tee {
            close(tee.writeEnd)
            tee.start()
        }
        let forwarder = SignalForwarder(forwardingTo: pid)
        var status: Int32 = 0
        while let event = await child.next() { if case .exited(let code) = event { status = code } }
        forwarder.stop()
        _ = tee?.waitForEnd(seconds: 0.5)
        return RunOutcome(waitStatus: status, stderrTail: tee?.lastLines)
    }

    private enum ChildEvent: Sendable {
        case started(pid_t)
        case failed(CommandLauncher.LaunchError)
        case exited(Int32)
    }

    /// Starts the command on a thread of its own that then waits for it, off the
    /// cooperative pool. The same thread does both: the child's death signal
    /// (``CommandLauncher/spawn(_:arguments:standardError:)``) is tied to the thread that
    /// started it, and this one ends only once the child is gone.
    private static func start(_ path: String, arguments: [String], standardError: Int32?) -> AsyncStream<ChildEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: ChildEvent.self)
        let started = DetachedThread.start {
            defer { continuation.finish() }
            let pid: pid_t
            do throws(CommandLauncher.LaunchError) {
                pid = try CommandLauncher.spawn(path, arguments: arguments, standardError: standardError)
            } catch {
                continuation.yield(.failed(error))
                return
            }
            continuation.yield(.started(pid))
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            continuation.yield(.exited(status))
        }
        if !started { continuation.finish() }
        return events
    }
}
