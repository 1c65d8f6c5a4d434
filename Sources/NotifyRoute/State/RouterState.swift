import Foundation
import Synchronization

/// What the router remembers between events: dedup windows with their counts, and the
/// handle each sink gave for each replace key. Codable so that a file-backed store can
/// keep it across `notify-route send` calls.
public struct RouterState: Codable, Hashable, Sendable {
    public struct DedupRecord: Codable, Hashable, Sendable {
        /// When the window opened (the first event that was shown).
        public var firstSeen: Date
        public var lastSeen: Date
        public var count: Int
        /// What the first event showed, so duplicates can update it in place.
        public var handle: SinkHandle?
        /// When the window closes; after that the record is only history.
        public var expires: Date

        public init(firstSeen: Date, lastSeen: Date, count: Int, handle: SinkHandle?, expires: Date) {
            self.firstSeen = firstSeen
            self.lastSeen = lastSeen
            self.count = count
            self.handle = handle
            self.expires = expires
        }
    }

    public struct HandleRecord: Codable, Hashable, Sendable {
        public var handle: SinkHandle
        public var lastUsed: Date

        public init(handle: SinkHandle, lastUsed: Date) {
            self.handle = handle
            self.lastUsed = lastUsed
        }
    }

    /// Keyed by sink name and dedup key.
    public var dedup: [String: DedupRecord] = [:]
    /// Keyed by sink name and replace key.
    public var handles: [String: HandleRecord] = [:]

    public init() {}

    static func key(sink: String, _ key: String) -> String { "\(sink)\u{1E}\(key)" }

    /// Forgets the oldest entries once a map holds more than `maxEntries`, down to 90%
    /// of it, so that eviction (a sort) runs once per many insertions, not on each.
    public mutating func evict(maxEntries: Int, now: Date? = nil) {
        if let now, dedup.count > maxEntries {
            dedup = dedup.filter { $0.value.expires > now }
        }
        let keep = max(1, maxEntries - maxEntries / 10)
        if dedup.count > maxEntries {
            let oldest = dedup.sorted { $0.value.lastSeen < $1.value.lastSeen }.prefix(dedup.count - keep)
            for (key, _) in oldest { dedup.removeValue(forKey: key) }
        }
        if handles.count > maxEntries {
            let oldest = handles.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(handles.count - keep)
            for (key, _) in oldest { handles.removeValue(forKey: key) }
        }
    }
}

/// Where a router keeps its ``RouterState``. The in-memory store serves one process;
/// a file-backed store (state shared between CLI calls) implements the same protocol
/// with a file lock around ``withState(_:)``.
public protocol RouterStateStore: Sendable {
    /// Runs `body` with exclusive access to the state and keeps what it changed.
    func withState<Result: Sendable>(_ body: (inout RouterState) throws -> Result) throws -> Result
}

/// State in memory, guarded by a mutex.
public final class InMemoryStateStore: RouterStateStore {
    private let state: Mutex<RouterState>

    public init(_ initial: RouterState = RouterState()) {
        state = Mutex(initial)
    }

    public func withState<Result: Sendable>(_ body: (inout RouterState) throws -> Result) throws -> Result {
        try state.withLock { state in try body(&state) }
    }

    public var snapshot: RouterState { state.withLock { $0 } }
}
