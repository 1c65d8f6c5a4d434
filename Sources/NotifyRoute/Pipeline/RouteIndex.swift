/// The routes a source can match, by the source's first byte: most routes of a config
/// are told apart by a literal source prefix (`svc1-*`), and most events fail it on its
/// first byte, so the routes stage tries only the routes left in the running, in order.
struct RouteIndex: Sendable {
    let matchers: [EventMatcher]
    /// Per slot (see ``slot(_:)``), the positions of the routes whose source condition
    /// does not rule that first byte out.
    private let candidates: [[Int]]

    init(_ matchers: [EventMatcher]) {
        self.matchers = matchers
        let leads = matchers.map { $0.source.flatMap(LeadSet.init) }
        candidates = (0..<130).map { slot in
            matchers.indices.filter { index in
                guard let lead = leads[index] else { return true }
                switch slot {
                case 0..<128: return lead.admits(UInt8(slot))
                case 128: return true  // non-ASCII: left to the globs (canonical equivalents)
                default: return false  // no source, or an empty one: no literal glob matches
                }
            }
        }
    }

    func candidates(for subject: MatchSubject) -> [Int] {
        candidates[Self.slot(subject.source?.utf8.first)]
    }

    func matches(_ position: Int, _ subject: MatchSubject) -> Bool {
        matchers[position].matches(subject)
    }

    /// 0-127: an ASCII first byte; 128: a non-ASCII one; 129: no source, or an empty one.
    private static func slot(_ lead: UInt8?) -> Int {
        guard let lead else { return 129 }
        return lead < 0x80 ? Int(lead) : 128
    }

    /// ASCII first bytes that a glob list can match.
    struct LeadSet: Sendable {
        var low: UInt64 = 0, high: UInt64 = 0

        /// Nil when some glob does not start with a literal ASCII character (`*x`, `[ab]*`, ``).
        init?(_ globs: [Glob]) {
            for glob in globs {
                guard let lead = glob.leadingASCII else { return nil }
                if lead < 64 { low |= 1 << UInt64(lead) } else { high |= 1 << UInt64(lead - 64) }
            }
        }

        func admits(_ lead: UInt8) -> Bool {
            (lead < 64 ? low >> UInt64(lead) : high >> UInt64(lead - 64)) & 1 == 1
        }
    }
}
