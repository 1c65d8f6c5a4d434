import Foundation
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteTestSupport
import Synchronization
import Testing

/// The state database: what it keeps across stores (processes), what it does with files
/// that are not a database of ours, and the state file of earlier versions.
@Suite struct SQLiteStateStoreTests {
    func directory() throws -> String {
        try TestEnvironment.temporaryDirectory("nr-state", permissions: 0o700).path
    }

    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Notices, as the CLI would print them.
    final class Notices: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func add(_ line: String) { lines.withLock { $0.append(line) } }
    }

    func store(_ path: String, notices: Notices? = nil, maximumBytes: Int = 4 << 30) -> SQLiteStateStore {
        SQLiteStateStore(directory: path, maximumBytes: maximumBytes, notice: { notices?.add($0) })
    }

    /// One dedup window of `key` on sink `out`, recorded as the router does.
    @discardableResult
    func record(_ store: SQLiteStateStore, _ key: String, at seconds: Double = 0, window: Double = 60, maxEntries: Int = 10_000,
                in batch: StateBatch? = nil) throws -> Int {
        try store.withState(discardingChanges: false, in: batch) { $0.recordDedup(forKey: RouterState.Key(sink: "out", key: key), now: now.addingTimeInterval(seconds),
                                             window: window, maxEntries: maxEntries).record.count }
    }

    @Test func stateSurvivesAcrossStores() throws {
        let path = try directory()
        try store(path).withState { $0.storeHandle(.init(handle: SinkHandle("17"), lastUsed: now), forKey: RouterState.Key(sink: "desk", key: "backup")) }
        let handle = try store(path).withState { $0.handle(forKey: RouterState.Key(sink: "desk", key: "backup"))?.handle }
        #expect(handle == SinkHandle("17"))
        #expect(try store(path).withState { $0.replaceKey(sink: "desk", handle: SinkHandle("17")) } == "backup")
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/state.db")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func aDuplicateCountsInsideItsWindowAndANewWindowOpensAfter() throws {
        let path = try directory()
        let first = store(path), second = store(path)
        #expect(try record(first, "k", at: 0) == 1)
        #expect(try record(second, "k", at: 10) == 2)
        #expect(try record(first, "k", at: 59) == 3)
        #expect(try record(second, "k", at: 61) == 1, "the window of 60 s opened at 0 has closed")
    }

    @Test func aDryRunChangesNothingAndAFailedBodyIsUndone() throws {
        let path = try directory()
        let store = store(path)
        try record(store, "k")
        try store.withState(discardingChanges: true) { _ = $0.recordDedup(forKey: RouterState.Key(sink: "out", key: "k"), now: now, window: 60, maxEntries: 10) }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.withState { state in
                _ = state.recordDedup(forKey: RouterState.Key(sink: "out", key: "k"), now: now, window: 60, maxEntries: 10)
                throw Stop()
            }
        }
        #expect(try store.snapshot().dedup[RouterState.Key(sink: "out", key: "k")]?.count == 1)
    }

    /// `ingest`'s batch: the events' transactions are savepoints in one transaction that
    /// others do not see until it is committed, and what was published runs only after.
    @Test func aBatchCommitsItsEventsTogetherAndPublishesAfterTheCommit() async throws {
        let path = try directory()
        let writer = store(path), reader = store(path)
        let batch = StateBatch(maximumAge: .seconds(3_600))
        let published = Mutex<[String]>([])
        struct Stop: Error {}
        try record(writer, "a", in: batch)
        batch.publish { published.withLock { $0.append("a") } }
        #expect(throws: Stop.self) {
            try writer.withState(discardingChanges: false, in: batch) { state in
                _ = state.recordDedup(forKey: RouterState.Key(sink: "out", key: "failed"), now: now, window: 60, maxEntries: 10)
                throw Stop()
            }
        }
        try writer.withState(discardingChanges: true, in: batch) {
            _ = $0.recordDedup(forKey: RouterState.Key(sink: "out", key: "dry"), now: now, window: 60, maxEntries: 10)
        }
        try record(writer, "b", in: batch)
        batch.publish { published.withLock { $0.append("b") } }
        #expect(try reader.snapshot().dedup.isEmpty, "nothing is committed before the batch")
        #expect(published.withLock { $0 }.isEmpty, "nothing is published before its state is committed")
        batch.commit()
        #expect(published.withLock { $0 } == ["a", "b"])
        let keys = try reader.snapshot().dedup.keys.map(\.key).sorted()
        #expect(keys == ["a", "b"], "the failed body and the dry run were undone alone")
        #expect(try record(writer, "c") == 1, "outside the batch a call commits alone")
        #expect(try reader.snapshot().dedup.count == 3)
    }

    /// The daemon starts a new batch as soon as the last request of the one before ends,
    /// before that one's commit: a request of the new batch may then write into the
    /// transaction the old one opened. Whichever batch commits first must commit it, or the
    /// new request's answer would be published before what it changed is in the store.
    @Test func aSecondBatchThatWroteInTheOpenTransactionCommitsIt() throws {
        let path = try directory()
        let writer = store(path), reader = store(path)
        let first = StateBatch(maximumAge: .seconds(3_600)), second = StateBatch(maximumAge: .seconds(3_600))
        let published = Mutex<[String]>([])
        try record(writer, "a", in: first)
        try record(writer, "b", in: second)
        second.publish { published.withLock { $0.append("b") } }
        second.commit()
        #expect(published.withLock { $0 } == ["b"])
        let keys = try reader.snapshot().dedup.keys.map(\.key).sorted()
        #expect(keys == ["a", "b"], "the second batch's commit left its change uncommitted")
        first.publish { published.withLock { $0.append("a") } }
        first.commit()
        #expect(published.withLock { $0 } == ["b", "a"])
        #expect(try record(reader, "c") == 1, "the write lock is free again")
    }

    /// A batch nobody commits is committed by its timer: the write lock is not held for
    /// longer than the batch's age, and its publications still run.
    @Test func aBatchIsCommittedWithinItsMaximumAge() async throws {
        let path = try directory()
        let writer = store(path), other = store(path)
        let batch = StateBatch(maximumAge: .milliseconds(50))
        let published = Mutex(false)
        try record(writer, "a", in: batch)
        batch.publish { published.withLock { $0 = true } }
        let deadline = ContinuousClock.now + .seconds(10)
        while !published.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(published.withLock { $0 })
        #expect(try other.snapshot().dedup.count == 1)
        #expect(try record(other, "a", at: 1) == 2, "the lock is free again")
    }

    /// The daemon's requests share a batch: one that ends just after another committed it
    /// publishes into the next round, when nothing else holds the batch any more. Its timer
    /// must keep the batch and commit that round (its answer waits for it).
    @Test func whatIsPublishedAfterEveryHolderLetGoIsStillCommitted() async throws {
        let path = try directory()
        let writer = store(path), other = store(path)
        let published = Mutex(false)
        do {
            let batch = StateBatch(maximumAge: .milliseconds(50))
            try record(writer, "a", in: batch)
            batch.commit()
            try record(writer, "b", in: batch)
            batch.publish { published.withLock { $0 = true } }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !published.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(published.withLock { $0 })
        #expect(try other.snapshot().dedup.count == 2)
    }

    /// A state file as earlier versions wrote it (maps keyed by `sink` U+001E `key`) is
    /// imported once and renamed; what writers killed mid-write left is removed.
    @Test func aStateFileOfEarlierVersionsIsImportedOnce() throws {
        let path = try directory()
        let json = #"""
            {"dedup":{"out\u001eerror\u001fdb\u001fDisk full\u001f":{"firstSeen":1800000000,"lastSeen":1800000030,"count":3,\#
            "handle":{"value":"7"},"expires":1800000600},"k":{"firstSeen":1800000000,"lastSeen":1800000000,"count":1,"expires":1800000060}},\#
            "handles":{"desk\u001ebackup":{"handle":{"value":"17"},"lastUsed":1800000000}},\#
            "rates":{"route 1\u001eout":{"periodStart":1800000000,"sent":2,"held":1,"sources":{"db":1},"highest":"error"}},\#
            "quiet":{},"inhibitors":{"0\u001edb":{"rule":0,"signature":"db","expires":1800000600,"dedupKey":"x"}}}
            """#
        try Data(json.utf8).write(to: URL(fileURLWithPath: path + "/state.json"))
        try Data("{".utf8).write(to: URL(fileURLWithPath: path + "/state.json.4242.tmp"))
        try Data().write(to: URL(fileURLWithPath: path + "/state.lock"))
        let notices = Notices()
        let state = try store(path, notices: notices).snapshot()
        let dedupKey = RouterState.Key(sink: "out", key: "error\u{1F}db\u{1F}Disk full\u{1F}")
        #expect(state.dedup[dedupKey]?.count == 3)
        #expect(state.dedup[dedupKey]?.handle == SinkHandle("7"))
        #expect(state.dedup["k"]?.count == 1)
        #expect(state.handles[RouterState.Key(sink: "desk", key: "backup")]?.handle == SinkHandle("17"))
        #expect(state.rates["route 1\u{1E}out"]?.held == 1)
        #expect(state.rates["route 1\u{1E}out"]?.sources == ["db": 1])
        #expect(state.rates["route 1\u{1E}out"]?.highest == .error)
        #expect(state.inhibitors["0\u{1E}db"]?.dedupKey == "x")
        #expect(!FileManager.default.fileExists(atPath: path + "/state.json"))
        #expect(FileManager.default.fileExists(atPath: path + "/state.json.imported"))
        #expect(!FileManager.default.fileExists(atPath: path + "/state.json.4242.tmp"))
        #expect(!FileManager.default.fileExists(atPath: path + "/state.lock"))
        #expect(notices.all.count == 1 && notices.all[0].contains("imported 2 dedup windows and 1 replace handles"), "\(notices.all)")

        // Once: a state file that turns up later is not read again.
        try Data(json.utf8).write(to: URL(fileURLWithPath: path + "/state.json"))
        try record(store(path), "k", at: 0)
        #expect(try store(path).snapshot().dedup.count == 3, "the two imported, and the one recorded since")
        #expect(FileManager.default.fileExists(atPath: path + "/state.json"))
    }

    @Test func aStateFileOfEarlierVersionsThatIsNotOneIsSetAside() throws {
        let path = try directory()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path + "/state.json"))
        let notices = Notices()
        #expect(try store(path, notices: notices).snapshot().dedup.isEmpty)
        #expect(FileManager.default.fileExists(atPath: path + "/state.json.corrupt"))
        #expect(notices.all.first?.contains("state.json is not a state file; set aside as \(path)/state.json.corrupt") == true, "\(notices.all)")
    }

    @Test func aFIFOInPlaceOfTheStateFileOfEarlierVersionsIsSetAsideNotRead() throws {
        let path = try directory()
        #expect(mkfifo(path + "/state.json", 0o600) == 0)
        let notices = Notices()
        #expect(try store(path, notices: notices).snapshot().dedup.isEmpty)
        #expect(notices.all.first?.contains("state.json is a FIFO, not a regular file; set aside") == true, "\(notices.all)")
    }

    // MARK: Files that are not a database of ours

    /// Each kind of file in place of `state.db`: set aside with the reason, a fresh
    /// database in its place, at once (a FIFO must not block the open).
    @Test(arguments: ["garbage", "fifo", "symlink", "huge", "directory"])
    func whatIsNotADatabaseOfOursIsSetAsideWithAReason(kind: String) throws {
        let path = try directory()
        let database = path + "/state.db"
        let elsewhere = try directory() + "/target"
        switch kind {
        case "garbage": try Data(repeating: 0x5A, count: 10_000).write(to: URL(fileURLWithPath: database))
        case "fifo": #expect(mkfifo(database, 0o600) == 0)
        case "symlink":
            try Data("theirs".utf8).write(to: URL(fileURLWithPath: elsewhere))
            try FileManager.default.createSymbolicLink(atPath: database, withDestinationPath: elsewhere)
        case "huge":
            let fd = open(database, O_WRONLY | O_CREAT, 0o600)
            #expect(ftruncate(fd, 3 << 20) == 0)  // sparse: 3 MiB of nothing, over the 2 MiB limit below
            close(fd)
        default: try FileManager.default.createDirectory(atPath: database, withIntermediateDirectories: false)
        }
        let notices = Notices()
        let started = ContinuousClock.now
        #expect(try record(store(path, notices: notices, maximumBytes: 2 << 20), "k") == 1)
        #expect(ContinuousClock.now - started < .seconds(2))
        let expected = [
            "garbage": "file is not a database", "fifo": "is a FIFO, not a regular file", "symlink": "is a symbolic link",
            "huge": "is 3145728 bytes, more than the limit of 2097152", "directory": "is a directory",
        ][kind]!
        #expect(notices.all.count == 1 && notices.all[0].contains(expected), "\(notices.all)")
        let aside = kind == "garbage" ? "state.db.corrupt" : "state.db.unusable"
        #expect(notices.all.first?.contains("set aside as \(path)/\(aside)") == true, "\(notices.all)")
        #expect(try record(store(path), "k", at: 1) == 2, "the fresh database keeps state")
        if kind == "symlink" {
            #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == "theirs", "the link's target is left alone")
        }
    }

    /// A database cut short (a copy that stopped, a disk that lost its tail): the call that
    /// finds the damage goes on without state and says so; the file is set aside and the
    /// next call starts afresh.
    @Test func aTruncatedDatabaseIsSetAsideAndTheNextCallStartsAfresh() throws {
        let path = try directory()
        do {
            let store = store(path)
            for index in 0..<3_000 { try record(store, "key \(index) " + String(repeating: "x", count: 100)) }
        }
        var info = stat()
        #expect(stat(path + "/state.db", &info) == 0)
        #expect(truncate(path + "/state.db", off_t(info.st_size / 2)) == 0)
        let notices = Notices()
        let store = store(path, notices: notices)
        var failures: [String] = []
        for index in 0..<3_000 {
            do { try record(store, "key \(index) " + String(repeating: "x", count: 100), at: 1) } catch { failures.append("\(error)") }
        }
        let said = (notices.all + failures).joined(separator: "\n")
        #expect(said.contains("malformed") && said.contains("set aside as \(path)/state.db.corrupt"), "\(said.prefix(500))")
        #expect(failures.count <= 1, "only the call that found the damage goes without state")
        #expect(try record(store, "after", at: 2) == 1)
        #expect(try record(store, "after", at: 3) == 2)
    }

    @Test(.enabled(if: TestEnvironment.runsAsRoot, "needs root to give a file to another user"))
    func aDatabaseOwnedByAnotherUserIsSetAside() throws {
        let path = try directory()
        try record(store(path), "k")
        #expect(chown(path + "/state.db", 65534, 65534) == 0)
        let notices = Notices()
        #expect(try record(store(path, notices: notices), "k", at: 1) == 1)
        #expect(notices.all.first?.contains("state.db belongs to uid 65534, not to you") == true, "\(notices.all)")
    }

    @Test func aDatabaseOfANewerVersionIsRefusedNotChanged() throws {
        let path = try directory()
        try record(store(path), "k")
        #expect(try sqlite(path, "PRAGMA user_version = 99") == "")
        #expect(throws: SQLiteStateStore.Failure.self) { try record(store(path), "k") }
        #expect(try sqlite(path, "SELECT count FROM dedup") == "1")
    }

    // MARK: Eviction and concurrency

    /// Eviction deletes through an index, never by a scan of the table.
    @Test func evictionGoesThroughAnIndex() throws {
        let path = try directory()
        try record(store(path), "k")
        let expired = try sqlite(path, "EXPLAIN QUERY PLAN DELETE FROM dedup WHERE id IN (SELECT id FROM dedup WHERE expires <= 0 ORDER BY expires LIMIT 5)")
        #expect(expired.contains("USING COVERING INDEX dedup_by_expiry"), "\(expired)")
        let oldest = try sqlite(path, "EXPLAIN QUERY PLAN DELETE FROM dedup WHERE id IN (SELECT id FROM dedup ORDER BY last_seen, id LIMIT 5)")
        #expect(oldest.contains("USING COVERING INDEX dedup_by_last_seen") && !oldest.contains("TEMP B-TREE"), "\(oldest)")
    }

    /// The row counts that bound the tables are kept by the statements that insert and
    /// delete: after new windows, duplicates, a window reopened, evictions, removals and
    /// replaced handles, each count is the table's own, and a database of schema 4 (kept by
    /// triggers) gets its counts again from its rows when it migrates.
    @Test func theRowCountsFollowEveryInsertAndDelete() throws {
        let path = try directory()
        let state = store(path)
        for index in 0..<30 { try record(state, "k\(index)", at: Double(index), window: 10, maxEntries: 20) }
        try record(state, "k29", at: 30, window: 10, maxEntries: 20)  // a duplicate
        try record(state, "k29", at: 60, window: 10, maxEntries: 20)  // its window reopened
        try state.withState { transaction in
            transaction.removeDedup(forKey: RouterState.Key(sink: "out", key: "k29"))
            transaction.removeDedup(forKey: RouterState.Key(sink: "out", key: "absent"))
            for index in 0..<12 {
                transaction.storeHandle(.init(handle: SinkHandle("\(index)"), lastUsed: now.addingTimeInterval(Double(index))),
                                        forKey: RouterState.Key(sink: "desk", key: "r\(index % 8)"))
            }
            transaction.removeHandle(forKey: RouterState.Key(sink: "desk", key: "r0"))
            transaction.evictHandles(maxEntries: 5)
        }
        let counts = try sqlite(path, "SELECT (SELECT n FROM counts WHERE name = 'dedup') || ' ' || (SELECT count(*) FROM dedup) || ' ' || (SELECT n FROM counts WHERE name = 'handles') || ' ' || (SELECT count(*) FROM handles)")
        let numbers = counts.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(numbers.count == 4 && numbers[0] == numbers[1] && numbers[2] == numbers[3], "\(counts)")
        #expect(numbers.count == 4 && numbers[1] <= 20 && numbers[1] > 0 && numbers[3] <= 5 && numbers[3] > 0, "\(counts)")
        #expect(try sqlite(path, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").hasPrefix("0"))

        // Schema 4 with a count gone wrong: migrating sets it from the rows.
        _ = try sqlite(path, "UPDATE counts SET n = 999; PRAGMA user_version = 4")
        try record(store(path), "after", at: 100, window: 10, maxEntries: 1_000)
        let migrated = try sqlite(path, "SELECT (SELECT n FROM counts WHERE name = 'dedup') = (SELECT count(*) FROM dedup)")
        #expect(migrated.hasPrefix("1"), "\(migrated)")
    }

    @Test func concurrentWritersLoseNothing() async throws {
        let path = try directory()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let store = store(path)
                    for _ in 0..<50 { try record(store, "k", window: 3600) }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store(path).snapshot().dedup[RouterState.Key(sink: "out", key: "k")]?.count == 400)
    }

    @Test func routersInTwoProcessesShareDedup() async throws {
        // Two routers on one database stand for two CLI calls.
        let path = try directory()
        let registry = try SinkRegistry([SinkPlugin(kind: "recording", summary: "") { _ in RecordingSink() }])
        let config = try RouterConfiguration.load(
            yaml: "defaults: { deadline: 60s }\nsinks: { out: { kind: recording } }\nroutes: [ { to: [out], dedup: { window: 1m } } ]\n", file: "t.yaml",
            registry: registry)
        let clock = ManualClock()
        func router() throws -> NotificationRouter {
            try NotificationRouter(configuration: config, registry: registry, store: store(path), clock: clock)
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

    /// The `sqlite3` shell's answer to `sql` on the state database.
    func sqlite(_ path: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path + "/state.db", sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@Suite struct StateDirectoryTests {
    /// A path where nothing is yet: the tests make the directory.
    func fresh() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nr-dir-\(UUID().uuidString)").path
        TestEnvironment.removeAtExit(path)
        return path
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
        // Without one: in the history's directory, never a name in the temporary directory.
        let stateHome = fresh()
        #expect(try StateDirectory.resolve(environment: ["XDG_STATE_HOME": stateHome]) == stateHome + "/notify-route/runtime")
        let home = fresh()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        #expect(try StateDirectory.resolve(environment: ["HOME": home, "XDG_RUNTIME_DIR": ""]) == home + "/.local/state/notify-route/runtime")
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

    @Test(.enabled(if: TestEnvironment.runsAsRoot, "needs root to give a directory to another user"))
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

    // MARK: The state directory under attack

    /// A world-writable runtime directory that is not sticky lets anyone replace
    /// `notify-route` in it: a warning, and the private directory in the state home instead.
    /// A sticky one (as /tmp) protects what is ours in it, and is used.
    @Test func aWorldWritableRuntimeDirectoryThatIsNotStickyIsPassedOverWithAWarning() throws {
        let runtime = fresh(), temporary = fresh()
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        chmod(runtime, 0o777)
        var warnings: [String] = []
        let chosen = try StateDirectory.resolve(environment: ["XDG_RUNTIME_DIR": runtime, "XDG_STATE_HOME": temporary]) { warnings.append($0) }
        #expect(chosen == "\(temporary)/notify-route/runtime")
        #expect(warnings == ["XDG_RUNTIME_DIR \(runtime) is not safe for the state (\(runtime) is writable by others and not sticky (mode 777)); using \(temporary)/notify-route/runtime instead"])
        #expect(!FileManager.default.fileExists(atPath: runtime + "/notify-route"))

        chmod(runtime, 0o1777)
        warnings = []
        #expect(try StateDirectory.resolve(environment: ["XDG_RUNTIME_DIR": runtime, "XDG_STATE_HOME": temporary]) { warnings.append($0) } == runtime + "/notify-route")
        #expect(warnings.isEmpty)
    }

    /// Root with another user's runtime directory (`sudo -E`): that user could swap root's
    /// state directory for a link into theirs. Root's state goes to its own directory.
    @Test(.enabled(if: TestEnvironment.runsAsRoot, "needs root to give a directory to another user"))
    func anotherUsersRuntimeDirectoryIsPassedOver() throws {
        let runtime = fresh(), temporary = fresh()
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        #expect(chown(runtime, 65534, 65534) == 0)
        var warnings: [String] = []
        #expect(try StateDirectory.resolve(environment: ["XDG_RUNTIME_DIR": runtime, "XDG_STATE_HOME": temporary]) { warnings.append($0) }
            == "\(temporary)/notify-route/runtime")
        #expect(warnings.first?.contains("\(runtime) belongs to uid 65534") == true, "\(warnings)")
    }

    /// The state directory swapped for a symbolic link to someone else's directory after
    /// it was checked: the store opens the directory again without following links and
    /// checks what it opened, so it refuses, and nothing is created or renamed there.
    @Test func aStateDirectorySwappedForALinkAfterTheCheckIsRefused() throws {
        let runtime = fresh(), theirs = fresh()
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data("not yours".utf8).write(to: URL(fileURLWithPath: theirs + "/state.db"))
        let path = try StateDirectory.resolve(environment: ["XDG_RUNTIME_DIR": runtime])
        let store = SQLiteStateStore(directory: path)
        try FileManager.default.moveItem(atPath: path, toPath: path + ".moved")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: theirs)
        do {
            _ = try store.withState { $0.handle(forKey: "k") }
            Issue.record("a state directory that is a symbolic link was used")
        } catch {
            #expect("\(error)".contains("is not a directory (a symbolic link or a file is refused)"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: theirs) == ["state.db"])
        #expect(try String(contentsOfFile: theirs + "/state.db", encoding: .utf8) == "not yours")
    }
}

