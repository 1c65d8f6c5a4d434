#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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

    /// Events held back by a rate limit or quiet hours, to be summarised later.
    public struct HeldRecord: Codable, Hashable, Sendable {
        /// When the current rate period began (rate limits only).
        public var periodStart: Date
        /// Events let through in the current period (rate limits only).
        public var sent: Int
        public var held: Int
        /// Held events by source (or app), for the summary.
        public var sources: [String: Int]
        public var highest: Level

        public init(periodStart: Date, sent: Int = 0, held: Int = 0, sources: [String: Int] = [:], highest: Level = .debug) {
            self.periodStart = periodStart
            self.sent = sent
            self.held = held
            self.sources = sources
            self.highest = highest
        }

        mutating func hold(_ event: ResolvedEvent) {
            held += 1
            sources[event.source ?? event.app, default: 0] += 1
            if event.level > highest { highest = event.level }
        }
    }

    /// A source event of an inhibition rule that is still active.
    public struct InhibitorRecord: Codable, Hashable, Sendable {
        public var rule: Int
        public var signature: String
        public var expires: Date
        public var replaceKey: String?
        public var dedupKey: String
    }

    /// Keyed by sink name and dedup key.
    public var dedup: [String: DedupRecord] = [:]
    /// Keyed by sink name and replace key.
    public var handles: [String: HandleRecord] = [:]
    /// Rate-limit periods, keyed by route and sink.
    public var rates: [String: HeldRecord] = [:]
    /// Events held in quiet hours, keyed by route and sink.
    public var quiet: [String: HeldRecord] = [:]
    /// Active inhibiting events, keyed by rule and signature.
    public var inhibitors: [String: InhibitorRecord] = [:]

    public init() {}

    private enum CodingKeys: String, CodingKey { case dedup, handles, rates, quiet, inhibitors }

    /// Tolerates state files written before a map existed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        dedup = try container.decodeIfPresent([String: DedupRecord].self, forKey: .dedup) ?? [:]
        handles = try container.decodeIfPresent([String: HandleRecord].self, forKey: .handles) ?? [:]
        rates = try container.decodeIfPresent([String: HeldRecord].self, forKey: .rates) ?? [:]
        quiet = try container.decodeIfPresent([String: HeldRecord].self, forKey: .quiet) ?? [:]
        inhibitors = try container.decodeIfPresent([String: InhibitorRecord].self, forKey: .inhibitors) ?? [:]
    }

    /// `sink` and `key` joined by a record separator; concatenation, not interpolation:
    /// this runs for every event and sink.
    static func key(sink: String, _ key: String) -> String {
        var joined = sink
        joined.reserveCapacity(sink.utf8.count + 1 + key.utf8.count)
        joined += "\u{1E}"
        joined += key
        return joined
    }

    /// Forgets the oldest entries once a map holds more than `maxEntries`, down to 90%
    /// of it, so that eviction runs once per many insertions, not on each. The cut-off
    /// instant is found by selection (linear on average), not by sorting the map: the
    /// sort of 10,000 keyed records was 15% of the routing benchmark.
    public mutating func evict(maxEntries: Int, now: Date? = nil) {
        if let now, dedup.count > maxEntries, dedup.values.contains(where: { $0.expires <= now }) {
            dedup = dedup.filter { $0.value.expires > now }
        }
        let keep = max(1, maxEntries - maxEntries / 10)
        if dedup.count > maxEntries {
            Self.dropOldest(&dedup, keeping: keep) { $0.lastSeen }
        }
        if handles.count > maxEntries {
            Self.dropOldest(&handles, keeping: keep) { $0.lastUsed }
        }
    }

    /// Removes all but the `keep` newest values of `map` by `stamp`; of values stamped
    /// exactly at the cut-off, only as many as needed go. Removes in place: rebuilding
    /// the map would copy every key that stays.
    private static func dropOldest<Value>(_ map: inout [String: Value], keeping keep: Int, stamp: (Value) -> Date) {
        let surplus = map.count - keep
        guard surplus > 0 else { return }
        var stamps = map.values.map { stamp($0).timeIntervalSinceReferenceDate }
        let cutoff = select(&stamps, rank: surplus - 1)  // the newest of the values to drop
        var atCutoff = surplus - stamps.reduce(0) { $0 + ($1 < cutoff ? 1 : 0) }
        var doomed: [String] = []
        doomed.reserveCapacity(surplus)
        for (key, value) in map {
            let time = stamp(value).timeIntervalSinceReferenceDate
            if time < cutoff {
                doomed.append(key)
            } else if time == cutoff && atCutoff > 0 {
                atCutoff -= 1
                doomed.append(key)
            }
        }
        for key in doomed { map.removeValue(forKey: key) }
    }

    /// The value of rank `rank` (0 = smallest) in `values`, by quickselect; reorders `values`.
    private static func select(_ values: inout [Double], rank: Int) -> Double {
        var low = 0, high = values.count - 1
        while low < high {
            let pivot = values[low + (high - low) / 2]
            var i = low, j = high
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j { values.swapAt(i, j); i += 1; j -= 1 }
            }
            if rank <= j { high = j } else if rank >= i { low = i } else { return values[rank] }
        }
        return values[rank]
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
