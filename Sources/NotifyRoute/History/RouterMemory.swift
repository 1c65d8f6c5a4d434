import CSQLite
import Dispatch
import Glibc
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What must outlive a logout: the history of routed events, silences and the pause, in
/// `history.db` under `$XDG_STATE_HOME/notify-route/` (default `~/.local/state/notify-route/`).
///
/// The same embedded database as the router's state (``SQLiteStateStore``), in a file of
/// its own, opened the same careful way (the directory checked on its descriptor, the
/// file created 0600 by us, a damaged one set aside). WAL mode: concurrent writers queue
/// on SQLite's lock, and a writer killed mid-transaction leaves the last committed
/// history. `synchronous = OFF`: a commit never waits for the disk, so recording costs a
/// `send` no `fsync`; a power cut (not a crash) may damage the file, which is then set
/// aside and started afresh.
///
/// The history is bounded (``HistorySettings``): past `max_events` events or `max_bytes`
/// bytes the oldest are deleted, by primary key. Whoever routes an event records it: a
/// `send` without a daemon, or the daemon.
///
/// Silences and the pause are read once per wave: not at all while ``ControlsMarker`` says
/// there are none, else from a cache that is refreshed only when another connection has
/// committed (`PRAGMA data_version`), so that a silence added by one process holds the
/// events of every other, daemon included.
public final class RouterMemory: Sendable {
    public let directory: String
    public var databasePath: String { directory + "/" + Self.fileName }
    /// How long a transaction waits for another process's to end.
    public let busyTimeout: Duration
    /// False for one-shot commands: the database is closed after each recorded event, so
    /// that SQLite checkpoints its log into the file and the next process does not read
    /// the log whole to rebuild its index.
    public let keepsOpen: Bool
    let notice: @Sendable (String) -> Void
    let connection = Mutex<Connection?>(nil)
    let spooling = Mutex(Spooling())
    /// `spooling`'s `enabled`, read without its lock by every record (set once, never unset).
    let spoolingEnabled = Atomic(false)
    let marker: ControlsMarker
    let spool: HistorySpool

    static let fileName = "history.db"
    static let maximumBytes = 1 << 30

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// - Parameter notice: told what could not be recorded or was set aside, and why.
    public init(directory: String, keepsOpen: Bool = true, busyTimeout: Duration = .seconds(2),
                notice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.directory = directory
        self.keepsOpen = keepsOpen
        self.busyTimeout = busyTimeout
        self.notice = notice
        marker = ControlsMarker(directory: directory)
        spool = HistorySpool(directory: directory)
    }

    /// `$XDG_STATE_HOME/notify-route`, else `$HOME/.local/state/notify-route`: made (0700)
    /// if missing, and checked as the state directory is (``StateDirectory``). `naming`: what
    /// the messages call it (the state directory's fallback is made inside it).
    public static func resolveDirectory(
        environment: [String: String] = ProcessEnvironment.values(["XDG_STATE_HOME", "HOME"]), naming what: String = "history directory"
    ) throws(StateDirectory.Refused) -> String {
        let base: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = state
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.local/state"
        } else {
            throw StateDirectory.Refused(description: "neither XDG_STATE_HOME nor HOME is set: no place for the \(what)")
        }
        // The parents as XDG says (0700 for the state home), ours checked like the runtime state's.
        var prefix = ""
        // By UTF-8 bytes and String's own appends: `"/" + component` on a Substring takes
        // the generic, per-Character path, on every `send`.
        for component in base.utf8.split(separator: UInt8(ascii: "/")) {
            prefix += "/"
            prefix += String(decoding: component, as: UTF8.self)
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw StateDirectory.Refused(description: "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        let path = base + "/notify-route"
        if let unsafe = StateDirectory.unsafeAncestor(of: path) {
            throw StateDirectory.Refused(description: "the \(what) \(path) is not safe: \(unsafe)")
        }
        try StateDirectory.prepare(path)
        return path
    }

    /// Closes the database (checkpointing its log); the next use opens it again.
    public func close() {
        connection.withLock { $0 = nil }
    }

    deinit {
        spooling.withLock { state in
            if !state.buffer.isEmpty { _ = write(&state, state.buffer) }
            if state.file >= 0 { Glibc.close(state.file) }
            state.signal?.finish()
        }
    }

}
