import Glibc

/// Finds and reads the config file, in the documented lookup order:
///
/// 1. `--config FILE` (must exist)
/// 2. `$NOTIFY_ROUTE_CONFIG` (must exist)
/// 3. `$XDG_CONFIG_HOME/notify-route/config.yaml` (default `~/.config/notify-route/config.yaml`)
/// 4. `/etc/notify-route/config.yaml`
/// 5. the embedded default, compiled into the program
public struct ConfigSource: Sendable, Hashable {
    /// A path, or `<embedded>`.
    public var origin: String
    public var text: String

    public init(origin: String, text: String) {
        self.origin = origin
        self.text = text
    }

    public static let embeddedOrigin = "<embedded>"

    /// The candidate paths for `environment`, most specific first (without `--config`).
    public static func searchPaths(environment: [String: String]) -> [String] {
        var paths: [String] = []
        if let path = environment["NOTIFY_ROUTE_CONFIG"], !path.isEmpty { paths.append(path) }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            paths.append("\(xdg)/notify-route/config.yaml")
        } else if let home = environment["HOME"], !home.isEmpty {
            paths.append("\(home)/.config/notify-route/config.yaml")
        }
        paths.append("/etc/notify-route/config.yaml")
        return paths
    }

    public static func locate(
        explicitPath: String?, environment: [String: String], embedded: String
    ) throws(ConfigError) -> ConfigSource {
        if let explicitPath { return try read(path: explicitPath) }
        if let path = environment["NOTIFY_ROUTE_CONFIG"], !path.isEmpty { return try read(path: path) }
        for path in searchPaths(environment: environment) where exists(path) {
            return try read(path: path)
        }
        return ConfigSource(origin: embeddedOrigin, text: embedded)
    }

    /// The most a config file may be; past this it is refused rather than parsed.
    public static let maximumSize = 1 << 20

    /// Whether something is at `path` (following symbolic links).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Reads a regular file as UTF-8, naming the line and column of the first invalid byte.
    ///
    /// Anything else is refused before it is read: a FIFO would block the open until a
    /// writer came, and a device (`/dev/zero`, `/dev/tty`) is not a config.
    public static func read(path: String) throws(ConfigError) -> ConfigSource {
        let start = SourceLocation(file: path, line: 1, column: 1)
        func failure(_ code: Int32) -> ConfigError {
            let why = switch code {
            case ENOENT, ENOTDIR: "no such file"
            case EACCES, EPERM: "permission denied"
            case EISDIR: "it is a directory"
            default: String(cString: strerror(code))
            }
            return ConfigError("cannot read the config file: \(why)", at: start)
        }
        func refuseUnlessRegular(_ info: stat) throws(ConfigError) {
            let what: String? = switch info.st_mode & S_IFMT {
            case S_IFREG: nil
            case S_IFDIR: "a directory"
            case S_IFIFO: "a FIFO (named pipe)"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFSOCK: "a socket"
            default: "not a file"
            }
            if let what { throw ConfigError("cannot read the config file: it is \(what); expected a regular file", at: start) }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure(errno) }
        try refuseUnlessRegular(info)
        // Non-blocking and without a controlling terminal, should the path have been
        // swapped for a FIFO or a terminal since the stat: checked again on the descriptor.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw failure(errno) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw failure(errno) }
        try refuseUnlessRegular(info)
        let bytes: [UInt8]
        switch FileContents.read(fd, limit: maximumSize, expectedSize: Int(info.st_size)) {
        case .success(let read): bytes = read
        case .failure(let failed): throw failure(failed.errno)
        }
        guard bytes.count <= maximumSize else {
            throw ConfigError("the config file is larger than \(maximumSize / 1024) KiB; refusing to parse it", at: start)
        }
        return ConfigSource(origin: path, text: try decode(bytes, file: path))
    }

    static func decode(_ bytes: [UInt8], file: String) throws(ConfigError) -> String {
        if let text = String(validating: bytes, as: UTF8.self) {
            if let nul = bytes.firstIndex(of: 0) {
                throw ConfigError("the config contains a NUL byte; expected UTF-8 text",
                                  at: ConfigError.location(ofByteOffset: nul, in: text, file: file))
            }
            return text
        }
        // Walk the valid prefix to place the first invalid sequence.
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var line = 1, column = 1
        while case .scalarValue(let scalar) = decoder.decode(&iterator) {
            if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
        }
        throw ConfigError("the config is not valid UTF-8; save it as UTF-8",
                          at: SourceLocation(file: file, line: line, column: column))
    }
}
