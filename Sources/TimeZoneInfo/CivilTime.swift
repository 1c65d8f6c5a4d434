/// Proleptic Gregorian calendar arithmetic on whole seconds since the Unix epoch: what
/// quiet hours need from a calendar, without Foundation's `Calendar` (which needs ICU
/// for any zone but GMT).
///
/// The day conversions are Howard Hinnant's `days_from_civil` / `civil_from_days`, exact
/// for every year an `Int64` of seconds can reach.
package enum CivilTime {
    package static let secondsPerDay: Int64 = 86_400

    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1...12, day 1...31).
    static func days(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    package static func date(days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// 0 for Sunday ... 6 for Saturday (1970-01-01 was a Thursday).
    static func weekday(days: Int64) -> Int {
        Int(floorMod(days + 4, 7))
    }

    static func isLeapYear(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(year: Int64, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    package static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }

    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        a - floorDiv(a, b) * b
    }
}

/// A wall-clock reading of an instant in a zone: what `TZ=Zone date -d @T` prints.
struct LocalTime: Hashable, Sendable, CustomStringConvertible {
    var year: Int64
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int
    /// 0 for Sunday ... 6 for Saturday.
    var weekday: Int
    /// Seconds east of UTC.
    var utcOffset: Int
    var isDaylightSaving: Bool
    var abbreviation: String

    init(secondsSince1970 seconds: Int64, type: ZoneInfo.LocalTimeType) {
        let local = seconds + Int64(type.utcOffset)
        let days = CivilTime.floorDiv(local, CivilTime.secondsPerDay)
        let secondOfDay = Int(local - days * CivilTime.secondsPerDay)
        (year, month, day) = CivilTime.date(days: days)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
        weekday = CivilTime.weekday(days: days)
        utcOffset = type.utcOffset
        isDaylightSaving = type.isDaylightSaving
        abbreviation = type.abbreviation
    }

    /// Minutes since local midnight, 0...1439.
    var minuteOfDay: Int { hour * 60 + minute }

    /// `2027-03-28 03:00:00 +0200 CEST`, the shape of `date '+%F %T %z %Z'`.
    var description: String {
        func pad(_ value: some BinaryInteger, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let offset = abs(utcOffset) / 60
        // As glibc's strftime: a zero offset named `-00` (no local time defined) is `-0000`.
        let negative = utcOffset < 0 || (utcOffset == 0 && abbreviation.hasPrefix("-"))
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)) "
            + "\(negative ? "-" : "+")\(pad(offset / 60, 2))\(pad(offset % 60, 2)) \(abbreviation)"
    }
}
