import Glibc
import NotifyRoute

/// Which daemon instance owns `org.freedesktop.Notifications` right now: the bus's
/// GUID (from the connection's handshake, no call) and the daemon's unique name
/// (`GetNameOwner`, answered by the bus itself). Unique names are never reused on one
/// bus, so a restarted daemon, or another bus, is another identity.
struct DaemonIdentity: Hashable, Sendable {
    var busGUID: String
    var owner: String
}

/// The last probe's answer, kept in the state directory so the next `notify-route`
/// process skips `GetServerInformation` and `GetCapabilities` while the same daemon
/// instance runs (two daemon round trips of every `send`).
///
/// One small text file, `desktop-server`, beside the router's state (the same
/// directory and the same checks: ours, mode 0700, not a symbolic link). The file is
/// written atomically (temporary file, then rename), read only when it is a regular
/// file of ours that no one else can write, and trusted only for the identity it
/// names. A `Notify` that fails, or hangs, deletes it, so the next process probes
/// afresh. Any problem with the directory or the file means "not stored": the probe
/// runs as before.
enum StoredServerInformation {
    static let fileName = "desktop-server"
    static let header = "notify-route desktop-server 1"
    /// Far more than any daemon's answer; a larger file is not ours.
    static let sizeLimit = 16 * 1024

    /// The stored answer of the daemon `identity` names, if there is one.
    static func read(for identity: DaemonIdentity, directory: String? = defaultDirectory()) -> NotificationServer? {
        guard let directory, let text = readOwnFile(directory + "/" + fileName)?.text else { return nil }
        return decode(text, for: identity)
    }

    /// Stores `server` as the answer of `identity`; silently does nothing when it cannot.
    static func write(_ server: NotificationServer, for identity: DaemonIdentity, directory: String? = defaultDirectory()) {
        guard let directory, let text = encode(server, for: identity) else { return }
        writeAtomically(text, to: directory + "/" + fileName)
        unlink(directory + "/" + startFileName)
        unlink(directory + "/" + failedStartFileName)
    }

    /// A start of the daemon that the bus with `busGUID` had not finished past a probe's
    /// budget, seen by this process or an earlier one: how long ago it was first seen.
    static let startFileName = "desktop-start"
    static let startHeader = "notify-route desktop-start 1"

    static func pendingStartAge(busGUID: String, directory: String? = defaultDirectory()) -> Duration? {
        guard let directory, let file = readOwnFile(directory + "/" + startFileName),
              file.text == "\(startHeader)\n\(busGUID)\n"
        else { return nil }
        return age(of: file.modified)
    }

    /// Records that the bus with `busGUID` is still starting the daemon, unless an earlier
    /// record for that bus says since when (the first sighting is what counts).
    static func recordPendingStart(busGUID: String, directory: String? = defaultDirectory()) {
        if let age = pendingStartAge(busGUID: busGUID, directory: directory), age < ServerProbeCache.startMemory { return }
        guard let directory else { return }
        writeAtomically("\(startHeader)\n\(busGUID)\n", to: directory + "/" + startFileName)
    }

    /// A start of the daemon that the bus with `busGUID` reported failed (D-Bus's
    /// `Spawn.*` errors: the daemon exited or was killed before it took its name), so
    /// that the processes after it report that failure instead of each asking the bus to
    /// start the daemon again and waiting for it to fail.
    static let failedStartFileName = "desktop-start-failed"
    static let failedStartHeader = "notify-route desktop-start-failed 1"
    /// The bus's words are a peer's: kept to one line of this many bytes.
    static let failureReasonLimit = 512

    /// The failure recorded for the bus with `busGUID`, and how long ago it was recorded.
    static func failedStart(busGUID: String, directory: String? = defaultDirectory()) -> (reason: String, age: Duration)? {
        guard let directory, let file = readOwnFile(directory + "/" + failedStartFileName) else { return nil }
        let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 4, lines[0] == failedStartHeader, lines[1] == busGUID, !lines[2].isEmpty, lines[3].isEmpty,
              let age = age(of: file.modified)
        else { return nil }
        return (String(lines[2]), age)
    }

    /// Records `reason` as the outcome of the last start on the bus with `busGUID`.
    static func recordFailedStart(busGUID: String, reason: String, directory: String? = defaultDirectory()) {
        guard let directory, !busGUID.contains("\n") else { return }
        let line = TextSanitizer.truncate(TextSanitizer.clean(reason, keepNewlines: false), toUTF8Bytes: failureReasonLimit)
        guard !line.isEmpty else { return }
        writeAtomically("\(failedStartHeader)\n\(busGUID)\n\(line)\n", to: directory + "/" + failedStartFileName)
        unlink(directory + "/" + startFileName)
    }

    private static func age(of modified: timespec) -> Duration? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let age = Duration.seconds(now.tv_sec - modified.tv_sec) + .nanoseconds(now.tv_nsec - modified.tv_nsec)
        return age >= .zero ? age : nil
    }

    /// A small file's text and modification time, when it is a regular file of ours
    /// that no one else can write.
    private static func readOwnFile(_ path: String) -> (text: String, modified: timespec)? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == getuid(),
              info.st_mode & 0o022 == 0, info.st_size <= sizeLimit
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            count += got
        }
        return (String(decoding: bytes, as: UTF8.self), info.st_mtim)
    }

    /// Writes `text` to a temporary file, then renames it over `path`.
    private static func writeAtomically(_ text: String, to path: String) {
        let temporary = "\(path).\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let done = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if done < 0 && errno == EINTR { continue }
            guard done > 0 else { break }
            written += done
        }
        close(descriptor)
        if written != bytes.count || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Forgets the stored answer (a `Notify` failed or hung).
    static func remove(directory: String? = defaultDirectory()) {
        guard let directory else { return }
        unlink(directory + "/" + fileName)
    }

    /// The router's state directory, created and checked; `nil` when refused.
    static func defaultDirectory() -> String? {
        try? StateDirectory.resolve()
    }

    /// Lines: header, bus GUID, owner, name, vendor, version, spec version, capabilities
    /// separated by spaces. `nil` when a field would break the format (a line break).
    static func encode(_ server: NotificationServer, for identity: DaemonIdentity) -> String? {
        let fields = [identity.busGUID, identity.owner, server.name, server.vendor, server.version, server.specVersion]
        let capabilities = server.capabilities.sorted()
        guard !fields.contains(where: { $0.contains("\n") }),
              !capabilities.contains(where: { $0.isEmpty || $0.contains("\n") || $0.contains(" ") })
        else { return nil }
        return ([header] + fields + [capabilities.joined(separator: " ")]).joined(separator: "\n") + "\n"
    }

    static func decode(_ text: String, for identity: DaemonIdentity) -> NotificationServer? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count == 9, lines[0] == header, lines[8].isEmpty,
              lines[1] == identity.busGUID, lines[2] == identity.owner
        else { return nil }
        return NotificationServer(
            name: lines[3], vendor: lines[4], version: lines[5], specVersion: lines[6],
            capabilities: Set(lines[7].split(separator: " ").map(String.init)))
    }
}
