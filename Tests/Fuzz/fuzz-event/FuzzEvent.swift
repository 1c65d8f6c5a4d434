import NotifyRoute

/// One input: bytes as a line of `notify-route ingest`. Invalid UTF-8 is repaired as
/// ingest does; the decoder either refuses the line with a message or gives an event,
/// which the normaliser either refuses (an empty title, too many fields) or cleans so
/// that no control character is left for a terminal.
func fuzzEvent(_ bytes: UnsafeRawBufferPointer) {
    let line = String(decoding: bytes, as: UTF8.self)
    let event: NotificationEvent
    do {
        event = try NotificationEvent.decode(jsonLine: line)
    } catch {
        precondition(!error.message.isEmpty, "an empty event error")
        return
    }
    guard let normal = try? EventNormalizer.normalize(event) else { return }
    precondition(!normal.title.isEmpty, "an empty title passed normalisation")
    precondition(normal.title.count <= EventNormalizer.maximumTitleLength, "title over the cap")
    for text in [normal.title, normal.body ?? ""] {
        for scalar in text.unicodeScalars where scalar != "\n" {
            precondition(!(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)),
                         "control character U+\(String(scalar.value, radix: 16)) left in \(text.debugDescription)")
        }
    }
    precondition(!normal.title.contains("\n"), "a multi-line title")
}
