/// A POSIX `TZ` rule, as in the footer of a TZif file (RFC 8536 section 3.3) or in `$TZ`:
/// `CET-1CEST,M3.5.0,M10.5.0/3`, `<+0545>-5:45`, `EST5EDT,M3.2.0,M11.1.0`,
/// `<-03>3<-02>,M3.5.0/-2,M10.5.0/-1` (RFC 8536's extensions: hours up to 167, negative).
///
/// It gives the zone's local time for every instant after the file's last transition,
/// so a zone keeps its daylight-saving switches in 2100 as `date` does.
struct PosixTimeZoneRule: Hashable, Sendable {
    /// A day of the year on which daylight saving starts or ends.
    enum Day: Hashable, Sendable {
        /// `Jn`: day 1...365, February 29 never counted.
        case julian(Int)
        /// `n`: day 0...365, February 29 counted in leap years.
        case zeroBased(Int)
        /// `Mm.w.d`: weekday `d` (0 is Sunday) of week `w` (1...5, 5 is the last) of month `m`.
        case monthWeekDay(month: Int, week: Int, weekday: Int)

        /// Days since 1970-01-01 of this day in `year`.
        func days(in year: Int64) -> Int64 {
            let january1 = CivilTime.days(year: year, month: 1, day: 1)
            switch self {
            case .julian(let n):
                return january1 + Int64(n - 1) + (CivilTime.isLeapYear(year) && n >= 60 ? 1 : 0)
            case .zeroBased(let n):
                return january1 + Int64(n)
            case .monthWeekDay(let month, let week, let weekday):
                let first = CivilTime.days(year: year, month: month, day: 1)
                var day = 1 + (weekday - CivilTime.weekday(days: first) + 7) % 7 + (week - 1) * 7
                while day > CivilTime.daysInMonth(year: year, month: month) { day -= 7 }
                return first + Int64(day - 1)
            }
        }
    }

    /// When daylight saving starts or ends: a day and a local time on it, in seconds
    /// (may be negative or past 24 hours).
    struct Switch: Hashable, Sendable {
        var day: Day
        var time: Int
    }

    var standard: ZoneInfo.LocalTimeType
    var daylight: ZoneInfo.LocalTimeType?
    var start: Switch?
    var end: Switch?

    /// The local time type in effect at `seconds` since the epoch.
    func localTimeType(at seconds: Int64) -> ZoneInfo.LocalTimeType {
        guard let daylight, let start, let end else { return standard }
        // The year in question and its neighbours: a southern zone's summer spans New Year,
        // and a switch time past 24 hours can move it into the next year.
        let year = CivilTime.date(days: CivilTime.floorDiv(seconds + Int64(standard.utcOffset), CivilTime.secondsPerDay)).year
        // The latest switch at or before `seconds` decides (no arrays: this runs per event
        // for dates after a zone's last transition).
        var latest = Int64.min, isDaylight = false
        for candidate in (year - 1)...(year + 1) {
            // The end is given in daylight time, the start in standard time. At equal
            // instants the start wins: `0/0,J365/25` is daylight time all year.
            let ends = instant(of: end, in: candidate, utcOffset: daylight.utcOffset)
            if ends <= seconds, ends > latest { (latest, isDaylight) = (ends, false) }
            let starts = instant(of: start, in: candidate, utcOffset: standard.utcOffset)
            if starts <= seconds, starts >= latest { (latest, isDaylight) = (starts, true) }
        }
        return isDaylight ? daylight : standard
    }

    private func instant(of change: Switch, in year: Int64, utcOffset: Int) -> Int64 {
        change.day.days(in: year) * CivilTime.secondsPerDay + Int64(change.time) - Int64(utcOffset)
    }
}

extension PosixTimeZoneRule {
    /// Parses `text`; `nil` when it is not a valid rule.
    init?(parsing text: String) {
        var parser = Parser(Array(text.utf8))
        guard let rule = parser.rule(), parser.isAtEnd else { return nil }
        self = rule
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }
        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skip(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            index += 1
            return true
        }

        mutating func rule() -> PosixTimeZoneRule? {
            guard let standardName = name(), let standardOffset = offset(maxHours: 24) else { return nil }
            let standard = ZoneInfo.LocalTimeType(utcOffset: -standardOffset, isDaylightSaving: false, abbreviation: standardName)
            guard !isAtEnd else { return PosixTimeZoneRule(standard: standard) }
            guard let daylightName = name() else { return nil }
            var daylightOffset = standardOffset - 3600
            if current != UInt8(ascii: ","), !isAtEnd {
                guard let given = offset(maxHours: 24) else { return nil }
                daylightOffset = given
            }
            let daylight = ZoneInfo.LocalTimeType(utcOffset: -daylightOffset, isDaylightSaving: true, abbreviation: daylightName)
            // No rule given: the United States' rule, as glibc and tzcode assume.
            guard skip(UInt8(ascii: ",")) else {
                guard isAtEnd else { return nil }
                return PosixTimeZoneRule(standard: standard, daylight: daylight,
                                         start: Switch(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200),
                                         end: Switch(day: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7200))
            }
            guard let start = change(), skip(UInt8(ascii: ",")), let end = change() else { return nil }
            return PosixTimeZoneRule(standard: standard, daylight: daylight, start: start, end: end)
        }

        /// `CET`, or `<+0545>` / `<-03>` in angle brackets.
        mutating func name() -> String? {
            let begin = index
            if skip(UInt8(ascii: "<")) {
                while let byte = current, byte.isASCIIAlphanumeric || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") { index += 1 }
                let name = bytes[(begin + 1)..<index]
                guard skip(UInt8(ascii: ">")), name.count >= 3 else { return nil }
                return String(decoding: name, as: UTF8.self)
            }
            while let byte = current, byte.isASCIILetter { index += 1 }
            guard index - begin >= 3 else { return nil }
            return String(decoding: bytes[begin..<index], as: UTF8.self)
        }

        /// `[+-]hh[:mm[:ss]]` in seconds.
        mutating func offset(maxHours: Int) -> Int? {
            var sign = 1
            if skip(UInt8(ascii: "-")) { sign = -1 } else { _ = skip(UInt8(ascii: "+")) }
            guard let hours = number(maxDigits: 3), hours <= maxHours else { return nil }
            var seconds = hours * 3600
            if skip(UInt8(ascii: ":")) {
                guard let minutes = number(maxDigits: 2), minutes < 60 else { return nil }
                seconds += minutes * 60
                if skip(UInt8(ascii: ":")) {
                    guard let extra = number(maxDigits: 2), extra < 60 else { return nil }
                    seconds += extra
                }
            }
            return sign * seconds
        }

        /// `Jn`, `n` or `Mm.w.d`, then an optional `/time` (default 02:00).
        mutating func change() -> Switch? {
            let day: Day
            if skip(UInt8(ascii: "J")) {
                guard let n = number(maxDigits: 3), (1...365).contains(n) else { return nil }
                day = .julian(n)
            } else if skip(UInt8(ascii: "M")) {
                guard let month = number(maxDigits: 2), (1...12).contains(month), skip(UInt8(ascii: ".")),
                      let week = number(maxDigits: 1), (1...5).contains(week), skip(UInt8(ascii: ".")),
                      let weekday = number(maxDigits: 1), (0...6).contains(weekday)
                else { return nil }
                day = .monthWeekDay(month: month, week: week, weekday: weekday)
            } else {
                guard let n = number(maxDigits: 3), (0...365).contains(n) else { return nil }
                day = .zeroBased(n)
            }
            var time = 7200
            if skip(UInt8(ascii: "/")) {
                guard let given = offset(maxHours: 167) else { return nil }
                time = given
            }
            return Switch(day: day, time: time)
        }

        mutating func number(maxDigits: Int) -> Int? {
            var value = 0, digits = 0
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < maxDigits {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            return digits > 0 ? value : nil
        }
    }
}

private extension UInt8 {
    var isASCIILetter: Bool { (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A) }
    var isASCIIAlphanumeric: Bool { isASCIILetter || (self >= 0x30 && self <= 0x39) }
}
