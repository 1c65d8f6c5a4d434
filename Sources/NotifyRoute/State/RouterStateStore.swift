#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Where a router keeps what it remembers between events. ``InMemoryStateStore`` serves
/// one process (tests, library users who want no disk); ``SQLiteStateStore`` shares the
/// state between processes (the CLI's calls) in a database.
///
/// A router asks for one transaction per decision and one per settlement, and touches
/// only the records of the event at hand: a store can answer each in a time that does
/// not depend on how many records it holds.
public protocol RouterStateStore: Sendable {
    /// Runs `body` with exclusive access to the state, and keeps what it changed unless
    /// `discardingChanges` (a dry run) or it throws.
    func withState<Result: Sendable>(
        discardingChanges: Bool, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result

    /// ``withState(discardingChanges:_:)`` as part of `batch`, when given: what `body`
    /// changed is committed with the batch (``StateBatch``). The default ignores the batch,
    /// for a store that commits each transaction at once.
    func withState<Result: Sendable>(
        discardingChanges: Bool, in batch: StateBatch?, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result

    /// The whole state as the store holds it now (dedup windows, held events, inhibitions),
    /// for `status`; `nil` (the default) for a store that cannot list it.
    func stateSnapshot() -> RouterState?

    /// The directory the state lives in, for `status` to say; `nil` (the default) for a
    /// store that keeps it in this process only.
    var stateDirectory: String? { get }
}

extension RouterStateStore {
    public func stateSnapshot() -> RouterState? { nil }
    public var stateDirectory: String? { nil }

    public func withState<Result: Sendable>(
        discardingChanges: Bool, in batch: StateBatch?, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result {
        try withState(discardingChanges: discardingChanges, body)
    }

    /// ``withState(discardingChanges:_:)`` keeping what `body` changed.
    public func withState<Result: Sendable>(_ body: (any RouterStateTransaction) throws -> Result) throws -> Result {
        try withState(discardingChanges: false, body)
    }
}

/// The records of one transaction, looked up and changed one key at a time.
///
/// Methods do not throw: a store whose storage fails in the middle remembers the first
/// failure, ignores what follows, and throws it from ``RouterStateStore/withState(discardingChanges:_:)``
/// (undoing the transaction), so that a policy decision reads as plain code.
public protocol RouterStateTransaction: AnyObject {
    /// The dedup record of `key` after this event: a duplicate inside its window (counted,
    /// `lastSeen` now), or a new window of `window` seconds from now. A new window past
    /// `maxEntries` evicts: closed windows first, then the least recently seen.
    func recordDedup(forKey key: RouterState.Key, now: Date, window: Double, maxEntries: Int)
        -> (record: RouterState.DedupRecord, isDuplicate: Bool)
    /// The handle shown for the window of `key`, if it has one.
    func setDedupHandle(_ handle: SinkHandle, forKey key: RouterState.Key)
    func removeDedup(forKey key: RouterState.Key)

    func handle(forKey key: RouterState.Key) -> RouterState.HandleRecord?
    func storeHandle(_ record: RouterState.HandleRecord, forKey key: RouterState.Key)
    func removeHandle(forKey key: RouterState.Key)
    /// Forgets the least recently used handles once there are more than `maxEntries`.
    func evictHandles(maxEntries: Int)
    /// The replace key whose handle on `sink` is `handle` (for interactions: a few a minute).
    func replaceKey(sink: String, handle: SinkHandle) -> String?

    /// Events held back by a rate limit or quiet hours, by route and sink.
    func held(_ kind: RouterState.HeldKind, key: String) -> RouterState.HeldRecord?
    /// Stores `record` (or removes the key, for `nil`).
    func storeHeld(_ record: RouterState.HeldRecord?, _ kind: RouterState.HeldKind, key: String)
    /// Whether quiet hours hold anything on any route (most routers have none).
    var holdsQuietEvents: Bool { get }

    func inhibitor(forKey key: String) -> RouterState.InhibitorRecord?
    /// Stores `record` (or removes the key, for `nil`).
    func storeInhibitor(_ record: RouterState.InhibitorRecord?, forKey key: String)
    /// A closed notification no longer inhibits anything.
    func removeInhibitors(replaceKey: String)

    /// An open group of a route's `group` policy, by route, sink and `by` values.
    func group(forKey key: String) -> RouterState.GroupRecord?
    /// Stores `record` (or removes the key, for `nil`: the group closed).
    func storeGroup(_ record: RouterState.GroupRecord?, forKey key: String)
    /// The groups whose notification is due at `date` or before, earliest first.
    func groups(dueBy date: Date) -> [(key: String, record: RouterState.GroupRecord)]
    /// When the next group is due (`nil`: none is open).
    func nextGroupDue() -> Date?
}

/// State in memory, guarded by a mutex.
public final class InMemoryStateStore: RouterStateStore {
    private let state: Mutex<Transaction>
    /// Escalations and snoozes (``PendingTimer``), which ``SQLiteStateStore`` keeps in its database.
    let timers = InMemoryTimerTable()

    public init(_ initial: RouterState = RouterState()) {
        state = Mutex(Transaction(initial))
    }

    public func withState<Result: Sendable>(
        discardingChanges: Bool, _ body: (any RouterStateTransaction) throws -> Result
    ) throws -> Result {
        try state.withLock { transaction in
            // A dry run works on a copy (copied only where it writes).
            try body(discardingChanges ? Transaction(transaction.state) : transaction)
        }
    }

    public var snapshot: RouterState { state.withLock { $0.state } }
    public func stateSnapshot() -> RouterState? { snapshot }

    /// The state itself, changed in place: the mutex is the transaction.
    final class Transaction: RouterStateTransaction {
        var state: RouterState

        init(_ state: RouterState) { self.state = state }

        func recordDedup(forKey key: RouterState.Key, now: Date, window: Double, maxEntries: Int)
            -> (record: RouterState.DedupRecord, isDuplicate: Bool) {
            state.reserveDedupCapacity(maxEntries: maxEntries)
            let result = state.recordDedup(forKey: key, now: now, window: window)
            // Windows that have closed go first; then, if still over the bound, the oldest.
            if !result.isDuplicate && state.dedup.count > maxEntries { state.evict(maxEntries: maxEntries, now: now) }
            return result
        }

        func setDedupHandle(_ handle: SinkHandle, forKey key: RouterState.Key) { state.setDedupHandle(handle, forKey: key) }
        func removeDedup(forKey key: RouterState.Key) { state.removeDedup(forKey: key) }
        func handle(forKey key: RouterState.Key) -> RouterState.HandleRecord? { state.handles[key] }
        func storeHandle(_ record: RouterState.HandleRecord, forKey key: RouterState.Key) { state.storeHandle(record, forKey: key) }
        func removeHandle(forKey key: RouterState.Key) { state.removeHandle(forKey: key) }

        func evictHandles(maxEntries: Int) {
            if state.handles.count > maxEntries { state.evict(maxEntries: maxEntries) }
        }

        func replaceKey(sink: String, handle: SinkHandle) -> String? {
            state.handles.first { $0.key.sink == sink && $0.value.handle == handle }?.key.key
        }

        func held(_ kind: RouterState.HeldKind, key: String) -> RouterState.HeldRecord? {
            kind == .rate ? state.rates[key] : state.quiet[key]
        }

        func storeHeld(_ record: RouterState.HeldRecord?, _ kind: RouterState.HeldKind, key: String) {
            if kind == .rate { state.rates[key] = record } else { state.quiet[key] = record }
        }

        var holdsQuietEvents: Bool { !state.quiet.isEmpty }

        func inhibitor(forKey key: String) -> RouterState.InhibitorRecord? { state.inhibitors[key] }
        func storeInhibitor(_ record: RouterState.InhibitorRecord?, forKey key: String) { state.inhibitors[key] = record }

        func removeInhibitors(replaceKey: String) {
            state.inhibitors = state.inhibitors.filter { $0.value.replaceKey != replaceKey }
        }

        func group(forKey key: String) -> RouterState.GroupRecord? { state.groups[key] }
        func storeGroup(_ record: RouterState.GroupRecord?, forKey key: String) { state.groups[key] = record }

        func groups(dueBy date: Date) -> [(key: String, record: RouterState.GroupRecord)] {
            state.groups.filter { $0.value.due <= date }.map { (key: $0.key, record: $0.value) }.sorted { $0.record.due < $1.record.due }
        }

        func nextGroupDue() -> Date? { state.groups.values.map(\.due).min() }
    }
}
