#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Logging
import NotifyRoute
@testable import NotifyRouteClient
@testable import NotifyRouteDaemon
import NotifyRouteTestSupport
import NotifyRouteTesting
import ServiceLifecycle
import Synchronization
import Testing

struct RouterDaemonTests {
    /// The answer line the daemon writes itself reads back as the answer encoded whole would.
    @Test func anAnswerLineReadsAsItsEncodedForm() async throws {
        let router = try NotificationRouter(configuration: RouterConfiguration(fallback: ["r"]), sinks: ["r": RecordingSink()])
        var event = NotificationEvent(title: "Disk \"full\"\n\t\u{01} ünïcode / ✓", body: "a\\b")
        event.fields = ["PATH": "/tmp/x"]
        let report = try await router.send(event)
        var answer = DaemonProtocol.Answer(id: 7)
        answer.exit = 1
        answer.text = "line one\nline \"two\" \\ \u{1F} / é"
        answer.problems = ["a\rb", "\u{08}\u{0C}"]
        answer.interaction = "ack"
        answer.status = .object(["held": .number(3), "ratio": .number(0.5)])
        var whole = answer
        whole.report = try JSONDecoder().decode(JSONValue.self, from: Data(DaemonProtocol.encodeLine(report)))
        answer.routedReport = report
        let line = answer.line()
        #expect(line.last == UInt8(ascii: "\n") && line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
        let read = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(line))
        let expected = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(DaemonProtocol.encodeLine(whole)))
        #expect(read.report == expected.report && read.report != nil)
        #expect(read.text == expected.text && read.problems == expected.problems && read.status == expected.status)
        #expect(read.id == 7 && read.exit == 1 && read.interaction == "ack" && read.error == nil)
    }

    /// A client that writes many sends at once gets every answer, in order, and each
    /// answered event's state is already in the database a local `send` would read.
    @Test func pipelinedSendsAreAnsweredInOrderOnceCommitted() async throws {
        let directory = try Self.makeDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let recorder = RecordingSink()
        let store = SQLiteStateStore(directory: directory)
        let host = try Self.recordingHost(recorder, file: "t.yaml", store: store)
        let socket = directory + "/socket"
        let (group, running) = await startDaemon(host, at: socket)

        let count = 300
        let fd = try connect(socket)
        defer { close(fd) }
        var requests = #"{"hello":"notify-route","version":1}"# + "\n"
        for index in 0..<count {
            requests += #"{"id":\#(index),"request":"send","event":{"title":"event \#(index)","replace_key":"k\#(index)"}}"# + "\n"
        }
        let writer = Task.detached { writeAll(fd, Array(requests.utf8)) }
        var lines = LineReading(fd: fd)
        let hello = lines.next()
        try #require(hello?.contains("\"hello\"") == true, "\(hello ?? "no hello")")
        for index in 0..<count {
            let next = lines.next()
            let line = try #require(next, "answer \(index)")
            let answer = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(line.utf8))
            #expect(answer.id == index && answer.exit == 0, "\(line)")
            if index % 50 == 0 || index == count - 1 {
                let state = try SQLiteStateStore(directory: directory).snapshot()
                #expect(state.handles.keys.contains { $0.key == "k\(index)" }, "answer \(index) came before its state was committed")
            }
        }
        await writer.value
        #expect(recorder.deliveries.map(\.event.title) == (0..<count).map { "event \($0)" })
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// Sends queued on one connection may share one reading of the silences and the pause
    /// (they arrived before it was made), and no more than those: a silence another process
    /// stores after a burst's answers holds every event of the next burst.
    @Test func aSilenceStoredBetweenTwoBurstsHoldsTheWholeSecond() async throws {
        let directory = try Self.makeDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let recorder = RecordingSink()
        let store = SQLiteStateStore(directory: directory)
        mkdir(directory + "/history", 0o700)
        let memory = RouterMemory(directory: directory + "/history", notice: { Issue.record("history: \($0)") })
        let host = try RouterHost(load: {
            let registry = try SinkRegistry([SinkPlugin(kind: "recording", summary: "records", options: []) { _ in recorder }])
            let configuration = try RouterConfiguration.load(yaml: Self.recordingYAML, file: "s.yaml", registry: registry)
            return try NotificationRouter(configuration: configuration, registry: registry, store: store, memory: memory)
        })
        let socket = directory + "/socket"
        let (group, running) = await startDaemon(host, at: socket)
        let fd = try connect(socket)
        defer { close(fd) }
        var lines = LineReading(fd: fd)
        let count = 200

        func burst(_ name: String) throws -> [Int32] {
            var requests = ""
            for index in 0..<count {
                requests += #"{"id":\#(index),"request":"send","event":{"title":"\#(name) \#(index)"}}"# + "\n"
            }
            writeAll(fd, Array(requests.utf8))
            return try (0..<count).map { index in
                let next = lines.next()
                let line = try #require(next, "\(name): answer \(index)")
                return try #require(try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(line.utf8)).exit)
            }
        }

        writeAll(fd, Array(#"{"hello":"notify-route","version":1}"#.utf8) + [10])
        let hello = lines.next()
        try #require(hello?.contains("\"hello\"") == true, "\(hello ?? "no hello")")
        #expect(try burst("first") == Array(repeating: 0, count: count))
        #expect(recorder.deliveries.count == count)

        let now = Date()
        let other = RouterMemory(directory: directory + "/history", keepsOpen: false)
        _ = try other.addSilence(try MatcherLine.parse(["title=second*"]), starts: now.addingTimeInterval(-1), ends: now.addingTimeInterval(3600), comment: nil)
        #expect(try burst("second") == Array(repeating: 1, count: count), "events of the second burst went through the silence")
        #expect(recorder.deliveries.count == count)
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// The greeting, written by the connection's event loop, says what the router in use
    /// says: a reload changes what the next connection is told. A bad first line is
    /// answered with an error and the next line may still greet.
    @Test func theGreetingFollowsAReload() async throws {
        let directory = try Self.makeDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let deadline = Mutex("1s")
        let host = try RouterHost(load: {
            let registry = try SinkRegistry([SinkPlugin(kind: "recording", summary: "records", options: []) { _ in RecordingSink() }])
            let yaml = "sinks: { r: { kind: recording, deadline: \(deadline.withLock { $0 }) } }\nroutes: [ { match: {}, to: [r] } ]\n"
            return try NotificationRouter(configuration: try RouterConfiguration.load(yaml: yaml, file: "g.yaml", registry: registry), registry: registry)
        })
        let socket = directory + "/socket"
        let (group, running) = await startDaemon(host, at: socket)

        let first = try connect(socket)
        defer { close(first) }
        writeAll(first, Array(#"{"id":1,"request":"status"}"#.utf8) + [10] + Array(#"{"hello":"notify-route","version":1}"#.utf8) + [10])
        var firstLines = LineReading(fd: first)
        let refusedLine = firstLines.next()
        let refused = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(try #require(refusedLine).utf8))
        #expect(refused.exit == 64 && refused.error?.contains("the first line must be") == true, "\(refused)")
        let beforeLine = firstLines.next()
        let before = try DaemonProtocol.Hello(line: Array(try #require(beforeLine).utf8))
        #expect(before.answerWithinMS == 3000 && before.config == "g.yaml" && before.pid == getpid())

        deadline.withLock { $0 = "4s" }
        _ = try await host.reload()
        let after = try DaemonProtocol.Hello(line: Array(try firstLine(at: socket, after: Array(#"{"hello":"notify-route","version":1}"#.utf8) + [10]).utf8))
        #expect(after.answerWithinMS == 9000)

        // The connection greeted before the reload routes with the new router.
        writeAll(first, Array(#"{"id":2,"request":"send","event":{"title":"after the reload"}}"#.utf8) + [10])
        let sentLine = firstLines.next()
        let sent = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(try #require(sentLine).utf8))
        #expect(sent.id == 2 && sent.exit == 0, "\(sent)")
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// A version-2 hello's first request is routed when the greeting is written before the
    /// client's `greet_by`; a late one is answered `resend` and not routed, and routes when
    /// sent again. Without `greet_by` the request is routed as after a version-1 hello.
    @Test func aRequestSentWithTheHelloIsRoutedOnlyIfTheGreetingWasInTime() async throws {
        let directory = try Self.makeDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let recorder = RecordingSink()
        let configPath = directory + "/p.yaml"
        try Self.recordingYAML.write(toFile: configPath, atomically: true, encoding: .utf8)
        let host = try Self.recordingHost(recorder, file: configPath)
        let socket = directory + "/socket"
        let (group, running) = await startDaemon(host, at: socket)
        func send(_ title: String) -> [UInt8] { Array(#"{"id":1,"request":"send","event":{"title":"\#(title)"}}"#.utf8) + [10] }

        // Each case on a connection of its own: the hello and the request in one write, then
        // the greeting and the first answer.
        var connections: [Int32] = []
        defer { connections.forEach { close($0) } }
        func exchange(_ hello: [UInt8], _ title: String) throws -> (DaemonProtocol.Hello, DaemonProtocol.Answer, LineReading) {
            let fd = try connect(socket)
            connections.append(fd)
            writeAll(fd, hello + send(title))
            var lines = LineReading(fd: fd)
            let greeting = lines.next(), answer = lines.next()
            return (try DaemonProtocol.Hello(line: Array(try #require(greeting).utf8)),
                    try DaemonProtocol.Answer(line: Array(try #require(answer).utf8)), lines)
        }
        let soon = DaemonProtocol.monotonicMicroseconds() + 10_000_000

        let (greeting, routed, _) = try exchange(DaemonProtocol.pipeliningHelloLine(greetBy: soon), "in time")
        #expect(greeting.version == 2 && greeting.config == configPath && greeting.pid == getpid())
        #expect(routed.id == 1 && routed.exit == 0 && routed.resend == nil, "\(routed)")
        #expect(recorder.deliveries.map(\.event.title) == ["in time"])

        var (lateGreeting, refused, lateLines) = try exchange(DaemonProtocol.pipeliningHelloLine(greetBy: DaemonProtocol.monotonicMicroseconds() - 1), "late")
        #expect(lateGreeting.version == 2)
        #expect(refused.id == 1 && refused.exit == 75 && refused.resend == true && refused.error?.contains("greet_by") == true, "\(refused)")
        #expect(recorder.deliveries.map(\.event.title) == ["in time"], "the late request was routed")
        writeAll(lateLines.fd, send("late, sent again"))
        let againLine = lateLines.next()
        let again = try DaemonProtocol.Answer(line: Array(try #require(againLine).utf8))
        #expect(again.id == 1 && again.exit == 0, "\(again)")
        #expect(recorder.deliveries.map(\.event.title) == ["in time", "late, sent again"])

        // A client that names its config: routed with that file (however named), not with another.
        let link = directory + "/link.yaml"
        try #require(symlink(configPath, link) == 0)
        #expect(try exchange(DaemonProtocol.pipeliningHelloLine(greetBy: soon, config: link), "same config").1.exit == 0)
        #expect(recorder.deliveries.map(\.event.title).last == "same config")
        let other = directory + "/other.yaml"
        try Self.recordingYAML.write(toFile: other, atomically: true, encoding: .utf8)
        #expect(try exchange(DaemonProtocol.pipeliningHelloLine(greetBy: soon, config: other), "other config").1.resend == true)
        #expect(recorder.deliveries.map(\.event.title).last == "same config", "routed with another config than the client's")

        #expect(try exchange(Array(#"{"hello":"notify-route","version":2}"#.utf8) + [10], "no greet_by").1.exit == 0)
        #expect(recorder.deliveries.map(\.event.title).last == "no greet_by")

        let unknown = try DaemonProtocol.Answer(line: Array(try firstLine(at: socket, after: Array(#"{"hello":"notify-route","version":3}"#.utf8) + [10]).utf8))
        #expect(unknown.exit == 64 && unknown.error == "protocol version 3; this daemon speaks 1 and 2", "\(unknown)")

        // The CLI's client: one write for the hello and the send, the answer read after the greeting.
        let client = try DaemonClient(path: socket, first: {
            var request = DaemonProtocol.Request(kind: .send)
            request.event = .object(["title": .string("from the client")])
            return request
        })
        #expect(client.hasFirst)
        let answer = try client.answerToFirst(within: .seconds(5))
        #expect(answer.exit == 0 && !client.hasFirst, "\(answer)")
        #expect(recorder.deliveries.map(\.event.title).last == "from the client")
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// A daemon of protocol version 1 (not restarted since an upgrade) refuses the version-2
    /// hello; the client greets it again in version 1 and sends its request after the greeting.
    /// The peer here answers as version 1's daemon did, line for line.
    @Test func theClientFallsBackToVersionOneForAnOlderDaemon() async throws {
        let directory = try Self.makeDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/socket"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        let olderDaemon = Task.detached { () -> [String] in
            var seen: [String] = []
            // The first connection: version 2 refused, and its request refused as not a hello.
            let first = accept(listener, nil, nil)
            var firstLines = LineReading(fd: first)
            for _ in 0..<2 {
                guard let line = firstLines.next() else { break }
                seen.append(line)
                // The client may have hung up after the first: no SIGPIPE for this process.
                let refusal = Array(#"{"error":"protocol version 2; this daemon speaks 1","exit":64}"#.utf8) + [10]
                _ = refusal.withUnsafeBytes { Glibc.send(first, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            close(first)
            let second = accept(listener, nil, nil)
            var secondLines = LineReading(fd: second)
            if let hello = secondLines.next() {
                seen.append(hello)
                writeAll(second, Array(#"{"answer_within_ms":5000,"config":"<embedded>","hello":"notify-route","pid":1,"version":1}"#.utf8) + [10])
            }
            if let request = secondLines.next() {
                seen.append(request)
                writeAll(second, Array(#"{"exit":0,"id":1,"problems":[]}"#.utf8) + [10])
            }
            close(second)
            return seen
        }
        let client = try DaemonClient(path: path, first: {
            var request = DaemonProtocol.Request(kind: .send)
            request.event = .object(["title": .string("to an older daemon")])
            return request
        })
        let answer = try client.answerToFirst(within: .seconds(5))
        #expect(answer.exit == 0 && answer.id == 1)
        let seen = await olderDaemon.value
        #expect(seen.count == 4, "\(seen)")
        #expect(seen.first?.contains(#""version":2"#) == true && seen.dropFirst().first?.contains("to an older daemon") == true)
        #expect(seen.dropFirst(2).first == #"{"hello":"notify-route","version":1}"#)
        #expect(seen.last?.contains("to an older daemon") == true && seen.last?.contains(#""id":1"#) == true)
    }

    /// The clock check of a version-2 hello: this process shares its own clock; a pid that
    /// names no process does not.
    @Test func onlyAPeerOnTheSameClockIsTrustedWithGreetBy() {
        #expect(GreetingHandler.sharesClock(with: getpid()))
        #expect(!GreetingHandler.sharesClock(with: 0) || !FileManager.default.fileExists(atPath: "/proc/self/ns/time"))
    }

    /// The hello read from its parsed members: what it says, and each fault named as the
    /// daemon answers it (a number is a number however it is written; unknown keys are ignored).
    @Test func theHelloIsReadFromItsMembersAndEachFaultIsNamed() throws {
        func read(_ line: String) -> Result<DaemonProtocol.Hello, DaemonProtocol.ProtocolError> {
            GreetingHandler.read(hello: Array(line.utf8))
        }
        let one = try read(#"{"hello":"notify-route","version":1}"#).get()
        #expect(one.version == 1 && one.greetBy == nil && one.config == nil)
        let two = try read(#"{"config":"/etc/x.yaml","extra":[1,{"a":null}],"greet_by":27467669497,"hello":"notify-route","version":2.0}"#).get()
        #expect(two.version == 2 && two.greetBy == 27467669497 && two.config == "/etc/x.yaml")
        let nulls = try read(#"{"config":null,"greet_by":null,"hello":"notify-route","version":2e0}"#).get()
        #expect(nulls.version == 2 && nulls.greetBy == nil && nulls.config == nil)

        func fault(_ line: String) -> String? {
            if case .failure(let error) = read(line) { return error.description }
            return nil
        }
        #expect((fault("{\"hello\":") ?? "").hasPrefix("not JSON: "))
        let first = #"the first line must be {"hello":"notify-route","version":1}"#
        #expect(fault(#"{"version":1}"#) == first)
        #expect(fault(#"{"hello":"other","version":1}"#) == first)
        #expect(fault(#"[1,2]"#) == first)
        #expect(fault(#"{"hello":"notify-route"}"#) == "protocol version missing; this daemon speaks 1 and 2")
        #expect(fault(#"{"hello":"notify-route","version":"2"}"#) == #"protocol version "2"; this daemon speaks 1 and 2"#)
        #expect(fault(#"{"hello":"notify-route","version":1.5}"#) == "protocol version 1.5; this daemon speaks 1 and 2")
        #expect(fault(#"{"config":7,"hello":"notify-route","version":2}"#) == #""config": expected the path of a config file"#)
        #expect(fault(#"{"greet_by":1.5,"hello":"notify-route","version":2}"#) == #""greet_by": expected an integer (CLOCK_MONOTONIC, microseconds)"#)
        #expect(fault(#"{"greet_by":"5","hello":"notify-route","version":2}"#) == #""greet_by": expected an integer (CLOCK_MONOTONIC, microseconds)"#)
    }

    /// A directory of the test's own, for its socket and state.
    private static func makeDirectory() throws -> String {
        try TestEnvironment.temporaryDirectory("router-daemon", permissions: 0o700).path
    }

    private static let recordingYAML = "sinks: { r: { kind: recording } }\nroutes: [ { match: {}, to: [r] } ]\n"

    /// A host whose config (``recordingYAML``, read as `file`) routes every event to `recorder`.
    private static func recordingHost(_ recorder: RecordingSink, file: String, store: SQLiteStateStore? = nil) throws -> RouterHost {
        try RouterHost(load: {
            let registry = try SinkRegistry([SinkPlugin(kind: "recording", summary: "records", options: []) { _ in recorder }])
            let configuration = try RouterConfiguration.load(yaml: recordingYAML, file: file, registry: registry)
            return try store.map { try NotificationRouter(configuration: configuration, registry: registry, store: $0) }
                ?? NotificationRouter(configuration: configuration, registry: registry)
        })
    }

    /// A daemon on `socket` in a `ServiceGroup` of its own, once it listens.
    private func startDaemon(_ host: RouterHost, at socket: String) async -> (ServiceGroup, Task<Void, any Error>) {
        let ready = AsyncStream.makeStream(of: Void.self)
        var options = RouterDaemon.Options()
        options.onReady = { ready.continuation.yield() }
        let daemon = RouterDaemon(
            listener: .path(socket), host: host,
            rendering: .init(exitCode: { $0.summary == .delivered ? 0 : 1 }, text: { $0.summary.rawValue }, problems: { _ in [] }),
            options: options, logger: Logger(label: "test"))
        let group = ServiceGroup(services: [daemon], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        for await _ in ready.stream { break }
        return (group, running)
    }

    /// The first line the daemon writes on a new connection after `bytes`.
    private func firstLine(at socket: String, after bytes: [UInt8]) throws -> String {
        let fd = try connect(socket)
        defer { close(fd) }
        writeAll(fd, bytes)
        var lines = LineReading(fd: fd)
        let line = lines.next()
        return try #require(line)
    }

    private func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(result == 0, "connect: errno \(errno)")
        return fd
    }
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

private struct LineReading {
    let fd: Int32
    var buffer: [UInt8] = []

    mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }
}
