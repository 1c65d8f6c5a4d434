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

    /// A line that does not read as the type asked for (what `JSONDecoder` would refuse).
    public struct ReadError: Error, Sendable {}

    /// One line's object, its keys with the first of duplicates winning.
    static func object(_ line: some Collection<UInt8>) throws(ReadError) -> [String: JSONValue] {
        guard case .object(let members)? = try? parseLine(line) else { throw ReadError() }
        return JSONValue.entries(members)
    }
}

extension DaemonProtocol.Hello {
    /// Reads a greeting as `JSONDecoder` reads ``DaemonProtocol/Hello``: `hello` and
    /// `version` required, the rest optional, unknown keys ignored.
    public init(line: some Collection<UInt8>) throws(DaemonProtocol.ReadError) {
        let entries = try DaemonProtocol.object(line)
        guard let hello = try entries.optional("hello", \.string), let version = try entries.integer("version", Int.self) else {
            throw DaemonProtocol.ReadError()
        }
        self.init(version: version, pid: try entries.integer("pid", Int32.self),
                  answerWithinMS: try entries.integer("answer_within_ms", Int.self), config: try entries.optional("config", \.string))
        self.hello = hello
        greetBy = try entries.integer("greet_by", Int64.self)
    }
}

extension DaemonProtocol.Answer {
    /// Reads an answer line as `JSONDecoder` reads ``DaemonProtocol/Answer``.
    public init(line: some Collection<UInt8>) throws(DaemonProtocol.ReadError) {
        let entries = try DaemonProtocol.object(line)
        self.init(id: try entries.integer("id", Int.self))
        exit = try entries.integer("exit", Int32.self)
        report = entries["report"].flatMap { $0 == .null ? nil : $0 }
        text = try entries.optional("text", \.string)
        if case .array(let items)? = entries["problems"] {
            problems = try items.map { (item: JSONValue) throws(DaemonProtocol.ReadError) -> String in
                guard let text = item.string else { throw DaemonProtocol.ReadError() }
                return text
            }
        } else if let problems = entries["problems"], problems != .null {
            throw DaemonProtocol.ReadError()
        }
        interaction = try entries.optional("interaction", \.string)
        error = try entries.optional("error", \.string)
        resend = try entries.optional("resend") { value -> Bool? in
            if case .bool(let flag) = value { flag } else { nil }
        }
        status = entries["status"].flatMap { $0 == .null ? nil : $0 }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The key's value read by `read`; `nil` when it is missing or null, an error when it
    /// is there with another type.
    fileprivate func optional<T>(_ key: String, _ read: (JSONValue) -> T?) throws(DaemonProtocol.ReadError) -> T? {
        guard let value = self[key], value != .null else { return nil }
        guard let read = read(value) else { throw DaemonProtocol.ReadError() }
        return read
    }

    /// A whole number that fits `T`, as `JSONDecoder` takes one.
    fileprivate func integer<T: FixedWidthInteger>(_ key: String, _: T.Type) throws(DaemonProtocol.ReadError) -> T? {
        try optional(key) { value -> T? in
            guard let number = value.number, number.rounded() == number, let integer = T(exactly: number) else { return nil }
            return integer
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
