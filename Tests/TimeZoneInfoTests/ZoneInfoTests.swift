import Foundation
@testable import NotifyRoute
@testable import TimeZoneInfo
import NotifyRouteTestSupport
import Testing

/// `ZoneInfo` against the real tzdata of this machine and against glibc: every reading is
/// compared with what `TZ=Zone date -d @T '+%F %T %z %Z'` prints for the same instant.
@Suite struct ZoneInfoTests {
    static let directory = "/usr/share/zoneinfo"
    static let dateFormat = "+%Y-%m-%d %H:%M:%S %z %Z"

    /// What `date` prints for each instant with `TZ=tz` (one process, instants on stdin).
    static func dateReadings(tz: String, _ instants: [Int64]) throws -> [String] {
        let date = try #require(ProcessRunner.which("date"))
        let input = instants.map { "@\($0)\n" }.joined()
        var lines: [String] = []
        // ProcessRunner gives its output readers 2 s after the child exits; on a loaded
        // machine that can cut the output short, so a short answer is asked again.
        for _ in 1...3 {
            let result = try ProcessRunner.run(date, ["-f", "-", dateFormat], environment: ["TZ": tz, "TZDIR": directory], input: input,
                                               timeLimit: .seconds(60))
            try #require(result.status == 0, "date: \(result.standardError)")
            lines = result.standardOutput.split(separator: "\n").map(String.init)
            if lines.count == instants.count { break }
        }
        try #require(lines.count == instants.count, "date printed \(lines.count) lines for \(instants.count) instants")
        return lines
    }

    /// Compares `zone` with `date` at `instants`; returns how many were compared.
    @discardableResult
    static func expectAgreement(_ zone: ZoneInfo, tz: String, at instants: [Int64]) throws -> Int {
        let expected = try dateReadings(tz: tz, instants)
        var mismatches = 0
        for (instant, line) in zip(instants, expected) {
            let ours = zone.localTime(atSecondsSince1970: instant).description
            if ours != line {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(tz) @\(instant): ours \(ours), date \(line)") }
            }
        }
        #expect(mismatches == 0, "\(tz): \(mismatches) of \(instants.count) readings differ from date")
        return instants.count
    }

    /// Each transition in the file from 1900 on, a second before and at it; every three hours
    /// through 2026 and through 2150 (after the last transition, so from the footer's rule); and a
    /// second either side of every change found in those two years.
    static func probes(for zone: ZoneInfo) -> [Int64] {
        var instants = zone.transitions.filter { $0 >= -2_208_988_800 && $0 < 32_503_680_000 }.flatMap { [$0 - 1, $0] }
        for yearStart: Int64 in [1_767_225_600 /* 2026-01-01 */, 5_680_281_600 /* 2150-01-01 */] {
            var previous = zone.localTimeType(atSecondsSince1970: yearStart)
            for hour in stride(from: Int64(0), through: 366 * 24, by: 3) {
                let instant = yearStart + hour * 3600
                instants.append(instant)
                let type = zone.localTimeType(atSecondsSince1970: instant)
                guard type != previous else { continue }
                previous = type
                // Find the exact second of the change within the past three hours.
                var low = instant - 3 * 3600, high = instant
                while high - low > 1 {
                    let middle = (low + high) / 2
                    if zone.localTimeType(atSecondsSince1970: middle) == type { high = middle } else { low = middle }
                }
                instants += [high - 1, high, high + 1]
            }
        }
        return instants
    }

    @Test(arguments: ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "UTC", "Asia/Jerusalem",
                      "America/Santiago", "America/Nuuk", "Antarctica/Troll", "Pacific/Chatham", "Africa/Casablanca", "America/Sao_Paulo"])
    func agreesWithDate(_ name: String) throws {
        let zone = try ZoneInfo.load(named: name, directory: Self.directory)
        try Self.expectAgreement(zone, tz: name, at: Self.probes(for: zone))
    }

    /// The switches of 2027, each a second before and at it, written out: the test above
    /// checks agreement, this one that both are right (values from `TZ=Zone date -d @T`).
    @Test func daylightSavingSwitches() throws {
        let berlin = try ZoneInfo.load(named: "Europe/Berlin", directory: Self.directory)
        // Sunday 2027-03-28 01:00 UTC: 02:00 CET becomes 03:00 CEST.
        #expect(berlin.localTime(atSecondsSince1970: 1_806_195_599).description == "2027-03-28 01:59:59 +0100 CET")
        #expect(berlin.localTime(atSecondsSince1970: 1_806_195_600).description == "2027-03-28 03:00:00 +0200 CEST")
        // Sunday 2027-10-31 01:00 UTC: 03:00 CEST becomes 02:00 CET.
        #expect(berlin.localTime(atSecondsSince1970: 1_824_944_399).description == "2027-10-31 02:59:59 +0200 CEST")
        #expect(berlin.localTime(atSecondsSince1970: 1_824_944_400).description == "2027-10-31 02:00:00 +0100 CET")
        let lordHowe = try ZoneInfo.load(named: "Australia/Lord_Howe", directory: Self.directory)
        // Sunday 2027-04-04 02:00 +11: back half an hour.
        #expect(lordHowe.localTime(atSecondsSince1970: 1_806_764_399).description == "2027-04-04 01:59:59 +1100 +11")
        #expect(lordHowe.localTime(atSecondsSince1970: 1_806_764_400).description == "2027-04-04 01:30:00 +1030 +1030")
        let kathmandu = try ZoneInfo.load(named: "Asia/Kathmandu", directory: Self.directory)
        #expect(kathmandu.localTime(atSecondsSince1970: 1_800_000_000).description == "2027-01-15 13:45:00 +0545 +0545")
        // 2300-07-01 12:00 UTC, long after the last transition in the file: the footer's rule.
        let newYork = try ZoneInfo.load(named: "America/New_York", directory: Self.directory)
        #expect(newYork.localTime(atSecondsSince1970: 10_429_473_600).description == "2300-07-01 08:00:00 -0400 EDT")
        #expect(newYork.transitions.last.map { $0 < 10_429_473_600 } == true)
    }

    /// Every zone in tzdata parses, and agrees with `date` at its transitions since 1970
    /// and on the first of every fifth month to 2100 (the footer's rule from the last
    /// transition on).
    @Test func everyZoneAgreesWithDate() throws {
        let names = ZoneInfo.knownNames(in: Self.directory)
        #expect(names.count > 300)
        #expect(names.contains("Europe/Berlin") && names.contains("UTC") && !names.contains("zone.tab"))
        let months = stride(from: 0, to: 130 * 12, by: 5).map { index -> Int64 in
            CivilTime.days(year: 1970 + Int64(index / 12), month: index % 12 + 1, day: 1) * 86_400 + 43_200
        }
        var compared = 0
        for name in names {
            let zone = try ZoneInfo.load(named: name, directory: Self.directory)
            let transitions = zone.transitions.filter { $0 >= 0 && $0 < 4_102_444_800 }.flatMap { [$0 - 1, $0] }
            compared += try Self.expectAgreement(zone, tz: name, at: transitions + months)
        }
        #expect(compared > 200_000)
    }

    /// `$TZ` holding a POSIX rule rather than a zone name, read as glibc reads it,
    /// including RFC 8536's extensions (negative and 24+ hour switch times, all-year DST).
    @Test(arguments: ["CET-1CEST,M3.5.0,M10.5.0/3", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "IST-2IDT,M3.4.4/26,M10.5.0",
                      "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
                      "AAA3BBB,J60/2,J300/1:30", "AAA-3BBB-4:30,59/2,299/23:59:59", "<+0545>-5:45"])
    func posixRulesAgreeWithDate(_ rule: String) throws {
        let zone = ZoneInfo.local(tz: rule, directory: Self.directory)
        #expect(zone.rule != nil)
        try Self.expectAgreement(zone, tz: rule, at: Self.probes(for: zone))
    }

    /// Daylight saving all year (RFC 8536 section 3.3.1). glibc's own reading of this rule
    /// differs in the last hours of each year (it takes the UTC year's switches, and the
    /// new year's start has not come yet), so this one is checked by hand.
    @Test func daylightSavingAllYear() throws {
        let zone = ZoneInfo.local(tz: "EST5EDT,0/0,J365/25", directory: Self.directory)
        // 2026-01-01 04:59:59 and 05:00:00 UTC (either side of the yearly start and end), 2026-07-01 12:00 UTC, 2150-01-01 00:00 UTC.
        for instant: Int64 in [1_767_243_599, 1_767_243_600, 1_782_907_200, 5_680_281_600] {
            #expect(zone.localTimeType(atSecondsSince1970: instant) == .init(utcOffset: -14_400, isDaylightSaving: true, abbreviation: "EDT"))
        }
    }

    @Test func theLocalZoneFollowsTZAndEtcLocaltime() throws {
        #expect(ZoneInfo.local(tz: nil, directory: Self.directory, localtime: Self.directory + "/Asia/Kathmandu").types.last?.utcOffset == 20_700)
        #expect(ZoneInfo.local(tz: nil, directory: Self.directory, localtime: "/nonexistent/localtime") == .utc)
        #expect(ZoneInfo.local(tz: "", directory: Self.directory) == .utc)
        #expect(ZoneInfo.local(tz: "Nowhere/Land", directory: Self.directory) == .utc)
        #expect(ZoneInfo.local(tz: ":Europe/Berlin", directory: Self.directory) == (try ZoneInfo.load(named: "Europe/Berlin", directory: Self.directory)))
        let newYork = ZoneInfo.local(tz: Self.directory + "/America/New_York", directory: Self.directory)
        #expect(newYork.localTime(atSecondsSince1970: 1_800_000_000).utcOffset == -18_000)
        // This process's own zone, as `date` sees it with the same environment.
        let environment = ProcessInfo.processInfo.environment
        let local = ZoneInfo.local
        let now = Int64(Date().timeIntervalSince1970)
        let expected = try Self.dateReadings(tz: environment["TZ"] ?? "", [now])
        if environment["TZ"] == nil {
            // `TZ=""` would be UTC: ask `date` without it instead.
            let date = try #require(ProcessRunner.which("date"))
            let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["-u", "TZ", date.path, "-d", "@\(now)", Self.dateFormat])
            #expect(local.localTime(atSecondsSince1970: now).description == result.standardOutput.trimmingCharacters(in: .newlines))
        } else {
            #expect(local.localTime(atSecondsSince1970: now).description == expected.first)
        }
    }

    @Test func utcGMTAndFixedOffsetsNeedNoTzdata() throws {
        let missing = "/nonexistent/zoneinfo"
        for name in ["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Zulu", "GMT0"] {
            #expect(try ZoneInfo.load(named: name, directory: missing).localTime(atSecondsSince1970: 1_800_000_000).utcOffset == 0)
        }
        // Foundation's reading of GMT+2 (east), kept; tzdata's Etc/GMT+5 is five hours west.
        #expect(try ZoneInfo.load(named: "GMT+2", directory: missing).types == [.init(utcOffset: 7200, isDaylightSaving: false, abbreviation: "GMT+0200")])
        #expect(try ZoneInfo.load(named: "UTC-05:30", directory: missing).types.first?.utcOffset == -19_800)
        #expect(try ZoneInfo.load(named: "GMT+0545", directory: missing).types.first?.utcOffset == 20_700)
        #expect(try ZoneInfo.load(named: "Etc/GMT+5", directory: missing).types.first?.utcOffset == -18_000)
        #expect(try ZoneInfo.load(named: "Etc/GMT-14", directory: missing).types.first?.utcOffset == 50_400)
        #expect(try ZoneInfo.load(named: "Etc/GMT+5", directory: Self.directory).types.first?.utcOffset == -18_000)
        #expect(ZoneInfo.fixedOffset("GMT+19") == nil && ZoneInfo.fixedOffset("GMT+2:3") == nil && ZoneInfo.fixedOffset("GMTx") == nil)
        #expect(throws: ZoneInfoError(name: "Europe/Berlin", reason: .notFound(directory: missing))) {
            try ZoneInfo.load(named: "Europe/Berlin", directory: missing)
        }
    }

    @Test func namesThatCouldLeaveTheDirectoryAreRefused() {
        for name in ["", "../../etc/passwd", "/etc/localtime", "Europe/../UTC", "Europe//Berlin", "Europe/Berlin/", "Europe/Berlin ",
                     "Europe/Berlin\0", "Europe\\Berlin", "Éurope/Berlin", ".hidden"] {
            #expect(throws: ZoneInfoError(name: name, reason: .invalidName)) { try ZoneInfo.load(named: name, directory: Self.directory) }
        }
        // A folder is not a zone.
        #expect(throws: ZoneInfoError(name: "Europe", reason: .notFound(directory: Self.directory))) {
            try ZoneInfo.load(named: "Europe", directory: Self.directory)
        }
    }

    @Test func namedZonesAreCachedAndConfigErrorsSuggest() throws {
        let first = try ZoneInfo.named("Europe/Berlin")
        #expect(try ZoneInfo.named("Europe/Berlin") == first)
        #expect(ZoneInfo.configProblem("Europe/Berlin") == nil)
        #expect(ZoneInfo.configProblem("Europe/Berln")
            == "unknown time zone \"Europe/Berln\"; did you mean \"Europe/Berlin\"? expected an IANA name such as Europe/Paris or UTC")
        #expect(ZoneInfo.configProblem("../etc/passwd") == "unknown time zone \"../etc/passwd\"; expected an IANA name such as Europe/Paris or UTC")
    }

    /// Every proper prefix of a real file is an error, as are broken headers and indices,
    /// and a thousand random corruptions parse or throw: none traps.
    @Test func damagedDataIsAnErrorNeverACrash() throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.directory + "/Europe/Berlin")))
        #expect(throws: Never.self) { try ZoneInfo(name: "Europe/Berlin", tzif: bytes, path: "Berlin") }
        for length in 0..<bytes.count {
            #expect(throws: ZoneInfoError.self) { try ZoneInfo(name: "x", tzif: Array(bytes.prefix(length)), path: "x") }
        }
        func damaged(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var copy = bytes
            change(&copy)
            return copy
        }
        let detail = { (data: [UInt8]) -> String in
            do throws(ZoneInfoError) {
                _ = try ZoneInfo(name: "x", tzif: data, path: "x")
                return "parsed"
            } catch {
                guard case .malformed(_, let detail) = error.reason else { return "\(error)" }
                return detail
            }
        }
        #expect(detail(damaged { $0[0] = UInt8(ascii: "X") }) == "no TZif magic")
        #expect(detail(damaged { $0[4] = UInt8(ascii: "1") }) == "unknown version byte")
        // The 64-bit header's type count (bytes 36...39 of the second header) set to zero.
        let second = 44 + Self.v1BlockSize(bytes)
        #expect(detail(damaged { $0.replaceSubrange((second + 36)..<(second + 40), with: [0, 0, 0, 0]) }) == "no local time types")
        #expect(detail(damaged { $0.replaceSubrange((second + 32)..<(second + 36), with: [0xFF, 0xFF, 0xFF, 0xFF]) }) == "truncated in the data block")
        #expect(detail(damaged { $0[bytes.count - 3] = UInt8(ascii: "!") }).hasPrefix("an invalid footer rule"))
        // Out-of-range transition type: the first transition's type index.
        let timeCount = Int(bytes[second + 32]) << 24 | Int(bytes[second + 33]) << 16 | Int(bytes[second + 34]) << 8 | Int(bytes[second + 35])
        #expect(detail(damaged { $0[second + 44 + timeCount * 8] = 200 }) == "a transition type out of range")
        #expect(detail(damaged { $0.replaceSubrange((second + 44)..<(second + 52), with: [0x7F, 0, 0, 0, 0, 0, 0, 0]) }) == "transition times not ascending")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let broken = damaged { copy in
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    copy[Int.random(in: 0..<copy.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            if let zone = try? ZoneInfo(name: "x", tzif: broken, path: "x") {
                for instant: Int64 in [-1 << 40, -1, 0, 1_800_000_000, 1 << 40] { _ = zone.localTime(atSecondsSince1970: instant) }
            }
        }
    }

    static func v1BlockSize(_ bytes: [UInt8]) -> Int {
        func count(_ index: Int) -> Int { (20 + index * 4..<24 + index * 4).reduce(0) { $0 << 8 | Int(bytes[$1]) } }
        let (isUT, isStandard, leap, time, type, characters) = (count(0), count(1), count(2), count(3), count(4), count(5))
        return time * 5 + type * 6 + characters + leap * 8 + isStandard + isUT
    }

    @Test func posixRulesParse() throws {
        let berlin = try #require(PosixTimeZoneRule(parsing: "CET-1CEST,M3.5.0,M10.5.0/3"))
        #expect(berlin.standard == .init(utcOffset: 3600, isDaylightSaving: false, abbreviation: "CET"))
        #expect(berlin.daylight == .init(utcOffset: 7200, isDaylightSaving: true, abbreviation: "CEST"))
        #expect(berlin.end == .init(day: .monthWeekDay(month: 10, week: 5, weekday: 0), time: 10_800))
        #expect(PosixTimeZoneRule(parsing: "<+0545>-5:45")?.standard.utcOffset == 20_700)
        #expect(PosixTimeZoneRule(parsing: "<-03>3")?.standard.abbreviation == "-03")
        // Daylight saving without a rule: the United States' rule, as tzcode assumes (glibc
        // instead bends America/New_York's history from `posixrules`, so no comparison here).
        let us = try #require(PosixTimeZoneRule(parsing: "XXX5YYY"))
        #expect(us.localTimeType(at: 1_782_907_200).abbreviation == "YYY")   // 2026-07-01 12:00 UTC
        #expect(us.localTimeType(at: 1_793_512_799).abbreviation == "YYY")   // 2026-11-01 01:59:59 YYY
        #expect(us.localTimeType(at: 1_793_512_800).abbreviation == "XXX")   // 2026-11-01 01:00:00 XXX
        for bad in ["", "CE-1", "CET", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0", "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,J0,J365",
                    "CET-1CEST,M3.5.0/168,M10.5.0", "CET-25", "<+03-3", "CET-1CEST,M3.5.0,M10.5.0/3x", "CET-1:60"] {
            #expect(PosixTimeZoneRule(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func civilDatesRoundTrip() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            let date = CivilTime.date(days: days)
            #expect(CivilTime.days(year: date.year, month: date.month, day: date.day) == days)
        }
        #expect(CivilTime.date(days: 0) == (1970, 1, 1))
        #expect(CivilTime.date(days: 11_016) == (2000, 2, 29))
        #expect(CivilTime.weekday(days: 0) == 4)
        #expect(ZoneInfo.wholeSeconds(-0.5) == -1 && ZoneInfo.wholeSeconds(.nan) == 0 && ZoneInfo.wholeSeconds(.infinity) == 1_000_000_000_000_000)
    }
}
