#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute

/// A `kind: alertmanager` sink's options, checked. Both executables check them here, so that
/// `notify-route`, which routes an event that reaches no network sink itself, refuses a bad
/// option as `notify-route-network` would (same message, same place, same exit code).
public struct AlertmanagerSettings: Sendable {
    /// The `POST /api/v2/alerts` endpoint of each peer (`url` and `urls` together, once each).
    public var endpoints: [String]
    public var staticLabels: [String: String]
    /// `nil`: the host name (``NetworkSinkSchema/hostName``).
    public var instance: String?
    public var alertnameField: String?
    public var generatorURL: String?
    public var resolveAfter: Duration?
    public var timeout: Duration?

    public init(_ options: SinkOptions) throws(ConfigError) {
        var endpoints: [String] = []
        for (key, urls) in [("url", try options.string("url").map { [$0] } ?? []), ("urls", try options.stringList("urls") ?? [])] {
            for url in urls {
                let endpoint = try NetworkOptions.baseURL(url, options: options, key: key) + "/api/v2/alerts"
                if !endpoints.contains(endpoint) { endpoints.append(endpoint) }
            }
        }
        guard !endpoints.isEmpty else {
            throw options.error("needs `url` (or `urls`: every peer of a cluster), for example url: http://127.0.0.1:9093", at: "url")
        }
        self.endpoints = endpoints
        try SinkRetry.check(options)
        let field = try options.string("alertname_field")
        if let field, field.isEmpty { throw options.error("alertname_field must name a field", at: "alertname_field") }
        alertnameField = field
        staticLabels = try Self.staticLabels(options)
        instance = try options.string("instance")
        // Alertmanager's schema wants a URI here and refuses the whole post (422) otherwise.
        generatorURL = try options.string("generator_url").map { url throws(ConfigError) in
            _ = try NetworkOptions.baseURL(url, options: options, key: "generator_url")
            return url
        }
        resolveAfter = try NetworkOptions.positiveDuration("resolve_after", options: options)
        timeout = try NetworkOptions.positiveDuration("timeout", options: options)
    }

    /// `labels`, each name one Alertmanager accepts: it refuses the whole post (400) for one
    /// that is not, so a bad name is a config error at its place, with the name to write instead.
    static func staticLabels(_ options: SinkOptions) throws(ConfigError) -> [String: String] {
        guard let labels = try options.stringMap("labels") else { return [:] }
        guard case .mapping(let entries)? = options.entries.first(where: { $0.key == "labels" })?.value.value else { return labels }
        for entry in entries where Self.sanitizedName(entry.key) != entry.key {
            throw ConfigError(
                "sink \"\(options.sinkName)\": labels: \"\(entry.key)\" is not a label name Alertmanager accepts ([a-zA-Z_][a-zA-Z0-9_]*); write \(Self.sanitizedName(entry.key))",
                at: entry.keyLocation)
        }
        return labels
    }

    /// A label name Alertmanager 0.25 accepts: `[a-zA-Z_][a-zA-Z0-9_]*`, every other
    /// character replaced by `_`.
    public static func sanitizedName(_ name: String) -> String {
        var result = ""
        for scalar in name.unicodeScalars {
            let isDigit = ("0"..."9").contains(scalar)
            let isLetter = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
            if result.isEmpty && isDigit { result.append("_") }
            result.unicodeScalars.append(isLetter || isDigit ? scalar : "_")
        }
        return result.isEmpty ? "_" : result
    }
}

/// A `kind: webhook` sink's options, checked (see ``AlertmanagerSettings``). A token file
/// that exists is read and checked here: a refused one is a config error in both executables.
public struct WebhookSettings: Sendable {
    public var url: String
    /// Sorted by name, the bearer token's last.
    public var headers: [(String, String)]
    /// A token file that did not exist when the config was loaded: read at each delivery until it does.
    public var pendingTokenFile: String?
    public var timeout: Duration?

    public init(_ options: SinkOptions) throws(ConfigError) {
        guard let url = try options.string("url") else {
            throw options.error("needs `url`, for example url: https://hooks.example/notify", at: "url")
        }
        try SinkRetry.check(options)
        var headers: [(String, String)] = []
        for (name, value) in (try options.stringMap("headers") ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
                throw options.error("headers: \"\(name)\" is not an HTTP header name", at: "headers")
            }
            guard !value.contains(where: \.isNewline) else {
                throw options.error("headers: the value of \(name) must be one line", at: "headers")
            }
            headers.append((name, value))
        }
        if let path = try options.string("token_file"), access(path, F_OK) != 0 && errno == ENOENT {
            pendingTokenFile = path
        } else if let path = try options.string("token_file") {
            do throws(TokenFile.Refused) {
                headers.append(("Authorization", "Bearer " + (try TokenFile.read(path))))
            } catch {
                throw options.error("token_file \(path): \(error.reason)", at: "token_file")
            }
        }
        self.url = try NetworkOptions.baseURL(url, options: options, key: "url")
        self.headers = headers
        timeout = try NetworkOptions.positiveDuration("timeout", options: options)
    }
}

extension NetworkSinkSchema {
    /// This machine's name, the default `instance` (and a webhook body's `host`).
    public static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Option checks the network sinks share.
enum NetworkOptions {
    /// `url` without a trailing slash, after checking it is an http(s) URL with a host.
    static func baseURL(_ url: String, options: SinkOptions, key: String) throws(ConfigError) -> String {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parsed.host, !host.isEmpty
        else {
            throw options.error("\"\(SecretText.redactedURL(url))\" is not an http:// or https:// URL with a host", at: key)
        }
        // Never sent as it stands, and shown nowhere: a password here would only leak.
        guard parsed.user == nil && parsed.password == nil else {
            throw options.error(
                "\(SecretText.redactedURL(url)): a user or password in the URL is not sent; put the credentials in headers: { Authorization: ... } or token_file",
                at: key)
        }
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    static func positiveDuration(_ key: String, options: SinkOptions) throws(ConfigError) -> Duration? {
        guard let duration = try options.duration(key) else { return nil }
        guard duration > .zero else { throw options.error("\(key) must be longer than 0s", at: key) }
        return duration
    }
}

/// A secret in a file, held to the rules of a private key: owned by the user or root,
/// readable by no one else, writable by no group.
public enum TokenFile {
    public struct Refused: Error {
        public var reason: String
    }

    public static func read(_ path: String) throws(Refused) -> String {
        guard path.hasPrefix("/") else { throw Refused(reason: "give an absolute path") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Refused(reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        // fstat on the descriptor read from: the file cannot be swapped between check and read.
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Refused(reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Refused(reason: "not a regular file") }
        let me = getuid()
        if info.st_uid != me && info.st_uid != 0 {
            throw Refused(reason: "owned by uid \(info.st_uid), neither you (uid \(me)) nor root")
        }
        if info.st_mode & (S_IROTH | S_IWOTH | S_IWGRP) != 0 {
            throw Refused(reason: "others can read or write it (mode \(String(info.st_mode & 0o7777, radix: 8))); run: chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while bytes.count <= 65_536 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw Refused(reason: String(cString: strerror(errno))) }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let token = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !token.isEmpty else { throw Refused(reason: "the file is empty") }
        guard !token.contains(where: \.isNewline) else { throw Refused(reason: "the token must be one line") }
        return token
    }
}
