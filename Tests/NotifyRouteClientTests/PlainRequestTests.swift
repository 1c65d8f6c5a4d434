import NotifyRoute
import NotifyRouteClient
import NotifyRouteTestSupport
import Testing

/// The daemon reads a plain request line without the JSON tree (``DaemonProtocol/Request/plain(_:)``);
/// whatever it reads must be what the tree and the ingest decoder read, and whatever else
/// must be left to them.
struct PlainRequestTests {
    /// One way to read a line: the plain reader's request, or the tree's with its event decoded.
    struct Reading: Equatable, CustomStringConvertible {
        var kind: DaemonProtocol.Kind
        var id: Int?
        var event: NotificationEvent?
        var sinks: [String]?
        var wait: Bool
        var dryRun: Bool
        var replaceKey: String?
        var waitFor: Int?

        init(_ request: DaemonProtocol.Request, event: NotificationEvent?) {
            (kind, id, self.event, sinks) = (request.kind, request.id, event, request.sinks)
            (wait, dryRun, replaceKey, waitFor) = (request.wait, request.dryRun, request.replaceKey, request.waitFor)
        }

        var description: String { "\(kind) id=\(id as Any) event=\(event as Any) sinks=\(sinks as Any) wait=\(wait) dry=\(dryRun) key=\(replaceKey as Any) for=\(waitFor as Any)" }
    }

    static func plain(_ line: [UInt8]) -> DaemonProtocol.Request? {
        line.withUnsafeBufferPointer { DaemonProtocol.Request.plain($0) }
    }

    /// The tree's reading, or `nil` where the tree or the decoder refuses the line.
    static func tree(_ line: [UInt8]) -> Reading? {
        guard let request = try? DaemonProtocol.Request.parseTree(line) else { return nil }
        guard let object = request.eventObject else { return Reading(request, event: nil) }
        guard let event = try? NotificationEvent.decode(object: object) else { return nil }
        return Reading(request, event: event)
    }

    @Test(arguments: [
        #"{"request":"send","sinks":["counting"],"event":{"title":"event 3-4999","source":"load"}}"#,
        #"{"request":"send","sinks":["counting"],"event":{"title":"Database down","source":"db","level":"error"}}"#,
        #" { "id" : 7 , "request" : "send" , "event" : { "title" : "Disk full" , "body" : "92% on /" , "tags" : [ "ops" , "disk" ] } , "wait" : true } "#,
        #"{"dry_run":true,"event":{"app":"backup","body":null,"category":"x","dedup_key":"d","icon":"i","level":"warning","message_id":"m","replace_key":"r","source":"s","tags":[],"timeout":"1500ms","title":"Été ☀"},"id":3,"request":"send"}"#,
        #"{"request":"close","replace_key":"upload","id":0}"#,
        #"{"request":"wait","for":12,"id":13}"#,
        #"{"request":"status"}"#,
        #"{"request":"reload","wait":null,"dry_run":false}"#,
    ])
    func theLinesClientsWriteAreReadPlainlyAsTheTreeReadsThem(line: String) throws {
        let bytes = Array(line.utf8)
        let plain = try #require(Self.plain(bytes), "not read plainly")
        let tree = try #require(Self.tree(bytes))
        #expect(Reading(plain, event: plain.notification) == tree)
    }

    @Test func ourClientsSendLineIsReadPlainly() throws {
        var request = DaemonProtocol.Request(kind: .send, id: 4)
        request.notification = NotificationEvent(
            title: "Backup done", body: "in 3 min", level: .success, timeout: .after(.seconds(5)), app: "restic",
            source: "backup", tags: ["nightly", "ops"], dedupKey: "backup", replaceKey: "backup-progress")
        request.sinks = ["desktop", "journal"]
        request.wait = true
        let line = Array(request.line.dropLast())
        let plain = try #require(Self.plain(line), "not read plainly: \(String(decoding: line, as: UTF8.self))")
        #expect(plain.notification == request.notification)
        #expect(Reading(plain, event: plain.notification) == Self.tree(line))
    }

    @Test(arguments: [
        // The tree words these errors, or reads what the plain reader does not.
        #"{"request":"send"}"#,
        #"{"request":"close"}"#,
        #"{"request":"send","event":{"title":"a","title":"b"}}"#,
        #"{"request":"send","request":"send","event":{"title":"a"}}"#,
        #"{"request":"send","event":{"title":"a\nb"}}"#,
        #"{"request":"send","event":{"title":"a","level":"WARNING"}}"#,
        #"{"request":"send","event":{"title":"a","timeout":"soon"}}"#,
        #"{"request":"send","event":{"title":"a","progress":50}}"#,
        #"{"request":"send","event":{"title":"a","actions":["ok=OK"]}}"#,
        #"{"request":"send","event":{"title":null}}"#,
        #"{"request":"send","event":{"titel":"a"}}"#,
        #"{"request":"send","id":1.0,"event":{"title":"a"}}"#,
        #"{"request":"send","id":01,"event":{"title":"a"}}"#,
        #"{"request":"send","id":1000000000000000,"event":{"title":"a"}}"#,
        #"{"request":"send","event":{"title":"a"}} x"#,
        #"{"request":"send","event":{"title":"a"}"#,
        #"{"request":"SEND","event":{"title":"a"}}"#,
        #"{"request":"send","sinks":null,"event":{"title":"a"}}"#,
    ])
    func otherLinesAreLeftToTheTree(line: String) {
        #expect(Self.plain(Array(line.utf8)) == nil)
    }

    /// Lines made of parts in and out of the plain shape, in random orders and spacings: any
    /// the plain reader reads, the tree reads the same.
    @Test func anyLineThePlainReaderReadsTheTreeReadsTheSame() {
        // Each pair: values of the plain shape, then others.
        let strings = ([#""a""#, #""""#, #""é ☀""#], [#""a\"b""#, #""a\u00e9""#, "\"a\u{01}b\"", #"null"#, "1", "true", #"["a"]"#])
        let levels = ([#""error""#, "null"], [#""Error""#, #""warn""#, "2"])
        let timeouts = ([#""5s""#, #""never""#, #""Never""#, #""1500ms""#, "null"], [#""soon""#, "5"])
        let tagLists = (["[]", #"["a","b","a"]"#, "null"], [#""a""#, "[1]", #"["a" "b"]"#, #"["a",]"#])
        let eventKeys = ["title", "body", "app", "source", "dedup_key", "replace_key", "icon", "category", "message_id", "level", "timeout", "tags", "progress", "actions", "fields", "titel"]
        let integers = (["0", "-0", "7", "-12", "999999999999999", "null"], ["01", "1.5", "2e3", "1000000000000000", #""3""#, "true", "-"])
        let flags = (["true", "false", "null"], [#""yes""#, "1", "tru"])
        let kinds = (["send", "close", "wait", "status", "reload", "resume"], ["Send", "nope"])
        let sinkLists = (["[]", #"["desktop"]"#, #"["a","b"]"#], [#""a""#, "null", "[1]", #"["a\tb"]"#])
        let spaces = ["", " ", "\t", "\n ", "\r"]
        var random = SplitMix64(seed: 0x5eed)
        var plainlyRead = 0, leftToTheTree = 0, disagreements: [String] = []

        // Half the lines take only values of the plain shape.
        var clean = false
        func pick(_ items: [String]) -> String { items[Int(random.next() % UInt64(items.count))] }
        func pick(_ items: ([String], [String])) -> String { pick(clean ? items.0 : items.0 + items.1) }
        func space() -> String { random.next() % 3 == 0 ? pick(spaces) : "" }
        func object(_ members: [(String, String)]) -> String {
            let body = members.map { "\(space())\"\($0.0)\"\(space()):\(space())\($0.1)\(space())" }.joined(separator: ",")
            return "{" + body + "}"
        }

        for _ in 0..<20_000 {
            clean = random.next() % 2 == 0
            var event: [(String, String)] = []
            for key in eventKeys where (!clean || !["progress", "actions", "fields", "titel"].contains(key)) && random.next() % 3 == 0 || (key == "title" && random.next() % 8 != 0) {
                let value: String = switch key {
                case "level": pick(levels)
                case "timeout": pick(timeouts)
                case "tags": pick(tagLists)
                case "progress": pick(integers)
                case "actions": #"[{"id":"ok","label":"OK"}]"#
                case "fields": #"{"n":"1"}"#
                default: pick(strings)
                }
                event.append((key, value))
            }
            if random.next() % 20 == 0, let first = event.first { event.append(first) }
            event.shuffle(using: &random)

            var members: [(String, String)] = []
            if random.next() % 16 != 0 { members.append(("request", "\"\(pick(kinds))\"")) }
            if random.next() % 8 != 0 { members.append(("event", random.next() % 30 == 0 ? "null" : object(event))) }
            if random.next() % 2 == 0 { members.append(("id", pick(integers))) }
            if random.next() % 3 == 0 { members.append(("sinks", pick(sinkLists))) }
            if random.next() % 4 == 0 { members.append(("wait", pick(flags))) }
            if random.next() % 4 == 0 { members.append(("dry_run", pick(flags))) }
            if random.next() % 4 == 0 { members.append(("replace_key", pick(strings))) }
            if random.next() % 4 == 0 { members.append(("for", pick(integers))) }
            if random.next() % 30 == 0 { members.append(("extra", "1")) }
            if random.next() % 30 == 0, let first = members.first { members.append(first) }
            members.shuffle(using: &random)
            var bytes = Array((space() + object(members) + space()).utf8)
            if random.next() % 40 == 0 { bytes.removeLast(Int(random.next() % UInt64(bytes.count))) }
            // Now and then a byte that is not UTF-8, in a string or a key.
            if random.next() % 25 == 0, let at = bytes.firstIndex(of: UInt8(ascii: "a")) { bytes[at] = 0xC3 }
            let tree = Self.tree(bytes)
            guard let plain = Self.plain(bytes) else {
                leftToTheTree += 1
                continue
            }
            plainlyRead += 1
            let reading = Reading(plain, event: plain.notification)
            if reading != tree { disagreements.append("\(String(decoding: bytes, as: UTF8.self)): plain \(reading), tree \(tree.map(\.description) ?? "refused")") }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) lines, the first: \(disagreements.prefix(3))")
        // Both ways are taken often, or the comparison says little.
        #expect(plainlyRead > 1_000, "read plainly: \(plainlyRead)")
        #expect(leftToTheTree > 1_000, "left to the tree: \(leftToTheTree)")
    }
}
