import CSQLite
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `history.db-nocontrols` beside the history: present only while no pause is stored and
/// every silence ends by the file's modification time. Most `send`s find no silence and no
/// pause; with it they learn that from one `lstat`, without reading history.db for them.
///
/// It stays true across processes because it changes only inside history.db's write
/// transactions, which SQLite serialises: a transaction that adds or changes a silence or
/// the pause removes it before its commit (killed there, it leaves the marker removed, and
/// the database is read); it is written only from what is committed, in a transaction that
/// changes no silence and no pause (a recorded event's), so it never claims less than is there.
struct ControlsMarker {
    static let fileName = "history.db-nocontrols"
    let path: String

    init(directory: String) { path = directory + "/" + Self.fileName }

    /// This process's user, asked once: the daemon looks at the marker for every event.
    private static let uid = getuid()

    /// Whether no silence and no pause can apply at `now`.
    func rulesOut(at now: Date) -> Bool {
        guard let info = status() else { return false }
        return now.timeIntervalSince1970 >= Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1_000_000_000
    }

    var exists: Bool { status() != nil }

    private func status() -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == Self.uid else { return nil }
        return info
    }

    /// In the transaction that adds or changes a silence or the pause, before its commit.
    /// A directory in its place is never believed, so it may stay.
    func remove() throws(SQLiteDatabase.Failure) {
        guard unlink(path) == 0 || errno == ENOENT || errno == EISDIR else {
            throw SQLiteDatabase.Failure(code: SQLITE_IOERR, description: "cannot remove \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Says that every silence ends by `lastEnd` (seconds since 1970), in a transaction that
    /// changes no silence and no pause and has read that none is stored. Best effort: without
    /// it the database is read.
    func write(lastEnd: Double) {
        let seconds = max(0, lastEnd.rounded(.up))
        guard seconds < 1e15 else { return }
        let file = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard file >= 0 else { return }
        defer { close(file) }
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        var info = stat()
        // A file that is not ours, or a file system whose times cannot hold this one, would claim too little.
        guard futimens(file, &times) == 0, fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              info.st_uid == getuid(), Double(info.st_mtim.tv_sec) >= seconds
        else {
            unlink(path)
            return
        }
    }
}
