extension RouterState {
    /// A key of ``RouterState/dedup`` and ``RouterState/handles``: a sink's instance name
    /// and a dedup or replace key. Its text, `sink` U+001E `key`, is what the state file
    /// stores and what the maps were keyed by when keys were strings.
    ///
    /// The router looks each key up several times per event and sink (the decision, the
    /// commit, eviction): the key hashes its two parts once, when it is made, and every
    /// lookup reuses that value instead of hashing the text again. It keeps the two parts
    /// as they are, without building the joined text.
    ///
    /// A class, immutable, compared by value: a key is shared by the map, the eviction
    /// order and the wave, and a lookup of the very key stored ends at the identity check.
    ///
    /// The hash is as hard to steer as a `String`'s: `Hasher` is seeded at random per
    /// process, and a dictionary mixes in its own per-instance seed (see
    /// ``_rawHashValue(seed:)``).
    ///
    /// ```swift
    /// let key = RouterState.Key(sink: "desktop", key: "backup")
    /// key.text                                    // "desktop\u{1E}backup"
    /// RouterState.Key("desktop\u{1E}backup") == key   // true
    /// state.handles[key]?.handle
    /// ```
    public final class Key: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The sink's instance name; `nil` for a text without a record separator (a
        /// hand-written state file), which is then all ``key``.
        public let sink: String?
        /// The dedup key or the replace key.
        public let key: String
        /// Both parts hashed once, each by `Hasher` (seeded at random per process).
        private let hash: Int

        private init(sink: String?, key: String, hash: Int) {
            self.sink = sink
            self.key = key
            self.hash = hash
        }

        /// The key of `key` on the sink named `sink`.
        public convenience init(sink: String, key: String) {
            // A sink name holding the separator (possible only for sinks given in code)
            // is split where its text would be split when read back, so that the key
            // equals the one read from the state file.
            if sink.utf8.contains(0x1E) {
                self.init(KeyBuilder.join(sink, key, separator: 0x1E))
            } else {
                self.init(sink: sink, key: key, hash: Self.hash(sink, key))
            }
        }

        /// ``init(sink:key:)`` for a sink name known to hold no U+001E, with both parts'
        /// `hashValue`s at hand: a wave hashes its event's dedup key once for all its sinks,
        /// and each sink's name once when the router is made.
        package convenience init(plainSink sink: String, sinkHash: Int, key: String, keyHash: Int) {
            self.init(sink: sink, key: key, hash: Self.combine(sinkHash, keyHash))
        }

        /// The key whose ``text`` is `text`: split at its first U+001E.
        public convenience init(_ text: String) {
            if let separator = text.utf8.firstIndex(of: 0x1E) {
                let sink = String(text[..<separator]), key = String(text[text.utf8.index(after: separator)...])
                self.init(sink: sink, key: key, hash: Self.hash(sink, key))
            } else {
                self.init(sink: nil, key: text, hash: Self.hash(nil, text))
            }
        }

        public convenience init(stringLiteral text: String) {
            self.init(text)
        }

        /// `sink` U+001E `key`, as the state file writes it.
        public var text: String {
            guard let sink else { return key }
            return KeyBuilder.join(sink, key, separator: 0x1E)
        }

        public var description: String { text }

        private static func hash(_ sink: String?, _ key: String) -> Int {
            combine(sink?.hashValue ?? noSink, key.hashValue)
        }

        /// The hash of a key without a sink part stands in for a sink name's.
        private static let noSink = 0x6A09_E667_F3BC_C908

        /// Each part's hash is a keyed SipHash (`hashValue`); the sink's goes through a
        /// bijection first, so that (a, b) and (b, a) do not meet.
        @inline(__always)
        private static func combine(_ sinkHash: Int, _ keyHash: Int) -> Int {
            let sink = UInt64(truncatingIfNeeded: sinkHash) &* 0xBF58_476D_1CE4_E5B9
            return Int(truncatingIfNeeded: (sink ^ (sink >> 31))) ^ keyHash
        }

        public static func == (lhs: Key, rhs: Key) -> Bool {
            lhs === rhs || (lhs.hash == rhs.hash && lhs.key == rhs.key && lhs.sink == rhs.sink)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }

        /// What a `Dictionary` asks for each lookup: the stored hash mixed with the
        /// dictionary's seed (a bijection: a multiply and a shift), instead of a new
        /// `Hasher` run over it (the `floor` benchmark measures the difference). The stored hash is already a keyed SipHash, so this keeps
        /// its spread and its resistance to chosen keys; the seed keeps the dictionary's
        /// per-instance bucket order.
        public func _rawHashValue(seed: Int) -> Int {
            var mixed = UInt64(truncatingIfNeeded: hash ^ seed) &* 0x9E37_79B9_7F4A_7C15
            mixed ^= mixed >> 29
            return Int(truncatingIfNeeded: mixed)
        }
    }
}
