#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// What the router remembers between events: dedup windows with their counts, the handle
/// each sink gave for each replace key, held events and active inhibitors. In memory
/// (``InMemoryStateStore``); Codable for the state files of earlier versions, which
/// ``SQLiteStateStore`` imports once.
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

    /// Which policy held events back: a rate limit or quiet hours.
    public enum HeldKind: Int, Sendable {
        case rate = 0
        case quiet = 1
    }

    /// A source event of an inhibition rule that is still active.
    public struct InhibitorRecord: Codable, Hashable, Sendable {
        public var rule: Int
        public var signature: String
        public var expires: Date
        public var replaceKey: String?
        public var dedupKey: String
    }

    /// Keyed by sink name and dedup key (see ``Key``).
    public var dedup: [Key: DedupRecord] = [:]
    /// Keyed by sink name and replace key (see ``Key``).
    public var handles: [Key: HandleRecord] = [:]
    /// Rate-limit periods, keyed by route and sink.
    public var rates: [String: HeldRecord] = [:]
    /// Events held in quiet hours, keyed by route and sink.
    public var quiet: [String: HeldRecord] = [:]
    /// Active inhibiting events, keyed by rule and signature.
    public var inhibitors: [String: InhibitorRecord] = [:]
    /// Open groups of routes' `group` policies (kept by the SQLite store; not in state files).
    public var groups: [String: GroupRecord] = [:]

    /// The order in which ``dedup`` keys were last stamped, so that eviction takes the
    /// oldest without scanning the map. Not part of the state's identity (equality,
    /// hashing, coding): a decoded state has none and evicts by sorting.
    ///
    /// ``handles`` keeps no order: a handle is restamped by every event that replaces it
    /// (a few keys used over and over), so an order would grow by an entry per event for
    /// a map that rarely reaches its bound. Past it, the handles are cut by sorting, as a
    /// decoded state's are.
    var dedupOrder = EvictionOrder()
    /// No dedup window closes before this instant (a lower bound: the earliest
    /// `expires` noted since the last scan), so eviction scans for closed windows
    /// only when one may have closed.
    var earliestExpiry: Double = -.infinity

    public init() {
        dedupOrder.isTracking = true
        earliestExpiry = .infinity
    }

    private enum CodingKeys: String, CodingKey { case dedup, handles, rates, quiet, inhibitors }

    /// Tolerates state files written before a map existed. The keys of ``dedup`` and
    /// ``handles`` are read from their text (``Key/init(_:)``): the file format is the one
    /// written when they were plain strings.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        dedup = Self.keyed(try container.decodeIfPresent([String: DedupRecord].self, forKey: .dedup) ?? [:])
        handles = Self.keyed(try container.decodeIfPresent([String: HandleRecord].self, forKey: .handles) ?? [:])
        rates = try container.decodeIfPresent([String: HeldRecord].self, forKey: .rates) ?? [:]
        quiet = try container.decodeIfPresent([String: HeldRecord].self, forKey: .quiet) ?? [:]
        inhibitors = try container.decodeIfPresent([String: InhibitorRecord].self, forKey: .inhibitors) ?? [:]
    }

    /// Writes ``dedup`` and ``handles`` keyed by their keys' text (`sink` U+001E `key`), as
    /// state files have always been written.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.texts(dedup), forKey: .dedup)
        try container.encode(Self.texts(handles), forKey: .handles)
        try container.encode(rates, forKey: .rates)
        try container.encode(quiet, forKey: .quiet)
        try container.encode(inhibitors, forKey: .inhibitors)
    }

    private static func keyed<Value>(_ map: [String: Value]) -> [Key: Value] {
        var keyed: [Key: Value] = [:]
        keyed.reserveCapacity(map.count)
        for (text, value) in map { keyed[Key(text)] = value }
        return keyed
    }

    private static func texts<Value>(_ map: [Key: Value]) -> [String: Value] {
        var texts: [String: Value] = [:]
        texts.reserveCapacity(map.count)
        for (key, value) in map { texts[key.text] = value }
        return texts
    }

    /// `sink` and `key` joined by a record separator, in one allocation (see ``KeyBuilder``):
    /// a ``Key``'s text.
    static func key(sink: String, _ key: String) -> String {
        KeyBuilder.join(sink, key, separator: 0x1E)
    }

    /// Equal when the maps are: the eviction orders are bookkeeping, not state.
    public static func == (lhs: RouterState, rhs: RouterState) -> Bool {
        lhs.dedup == rhs.dedup && lhs.handles == rhs.handles && lhs.rates == rhs.rates && lhs.quiet == rhs.quiet
            && lhs.inhibitors == rhs.inhibitors && lhs.groups == rhs.groups
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(dedup)
        hasher.combine(handles)
        hasher.combine(rates)
        hasher.combine(quiet)
        hasher.combine(inhibitors)
        hasher.combine(groups)
    }

    /// Stores the dedup record of `key` (a new window, or a duplicate's count and
    /// `lastSeen`): the key goes to the back of the eviction order.
    mutating func storeDedup(_ record: DedupRecord, forKey key: Key) {
        let isNew = dedup.updateValue(record, forKey: key) == nil
        let expires = record.expires.timeIntervalSinceReferenceDate
        if expires < earliestExpiry { earliestExpiry = expires }
        dedupOrder.stamp(key, record.lastSeen, isNew: isNew)
        dedupOrder.compactIfNeeded(dedup) { $0.lastSeen }
    }

    /// The dedup record of `key` after this event: a duplicate inside its window (counted,
    /// `lastSeen` now), or a new window from now. One lookup of the map, where
    /// reading the record and then storing it took two; the same bookkeeping as
    /// ``storeDedup(_:forKey:)``.
    /// `seconds` is the window's length (a Duration's seconds cost an Int128 division).
    package mutating func recordDedup(forKey key: Key, now: Date, window seconds: Double) -> (record: DedupRecord, isDuplicate: Bool) {
        var isNew = false
        var isDuplicate = false
        let record = Self.update(&dedup[key]) { slot -> DedupRecord in
            if var record = slot, now.timeIntervalSince(record.firstSeen) < seconds {
                record.count += 1
                record.lastSeen = now
                slot = record
                isDuplicate = true
                return record
            }
            isNew = slot == nil
            let record = DedupRecord(firstSeen: now, lastSeen: now, count: 1, handle: nil, expires: now.addingTimeInterval(seconds))
            slot = record
            return record
        }
        let expires = record.expires.timeIntervalSinceReferenceDate
        if expires < earliestExpiry { earliestExpiry = expires }
        dedupOrder.stamp(key, record.lastSeen, isNew: isNew)
        dedupOrder.compactIfNeeded(dedup) { $0.lastSeen }
        return (record, isDuplicate)
    }

    /// Gives the dedup map room for twice its bound once it is half full: kept at most a
    /// third full, its probe runs stay short (each probe compares a key; each removal by
    /// eviction rehashes the run behind it), where a map grown only by doubling sat at
    /// 60% before every eviction. Costs about 1.2 MB more at 10,000 entries.
    @inline(__always)
    package mutating func reserveDedupCapacity(maxEntries: Int) {
        let room = 2 * maxEntries + 2
        if dedup.capacity < room && dedup.count >= maxEntries / 2 && maxEntries <= 1 << 20 {
            dedup.reserveCapacity(room)
        }
    }

    /// Runs `body` on a value in place: with `&map[key]`, one lookup through the
    /// dictionary's modify accessor for the read and the write.
    @inline(__always)
    private static func update<Value, Result>(_ value: inout Value, _ body: (inout Value) -> Result) -> Result {
        body(&value)
    }

    /// The handle shown for the window of `key`, if it has one (nothing otherwise): one
    /// lookup, and the record changed in place in the map's storage. Through
    /// `dedup[key]?.handle = handle` (the dictionary's modify accessor) the record was
    /// taken out as an optional and written back.
    package mutating func setDedupHandle(_ handle: SinkHandle, forKey key: Key) {
        guard let index = dedup.index(forKey: key) else { return }
        dedup.values[index].handle = handle
    }

    mutating func removeDedup(forKey key: Key) {
        if dedup.removeValue(forKey: key) != nil { dedupOrder.removed() }
    }

    /// Stores the handle shown for `key` (its `lastUsed` is what eviction goes by).
    package mutating func storeHandle(_ record: HandleRecord, forKey key: Key) {
        handles[key] = record
    }

    mutating func removeHandle(forKey key: Key) {
        handles.removeValue(forKey: key)
    }

    /// Forgets the oldest entries once a map holds more than `maxEntries`, down to 90%
    /// of it, so that eviction runs once per many insertions, not on each.
    ///
    /// Windows that have closed go first (looked for only when one may have: see
    /// ``earliestExpiry``). Then the least recently stamped entries: dedup records taken
    /// from the front of their ``EvictionOrder`` in O(evicted); handles, and dedup records
    /// changed behind the order's back (a decoded state, a test), cut at the cut-off
    /// instant found by sorting their stamps.
    public mutating func evict(maxEntries: Int, now: Date? = nil) {
        let ordered = dedupOrder.covers(count: dedup.count)
        if let now, dedup.count > maxEntries, !ordered || now.timeIntervalSinceReferenceDate >= earliestExpiry {
            var earliest = Double.infinity
            let before = dedup.count
            dedup = dedup.filter { _, record in
                guard record.expires > now else { return false }
                earliest = min(earliest, record.expires.timeIntervalSinceReferenceDate)
                return true
            }
            dedupOrder.removed(before - dedup.count)
            earliestExpiry = earliest
        }
        let keep = max(1, maxEntries - maxEntries / 10)
        if dedup.count > maxEntries {
            if !dedupOrder.covers(count: dedup.count) || !dedupOrder.dropOldest(&dedup, keeping: keep, stamp: { $0.lastSeen }) {
                dedupOrder.isTracking = false
                Self.dropOldest(&dedup, keeping: keep) { $0.lastSeen }
            }
        }
        if handles.count > maxEntries {
            Self.dropOldest(&handles, keeping: keep) { $0.lastUsed }
        }
    }

    /// Removes all but the `keep` newest values of `map` by `stamp`; of values stamped
    /// exactly at the cut-off, only as many as needed go. Removes in place: rebuilding
    /// the map would copy every key that stays.
    private static func dropOldest<Value>(_ map: inout [Key: Value], keeping keep: Int, stamp: (Value) -> Date) {
        let surplus = map.count - keep
        guard surplus > 0 else { return }
        let stamps = map.values.map { stamp($0).timeIntervalSinceReferenceDate }.sorted()
        let cutoff = stamps[surplus - 1]  // the newest of the values to drop
        var atCutoff = surplus - stamps.reduce(0) { $0 + ($1 < cutoff ? 1 : 0) }
        var doomed: [Key] = []
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
}

/// The keys of a map in the order they were last stamped, oldest first, so that
/// eviction takes the oldest in O(evicted) instead of scanning the map. Each store
/// appends (key, stamp); an entry whose key has been stamped again since, or removed,
/// is stale and skipped when it comes up. Stale entries are compacted away once they
/// outnumber the map, so the order stays within a small multiple of the map's size.
/// With stamps from a clock that goes back, the order is by store, not by stamp.
struct EvictionOrder: Sendable {
    private var keys: [RouterState.Key] = []
    private var stamps: [Double] = []
    /// Entries before it have been consumed.
    private var head = 0
    /// Keys the order believes its map holds (stored new, less removed). When it differs
    /// from the map's count, the map was changed behind the order's back, and eviction
    /// falls back to sorting.
    private var tracked = 0
    /// False for a decoded state (no order was kept) and after a fallback.
    var isTracking = false

    var count: Int { keys.count - head }

    mutating func stamp(_ key: RouterState.Key, _ date: Date, isNew: Bool) {
        guard isTracking else { return }
        keys.append(key)
        stamps.append(date.timeIntervalSinceReferenceDate)
        if isNew { tracked += 1 }
    }

    mutating func removed(_ count: Int = 1) {
        tracked -= count
    }

    /// Whether the order accounts for every key of a map holding `count`.
    func covers(count: Int) -> Bool { isTracking && tracked == count }

    /// Removes the least recently stamped keys of `map` until `keep` remain; false when
    /// the order ran out first (a record restamped behind its back), leaving the rest
    /// to the caller.
    mutating func dropOldest<Value>(_ map: inout [RouterState.Key: Value], keeping keep: Int, stamp: (Value) -> Date) -> Bool {
        var surplus = map.count - keep
        while surplus > 0 && head < keys.count {
            let key = keys[head], time = stamps[head]
            head += 1
            guard let index = map.index(forKey: key), stamp(map[index].value).timeIntervalSinceReferenceDate == time else { continue }
            map.remove(at: index)
            tracked -= 1
            surplus -= 1
        }
        if head > keys.count / 2 {
            keys.removeFirst(head)
            stamps.removeFirst(head)
            head = 0
        }
        return surplus <= 0
    }

    /// Compacts when stale entries outnumber the map's keys by far (a run of duplicates,
    /// a few replace keys used over and over, restamp one key many times): amortised
    /// O(1) per stamp. The slack of 4,096 keeps a small map's compactions rare (with 64
    /// slack, 128 replace keys compacted every 100 events: the benchmark's p99).
    mutating func compactIfNeeded<Value>(_ map: [RouterState.Key: Value], stamp: (Value) -> Date) {
        if count > 2 * map.count + 4_096 { compact(map, stamp: stamp) }
    }

    /// Keeps only the live entries (those whose key still has the entry's stamp), in order.
    private mutating func compact<Value>(_ map: [RouterState.Key: Value], stamp: (Value) -> Date) {
        var liveKeys: [RouterState.Key] = [], liveStamps: [Double] = []
        liveKeys.reserveCapacity(map.count)
        liveStamps.reserveCapacity(map.count)
        for position in head..<keys.count {
            guard let value = map[keys[position]], stamp(value).timeIntervalSinceReferenceDate == stamps[position] else { continue }
            liveKeys.append(keys[position])
            liveStamps.append(stamps[position])
        }
        keys = liveKeys
        stamps = liveStamps
        head = 0
    }
}
