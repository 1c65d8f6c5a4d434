import NotifyRoute

/// What a desktop sink's handle names: a notification id and the daemon instance that
/// gave it, as `7@:1.42/0c5f1e2a` (the id, the daemon's unique name on the bus, the
/// start of the bus's GUID).
///
/// Ids are the daemon's own counter: a restarted daemon (or a new bus) gives the same
/// ids again to other applications' notifications. So a replace or a close uses a
/// stored handle only while the daemon that gave it still owns the name; otherwise the
/// notification is shown anew, and nothing is closed.
struct DesktopHandle: Hashable, Sendable {
    var id: UInt32
    /// ``DaemonIdentity/token`` of the daemon that gave the id; empty when not known
    /// (a handle of an older notify-route, plain digits).
    var daemon: String

    init(id: UInt32, daemon: String) {
        self.id = id
        self.daemon = daemon
    }

    /// Reads `id@token` or a bare id; `nil` when the id is not a valid notification id.
    init?(_ handle: SinkHandle) {
        let parts = handle.value.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let id = UInt32(parts[0]), id > 0, id <= UInt32(Int32.max) else { return nil }
        self.init(id: id, daemon: parts.count == 2 ? String(parts[1]) : "")
    }

    var sinkHandle: SinkHandle {
        SinkHandle(daemon.isEmpty ? String(id) : "\(id)@\(daemon)")
    }

    /// Whether the daemon `current` names gave this id (an unknown daemon on either side is not).
    func isFrom(_ current: DaemonIdentity?) -> Bool {
        guard let current, !daemon.isEmpty else { return false }
        return daemon == current.token
    }
}

extension DaemonIdentity {
    /// The unique name, and the first 8 hex digits of the bus's GUID: its random part
    /// (the last 8 are a time stamp), since unique names repeat on a restarted bus.
    var token: String { "\(owner)/\(busGUID.prefix(8))" }
}
