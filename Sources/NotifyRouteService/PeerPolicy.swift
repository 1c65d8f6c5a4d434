import Glibc

/// Who is on the other end of a connection, from the kernel (`SO_PEERCRED`), not from
/// anything the client says.
public struct PeerCredentials: Hashable, Sendable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid \(pid), uid \(uid), gid \(gid)" }

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

    /// The socket's mode: others must be able to connect before the peer check can let them in.
    var socketMode: mode_t {
        if !uids.isEmpty { return 0o666 }
        if !groups.isEmpty { return 0o660 }
        return 0o600
    }
}
