#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import Glibc

/// How the command of `notify-route run` ended, and the event that says so.
struct RunOutcome {
    /// What `run` exits with: the command's status, 128+N for signal N, 126/127 when it could not start.
    var status: Int32
    var signal: Int32?
    var launchFailure: String?
    var stderrTail: String?

    init(status: Int32, launchFailure: String) {
        self.status = status
        self.launchFailure = launchFailure
    }

    init(waitStatus: Int32, stderrTail: String?) {
        let termination = waitStatus & 0x7F
        if termination == 0 {
            status = (waitStatus >> 8) & 0xFF
        } else {
            signal = termination
            status = 128 + termination
        }
        self.stderrTail = stderrTail
    }

    /// "make test succeeded in 3.2s", "make test failed (exit 2) after 41s",
    /// "sleep 60 killed by SIGTERM after 2.0s", "mkae: command not found".
    func event(commandLine: String, name: String?, duration: Duration) -> NotificationEvent {
        let what = name ?? CommandLineText.shortened(commandLine)
        let elapsed = Self.format(duration)
        var event = NotificationEvent(title: "")
        if let launchFailure {
            event.title = status == 127 ? "\(what): command not found" : "\(what): cannot execute"
            event.body = launchFailure
            event.level = .error
        } else if let signal {
            event.title = "\(what) killed by \(Self.signalName(signal)) after \(elapsed)"
            event.body = stderrTail
            event.level = .error
            event.fields["SIGNAL"] = Self.signalName(signal)
        } else if status == 0 {
            event.title = "\(what) succeeded in \(elapsed)"
            event.level = .success
        } else {
            event.title = "\(what) failed (exit \(status)) after \(elapsed)"
            event.body = stderrTail
            event.level = .error
        }
        event.source = "run"
        // A re-run of the same command replaces the previous result wherever a sink can.
        event.replaceKey = "run: " + commandLine
        event.fields["COMMAND"] = commandLine
        event.fields["EXIT_STATUS"] = String(status)
        event.fields["DURATION_MS"] = String(DurationParser.milliseconds(duration))
        return event
    }

    /// `0.4s`, `3.2s`, `59.9s`, `2m05s`, `1h02m`, each rounded to its last digit (497 ms is
    /// `0.5s`); a value that rounds up to the next unit is written in that unit (`1m00s`).
    static func format(_ duration: Duration) -> String {
        let ms = DurationParser.milliseconds(duration)
        let tenths = (ms + 50) / 100
        if tenths < 600 { return "\(tenths / 10).\(tenths % 10)s" }
        let seconds = (ms + 500) / 1_000
        if seconds < 3_600 { return "\(seconds / 60)m" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)s" }
        let minutes = (ms + 30_000) / 60_000
        return "\(minutes / 60)h" + (minutes % 60 < 10 ? "0" : "") + "\(minutes % 60)m"
    }

    static func signalName(_ signal: Int32) -> String {
        let names = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
            SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ", SIGSYS: "SIGSYS",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}

/// The command line as a person would type it: arguments with spaces or quotes in single quotes.
enum CommandLineText {
    static func display(_ argv: [String]) -> String {
        argv.map { argument in
            let plain = !argument.isEmpty && argument.unicodeScalars.allSatisfy {
                $0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_./=:,+@%^".unicodeScalars.contains($0)
            }
            return plain ? argument : "'" + argument.replacing("'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    /// At most 60 characters, for a title; the full line goes in the `COMMAND` field.
    static func shortened(_ text: String, limit: Int = 60) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }
}
