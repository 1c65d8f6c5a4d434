/// The rules of one time zone, read from the system's tzdata (`/usr/share/zoneinfo/Europe/Berlin`,
/// a TZif file), so that quiet hours in a named zone need neither ICU nor Foundation's
/// `TimeZone`, which without ICU knows only GMT and fixed offsets.
///
/// ```swift
/// let berlin = try ZoneInfo.named("Europe/Berlin")
/// berlin.localTime(atSecondsSince1970: 1_800_000_000).minuteOfDay   // 540: 2027-01-15 09:00 CET
/// ```
///
/// Lookups by name are cached (see `ZoneInfo+Lookup.swift`); the file format is read in
/// `ZoneInfo+TZif.swift`.
package struct ZoneInfo: Hashable, Sendable {
    /// One of the zone's kinds of local time: `CET` (+1 h) or `CEST` (+2 h, daylight saving).
    struct LocalTimeType: Hashable, Sendable {
        /// Seconds east of UTC.
        var utcOffset: Int
        var isDaylightSaving: Bool
        var abbreviation: String
    }

    /// The name it was looked up by (`Europe/Berlin`, `UTC`, `GMT+02:00`), or the `$TZ` /
    /// `/etc/localtime` it came from.
    var name: String
    /// Instants (seconds since the epoch, ascending) at which the local time type changes.
    var transitions: [Int64]
    /// For each transition, the index in `types` in effect from it on.
    var transitionTypes: [Int]
    /// Never empty; `types[0]` applies before the first transition.
    var types: [LocalTimeType]
    /// Applies after the last transition (and everywhere when there is none), when present.
    var rule: PosixTimeZoneRule?

    /// A zone that is always `type`: UTC, or a fixed offset such as `GMT+02:00`.
    init(name: String, fixed type: LocalTimeType) {
        self.init(name: name, transitions: [], transitionTypes: [], types: [type], rule: nil)
    }

    /// A zone given only by a POSIX rule, such as `TZ=CET-1CEST,M3.5.0,M10.5.0/3`.
    init(name: String, rule: PosixTimeZoneRule) {
        self.init(name: name, transitions: [], transitionTypes: [], types: [rule.standard], rule: rule)
    }

    init(name: String, transitions: [Int64], transitionTypes: [Int], types: [LocalTimeType], rule: PosixTimeZoneRule?) {
        precondition(!types.isEmpty && transitions.count == transitionTypes.count && transitionTypes.allSatisfy(types.indices.contains))
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.types = types
        self.rule = rule
    }

    static let utc = ZoneInfo(name: "UTC", fixed: LocalTimeType(utcOffset: 0, isDaylightSaving: false, abbreviation: "UTC"))

    /// The local time type in effect at `seconds` since the epoch (RFC 8536 section 3.2).
    func localTimeType(atSecondsSince1970 seconds: Int64) -> LocalTimeType {
        guard let last = transitions.last, seconds < last else {
            if let rule { return rule.localTimeType(at: seconds) }
            return transitionTypes.last.map { types[$0] } ?? types[0]
        }
        // The last transition at or before `seconds`.
        var low = 0, high = transitions.count
        while low < high {
            let middle = (low + high) / 2
            if transitions[middle] <= seconds { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? types[0] : types[transitionTypes[low - 1]]
    }

    /// Minutes since local midnight (0...1439) at `seconds` since the epoch: all that
    /// quiet hours need, without building a whole `LocalTime`.
    package func minuteOfDay(atSecondsSince1970 seconds: Int64) -> Int {
        let local = seconds + Int64(localTimeType(atSecondsSince1970: seconds).utcOffset)
        return Int(CivilTime.floorMod(local, CivilTime.secondsPerDay) / 60)
    }

    /// The wall-clock reading of `seconds` since the epoch in this zone.
    func localTime(atSecondsSince1970 seconds: Int64) -> LocalTime {
        LocalTime(secondsSince1970: seconds, type: localTimeType(atSecondsSince1970: seconds))
    }

    /// Whole seconds since the epoch of a `Date`'s `timeIntervalSince1970`, rounded down
    /// (so 22:59:59.5 is still 22:59) and clamped to ±10^15 s, so that NaN or an infinite
    /// date cannot trap.
    package static func wholeSeconds(_ interval: Double) -> Int64 {
        guard interval.isFinite else { return interval > 0 ? 1_000_000_000_000_000 : interval < 0 ? -1_000_000_000_000_000 : 0 }
        return Int64(min(max(interval.rounded(.down), -1e15), 1e15))
    }
}
