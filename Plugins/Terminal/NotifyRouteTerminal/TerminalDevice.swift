import Glibc

/// An open terminal device: the controlling terminal (`/dev/tty`) or an explicit one
/// (`/dev/pts/3`). Only banners use it; it is opened when a banner appears and closed
/// when the last one goes, so an idle sink holds no descriptor.
struct TerminalDevice: Sendable {
    static let controllingTerminal = "/dev/tty"

    let path: String
    let descriptor: Int32

    struct Unusable: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    /// Opens `path` for writing. `O_NOCTTY` so that opening a terminal never makes it
    /// this process's controlling terminal; `O_CLOEXEC` so children do not inherit it.
    static func open(_ path: String) throws(Unusable) -> TerminalDevice {
        let descriptor = Glibc.open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw Unusable(description: path == controllingTerminal
                ? "no controlling terminal (\(path): \(reason))" : "cannot open \(path): \(reason)")
        }
        guard isatty(descriptor) == 1 else {
            Glibc.close(descriptor)
            throw Unusable(description: "\(path) is not a terminal")
        }
        return TerminalDevice(path: path, descriptor: descriptor)
    }

    /// Rows and columns from the terminal itself (TIOCGWINSZ), not from `$LINES`/`$COLUMNS`,
    /// which a shell sets only for itself; 24×80 when the terminal does not say.
    func size() -> (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else {
            return (24, 80)
        }
        return (Int(size.ws_row), Int(size.ws_col))
    }

    /// Writes all of `text` in one go where the terminal takes it, so a banner row is
    /// never interleaved with another writer's bytes half-way through a sequence.
    func write(_ text: String) throws(Unusable) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Unusable(description: "write to \(path) failed: \(String(cString: strerror(errno)))")
            }
            bytes = bytes.dropFirst(written)
        }
    }

    func close() {
        Glibc.close(descriptor)
    }
}
