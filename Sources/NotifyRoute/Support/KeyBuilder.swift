/// Keys built per event and sink (the state's keys, the default dedup key): the parts'
/// UTF-8 copied into one string of the right size, made in one allocation (none up to
/// 15 bytes), where appending part by part grows the string once or twice per part; the
/// result is the same string, byte for byte.
enum KeyBuilder {
    /// `first`, `separator`, `second`.
    static func join(_ first: String, _ second: String, separator: UInt8) -> String {
        let count = first.utf8.count + 1 + second.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = 0
            copy(first, into: buffer, at: &offset)
            buffer[offset] = separator
            offset += 1
            copy(second, into: buffer, at: &offset)
            return offset
        }
    }

    /// `first` then `second`.
    static func concatenate(_ first: String, _ second: String) -> String {
        let count = first.utf8.count + second.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = 0
            copy(first, into: buffer, at: &offset)
            copy(second, into: buffer, at: &offset)
            return offset
        }
    }

    /// The four parts, each followed by `separator` but the last.
    static func join(_ first: String, _ second: String, _ third: String, _ fourth: String, separator: UInt8) -> String {
        let count = first.utf8.count + second.utf8.count + third.utf8.count + fourth.utf8.count + 3
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = 0
            copy(first, into: buffer, at: &offset)
            buffer[offset] = separator
            offset += 1
            copy(second, into: buffer, at: &offset)
            buffer[offset] = separator
            offset += 1
            copy(third, into: buffer, at: &offset)
            buffer[offset] = separator
            offset += 1
            copy(fourth, into: buffer, at: &offset)
            return offset
        }
    }

    /// The parts with `separator` between them: what `joined(separator:)` gives, without its
    /// generic path, whose first call in a process looks up associated types at run time.
    static func join(_ parts: [String], separator: String) -> String {
        var count = separator.utf8.count * max(0, parts.count - 1)
        for part in parts { count += part.utf8.count }
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = 0
            for index in parts.indices {
                if index > 0 { copy(separator, into: buffer, at: &offset) }
                copy(parts[index], into: buffer, at: &offset)
            }
            return offset
        }
    }

    @inline(__always)
    private static func copy(_ part: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: inout Int) {
        let start = offset
        let copied: Int? = part.utf8.withContiguousStorageIfAvailable { bytes in
            guard let source = bytes.baseAddress, bytes.count > 0 else { return 0 }
            (buffer.baseAddress! + start).update(from: source, count: bytes.count)
            return bytes.count
        }
        if let copied {
            offset += copied
        } else {
            for byte in part.utf8 {
                buffer[offset] = byte
                offset += 1
            }
        }
    }
}
