/// Why a zone could not be had: the name, the file, or what is wrong in the file.
package struct ZoneInfoError: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Reason: Hashable, Sendable {
        /// Not a zone name: empty, `..`, a leading `/`, or a character outside `[A-Za-z0-9_+-/]`.
        case invalidName
        /// No such file under the zone directory (or not a regular file).
        case notFound(directory: String)
        /// The file exists but cannot be read.
        case unreadable(path: String, errno: Int32)
        /// The file is not valid TZif data (RFC 8536): truncated, a bad magic or count, ...
        case malformed(path: String, detail: String)
    }

    package var name: String
    package var reason: Reason

    package var description: String {
        switch reason {
        case .invalidName: "invalid time zone name \"\(name)\""
        case .notFound(let directory): "unknown time zone \"\(name)\" (not in \(directory))"
        case .unreadable(let path, let code): "time zone \"\(name)\": cannot read \(path) (errno \(code))"
        case .malformed(let path, let detail): "time zone \"\(name)\": \(path) is not a valid TZif file: \(detail)"
        }
    }
}

extension ZoneInfo {
    /// Parses TZif data (RFC 8536, versions 1 to 4): the 64-bit block and the footer's POSIX
    /// rule when the version has them, else the 32-bit block. Leap-second records are
    /// skipped, as `date` does for the zones outside `right/`.
    ///
    /// Throws `malformed` (with `path` in the message) for anything inconsistent; never traps.
    init(name: String, tzif bytes: [UInt8], path: String) throws(ZoneInfoError) {
        var reader = TZifReader(bytes: bytes)
        do throws(TZifProblem) {
            let first = try reader.header()
            if first.version == 0 {
                self = try reader.block(first, timeSize: 4, name: name)
            } else {
                try reader.skipBlock(first, timeSize: 4)
                let second = try reader.header()
                var zone = try reader.block(second, timeSize: 8, name: name)
                zone.rule = try reader.footer()
                self = zone
            }
        } catch {
            throw ZoneInfoError(name: name, reason: .malformed(path: path, detail: error.detail))
        }
    }
}

/// A problem in TZif data, said in a few words.
private struct TZifProblem: Error {
    var detail: String
    init(_ detail: String) { self.detail = detail }
}

private struct TZifHeader {
    var version: Int
    var isUTCCount: Int, isStandardCount: Int, leapCount: Int, timeCount: Int, typeCount: Int, characterCount: Int

    func blockSize(timeSize: Int) -> Int {
        timeCount * timeSize + timeCount + typeCount * 6 + characterCount + leapCount * (timeSize + 4) + isStandardCount + isUTCCount
    }
}

private struct TZifReader {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ count: Int, _ what: String) throws(TZifProblem) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else { throw TZifProblem("truncated in \(what)") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func header() throws(TZifProblem) -> TZifHeader {
        let raw = try take(44, "the header")
        guard raw.prefix(4).elementsEqual("TZif".utf8) else { throw TZifProblem("no TZif magic") }
        let version: Int
        switch raw[raw.startIndex + 4] {
        case 0: version = 0
        case UInt8(ascii: "2"): version = 2
        case UInt8(ascii: "3"): version = 3
        case UInt8(ascii: "4"): version = 4
        // RFC 8536: readers should accept later versions they do not know.
        case let byte where byte > UInt8(ascii: "4"): version = 5
        default: throw TZifProblem("unknown version byte")
        }
        let counts = (0..<6).map { Int(Self.uint32(raw, at: raw.startIndex + 20 + $0 * 4)) }
        let header = TZifHeader(version: version, isUTCCount: counts[0], isStandardCount: counts[1], leapCount: counts[2],
                                timeCount: counts[3], typeCount: counts[4], characterCount: counts[5])
        return header
    }

    mutating func skipBlock(_ header: TZifHeader, timeSize: Int) throws(TZifProblem) {
        _ = try take(header.blockSize(timeSize: timeSize), "the version 1 data")
    }

    mutating func block(_ header: TZifHeader, timeSize: Int, name: String) throws(TZifProblem) -> ZoneInfo {
        guard header.typeCount > 0, header.characterCount > 0 else { throw TZifProblem("no local time types") }
        guard header.typeCount <= 256 else { throw TZifProblem("more than 256 local time types") }
        guard header.isUTCCount == 0 || header.isUTCCount == header.typeCount,
              header.isStandardCount == 0 || header.isStandardCount == header.typeCount
        else { throw TZifProblem("indicator counts differ from the type count") }
        guard header.blockSize(timeSize: timeSize) <= bytes.count - offset else { throw TZifProblem("truncated in the data block") }
        let times = try take(header.timeCount * timeSize, "transition times")
        var transitions: [Int64] = []
        transitions.reserveCapacity(header.timeCount)
        for index in 0..<header.timeCount {
            let at = times.startIndex + index * timeSize
            let time = timeSize == 8 ? Int64(bitPattern: Self.uint64(times, at: at)) : Int64(Int32(bitPattern: Self.uint32(times, at: at)))
            if let previous = transitions.last, time <= previous { throw TZifProblem("transition times not ascending") }
            transitions.append(time)
        }
        let transitionTypes = try take(header.timeCount, "transition types").map(Int.init)
        guard transitionTypes.allSatisfy({ $0 < header.typeCount }) else { throw TZifProblem("a transition type out of range") }
        let rawTypes = try take(header.typeCount * 6, "local time types")
        let characters = try take(header.characterCount, "abbreviations")
        var types: [ZoneInfo.LocalTimeType] = []
        for index in 0..<header.typeCount {
            let at = rawTypes.startIndex + index * 6
            let utcOffset = Int32(bitPattern: Self.uint32(rawTypes, at: at))
            let isDaylight = rawTypes[at + 4]
            let abbreviationIndex = Int(rawTypes[at + 5])
            guard utcOffset != Int32.min, isDaylight <= 1 else { throw TZifProblem("a bad local time type") }
            guard abbreviationIndex < header.characterCount else { throw TZifProblem("an abbreviation index out of range") }
            let abbreviation = characters.dropFirst(abbreviationIndex).prefix { $0 != 0 }
            types.append(ZoneInfo.LocalTimeType(utcOffset: Int(utcOffset), isDaylightSaving: isDaylight == 1,
                                                abbreviation: String(decoding: abbreviation, as: UTF8.self)))
        }
        _ = try take(header.leapCount * (timeSize + 4) + header.isStandardCount + header.isUTCCount, "leap seconds and indicators")
        return ZoneInfo(name: name, transitions: transitions, transitionTypes: transitionTypes, types: types, rule: nil)
    }

    /// `\n` rule `\n`; an empty rule means none.
    mutating func footer() throws(TZifProblem) -> PosixTimeZoneRule? {
        guard try take(1, "the footer") == [UInt8(ascii: "\n")] else { throw TZifProblem("no footer") }
        let rest = bytes[offset...]
        guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else { throw TZifProblem("truncated in the footer") }
        let text = String(decoding: rest[..<newline], as: UTF8.self)
        offset = newline + 1
        if text.isEmpty { return nil }
        guard let rule = PosixTimeZoneRule(parsing: text) else { throw TZifProblem("an invalid footer rule \"\(text)\"") }
        return rule
    }

    static func uint32(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt32 {
        bytes[index..<(index + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func uint64(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt64 {
        bytes[index..<(index + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
