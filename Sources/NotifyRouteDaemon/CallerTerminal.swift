import NotifyRoute
import NotifyRouteClient
import Glibc

/// The terminal a client names in its `send` (``DaemonProtocol/Request/terminal``), taken
/// only when the client could draw there itself: a character device of the daemon's own
/// user that the client process holds open as its standard input, output or error. A
/// client can thus never make the daemon draw on a terminal it is not sitting at.
enum CallerTerminal {
    /// `path` when it passes; `nil` otherwise (the terminal's sinks then say they have none).
    static func checked(_ path: String, heldBy pid: Int32?) -> String? {
        guard let pid, pid > 0, isTerminalName(path) else { return nil }
        var device = stat()
        guard stat(path, &device) == 0, device.st_mode & S_IFMT == S_IFCHR, device.st_uid == getuid() else { return nil }
        for descriptor in 0...2 {
            var held = stat()
            if stat("/proc/\(pid)/fd/\(descriptor)", &held) == 0, held.st_mode & S_IFMT == S_IFCHR, held.st_rdev == device.st_rdev {
                return path
            }
        }
        return nil
    }

    /// A name `ttyname` gives: `/dev/pts/N`, or `/dev/ttyXN` (a console, a serial line).
    /// Never `/dev/fd/N` or `/dev/stderr`, which would name the daemon's own descriptors.
    static func isTerminalName(_ path: String) -> Bool {
        guard path.utf8.count <= DaemonProtocol.maximumTerminalBytes else { return false }
        let rest: Substring
        if path.hasPrefix("/dev/pts/") {
            rest = path.dropFirst(9)
        } else if path.hasPrefix("/dev/tty") {
            rest = path.dropFirst(8).drop { $0.isASCII && $0.isLetter }
        } else {
            return false
        }
        return !rest.isEmpty && rest.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
