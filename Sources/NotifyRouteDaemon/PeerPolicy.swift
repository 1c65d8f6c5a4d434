import Glibc
import NotifyRoute
import NotifyRouteClient

extension PeerCredentials {
    /// The peer's supplementary groups, read from `/proc/PID/status` while it is connected.
    var supplementaryGroups: Set<UInt32> {
        let fd = open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return [] }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") }) else { return [] }
        return Set(line.dropFirst("Groups:".count).split(whereSeparator: \.isWhitespace).compactMap { UInt32($0) })
    }
}

/// Which peers the daemon serves: its own user always; other users and groups only when
/// the config's `serve.allow` names them (a system service sending to a user's desktop).
public struct PeerPolicy: Hashable, Sendable {
    public var owner: UInt32
    public var uids: Set<UInt32>
    public var groups: Set<UInt32>

    public init(owner: UInt32 = getuid(), uids: Set<UInt32> = [], groups: Set<UInt32> = []) {
        self.owner = owner
        self.uids = uids
        self.groups = groups
    }

    /// `nil` when the peer may be served, otherwise why not.
    public func refusal(for peer: PeerCredentials) -> String? {
        if peer.uid == owner || uids.contains(peer.uid) { return nil }
        if !groups.isEmpty, groups.contains(peer.gid) || !groups.isDisjoint(with: peer.supplementaryGroups) { return nil }
        return "uid \(peer.uid) may not send to this daemon (it serves uid \(owner)"
            + (uids.isEmpty && groups.isEmpty ? "; serve.allow in the config names others)" : " and serve.allow)")
    }

    /// The owner, and whom the config's `serve.allow` names.
    public init(owner: UInt32 = getuid(), allowing settings: ServeSettings) {
        self.init(owner: owner, uids: Set(settings.allowedUIDs), groups: Set(settings.allowedGroups))
        firstGroup = settings.allowedGroups.first
    }

    /// The group the socket is given when only groups are allowed (the first one named).
    package var firstGroup: UInt32?

    /// Whether anyone but the owner may connect.
    public var allowsOthers: Bool { !uids.isEmpty || !groups.isEmpty }

    /// The socket's mode: others must be able to connect before the peer check can let them in.
    var socketMode: mode_t {
        if !uids.isEmpty { return 0o666 }
        if !groups.isEmpty { return 0o660 }
        return 0o600
    }

    /// Why the socket at `path`, whose mode is not the daemon's to set (systemd's
    /// `SocketMode=`), keeps out peers this policy lets in; `nil` when it keeps out none.
    /// Connecting takes write permission on the socket.
    public func exclusion(bySocket path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let mode = info.st_mode & 0o777
        func writable(uid: UInt32?, group: UInt32?) -> Bool {
            if uid == info.st_uid { return mode & 0o200 != 0 }
            if group == info.st_gid { return mode & 0o020 != 0 }
            return mode & 0o002 != 0
        }
        let kept = uids.sorted().filter { $0 != 0 && !writable(uid: $0, group: nil) }.map { "uid \($0)" }
            + groups.sorted().filter { !writable(uid: nil, group: $0) }.map { "group \($0)" }
        guard !kept.isEmpty else { return nil }
        return "the inherited socket \(path) (mode \(String(mode, radix: 8))) does not let \(kept.joined(separator: ", ")) connect, "
            + "which serve.allow names; give the socket unit SocketMode=" + (uids.isEmpty ? "0660 and SocketGroup=" : "0666")
    }

    /// Gives the socket at `path` the mode (and group) this policy needs, and its directory
    /// `directoryMode` when the daemon owns it (its state directory): 0711 lets others
    /// reach the socket without listing the directory. What could not be done is returned,
    /// for the log; the per-connection check is the gate either way.
    public func applyAccess(toSocket path: String, directory: String?) -> [String] {
        var problems: [String] = []
        var mode = socketMode
        if mode == 0o660, let group = firstGroup, chown(path, uid_t.max, group) != 0 {
            // The daemon's user is not in that group: only a world-connectable socket lets its members in.
            problems.append("cannot give \(path) to group \(group) (\(String(cString: strerror(errno)))); it is 0666 instead")
            mode = 0o666
        }
        if chmod(path, mode) != 0 { problems.append("chmod \(path): \(String(cString: strerror(errno)))") }
        if let directory, chmod(directory, allowsOthers ? 0o711 : 0o700) != 0 {
            problems.append("chmod \(directory): \(String(cString: strerror(errno)))")
        }
        return problems
    }
}
