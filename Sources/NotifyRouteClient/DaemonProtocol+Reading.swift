import Glibc
import NotifyRoute

/// The client's reading and writing of protocol lines without Foundation's JSON coders,
/// whose generic paths (dynamic casts, conformance scans of the whole binary, a thrown
/// error per type tried for each ``JSONValue``) were most of what a one-shot `send`
/// spent on the exchange. The daemon's own lines still come from `encodeLine`; these
/// read them to the same values, and the tests hold the two to each other.
extension DaemonProtocol {
    /// Our greeting, as `encodeLine(Hello())` writes it.
    public static let helloLine = Array(#"{"hello":"notify-route","version":1}"#.utf8) + [UInt8(ascii: "\n")]

    /// A version-2 hello, as `encodeLine(Hello(version: 2, config:, greetBy:))` writes it.
    public static func pipeliningHelloLine(greetBy: Int64, config: String? = nil) -> [UInt8] {
        var line: [UInt8] = [UInt8(ascii: "{")]
        if let config {
            line += Array(#""config":"#.utf8)
            JSONWriter.string(config, into: &line)
            line.append(UInt8(ascii: ","))
        }
        return line + Array(#""greet_by":"#.utf8) + Array(String(greetBy).utf8)
            + Array(#","hello":"notify-route","version":2}"#.utf8) + [UInt8(ascii: "\n")]
    }

    /// A file as the kernel knows it (device and inode): the same config however it is named.
    public struct FileIdentity: Hashable, Sendable {
        public var device: UInt64
        public var inode: UInt64

        public init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }
    }

    /// `CLOCK_MONOTONIC` in microseconds: the clock of ``Hello/greetBy`` on both sides.
    public static func monotonicMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    /// A JSON number's text as a whole `T` however it is written (`3`, `3.0`, `3e0`); `nil`
    /// when it has a fraction or does not fit.
    package static func wholeNumber<T: FixedWidthInteger>(_ text: String, _: T.Type) -> T? {
        if let integer = T(text) { return integer }
        return Double(text).flatMap { T(exactly: $0) }
    }

    /// A line that does not read as the type asked for (what `JSONDecoder` would refuse).
    public struct ReadError: Error, Sendable {}

    /// One line's object, as parsed: its members are read where they are, with no
    /// dictionary or ``JSONValue`` made of them (the parser refuses duplicate keys).
    static func members(_ line: some Collection<UInt8>) throws(ReadError) -> [(key: String, value: JSONLine)] {
        guard case .object(let members)? = try? parseLine(line) else { throw ReadError() }
        return members
    }
}

/// A member's value read as `JSONDecoder` reads an optional of that type: `nil` when it is
/// missing or null, an error when it is there with another type.
private enum Member {
    static func string(_ value: JSONLine?) throws(DaemonProtocol.ReadError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw DaemonProtocol.ReadError()
        }
    }

    /// A whole number that fits `T` (`3`, `3.0`, `3e0`), as `JSONDecoder` takes one.
    static func integer<T: FixedWidthInteger>(_ value: JSONLine?, _: T.Type) throws(DaemonProtocol.ReadError) -> T? {
        switch value {
        case nil, .null?: return nil
        case .number(let text)?:
            guard let integer = DaemonProtocol.wholeNumber(text, T.self) else { throw DaemonProtocol.ReadError() }
            return integer
        default: throw DaemonProtocol.ReadError()
        }
    }
}

extension DaemonProtocol.Hello {
    /// Reads a greeting as `JSONDecoder` reads ``DaemonProtocol/Hello``: `hello` and
    /// `version` required, the rest optional, unknown keys ignored.
    public init(line: some Collection<UInt8>) throws(DaemonProtocol.ReadError) {
        var hello, version, pid, answerWithin, config, greetBy: JSONLine?
        for (key, value) in try DaemonProtocol.members(line) {
            switch key {
            case "hello": hello = value
            case "version": version = value
            case "pid": pid = value
            case "answer_within_ms": answerWithin = value
            case "config": config = value
            case "greet_by": greetBy = value
            default: break
            }
        }
        guard let name = try Member.string(hello), let number = try Member.integer(version, Int.self) else {
            throw DaemonProtocol.ReadError()
        }
        self.init(version: number, pid: try Member.integer(pid, Int32.self),
                  answerWithinMS: try Member.integer(answerWithin, Int.self), config: try Member.string(config))
        self.hello = name
        self.greetBy = try Member.integer(greetBy, Int64.self)
    }
}

extension DaemonProtocol.Answer {
    /// Reads an answer line as `JSONDecoder` reads ``DaemonProtocol/Answer``. The report
    /// stays as parsed (``reportObject``) until it is asked for.
    public init(line: some Collection<UInt8>) throws(DaemonProtocol.ReadError) {
        self.init()
        for (key, value) in try DaemonProtocol.members(line) {
            switch key {
            case "id": id = try Member.integer(value, Int.self)
            case "exit": exit = try Member.integer(value, Int32.self)
            case "report": if case .null = value { reportObject = nil } else { reportObject = value }
            case "text": text = try Member.string(value)
            case "problems":
                switch value {
                case .null: break
                case .array(let items):
                    problems = try items.map { (item: JSONLine) throws(DaemonProtocol.ReadError) -> String in
                        guard case .string(let text) = item else { throw DaemonProtocol.ReadError() }
                        return text
                    }
                default: throw DaemonProtocol.ReadError()
                }
            case "interaction": interaction = try Member.string(value)
            case "error": error = try Member.string(value)
            case "resend":
                switch value {
                case .null: break
                case .bool(let flag): resend = flag
                default: throw DaemonProtocol.ReadError()
                }
            case "status": if case .null = value { status = nil } else { status = JSONValue(value) }
            default: break
            }
        }
    }
}

extension JSONValue {
    /// The value as one JSON text, keys sorted, as `DaemonProtocol.encodeLine` writes it
    /// (integers without a fraction, slashes unescaped).
    func write(into bytes: inout [UInt8]) {
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                bytes.append(contentsOf: String(Int64(value)).utf8)
            } else {
                bytes.append(contentsOf: "\(value)".utf8)
            }
        case .string(let text): JSONWriter.string(text, into: &bytes)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                item.write(into: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let entries):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.string(key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                entries[key]!.write(into: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// The value as one protocol line, with its newline.
    public var line: [UInt8] {
        var bytes: [UInt8] = []
        write(into: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
