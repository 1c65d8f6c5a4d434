import NotifyRoute
import NotifyRouteService
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

    @Test func theOwnerIsAlwaysServedOthersOnlyWhenAllowed() {
        let policy = PeerPolicy(owner: 1000)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 1000, gid: 1000)) == nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 65534, gid: 65534))?.contains("uid 65534 may not send") == true)
        #expect(PeerPolicy(owner: 1000, uids: [65534]).refusal(for: PeerCredentials(pid: 1, uid: 65534, gid: 65534)) == nil)
        #expect(PeerPolicy(owner: 1000, groups: [44]).refusal(for: PeerCredentials(pid: 1, uid: 65534, gid: 44)) == nil)
    }

    @Test func serveAllowNamesUsersAndGroupsByNameOrId() throws {
        let yaml = "sinks:\n  r: { kind: recording }\nfallback: [r]\nserve:\n  allow: { uids: [root, 65534], groups: [0] }\n"
        let config = try RouterConfiguration.load(yaml: yaml, file: "serve.yaml", registry: Self.registry)
        #expect(config.serve == ServeSettings(allowedUIDs: [0, 65534], allowedGroups: [0]))
        let policy = PeerPolicy(owner: 1000, allowing: config.serve)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 65534, gid: 65534)) == nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 65533, gid: 0)) == nil, "a member of group 0")

        let unknown = "sinks:\n  r: { kind: recording }\nfallback: [r]\nserve:\n  allow:\n    uids: [no-such-user-here]\n"
        #expect {
            try RouterConfiguration.load(yaml: unknown, file: "serve.yaml", registry: Self.registry)
        } throws: { "\($0)".contains("serve.yaml:6:12: serve.allow.uids: no user \"no-such-user-here\" on this system") }
    }
}
