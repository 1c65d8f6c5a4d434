import NotifyRoute
import NotifyRouteClient
import NotifyRouteDaemon
import NotifyRouteTesting
import Testing

/// Who the daemon serves: its owner always, others only as `serve.allow` names them.
struct PeerPolicyTests {
    static let registry = try! SinkRegistry([SinkPlugin(kind: "recording", summary: "records deliveries", options: []) { _ in RecordingSink() }])

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
