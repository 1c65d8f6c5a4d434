import Dispatch
import Glibc

/// While `notify-route run` waits for its command, every signal that would end us by
/// default (SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM) goes to the
/// command instead: we must live to report how it ended.
///
/// A signal typed at the terminal (Ctrl-C, Ctrl-\) already reaches the command, which
/// is in our foreground process group; forwarding it again would deliver it twice,
/// so those two are forwarded only when we are not the terminal's foreground job
/// (`kill -INT` from a script). The others are always forwarded.
final class SignalForwarder {
    static let signals: [Int32] = [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM]

    private let sources: [any DispatchSourceSignal]

    /// Ignores the signals before the command starts, so none can end us in between;
    /// the command gets them at their default (``CommandLauncher/spawn(_:arguments:standardError:)``).
    static func prepare() {
        for signal in signals { Glibc.signal(signal, SIG_IGN) }
    }

    init(forwardingTo pid: pid_t) {
        let foreground = [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO].contains { isatty($0) == 1 && tcgetpgrp($0) == getpgrp() }
        sources = Self.signals.map { signal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler {
                if foreground && (signal == SIGINT || signal == SIGQUIT) { return }
                kill(pid, signal)
            }
            source.resume()
            return source
        }
    }

    /// Back to the defaults, once the command has exited.
    func stop() {
        for source in sources { source.cancel() }
        Self.restoreDefaults()
    }

    static func restoreDefaults() {
        for signal in signals { Glibc.signal(signal, SIG_DFL) }
    }
}
