import Glibc
import Synchronization

extension ZoneInfo {
    /// Where zones are read from: `$TZDIR`, as for glibc, or `/usr/share/zoneinfo`.
    package static var directory: String {
        if let value = getenv("TZDIR"), value.pointee != 0 { return String(cString: value) }
        return "/usr/share/zoneinfo"
    }

    /// Zones already read, by name: every route's quiet hours with the same zone share one.
    private static let cache = Mutex<[String: ZoneInfo]>([:])

    /// The zone called `name` (`Europe/Berlin`, `UTC`, `GMT+02:00`), read once from
    /// ``directory`` and then cached for the life of the process (tzdata updates are
    /// seen by the next run, as with Foundation's `TimeZone`).
    package static func named(_ name: String) throws(ZoneInfoError) -> ZoneInfo {
        if let zone = cache.withLock({ $0[name] }) { return zone }
        let zone = try load(named: name, directory: directory)
        cache.withLock { $0[name] = zone }
        return zone
    }

    /// The machine's own zone: `$TZ` as glibc reads it, else `/etc/localtime`, else UTC.
    /// Read once, like Foundation's `TimeZone.current`.
    package static var local: ZoneInfo { localZone }

    private static let localZone = local(tz: getenv("TZ").map { String(cString: $0) }, directory: directory)

    /// `tz` is `$TZ`: unset means `localtime`; empty means UTC; `:Europe/Berlin`,
    /// `Europe/Berlin` and `/path/to/tzif` name a file; anything else is tried as a POSIX
    /// rule (`CET-1CEST,M3.5.0,M10.5.0/3`). What cannot be read is UTC, as for glibc.
    static func local(tz: String?, directory: String, localtime: String = "/etc/localtime") -> ZoneInfo {
        guard var spec = tz else { return (try? file(at: localtime, name: "localtime", directory: nil)) ?? .utc }
        if spec.hasPrefix(":") { spec.removeFirst() }
        if spec.isEmpty { return .utc }
        if spec.hasPrefix("/") { return (try? file(at: spec, name: spec, directory: nil)) ?? .utc }
        if let zone = try? load(named: spec, directory: directory) { return zone }
        if let rule = PosixTimeZoneRule(parsing: spec) { return ZoneInfo(name: spec, rule: rule) }
        return .utc
    }

    /// Reads `name` from `directory`, uncached. UTC, GMT and fixed offsets work without
    /// any tzdata.
    static func load(named name: String, directory: String) throws(ZoneInfoError) -> ZoneInfo {
        // Before the name check: `UTC+05:30` has a colon, which no file name has.
        if let fixed = fixedOffset(name) { return fixed }
        guard isValidName(name) else { throw ZoneInfoError(name: name, reason: .invalidName) }
        do {
            return try file(at: directory + "/" + name, name: name, directory: directory)
        } catch {
            if case .notFound = error.reason, let builtIn = builtIn(name) { return builtIn }
            throw error
        }
    }

    /// A zone name as tzdata spells them: `[A-Za-z0-9_+-]` parts joined by `/`, nothing
    /// that could leave the zone directory (no `..`, no leading `/`).
    static func isValidName(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        return !name.isEmpty && name.utf8.count <= 255 && !name.contains("..") && !name.hasPrefix("/")
            && parts.allSatisfy { !$0.isEmpty }
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "/"): true
                default: false
                }
            }
    }

    /// `GMT+2`, `UTC-05`, `GMT+0530`, `UTC+05:30`: a fixed offset east of UTC, as
    /// Foundation's `TimeZone(identifier:)` reads them (unlike tzdata's `Etc/GMT+2`, which
    /// is two hours *west*).
    static func fixedOffset(_ name: String) -> ZoneInfo? {
        guard name.hasPrefix("GMT") || name.hasPrefix("UTC") else { return nil }
        let rest = Array(name.utf8.dropFirst(3))
        guard let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
        let digits = rest.dropFirst().filter { $0 != UInt8(ascii: ":") }
        guard (1...4).contains(digits.count), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        // A colon only as HH:MM.
        let colons = rest.count - 1 - digits.count
        guard colons == 0 || (colons == 1 && rest.count == 6 && rest[3] == UInt8(ascii: ":")) else { return nil }
        let values = digits.map { Int($0 - UInt8(ascii: "0")) }
        let hours: Int, minutes: Int
        switch values.count {
        case 1, 2: (hours, minutes) = (values.reduce(0) { $0 * 10 + $1 }, 0)
        case 4: (hours, minutes) = (values[0] * 10 + values[1], values[2] * 10 + values[3])
        default: return nil
        }
        guard hours <= 18, minutes < 60 else { return nil }
        let seconds = (sign == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60)
        let abbreviation = seconds == 0 ? "GMT" : "GMT" + (sign == UInt8(ascii: "-") ? "-" : "+") + twoDigits(hours) + twoDigits(minutes)
        return ZoneInfo(name: name, fixed: LocalTimeType(utcOffset: seconds, isDaylightSaving: false, abbreviation: abbreviation))
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// UTC and GMT under their tzdata names, and `Etc/GMT-14` ... `Etc/GMT+12`, for a
    /// machine without tzdata.
    static func builtIn(_ name: String) -> ZoneInfo? {
        let bare = name.hasPrefix("Etc/") ? String(name.dropFirst(4)) : name
        if ["UTC", "UCT", "Universal", "Zulu"].contains(bare) {
            return ZoneInfo(name: name, fixed: LocalTimeType(utcOffset: 0, isDaylightSaving: false, abbreviation: "UTC"))
        }
        if ["GMT", "GMT0", "GMT+0", "GMT-0", "Greenwich"].contains(bare) {
            return ZoneInfo(name: name, fixed: LocalTimeType(utcOffset: 0, isDaylightSaving: false, abbreviation: "GMT"))
        }
        // POSIX signs: Etc/GMT+5 is five hours west.
        guard name.hasPrefix("Etc/GMT"), let hours = Int(name.dropFirst(7)), name.count > 8, (-14...12).contains(hours) else { return nil }
        let abbreviation = (hours > 0 ? "-" : "+") + twoDigits(abs(hours))
        return ZoneInfo(name: name, fixed: LocalTimeType(utcOffset: -hours * 3600, isDaylightSaving: false, abbreviation: abbreviation))
    }

    package static let builtInNames = ["UTC", "GMT", "Etc/UTC", "Etc/GMT"]

    /// Reads and parses one TZif file. `directory` is where a missing file was looked for.
    static func file(at path: String, name: String, directory: String?) throws(ZoneInfoError) -> ZoneInfo {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR || code == ENAMETOOLONG {
                throw ZoneInfoError(name: name, reason: .notFound(directory: directory ?? path))
            }
            throw ZoneInfoError(name: name, reason: .unreadable(path: path, errno: code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ZoneInfoError(name: name, reason: .unreadable(path: path, errno: errno)) }
        // A directory (`Europe`) is not a zone.
        guard info.st_mode & S_IFMT == S_IFREG else { throw ZoneInfoError(name: name, reason: .notFound(directory: directory ?? path)) }
        // The largest tzdata file is a few kilobytes.
        let limit = 1 << 20
        guard info.st_size <= limit else { throw ZoneInfoError(name: name, reason: .malformed(path: path, detail: "larger than 1 MiB")) }
        // One byte past the size, to see a file that grew since the stat.
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got == 0 { break }
            if got < 0 {
                if errno == EINTR { continue }
                throw ZoneInfoError(name: name, reason: .unreadable(path: path, errno: errno))
            }
            count += got
        }
        guard count <= size else { throw ZoneInfoError(name: name, reason: .malformed(path: path, detail: "changed while being read")) }
        bytes.removeSubrange(count...)
        return try ZoneInfo(name: name, tzif: bytes, path: path)
    }
}
