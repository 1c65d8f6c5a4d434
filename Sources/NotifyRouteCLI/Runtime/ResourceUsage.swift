import Glibc

/// This process's memory, as the kernel counts it (for `ingest --stats`).
enum ResourceUsage {
    /// The peak resident set size in KiB (`VmHWM` in /proc/self/status), `nil` where there is no /proc.
    static func peakResidentKiB() -> Int? {
        // /proc files report a size of 0, so read until EOF rather than trusting the size.
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}
