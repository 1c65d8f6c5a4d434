import NotifyRoute
import NotifyRouteClient
import NotifyRouteTesting
import Testing

struct DaemonProtocolTests {
    static let registry = try! SinkRegistry([SinkPlugin(kind: "recording", summary: "records deliveries", options: []) { _ in RecordingSink() }])

    func parse(_ line: String) throws(DaemonProtocol.ProtocolError) -> DaemonProtocol.Request {
        try DaemonProtocol.Request.parse(Array(line.utf8))
    }

    @Test func aSendCarriesTheIngestEvent() throws {
        let request = try parse(#"{"id":3,"request":"send","event":{"title":"Disk","level":"warning"},"sinks":["desktop"],"wait":true}"#)
        #expect(request.kind == .send)
        #expect(request.id == 3)
        #expect(request.sinks == ["desktop"])
        #expect(request.wait)
        #expect(request.event?["title"]?.string == "Disk")
    }

    @Test(arguments: [
        (#"{"request":"send"}"#, "needs an \"event\""),
        (#"{"request":"close"}"#, "needs a \"replace_key\""),
        (#"{"request":"wait"}"#, "needs \"for\""),
        (#"{"request":"send","event":{},"sinks":"desktop"}"#, "expected an array of sink names"),
        (#"{"request":"send","event":{},"id":1.5}"#, "\"id\": expected a whole number from 0 to 999999999999999, found the number 1.5 (column 35)"),
        (#"{"request":"send","event":{},"wait":"yes"}"#, "expected true or false"),
        (#"{"request":"status","extra":1}"#, "unknown key \"extra\""),
        (#"{"id":1}"#, "missing \"request\""),
        (#"{"request":"status""#, "not JSON"),
    ])
    func aBadRequestSaysWhatIsWrong(line: String, expected: String) {
        #expect {
            try parse(line)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func anEventRoundTripsThroughItsRequestForm() throws {
        var event = NotificationEvent(title: "Backup failed", body: "rsync 23")
        event.level = .error
        event.timeout = .after(.milliseconds(1500))
        event.tags = ["ops", "nightly"]
        event.replaceKey = "backup"
        event.actions = [NotificationAction(id: "retry", label: "Retry")]
        event.fields = ["DISK": "/dev/sda"]
        var request = DaemonProtocol.Request(kind: .send, id: 1)
        request.event = event.jsonValue
        let line = DaemonProtocol.encodeLine(request.jsonValue)
        let parsed = try DaemonProtocol.Request.parse(line.dropLast())
        let decoded = try NotificationEvent.decode(
            jsonLine: String(decoding: DaemonProtocol.encodeLine(try #require(parsed.event)).dropLast(), as: UTF8.self))
        #expect(decoded == event)
    }
}
