import NotifyRoute
import Glibc
import NotifyRouteClient

/// One daemon per socket: an exclusive lock beside the socket, held for the daemon's
/// life, so a second `serve` refuses instead of unlinking a live daemon's socket.
package final class SocketLock {
    private let fd: Int32

    package struct Held: Error, CustomStringConvertible {
        package var description: String
    }

    package init(socketPath path: String, checkingForDaemon: Bool = true) throws(Held) {
        fd = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Held(description: "cannot open \(path).lock: \(String(cString: strerror(errno)))") }
        let locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        // A daemon may answer without holding this lock (systemd's socket, or one started
        // by an older notify-route): its socket must not be unlinked either.
        let live = checkingForDaemon ? try? DaemonClient(path: path) : nil
        guard locked, live == nil else {
            close(fd)
            let owner = live?.daemonPID.map { " (pid \($0))" } ?? ""
            throw Held(description: "another notify-route serve\(owner) is already listening on \(path); stop it first, or pass --socket")
        }
    }

    deinit { close(fd) }
}

extension RouterDaemon {
    /// Lets the daemon hold its connection cap plus its own files: systemd starts services
    /// with a soft limit of 1,024 open files (for `select`, which nothing here uses), and
    /// leaves the hard limit for programs to raise it to.
    package static func raiseOpenFileLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
