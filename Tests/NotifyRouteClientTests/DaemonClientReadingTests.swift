#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteClient
import Testing

/// The client reads and writes protocol lines without Foundation's coders; these hold
/// its readings to what `JSONDecoder` and `encodeLine` make of the same lines.
struct DaemonClientReadingTests {
    @Test func theGreetingIsTheEncodedHello() {
        #expect(DaemonProtocol.helloLine == DaemonProtocol.encodeLine(DaemonProtocol.Hello()))
    }

    @Test func anAnswerReadsAsJSONDecoderReadsIt() throws {
        var answer = DaemonProtocol.Answer(id: 7)
        answer.exit = 1
        answer.report = .object([
            "summary": .string("failed"), "event": .object(["title": .string("Disk \"sda\"\n/ full"), "progress": .number(42)]),
            "sinks": .array([.object(["status": .string("unavailable"), "duration_ms": .number(0.25), "handle": .null])]),
            "notes": .array([]), "dry": .bool(false),
        ])
        answer.text = "failed: [warning] Disk\n  journal (journal) via --sink: failed"
        answer.problems = ["journal: failed", "ünïcode \u{1F4BE}"]
        answer.interaction = "ack"
        answer.status = .object(["held": .number(3)])
        let line = DaemonProtocol.encodeLine(answer).dropLast()
        let read = try DaemonProtocol.Answer(line: line)
        let decoded = try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(line))
        #expect(read.id == decoded.id && read.exit == decoded.exit && read.text == decoded.text)
        #expect(read.problems == decoded.problems && read.interaction == decoded.interaction && read.error == decoded.error)
        #expect(read.report == decoded.report && read.status == decoded.status)
        #expect(read.report == answer.report)
        #expect(read.summary == "failed" && read.hasReport)
        // Written again as it was read: the daemon's line and the client's are the same text.
        #expect(read.line() == DaemonProtocol.encodeLine(answer))
    }

    @Test func aGreetingAndARefusalRead() throws {
        let hello = try DaemonProtocol.Hello(line: DaemonProtocol.encodeLine(
            DaemonProtocol.Hello(pid: 4242, answerWithinMS: 3000, config: "/etc/notify-route.yaml")).dropLast())
        #expect(hello.hello == "notify-route" && hello.version == 1 && hello.pid == 4242)
        #expect(hello.answerWithinMS == 3000 && hello.config == "/etc/notify-route.yaml")
        let refusal = DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure("uid 65534 is not allowed", exit: 69)).dropLast()
        #expect(throws: DaemonProtocol.ReadError.self) { try DaemonProtocol.Hello(line: refusal) }
        #expect(try DaemonProtocol.Answer(line: refusal).error == "uid 65534 is not allowed")
    }

    /// What `JSONDecoder` refuses is refused: the client then says what the daemon answered.
    @Test(arguments: [
        #"{"exit":"0"}"#, #"{"exit":1.5}"#, #"{"exit":4294967296}"#, #"{"problems":"x"}"#, #"{"problems":[1]}"#,
        #"{"text":3}"#, #"[1]"#, #"not json"#, #"{"id":1"#,
    ])
    func aMistypedAnswerIsRefusedAsJSONDecoderRefusesIt(line: String) {
        #expect(throws: DaemonProtocol.ReadError.self) { try DaemonProtocol.Answer(line: Array(line.utf8)) }
        #expect(throws: (any Error).self) { try JSONDecoder().decode(DaemonProtocol.Answer.self, from: Data(line.utf8)) }
    }

    @Test func aRequestLineIsWhatEncodeLineWrites() {
        var request = DaemonProtocol.Request(kind: .send, id: 12)
        request.event = .object([
            "title": .string("a/b \"q\" \u{1}\t"), "progress": .number(50), "tags": .array([.string("x"), .string("y")]),
            "fields": .object(["Z": .string("1"), "A": .string("2")]),
        ])
        request.sinks = ["desktop", "journal"]
        request.dryRun = true
        #expect(request.jsonValue.line == DaemonProtocol.encodeLine(request.jsonValue))
    }

    /// A client's `send` writes its event from the event's fields (``DaemonProtocol/Request/notification``):
    /// the same line as the event made a ``JSONValue`` and encoded, every field set or none.
    @Test(arguments: [
        NotificationEvent(title: "Disk full"),
        NotificationEvent(
            title: "Disk \"sda\"\n/ full \u{1F4BE}", body: "92% used on /", level: .warning, timeout: .never, app: "df", source: "host/a",
            tags: ["b", "a", "ü"], dedupKey: "disk", replaceKey: "disk-1", icon: "drive-harddisk", category: "device",
            actions: [NotificationAction(id: "ack", label: "Acknowledge"), NotificationAction(id: "x", label: "\u{1}")],
            fields: ["Z": "1", "A": "2", "é": "3"], messageID: "m-1", progress: 42),
        NotificationEvent(title: "t", timeout: .after(.milliseconds(1500)), progress: -3),
    ])
    func aSendRequestWritesItsEventFromItsFields(event: NotificationEvent) {
        var request = DaemonProtocol.Request(kind: .send, id: 3)
        request.notification = event
        request.sinks = ["journal"]
        #expect(request.line == DaemonProtocol.encodeLine(request.jsonValue))
        #expect(request.event == event.jsonValue)
        var made = request
        made.event = event.jsonValue
        #expect(made.notification == nil && made.line == request.line)
    }

    @Test func everyRequestKindIsWrittenAsEncodeLineWritesIt() {
        var close = DaemonProtocol.Request(kind: .close, id: 1)
        close.replaceKey = "disk/1"
        var wait = DaemonProtocol.Request(kind: .wait, id: 2)
        wait.waitFor = 1
        var send = DaemonProtocol.Request(kind: .send)
        send.event = .object(["title": .string("x")])
        send.wait = true
        send.dryRun = true
        for request in [close, wait, send, DaemonProtocol.Request(kind: .status, id: 9)] {
            #expect(request.line == DaemonProtocol.encodeLine(request.jsonValue))
        }
    }
}
