import Glibc
import NotifyRoute
import Synchronization

/// Output for the CLI's own messages. `stderr` the C global is not concurrency-safe in
/// Swift 6 mode, so this writes to the file descriptors directly.
///
/// Everything written here passes ``TextSanitizer/escaped(_:)``: messages quote input
/// (a JSON key, an option's value, a plugin's error, an action id from the daemon), and
/// none of it may drive the terminal they are read on.
package enum Console {
    package static func error(_ message: String) {
        write(STDERR_FILENO, "notify-route: \(message)\n")
    }

    static func out(_ text: String) {
        write(STDOUT_FILENO, text.hasSuffix("\n") ? text : text + "\n")
    }

    /// Standard error held back while ``NetworkHandOff`` may still hand the command on, whose
    /// new program would say the same again: ``release()`` writes it, in order; the exec drops it.
    private static let held = Mutex<[UInt8]?>(nil)

    /// From now until ``release()`` (at the latest when the process exits), standard error is held.
    static func hold() {
        let first = held.withLock { held -> Bool in
            if held == nil { held = [] }
            return !heldEver.exchange(true, ordering: .relaxed)
        }
        // Once per process: what is held when it exits is still said.
        if first { atexit { Console.release() } }
    }

    private static let heldEver = Atomic<Bool>(false)

    /// Writes what was held and stops holding.
    static func release() {
        guard let bytes = held.withLock({ held in defer { held = nil }; return held }) else { return }
        writeAll(STDERR_FILENO, bytes[...])
    }

    /// Drops what was held (the program the exec starts says it again) and stops holding.
    static func dropHeld() {
        held.withLock { $0 = nil }
    }

    static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(TextSanitizer.escaped(text).utf8)
        if fd == STDERR_FILENO, held.withLock({ held in
            guard held != nil else { return false }
            held! += bytes
            return true
        }) {
            return
        }
        writeAll(fd, bytes[...])
    }

    private static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
        var bytes = bytes
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }
}

/// swift-log's stream handler (`--verbose`) writing through ``Console``: its messages
/// carry sink errors, which an exec plugin writes.
struct ConsoleErrorStream: TextOutputStream, Sendable {
    mutating func write(_ string: String) {
        Console.write(STDERR_FILENO, string)
    }
}

enum StandardInput {
    /// Standard input is read up to this many bytes and one more for a body, far past the
    /// 64 KiB the normaliser keeps: a longer body is cut there with its marker, as any is.
    static let maximumBodyBytes = 1 << 20

    /// The bytes ``readAll(limit:)`` took from standard input, as they came: what
    /// ``NetworkHandOff`` puts back for the executable it runs, which reads them again.
    nonisolated(unsafe) private(set) static var consumed: [UInt8]?

    /// Standard input up to `limit + 1` bytes, never to an end that may not come
    /// (`/dev/zero`), with invalid UTF-8 repaired (U+FFFD).
    static func readAll(limit: Int = maximumBodyBytes) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= limit {
            let wanted = min(buffer.count, limit + 1 - bytes.count)
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, wanted) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        if consumed == nil { consumed = bytes } else { consumed! += bytes }
        return String(decoding: bytes, as: UTF8.self)
    }
}
