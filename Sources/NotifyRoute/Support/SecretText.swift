/// How text that may hold a secret is shown in reports, errors, logs, `status`, the
/// history and `config show`.
public enum SecretText {
    /// What `config show` writes for a secret value.
    public static let placeholder = "<secret>"

    /// `url` as its scheme, host and port; userinfo, a path, a query or a fragment, any of
    /// which may hold a secret, become `/…` (`https://hooks.example/…`). Text that is no
    /// URL is shown as it is when it is a word or two, `…` when it has a path.
    public static func redactedURL(_ url: String) -> String {
        let bytes = Array(url.utf8)
        func isPathMark(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return bytes.contains { isPathMark($0) || $0 == UInt8(ascii: "@") } ? "…" : url
        }
        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex(where: isPathMark) ?? bytes.endIndex
        let hostStart = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? authorityStart
        let tail = bytes[authorityEnd...]
        let origin = String(decoding: bytes[..<authorityStart] + bytes[hostStart..<authorityEnd], as: UTF8.self)
        return tail.isEmpty || tail.elementsEqual("/".utf8) ? origin : origin + "/…"
    }
}
