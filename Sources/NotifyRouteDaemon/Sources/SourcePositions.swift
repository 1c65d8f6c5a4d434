import NotifyRoute
import Synchronization

/// Where each source stopped reading and which units it reported failed: in the state
/// database when the daemon has one (so a restart goes on where it stopped), else in memory.
package final class SourcePositions: Sendable {
    private let store: (any SourcePositionStore)?
    private let memory = Mutex<(cursors: [String: String], failed: [String: Set<String>])>(([:], [:]))

    package init(store: (any SourcePositionStore)?) {
        self.store = store
    }

    package func cursor(_ source: String) throws -> String? {
        if let store { return try store.sourceCursor(source) }
        return memory.withLock { $0.cursors[source] }
    }

    package func save(cursor: String, for source: String) throws {
        if let store { return try store.saveSourceCursor(cursor, for: source) }
        memory.withLock { $0.cursors[source] = cursor }
    }

    package func failedUnits(_ source: String) throws -> Set<String> {
        if let store { return try store.failedUnits(source) }
        return memory.withLock { $0.failed[source] ?? [] }
    }

    package func setUnit(_ unit: String, failed: Bool, source: String) throws {
        if let store { return try store.setUnit(unit, failed: failed, source: source) }
        memory.withLock { state in
            if failed { state.failed[source, default: []].insert(unit) } else { state.failed[source]?.remove(unit) }
        }
    }
}
