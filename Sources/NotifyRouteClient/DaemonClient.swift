#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute

/// The CLI's side of ``DaemonProtocol``: blocking reads and writes under deadlines, on
/// plain sockets. A one-shot `send` spends most of its life starting up; an event loop
/// and its threads would cost more than the exchange itself.
public final class DaemonClient {
    /// How long the daemon has to answer `hello`: a daemon that does not answer by then
    /// is taken as absent, and the caller routes the event itself.
    public static let helloLimit: Duration = .milliseconds(100)

    public let path: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    /// What one `recv` reads into, made once: a 64 KB chunk per read had malloc grow the
    /// heap (`brk`, and page faults) on every send; an answer is a few hundred bytes.
    private var chunk = [UInt8](repeating: 0, count: 4_096)
    private var nextID = 1
    /// The request sent with a version-2 hello, until its answer is read.
    private var first: First?
    /// From the daemon's hello: how long an answer may take before the daemon counts as hung.
    public private(set) var answerLimit: Duration = .seconds(10)
    public private(set) var daemonPID: Int32?
    /// The config file the daemon routes with, from its greeting.
    public private(set) var daemonConfig: String?
    /// Until when (`CLOCK_MONOTONIC` µs) a read that finds nothing yields the CPU instead of
    /// sleeping in `poll`; set by the first such read (``yieldingMicroseconds``).
    private var yieldsUntil: Int64?

    /// How long a client waiting for the daemon first yields its CPU, rather than sleep: the
    /// daemon's thread that the request wakes then runs on this CPU at once, where a sleeping
    /// client left it to wake another (on a VM a halted vCPU) (Tests/Benchmarks/README.md, "Why the code is so").
    /// Bounded, so a slow sink's answer is awaited asleep.
    static let yieldingMicroseconds: Int64 = 300

    private struct First {
        var line: [UInt8]
        /// Sent with the hello; else still to send (a daemon of version 1 greeted).
        var sent: Bool
    }

    /// Why the daemon could not be used; the caller then routes locally.
    public struct Unavailable: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// Nothing listens (no socket, or nobody behind it): the usual case without a daemon.
        public var isAbsent = false
        /// The daemon answered, and refuses this client (its uid is not allowed).
        public var isRefusal = false
        /// A daemon of protocol version 1 refused a version-2 hello.
        var isOldVersion = false
    }

    /// The socket path: `explicit` (`--socket`), else `NOTIFY_ROUTE_SOCKET`, else `socket`
    /// in the state directory (`$XDG_RUNTIME_DIR/notify-route/`).
    /// `stateDirectory` finds that directory (a command that has checked it already passes its answer).
    public static func socketPath(
        explicit: String?, stateDirectory: () throws(StateDirectory.Refused) -> String = { () throws(StateDirectory.Refused) in try StateDirectory.resolve() }
    ) throws(StateDirectory.Refused) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let variable = ProcessEnvironment.value("NOTIFY_ROUTE_SOCKET"), !variable.isEmpty { return variable }
        return try stateDirectory() + "/socket"
    }

    /// Connects and greets; throws ``Unavailable`` at once when nothing listens, and
    /// within ``helloLimit`` when something listens but does not answer.
    ///
    /// Only a daemon of this user, of root, or of the owner of the socket's directory when
    /// no one else can write that directory is used (``checkPeer()``).
    ///
    /// `first`: a request sent with the hello, in the same write (protocol version 2),
    /// whose answer ``answerToFirst(within:)`` reads: a round trip less than a greeting
    /// awaited before the request. A daemon that greets late does not route it (the
    /// client has given up by then); a daemon of version 1 gets it after its greeting.
    /// `config`: the config file the request must be routed with; a daemon that routes
    /// with another does not route it.
    public init(path: String, first: (() -> DaemonProtocol.Request)? = nil, config: String? = nil) throws(Unavailable) {
        self.path = path
        if let first {
            do throws(Unavailable) {
                // Made once connected: without a daemon, a send does not pay for its request.
                try greet(config: config) {
                    var request = first()
                    request.id = self.nextID
                    self.nextID += 1
                    return request.line
                }
                return
            } catch where error.isOldVersion {
                // A daemon from before version 2 (one not restarted since an upgrade).
                self.first?.sent = false
            }
        }
        try greet(sending: nil)
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Opens a connection and reads the greeting, with the request `sending` makes sent
    /// along with a version-2 hello (kept in ``first``).
    private func greet(config: String? = nil, sending: (() -> [UInt8])?) throws(Unavailable) {
        buffer = []
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(description: "socket: \(String(cString: strerror(errno)))") }
        do throws(Unavailable) {
            try connect()
            try checkPeer()
            let request = sending?()
            // Named absolutely (the daemon's working directory is not this one), and only once a
            // daemon answers; a request whose config cannot be resolved waits for the greeting.
            let named = config.flatMap(Self.absolutePath)
            let pipelining = request != nil && (config == nil || named != nil)
            if let request { first = First(line: request, sent: pipelining) }
            // The give-up time, also the greeting's deadline in the version-2 hello: a greeting
            // the daemon wrote before it is read (``readLine(until:)`` looks before it gives up).
            let greetBy = Self.deadline(after: Self.helloLimit)
            do throws(Unavailable) {
                if pipelining, let request {
                    try send(DaemonProtocol.pipeliningHelloLine(greetBy: greetBy, config: named) + request)
                } else {
                    try send(DaemonProtocol.helloLine)
                }
            } catch {
                // A daemon that refuses a peer answers at once and hangs up, maybe before
                // the greeting is written: its answer is still there to read.
                guard let line = try? readLine(until: greetBy),
                      let refusal = try? DaemonProtocol.Answer(line: line), let reason = refusal.error
                else { throw error }
                throw Unavailable(description: "\(path) refused this client: \(reason)", isRefusal: true)
            }
            let line = try readLine(until: greetBy)
            let version = pipelining ? DaemonProtocol.pipeliningVersion : DaemonProtocol.version
            guard let hello = try? DaemonProtocol.Hello(line: line), hello.hello == DaemonProtocol.name, hello.version == version
            else {
                if let refusal = try? DaemonProtocol.Answer(line: line), let error = refusal.error {
                    // Version 1's daemon refuses version 2 as a usage error (64); a refused peer is 69.
                    if pipelining, refusal.exit == 64, error.hasPrefix("protocol version") {
                        throw Unavailable(description: error, isOldVersion: true)
                    }
                    throw Unavailable(description: "\(path) refused this client: \(error)", isRefusal: true)
                }
                throw Unavailable(description: "\(path) answered the greeting with \(String(decoding: line.prefix(200), as: UTF8.self))")
            }
            daemonPID = hello.pid
            daemonConfig = hello.config
            // Bounded: a negative or absurd limit from another daemon neither ends every wait at once nor never.
            if let limit = hello.answerWithinMS { answerLimit = .milliseconds(min(max(limit, 0), 86_400_000)) + Self.helloLimit }
        } catch {
            close(fd)
            fd = -1
            throw error
        }
    }

    /// Whether a request given to ``init(path:first:config:)`` waits for ``answerToFirst(within:)``.
    public var hasFirst: Bool { first != nil }

    /// The answer to the request given to ``init(path:first:config:)``; sent
    /// again when the daemon did not take it with the greeting, or after a version-1 greeting.
    public func answerToFirst(within limit: Duration? = nil) throws(Unavailable) -> DaemonProtocol.Answer {
        guard let first else { throw Unavailable(description: "no request was sent with the greeting") }
        self.first = nil
        if !first.sent { try send(first.line) }
        let answer = try readAnswer(within: limit)
        guard first.sent, answer.resend == true else { return answer }
        try send(first.line)
        return try readAnswer(within: limit)
    }

    /// Sends one request and reads its answer. A daemon that hangs up or does not answer
    /// within its own limit throws ``Unavailable``: whether the event was routed is then
    /// unknown, and the caller routes it locally (dedup makes a repeat a duplicate).
    public func request(_ build: (inout DaemonProtocol.Request) -> Void, kind: DaemonProtocol.Kind, within limit: Duration? = nil) throws(Unavailable) -> DaemonProtocol.Answer {
        var request = DaemonProtocol.Request(kind: kind)
        build(&request)
        return try self.request(request, within: limit)
    }

    /// ``request(_:kind:within:)`` for a request already made; its id is set here.
    public func request(_ request: DaemonProtocol.Request, within limit: Duration? = nil) throws(Unavailable) -> DaemonProtocol.Answer {
        var request = request
        request.id = nextID
        nextID += 1
        try send(request.line)
        return try readAnswer(within: limit)
    }

    private func readAnswer(within limit: Duration?) throws(Unavailable) -> DaemonProtocol.Answer {
        let deadline = limit.map(Self.deadline(after:)) ?? .max
        let line = try readLine(until: deadline)
        guard let answer = try? DaemonProtocol.Answer(line: line) else {
            throw Unavailable(description: "\(path) answered with \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        return answer
    }

    /// The limit for a request that routes an event: what the daemon said its sinks may take.
    public var routingLimit: Duration { answerLimit }

    private func connect() throws(Unavailable) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Unavailable(description: "the socket path is too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result != 0 {
            // EAGAIN: the listen backlog is full, a daemon too busy or hung to accept.
            let absent = errno == ENOENT || errno == ECONNREFUSED || errno == ENOTDIR
            if errno == EACCES {
                // The socket's mode keeps out whom the daemon's serve.allow does not name.
                throw Unavailable(
                    description: "\(path): permission denied (the daemon admits its own user only, unless serve.allow in its config names others)",
                    isRefusal: true)
            }
            throw Unavailable(description: "\(path): \(String(cString: strerror(errno)))", isAbsent: absent)
        }
    }

    /// Whom an event may be handed to, before any of it is sent: a daemon of this user, of
    /// root, or of the owner of the socket's directory when no one else can write that
    /// directory (a system service's, or another user's that lets this one in). A socket
    /// someone bound first in a directory anyone can write (/tmp) gets nothing.
    private func checkPeer() throws(Unavailable) {
        var peer = PeerCredentials(pid: 0, uid: 0, gid: 0)
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 else {
            throw Unavailable(description: "\(path): cannot read the daemon's credentials: \(String(cString: strerror(errno)))")
        }
        if peer.uid == getuid() || peer.uid == 0 { return }
        let prefix = "\(path) is served by uid \(peer.uid), not by you (uid \(getuid()))"
        let directory = Self.directory(of: path)
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw Unavailable(description: "\(prefix) or root, and \(directory) cannot be inspected; not handing it events")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw Unavailable(description: "\(prefix) or root, in \(directory), which others can write (mode \(String(info.st_mode & 0o7777, radix: 8))); not handing it events")
        }
        guard info.st_uid == peer.uid else {
            throw Unavailable(description: "\(prefix), root or the owner of \(directory) (uid \(info.st_uid)); not handing it events")
        }
    }

    /// The directory a socket path names its socket in.
    static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }

    private func send(_ bytes: [UInt8]) throws(Unavailable) {
        var offset = 0
        let deadline = Self.deadline(after: Self.helloLimit)
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                offset += written
            } else if errno == EAGAIN || errno == EINTR {
                if DaemonProtocol.monotonicMicroseconds() >= deadline { throw Unavailable(description: "the daemon at \(path) did not answer in time") }
                wait(for: Int16(POLLOUT), until: deadline)
            } else {
                throw Unavailable(description: "\(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The next line, read until `deadline` (`CLOCK_MONOTONIC`, microseconds). The clock is
    /// read before each attempt to read, and the client gives up only when an attempt that
    /// began at the deadline or later found nothing: what the daemon wrote before the
    /// deadline is always read (the version-2 hello's promise, ``DaemonProtocol/Hello/greetBy``).
    private func readLine(until deadline: Int64) throws(Unavailable) -> [UInt8] {
        while true {
            let now = DaemonProtocol.monotonicMicroseconds()
            let late = now >= deadline
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            var failure: Int32 = 0
            let count = chunk.withUnsafeMutableBytes { storage in
                let count = recv(fd, storage.baseAddress, storage.count, 0)
                if count < 0 { failure = errno }
                return count
            }
            if count > 0 {
                buffer += chunk[..<count]
            } else if count == 0 {
                throw Unavailable(description: "the daemon at \(path) hung up before it answered")
            } else if failure == EAGAIN || failure == EINTR {
                if late { throw Unavailable(description: "the daemon at \(path) did not answer in time") }
                let yielding = yieldsUntil ?? now + Self.yieldingMicroseconds
                yieldsUntil = yielding
                if now < yielding {
                    sched_yield()
                } else {
                    wait(for: Int16(POLLIN), until: deadline)
                }
            } else {
                throw Unavailable(description: "\(path): \(String(cString: strerror(failure)))")
            }
        }
    }

    /// `CLOCK_MONOTONIC` microseconds `duration` from now: the clock of every deadline here.
    private static func deadline(after duration: Duration) -> Int64 {
        DaemonProtocol.monotonicMicroseconds() + Int64(DurationParser.milliseconds(duration)) * 1_000
    }

    private static func absolutePath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Waits for `events` until `deadline` at most; the caller looks at the clock (and the socket) again.
    private func wait(for events: Int16, until deadline: Int64) {
        let left = deadline == .max ? nil : deadline - DaemonProtocol.monotonicMicroseconds()
        if let left, left <= 0 { return }
        var entry = pollfd(fd: fd, events: events, revents: 0)
        // Rounded up: poll's milliseconds must not wake it before the deadline.
        let milliseconds = left.map { $0 > 86_400_000_000 ? -1 : Int32(($0 + 999) / 1_000) } ?? -1
        _ = poll(&entry, 1, milliseconds)
    }
}

extension DaemonProtocol.Request {
    /// The request as one protocol line: ``jsonValue``'s line, written key by key.
    public var line: [UInt8] {
        var line: [UInt8] = [UInt8(ascii: "{")]
        line.reserveCapacity(256)
        func key(_ name: StaticString) {
            if line.count > 1 { line.append(UInt8(ascii: ",")) }
            line.append(UInt8(ascii: "\""))
            line.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            line.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }
        // In the order of `JSONValue.write`'s sorted keys.
        if dryRun { key("dry_run"); line.append(contentsOf: "true".utf8) }
        if let notification {
            key("event"); notification.writeJSON(into: &line)
        } else if let event {
            key("event"); event.write(into: &line)
        }
        if let waitFor { key("for"); line.append(contentsOf: String(waitFor).utf8) }
        if let id { key("id"); line.append(contentsOf: String(id).utf8) }
        if let replaceKey { key("replace_key"); JSONWriter.string(replaceKey, into: &line) }
        key("request"); JSONWriter.string(kind.rawValue, into: &line)
        if let sinks { key("sinks"); JSONWriter.strings(sinks, into: &line) }
        if let terminal { key("terminal"); JSONWriter.string(terminal, into: &line) }
        if wait { key("wait"); line.append(contentsOf: "true".utf8) }
        line.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "\n")])
        return line
    }

    /// The request as its JSON line's object.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["request": .string(kind.rawValue)]
        if let id { object["id"] = .number(Double(id)) }
        if let event { object["event"] = event }
        if let sinks { object["sinks"] = .array(sinks.map(JSONValue.string)) }
        if wait { object["wait"] = .bool(true) }
        if dryRun { object["dry_run"] = .bool(true) }
        if let replaceKey { object["replace_key"] = .string(replaceKey) }
        if let waitFor { object["for"] = .number(Double(waitFor)) }
        if let terminal { object["terminal"] = .string(terminal) }
        return .object(object)
    }
}
