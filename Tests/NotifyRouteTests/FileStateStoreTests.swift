import Foundation
import NotifyRoute
import Testing

@Suite struct FileStateStoreTests {
    func directory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nr-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url.path
    }

    @Test func stateSurvivesAcrossStores() throws {
        let path = try directory()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try FileStateStore(directory: path).withState { state in
            state.handles["desk\u{1E}backup"] = .init(handle: SinkHandle("17"), lastUsed: now)
        }
        let handle = try FileStateStore(directory: path).withState { $0.handles["desk\u{1E}backup"]?.handle }
        #expect(handle == SinkHandle("17"))
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/state.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    /// A state file as written when the maps were keyed by strings (`sink` U+001E `key`)
    /// loads into ``RouterState/Key``s, and is written back with the same key texts.
    @Test func aFileInTheStringKeyedFormatLoads() throws {
        let path = try directory()
        let json = #"""
            {"dedup":{"out\u001eerror\u001fdb\u001fDisk full\u001f":{"firstSeen":1800000000,"lastSeen":1800000030,"count":3,\#
            "handle":{"value":"7"},"expires":1800000600},"k":{"firstSeen":1800000000,"lastSeen":1800000000,"count":1,"expires":1800000060}},\#
            "handles":{"desk\u001ebackup":{"handle":{"value":"17"},"lastUsed":1800000000}},\#
            "rates":{"route 1\u001eout":{"periodStart":1800000000,"sent":2,"held":1,"sources":{"db":1},"highest":"error"}},\#
            "quiet":{},"inhibitors":{"0\u001edb":{"rule":0,"signature":"db","expires":1800000600,"dedupKey":"x"}}}
            """#
        try Data(json.utf8).write(to: URL(fileURLWithPath: path + "/state.json"))
        let store = FileStateStore(directory: path)
        let state = try store.withState { $0 }
        let dedupKey = RouterState.Key(sink: "out", key: "error\u{1F}db\u{1F}Disk full\u{1F}")
        #expect(state.dedup[dedupKey]?.count == 3)
        #expect(state.dedup[dedupKey]?.handle == SinkHandle("7"))
        #expect(state.dedup["k"]?.count == 1)
        #expect(state.handles[RouterState.Key(sink: "desk", key: "backup")]?.handle == SinkHandle("17"))
        #expect(state.rates["route 1\u{1E}out"]?.held == 1)
        #expect(state.inhibitors["0\u{1E}db"]?.dedupKey == "x")
        #expect(!FileManager.default.fileExists(atPath: path + "/state.json.corrupt"))

        // Written back (a change makes the store write): the same key texts.
        try store.withState { $0.handles[RouterState.Key(sink: "desk", key: "other")] = .init(handle: SinkHandle("18"), lastUsed: Date()) }
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path + "/state.json"))) as? [String: Any]
        let dedup = written?["dedup"] as? [String: Any]
        let handles = written?["handles"] as? [String: Any]
        #expect(Set(dedup?.keys.map { $0 } ?? []) == ["out\u{1E}error\u{1F}db\u{1F}Disk full\u{1F}", "k"])
        #expect(Set(handles?.keys.map { $0 } ?? []) == ["desk\u{1E}backup", "desk\u{1E}other"])
        #expect(try FileStateStore(directory: path).withState { $0 } == (try store.withState { $0 }))
    }

    @Test func aCorruptFileIsSetAsideNotFatal() throws {
        let path = try directory()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path + "/state.json"))
        let count = try FileStateStore(directory: path).withState { $0.dedup.count }
        #expect(count == 0)
        #expect(FileManager.default.fileExists(atPath: path + "/state.json.corrupt"))
    }

    @Test func routersInTwoProcessesShareDedup() async throws {
        // Two routers on one file stand for two CLI calls.
        let path = try directory()
        let registry = try SinkRegistry([SinkPlugin(kind: "recording", summary: "") { _ in RecordingSink() }])
        let config = try RouterConfiguration.load(
            yaml: "defaults: { deadline: 60s }\nsinks: { out: { kind: recording } }\nroutes: [ { to: [out], dedup: { window: 1m } } ]\n", file: "t.yaml",
            registry: registry)
        let clock = ManualClock()
        func router() throws -> NotificationRouter {
            try NotificationRouter(configuration: config, registry: registry, store: FileStateStore(directory: path), clock: clock)
        }
        let first = try await router().send(NotificationEvent(title: "Disk full"))
        #expect(first.outcomes.first?.status.name == "delivered")
        let second = try await router().send(NotificationEvent(title: "Disk full"))
        guard case .suppressed(.duplicate(let count, _, let updated))? = second.outcomes.first?.status else {
            Issue.record("\(String(describing: second.outcomes.first?.status))")
            return
        }
        #expect(count == 2)
        #expect(updated)  // the recording sink can replace: asked to update the first one's count
        clock.advance(by: .seconds(61))
        #expect(try await router().send(NotificationEvent(title: "Disk full")).outcomes.first?.status.name == "delivered")
    }

    @Test func concurrentWritersLoseNothing() async throws {
        let path = try directory()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let store = FileStateStore(directory: path)
                    for _ in 0..<50 {
                        try store.withState { state in
                            var record = state.dedup["k"] ?? .init(firstSeen: Date(), lastSeen: Date(), count: 0, handle: nil, expires: Date())
                            record.count += 1
                            state.dedup["k"] = record
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try FileStateStore(directory: path).withState { $0.dedup["k"]?.count } == 400)
    }
}

@Suite struct StateDirectoryTests {
    func fresh() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("nr-dir-\(UUID().uuidString)").path
    }

    @Test func createdPrivate() throws {
        let path = fresh()
        try StateDirectory.prepare(path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }

    @Test func runtimeDirectoryFirst() throws {
        let runtime = fresh()
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        #expect(try StateDirectory.resolve(environment: ["XDG_RUNTIME_DIR": runtime]) == runtime + "/notify-route")
        let temporary = fresh()
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        #expect(try StateDirectory.resolve(environment: ["TMPDIR": temporary]) == "\(temporary)/notify-route-\(getuid())")
    }

    @Test func openToOthersIsRefused() throws {
        let path = fresh()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(path, 0o777)
        #expect(throws: StateDirectory.Refused.self) { try StateDirectory.prepare(path) }
    }

    @Test func aSymlinkIsRefused() throws {
        let target = fresh(), link = fresh()
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(throws: StateDirectory.Refused.self) { try StateDirectory.prepare(link) }
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give a directory to another user"))
    func ownedByAnotherUserIsRefused() throws {
        let path = fresh()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chown(path, 65534, 65534) == 0)
        do {
            try StateDirectory.prepare(path)
            Issue.record("a directory owned by uid 65534 was accepted")
        } catch {
            #expect(error.description.contains("belongs to uid 65534, not to you"))
        }
    }
}
