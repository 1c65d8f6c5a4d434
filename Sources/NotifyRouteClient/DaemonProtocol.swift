#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute

/// The daemon's wire protocol: JSON lines over a Unix stream socket, one request and
/// one answer per line, in order. The README's "The daemon protocol" documents it for
/// other languages.
///
/// ```
/// → {"hello":"notify-route","version":1}
/// ← {"hello":"notify-route","pid":4242,"version":1}
/// → {"id":1,"request":"send","event":{"title":"Disk full","level":"warning"}}
/// ← {"exit":0,"id":1,"problems":[],"report":{...},"text":"delivered: ..."}
/// ```
///
/// Version 2 lets a client send its first request with its hello, a round trip less,
/// and still give up on a daemon that does not greet in time without the event being
/// routed twice: the hello says by when (``Hello/greetBy``) the greeting must be written.
public enum DaemonProtocol {
    public static let name = "notify-route"
    public static let version = 1
    /// The hello whose first request may come before the greeting (``Hello/greetBy``).
    public static let pipeliningVersion = 2
    /// The versions a daemon speaks; it greets in the version it was greeted in.
    public static let versions = version...pipeliningVersion
    /// The longest request line read; longer lines are answered with an error and the
    /// connection is closed (a stream cannot be resynchronised mid-line).
    public static let maximumLineBytes = 1 << 20

    public static let requestKeys = ["id", "request", "event", "sinks", "wait", "dry_run", "replace_key", "for", "terminal"]
    /// The longest ``Request/terminal`` path a daemon reads.
    public static let maximumTerminalBytes = 64

    /// What a client may ask.
    public enum Kind: String, CaseIterable, Sendable {
        case send, close, wait, reload, status
        /// End `notify-route pause` and deliver what it held (the answer's `status`: `held`, `summarised`).
        case resume
    }

    /// One request line, checked: unknown keys and wrong types are errors, never ignored.
    public struct Request: Sendable {
        public var id: Int?
        public var kind: Kind
        /// The event object (the ingest schema).
        public var event: JSONValue? {
            get { eventValue ?? eventObject.map(JSONValue.init) ?? notification?.jsonValue }
            set { eventValue = newValue; eventObject = nil; notification = nil }
        }
        private var eventValue: JSONValue?
        /// A client's: the event to send, written into the request line from its fields
        /// (``line``), as ``event`` would be but without a dictionary made and sorted first.
        public var notification: NotificationEvent? {
            didSet { if notification != nil { eventValue = nil; eventObject = nil } }
        }
        public var sinks: [String]?
        public var wait = false
        public var dryRun = false
        public var replaceKey: String?
        public var waitFor: Int?
        /// A send's: the client's terminal (`/dev/pts/3`), for the sinks that draw on the
        /// caller's terminal (banners). The daemon uses it only when the client has it open.
        public var terminal: String?
        /// The daemon's: ``event`` as parsed from the request line, which the ingest
        /// decoder reads without the line being parsed again.
        package var eventObject: JSONLine?

        public init(kind: Kind, id: Int? = nil) {
            self.kind = kind
            self.id = id
        }

        /// Parses a request line; the error says what is wrong in words a client can show.
        public static func parse(_ line: some Collection<UInt8>) throws(ProtocolError) -> Request {
            // Matched, not `?? nil`: the request is moved out, not copied and the original destroyed.
            switch line.withContiguousStorageIfAvailable(plain) {
            case .some(.some(let request)): return request
            default: return try parseTree(line)
            }
        }

        /// ``parse(_:)`` through the JSON tree, as any line but a plain one (``plain(_:)``) is read.
        package static func parseTree(_ line: some Collection<UInt8>) throws(ProtocolError) -> Request {
            let root = try parseLine(line)
            guard case .object(let members) = root else { throw ProtocolError("expected a JSON object") }
            // Each member taken in one pass, by key (the parser refused duplicate keys); the
            // event stays as parsed, for the daemon to decode from there (``eventObject``).
            var kindValue, idValue, event, sinksValue, waitValue, dryRunValue, replaceKeyValue, forValue, terminalValue: JSONLine?
            var unknownKey = false
            for (key, value) in members {
                switch key {
                case "request": kindValue = kindValue ?? value
                case "event": event = event ?? value
                case "sinks": sinksValue = sinksValue ?? value
                case "id": idValue = idValue ?? value
                case "wait": waitValue = waitValue ?? value
                case "dry_run": dryRunValue = dryRunValue ?? value
                case "replace_key": replaceKeyValue = replaceKeyValue ?? value
                case "for": forValue = forValue ?? value
                case "terminal": terminalValue = terminalValue ?? value
                default: unknownKey = true
                }
            }
            if unknownKey, let unknown = members.map(\.key).sorted().first(where: { !requestKeys.contains($0) }) {
                throw ProtocolError("unknown key \"\(unknown)\"; a request has: \(requestKeys.joined(separator: ", "))")
            }
            guard case .string(let kindText)? = kindValue else {
                throw ProtocolError("missing \"request\"; one of: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let kind = Kind(rawValue: kindText) else {
                throw ProtocolError("unknown request \"\(kindText)\"; one of: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var request = Request(kind: kind)
            request.id = try integer(idValue, "id", in: line)
            request.eventObject = event
            if let sinks = sinksValue {
                guard case .array(let items) = sinks else { throw ProtocolError("\"sinks\": expected an array of sink names") }
                var names: [String] = []
                names.reserveCapacity(items.count)
                for item in items {
                    guard case .string(let name) = item else { throw ProtocolError("\"sinks\": expected an array of sink names") }
                    names.append(name)
                }
                request.sinks = names
            }
            request.wait = try flag(waitValue.map(JSONValue.init), "wait")
            request.dryRun = try flag(dryRunValue.map(JSONValue.init), "dry_run")
            if let key = replaceKeyValue {
                guard case .string(let text) = key else { throw ProtocolError("\"replace_key\": expected a string") }
                request.replaceKey = text
            }
            request.waitFor = try integer(forValue, "for", in: line)
            switch terminalValue {
            case nil, .null?: break
            case .string(let path)? where !path.isEmpty && path.utf8.count <= maximumTerminalBytes: request.terminal = path
            default: throw ProtocolError("\"terminal\": expected a terminal device path of at most \(maximumTerminalBytes) bytes")
            }
            switch kind {
            case .send where request.eventObject == nil: throw ProtocolError("a send needs an \"event\" object (the ingest schema)")
            case .close where request.replaceKey == nil: throw ProtocolError("a close needs a \"replace_key\"")
            case .wait where request.waitFor == nil: throw ProtocolError("a wait needs \"for\": the id of an earlier send on this connection")
            default: break
            }
            return request
        }

        /// The largest integer a request may carry: fifteen digits, exact in any client's doubles.
        public static let maximumInteger = 999_999_999_999_999

        /// A member that is a whole number written as digits alone, from 0 to ``maximumInteger``:
        /// a sign, a fraction or an exponent is refused with the member and its column.
        private static func integer(_ value: JSONLine?, _ key: String, in line: some Collection<UInt8>) throws(ProtocolError) -> Int? {
            let found: String
            switch value {
            case nil, .null?: return nil
            case .number(let text)?:
                if text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                   let number = Int(text.count <= 15 ? text : ""), number <= maximumInteger {
                    return number
                }
                // A client may send a million digits: the message quotes a few.
                found = "the number " + (text.count > 24 ? "\(text.prefix(16))… (\(text.count) characters)" : text)
            case let other?: found = other.kindDescription
            }
            let column = JSONLine.column(of: [key], in: Array(line)).map { " (column \($0))" } ?? ""
            throw ProtocolError("\"\(key)\": expected a whole number from 0 to \(maximumInteger), found \(found)\(column)")
        }

        private static func flag(_ value: JSONValue?, _ key: String) throws(ProtocolError) -> Bool {
            switch value {
            case nil, .null?: return false
            case .bool(let flag)?: return flag
            default: throw ProtocolError("\"\(key)\": expected true or false")
            }
        }
    }

    /// The first line of each side.
    public struct Hello: Codable, Sendable {
        public var hello: String
        public var version: Int
        public var pid: Int32?
        /// The daemon's: how long routing one event may take (twice the longest sink
        /// deadline, for a failover after a failure), past which a client takes it as hung.
        public var answerWithinMS: Int?
        /// The daemon's: the config file it routes with (`<embedded>` for the built-in one).
        /// A version-2 client's: the config file its first request must be routed with
        /// (an absolute path); a daemon routing with another does not route that request.
        public var config: String?
        /// A version-2 client's: its `CLOCK_MONOTONIC` time in microseconds past which it no
        /// longer waits for the greeting and routes the event itself. The daemon routes the
        /// request sent with the hello only if its greeting was written before then (and the
        /// client shares its clock); otherwise it answers that request with ``Answer/resend``.
        public var greetBy: Int64?

        enum CodingKeys: String, CodingKey {
            case hello, version, pid, config
            case answerWithinMS = "answer_within_ms"
            case greetBy = "greet_by"
        }

        public init(
            version: Int = DaemonProtocol.version, pid: Int32? = nil, answerWithinMS: Int? = nil, config: String? = nil, greetBy: Int64? = nil
        ) {
            self.hello = DaemonProtocol.name
            self.version = version
            self.greetBy = greetBy
            self.pid = pid
            self.answerWithinMS = answerWithinMS
            self.config = config
        }
    }

    /// One answer line. Which fields are set depends on the request; `error` is set
    /// alone (with `exit`) when the request could not be carried out.
    public struct Answer: Codable, Sendable {
        public var id: Int?
        /// The exit code the CLI gives for this outcome (0, 1, 64, 65, 69, 78).
        public var exit: Int32?
        /// The delivery report, exactly as `send --json` prints it.
        public var report: JSONValue? {
            get { reportValue ?? reportObject.map(JSONValue.init) }
            set { reportValue = newValue; reportObject = nil }
        }
        private var reportValue: JSONValue?
        /// The client's: the report as read from the answer line, made a ``JSONValue`` only
        /// when asked for; a plain `send` needs only its ``summary``.
        package var reportObject: JSONLine?
        /// The report as `send --verbose` prints it.
        public var text: String?
        /// What a plain `send` prints on stderr (failed sinks, notes).
        public var problems: [String]?
        /// `wait`: the action id, or `expired`, `dismissed`, `closed`; `null` when no sink reports one.
        public var interaction: String?
        public var error: String?
        /// Set with ``error`` when a request sent with a version-2 hello was not routed
        /// because the greeting was late: the client sends it again.
        public var resend: Bool?
        public var status: JSONValue?
        /// The daemon's: the report itself (what ``report`` decodes to), written into the
        /// answer line directly rather than encoded, decoded and encoded again.
        package var routedReport: DeliveryReport?

        enum CodingKeys: String, CodingKey {
            case id, exit, report, text, problems, interaction, error, resend, status
        }

        public init(id: Int? = nil) { self.id = id }

        /// Whether the answer carries a report (a request carried out).
        public var hasReport: Bool { reportValue != nil || reportObject != nil }

        /// The report's `summary` (``DeliveryReport/Summary``), read without the rest of it.
        public var summary: String? {
            if let reportObject {
                guard case .object(let members) = reportObject, case .string(let text)? = members.first(where: { $0.key == "summary" })?.value
                else { return nil }
                return text
            }
            return reportValue?["summary"]?.string
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(Int.self, forKey: .id)
            exit = try container.decodeIfPresent(Int32.self, forKey: .exit)
            reportValue = try container.decodeIfPresent(JSONValue.self, forKey: .report)
            text = try container.decodeIfPresent(String.self, forKey: .text)
            problems = try container.decodeIfPresent([String].self, forKey: .problems)
            interaction = try container.decodeIfPresent(String.self, forKey: .interaction)
            error = try container.decodeIfPresent(String.self, forKey: .error)
            resend = try container.decodeIfPresent(Bool.self, forKey: .resend)
            status = try container.decodeIfPresent(JSONValue.self, forKey: .status)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(id, forKey: .id)
            try container.encodeIfPresent(exit, forKey: .exit)
            try container.encodeIfPresent(report, forKey: .report)
            try container.encodeIfPresent(text, forKey: .text)
            try container.encodeIfPresent(problems, forKey: .problems)
            try container.encodeIfPresent(interaction, forKey: .interaction)
            try container.encodeIfPresent(error, forKey: .error)
            try container.encodeIfPresent(resend, forKey: .resend)
            try container.encodeIfPresent(status, forKey: .status)
        }

        /// The answer as one line, keys sorted as ``DaemonProtocol/encodeLine(_:)`` sorts
        /// them, with ``routedReport`` written in place of ``report`` when it is set: one
        /// buffer for the whole line, the report's bytes copied no more than the rest.
        package func line() -> [UInt8] {
            // Under 1 KiB with a short text: malloc's per-thread cache serves it.
            var writer = JSONWriter(capacity: 768 + (text?.utf8.count ?? 0))
            writer.object { writer in
                writer.member("error", error)
                writer.member("exit", exit.map(Int.init))
                writer.member("id", id)
                writer.member("interaction", interaction)
                if let problems { writer.member("problems", strings: problems) }
                if let routedReport {
                    writer.key("report")
                    routedReport.write(into: &writer)
                } else if let report = reportValue {
                    writer.key("report")
                    writer.encoded(encodeLine(report).dropLast())
                } else if let reportObject {
                    var bytes: [UInt8] = []
                    JSONValue(reportObject).write(into: &bytes)
                    writer.key("report")
                    writer.encoded(bytes)
                }
                if let resend {
                    writer.key("resend")
                    writer.bool(resend)
                }
                if let status {
                    writer.key("status")
                    writer.encoded(encodeLine(status).dropLast())
                }
                writer.member("text", text)
            }
            return writer.line
        }

        public static func failure(_ message: String, exit: Int32, id: Int? = nil) -> Answer {
            var answer = Answer(id: id)
            answer.error = message
            answer.exit = exit
            return answer
        }
    }

    /// A request that is not JSON, not an object, or not one of ours.
    public struct ProtocolError: Error, Sendable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public static func decodeObject(_ line: some Collection<UInt8>) throws(ProtocolError) -> JSONValue {
        JSONValue(try parseLine(line))
    }

    /// The ingest parser's reading of a line: one pass, and errors that say where.
    package static func parseLine(_ line: some Collection<UInt8>) throws(ProtocolError) -> JSONLine {
        do {
            return try JSONLine.parse(utf8: Array(line))
        } catch {
            throw ProtocolError("not JSON: \(error.message) (column \(error.column))")
        }
    }

    /// One JSON line with its newline, keys sorted so that output is stable.
    public static func encodeLine(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array(#"{"error":"the answer could not be encoded"}"#.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
