import Glibc
import NotifyRoute
import Synchronization

/// Which sink of which process holds which banner rows on one terminal: a small
/// record per terminal in the state directory, shared by every notify-route process
/// drawing there, and changed only under an exclusive `flock` on it.
///
/// Why a shared record: a process's rows move whenever another process inserts or
/// deletes rows above them, and a terminal's screen cannot be read back. Without it,
/// a process giving back "its" two top rows deletes whatever is there now (another
/// process's newer banner) and leaves its own up. Why a lock around read-the-record,
/// write-the-screen, write-the-record: two processes never compute from the same old
/// layout, and the bytes of two changes never interleave. Why `flock`: it belongs to
/// the open file, so two sinks of one process exclude each other too, and the kernel
/// drops it when its holder dies, even of SIGKILL. A holder that is stopped keeps it,
/// so the wait is bounded and the change goes ahead after it, as it would without
/// the record.
///
/// Rows of an owner that cannot act any more are deleted by whoever changes the
/// screen next: a dead process (gone, or its pid reused: the start time differs), a
/// stopped one (SIGSTOP cannot be caught, so it could not give its rows back; when it
/// continues it finds its block gone and draws it again on top), and a sink of this
/// process that no longer exists. The record names the terminal's creation time (its
/// device node's ctime), so a record left behind on an earlier terminal that had the
/// same `/dev/pts` number is ignored, never obeyed. The file stays when no banner is
/// left: removing it would race with a process that has it open and waits for its lock.
final class BannerLedger: Sendable {
    /// This sink of this process, as the record names it: `pid:start-time:slot`.
    let owner: String
    /// The record's path; `nil` when there is no state directory to keep it in, and
    /// the banner keeps its own rows in memory as if it were alone.
    private let path: String?
    private let terminal: String
    private let memory = Mutex(BannerStack(blocks: []))

    static let lockWait: Duration = .milliseconds(250)
    private static let header = "notify-route banners 1"

    init(device: TerminalDevice, slot: Int) {
        owner = "\(getpid()):\(Self.processStartTime(getpid()) ?? 0):\(slot)"
        let identity = Self.terminalIdentity(device)
        terminal = identity?.birth ?? ""
        path = identity.flatMap { identity in
            (try? StateDirectory.resolve()).map { "\($0)/banners-tty\(identity.major).\(identity.minor)" }
        }
    }

    /// Makes `lines` (none: give the rows back) this owner's block on `device`, deletes
    /// the rows of owners that cannot act any more, and writes it all to the terminal.
    func show(_ lines: [String], on device: TerminalDevice, resetRegion: Bool = false) throws(TerminalDevice.Unusable) {
        guard let path else {
            try memory.withLock { stack throws(TerminalDevice.Unusable) in
                try apply(lines, to: &stack, stale: [], on: device, resetRegion: resetRegion)
            }
            return
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            // The directory went away under us: draw as if alone rather than not at all.
            try memory.withLock { stack throws(TerminalDevice.Unusable) in
                try apply(lines, to: &stack, stale: [], on: device, resetRegion: resetRegion)
            }
            return
        }
        defer { close(descriptor) }  // also drops the lock
        Self.lock(descriptor)
        var stack = read(descriptor)
        let stale = Set(stack.blocks.map(\.owner).filter { $0 != owner && !Self.canAct($0) })
        let before = stack
        do {
            try apply(lines, to: &stack, stale: stale, on: device, resetRegion: resetRegion)
        } catch {
            // Unknown what reached the screen: at least never claim rows for this owner.
            stack = before
            stack.blocks.removeAll { $0.owner == owner }
            write(stack, to: descriptor)
            throw error
        }
        if stack != before { write(stack, to: descriptor) }
    }

    private func apply(
        _ lines: [String], to stack: inout BannerStack, stale: Set<String>, on device: TerminalDevice, resetRegion: Bool
    ) throws(TerminalDevice.Unusable) {
        // Nothing to draw, nothing to give back: not even a cursor save and restore.
        if lines.isEmpty && stack.rows(of: owner) == 0 && stale.isEmpty && !resetRegion { return }
        let bytes = stack.transition(owner: owner, to: lines, removing: stale, rows: device.size().rows, resetRegion: resetRegion)
        try device.write(bytes)
    }

    // MARK: The record

    private func read(_ descriptor: Int32) -> BannerStack {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(data.count)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            data += buffer[..<count]
        }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        // Another terminal's record (or none, or not ours to read): start empty.
        guard lines.first.map(String.init) == "\(Self.header) \(terminal)" else { return BannerStack(blocks: []) }
        return BannerStack(blocks: lines.dropFirst().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2, let rows = Int(fields[1]), rows > 0 else { return nil }
            return BannerStack.Block(owner: String(fields[0]), rows: rows)
        })
    }

    private func write(_ stack: BannerStack, to descriptor: Int32) {
        let text = ([Self.header + " " + terminal] + stack.blocks.map { "\($0.owner) \($0.rows)" }).joined(separator: "\n") + "\n"
        let bytes = Array(text.utf8)
        _ = ftruncate(descriptor, 0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Waits at most ``lockWait`` for the lock, then goes ahead without it.
    private static func lock(_ descriptor: Int32) {
        let deadline = ContinuousClock.now + lockWait
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else { return }
            usleep(2_000)
        }
    }

    // MARK: Owners

    /// Sinks of this process that exist now, by slot: a block of this process whose
    /// slot is gone was left by a sink that was dropped with its banner up.
    private static let liveSlots = Mutex((next: 0, live: Set<Int>()))

    static func claimSlot() -> Int {
        liveSlots.withLock { slots in
            slots.next += 1
            slots.live.insert(slots.next)
            return slots.next
        }
    }

    static func releaseSlot(_ slot: Int) {
        _ = liveSlots.withLock { $0.live.remove(slot) }
    }

    /// Whether the owner of a block can still give its rows back itself.
    static func canAct(_ owner: String) -> Bool {
        let parts = owner.split(separator: ":")
        guard parts.count == 3, let pid = pid_t(parts[0]), let start = UInt64(parts[1]), let slot = Int(parts[2]) else {
            return false
        }
        if pid == getpid() {
            return start == processStartTime(pid) && liveSlots.withLock { $0.live.contains(slot) }
        }
        guard let status = processStatus(pid), status.start == start else { return false }
        // Stopped (T), traced and stopped (t), zombie (Z), dead (X).
        return !"TtZXx".contains(status.state)
    }

    static func processStartTime(_ pid: pid_t) -> UInt64? { processStatus(pid)?.start }

    /// The state letter and start time (in clock ticks since boot) of a process, from
    /// `/proc/PID/stat`; `nil` when there is no such process.
    static func processStatus(_ pid: pid_t) -> (state: Character, start: UInt64)? {
        // Fields from the third on: state is the 3rd, starttime the 22nd.
        guard let fields = statFields("/proc/\(pid)/stat"), fields.count > 19,
              let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return (state, start)
    }

    /// The fields of a `/proc/PID/stat` from the third on (after the command name, which
    /// is in parentheses and may hold spaces and parentheses itself).
    private static func statFields(_ path: String) -> [Substring]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    // MARK: The terminal

    /// The terminal's device number and creation time. `/dev/tty` stands for the
    /// controlling terminal, whose number is in `/proc/self/stat`.
    static func terminalIdentity(_ device: TerminalDevice) -> (major: UInt32, minor: UInt32, birth: String)? {
        var info = stat()
        guard fstat(device.descriptor, &info) == 0 else { return nil }
        var (major, minor) = split(UInt64(info.st_rdev))
        var birth = info.st_ctim
        if major == 5 && minor == 0 {
            guard let number = controllingTerminalNumber() else { return nil }
            (major, minor) = split(number)
            // A pty's node is made anew for every new terminal; other terminals keep theirs.
            guard (136...143).contains(major), stat("/dev/pts/\((major - 136) * 256 + minor)", &info) == 0 else {
                return (major, minor, "0")
            }
            birth = info.st_ctim
        }
        return (major, minor, "\(birth.tv_sec).\(birth.tv_nsec)")
    }

    private static func controllingTerminalNumber() -> UInt64? {
        // tty_nr is the 7th field.
        guard let fields = statFields("/proc/self/stat"), fields.count > 4, let number = UInt64(fields[4]), number > 0 else {
            return nil
        }
        return number
    }

    /// Major and minor of a device number, as glibc's `major()` and `minor()` (macros
    /// Swift does not import) take them apart; `tty_nr` uses the same low 32 bits.
    private static func split(_ device: UInt64) -> (major: UInt32, minor: UInt32) {
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~0xFFF)
        let minor = (device & 0xFF) | ((device >> 12) & ~0xFF)
        return (UInt32(truncatingIfNeeded: major), UInt32(truncatingIfNeeded: minor))
    }
}
