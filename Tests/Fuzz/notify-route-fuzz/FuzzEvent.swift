import NotifyRoute

/// One input: bytes as a line of `notify-route ingest`. Invalid UTF-8 is repaired as
/// ingest does; the decoder either refuses the line with a message or gives an event,
/// which the normaliser either refuses (an empty title, too many fields) or cleans so
/// that no control character is left for a terminal (tabs and newlines in the body excepted).
/// A line the daemon's plain reader reads, it reads as the decoder does.
func fuzzEvent(_ bytes: UnsafeRawBufferPointer) {
    let line = String(decoding: bytes, as: UTF8.self)
    let plain = bytes.withMemoryRebound(to: UInt8.self) { NotificationEvent.plain($0) }
    let event: NotificationEvent
    do {
        event = try NotificationEvent.decode(jsonLine: line)
    } catch {
        precondition(!error.message.isEmpty, "an empty event error")
        precondition(plain == nil, "the plain reader read a line the decoder refuses: \(error.message)")
        return
    }
    precondition(plain == nil || plain == event, "the plain reader read \(String(describing: plain)), the decoder \(event)")
    guard let normal = try? EventNormalizer.normalize(event) else { return }
    precondition(!normal.title.isEmpty, "an empty title passed normalisation")
    precondition(normal.title.count <= EventNormalizer.maximumTitleLength, "title over the cap")
    // The title is one line; the body keeps newlines and tabs (a terminal sink turns tabs
    // into spaces itself). Nothing else below U+0020, no DEL, no C1, no bidi override.
    for (text, allowed) in [(normal.title, Set<Unicode.Scalar>()), (normal.body ?? "", ["\n", "\t"])] {
        for scalar in text.unicodeScalars where !allowed.contains(scalar) {
            let value = scalar.value
            precondition(!(value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)),
                         "U+\(String(value, radix: 16)) left in \(text.debugDescription)")
        }
    }
}
