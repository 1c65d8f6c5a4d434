import NotifyRoute

extension DaemonProtocol.Request {
    /// The request of a line in the shape clients write (``PlainJSONReader``: its id, kind,
    /// sinks, flags and a plain event), read without the JSON tree; `nil` for any other
    /// line, which ``parse(_:)`` reads with the tree, wording the errors.
    package static func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> Self? {
        var reader = PlainJSONReader(bytes)
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        var kind: DaemonProtocol.Kind?
        var id, waitFor: Int?
        var event: NotificationEvent?
        var sinks: [String]?
        var wait, dryRun: Bool?
        var replaceKey, terminal: String?
        var seen: UInt16 = 0
        if !reader.take(UInt8(ascii: "}")) {
            repeat {
                guard let key = reader.rawString(), reader.take(UInt8(ascii: ":")), let member = Self.member(key),
                      seen & 1 << member == 0
                else { return nil }
                seen |= 1 << member
                switch member {
                case 0:
                    guard let text = reader.string(), let known = DaemonProtocol.Kind(rawValue: text) else { return nil }
                    kind = known
                case 1: guard let number = reader.integerOrNull() else { return nil }; id = number
                case 2: guard let read = reader.event() else { return nil }; event = read
                case 3: guard let names = reader.strings() else { return nil }; sinks = names
                case 4: guard let flag = reader.boolOrNull() else { return nil }; wait = flag
                case 5: guard let flag = reader.boolOrNull() else { return nil }; dryRun = flag
                case 6: guard let text = reader.string() else { return nil }; replaceKey = text
                case 8:
                    guard let text = reader.string(), !text.isEmpty, text.utf8.count <= DaemonProtocol.maximumTerminalBytes else { return nil }
                    terminal = text
                default: guard let number = reader.integerOrNull() else { return nil }; waitFor = number
                }
            } while reader.take(UInt8(ascii: ","))
            guard reader.take(UInt8(ascii: "}")) else { return nil }
        }
        guard reader.atEnd(), let kind else { return nil }
        switch kind {
        case .send where event == nil, .close where replaceKey == nil, .wait where waitFor == nil: return nil
        default: break
        }
        var request = Self(kind: kind, id: id)
        if let event { request.notification = event }
        request.sinks = sinks
        request.wait = wait ?? false
        request.dryRun = dryRun ?? false
        request.replaceKey = replaceKey
        request.waitFor = waitFor
        request.terminal = terminal
        return request
    }

    /// A number for each of ``DaemonProtocol/requestKeys``, the cases of ``plain(_:)``'s `switch`.
    private static func member(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        switch key.count {
        case 2: PlainJSONReader.spells(key, "id") ? 1 : nil
        case 3: PlainJSONReader.spells(key, "for") ? 7 : nil
        case 4: PlainJSONReader.spells(key, "wait") ? 4 : nil
        case 5: PlainJSONReader.spells(key, "event") ? 2 : PlainJSONReader.spells(key, "sinks") ? 3 : nil
        case 7: PlainJSONReader.spells(key, "request") ? 0 : PlainJSONReader.spells(key, "dry_run") ? 5 : nil
        case 8: PlainJSONReader.spells(key, "terminal") ? 8 : nil
        case 11: PlainJSONReader.spells(key, "replace_key") ? 6 : nil
        default: nil
        }
    }
}
