import NotifyRoute
import NotifyRouteClient

/// One input: bytes as a line a client sends the daemon, and as a line a daemon sends a
/// client. The daemon's three readings are held to each other: a line the plain reader
/// reads, the tree reads to the same request, its event decoded (as the daemon decodes it
/// after the tree) to the same event; `parse` gives the plain reading or else the tree's,
/// request or error. An error has words; an integer read is within the protocol's range.
/// The client's readings of a hello and an answer may refuse anything, never trap.
func fuzzRequest(_ bytes: UnsafeRawBufferPointer) {
    let plain = bytes.withMemoryRebound(to: UInt8.self) { DaemonProtocol.Request.plain($0) }
    let tree = Result { () throws(DaemonProtocol.ProtocolError) in try DaemonProtocol.Request.parseTree(bytes) }
    let parsed = Result { () throws(DaemonProtocol.ProtocolError) in try DaemonProtocol.Request.parse(bytes) }

    switch (plain, tree, parsed) {
    case (let plain?, .success(let tree), .success(let parsed)):
        precondition(same(plain, parsed), "parse did not give the plain reading")
        precondition(same(plain, tree), "the plain reader and the tree read different requests")
        if let object = tree.eventObject {
            let event = try? NotificationEvent.decode(object: object)
            precondition(event != nil && event == plain.notification, "the plain reader read an event the decoder reads otherwise")
        } else {
            precondition(plain.notification == nil, "the plain reader read an event the tree did not")
        }
        inRange(plain)
    case (_?, .failure(let error), _):
        preconditionFailure("the plain reader read a line the tree refuses: \(error)")
    case (nil, .success(let tree), .success(let parsed)):
        precondition(same(tree, parsed), "parse did not give the tree's reading")
        inRange(tree)
        if let object = tree.eventObject {
            do { _ = try NotificationEvent.decode(object: object) } catch { precondition(!error.message.isEmpty, "an empty event error") }
        }
    case (nil, .failure(let error), .failure(let again)):
        precondition(!error.description.isEmpty, "an empty protocol error")
        precondition(error.description == again.description, "parse and the tree word the error differently")
    default:
        preconditionFailure("parse disagrees with the plain reader and the tree")
    }

    // The client's side: a daemon's greeting and answers are another process's bytes too.
    _ = try? DaemonProtocol.Hello(line: bytes)
    if let answer = try? DaemonProtocol.Answer(line: bytes) {
        _ = answer.summary
        _ = answer.report?["summary"]?.integer
        _ = answer.status.map { status in ["pid", "held", "depth", "in_flight"].map { status[$0]?.integer } }
    }
}

private func same(_ one: DaemonProtocol.Request, _ other: DaemonProtocol.Request) -> Bool {
    one.kind == other.kind && one.id == other.id && one.sinks == other.sinks && one.wait == other.wait
        && one.dryRun == other.dryRun && one.replaceKey == other.replaceKey && one.waitFor == other.waitFor
        && one.terminal == other.terminal
}

private func inRange(_ request: DaemonProtocol.Request) {
    let range = 0...DaemonProtocol.Request.maximumInteger
    precondition(request.id.map(range.contains) ?? true, "an id outside the protocol's range: \(request.id!)")
    precondition(request.waitFor.map(range.contains) ?? true, "a \"for\" outside the protocol's range: \(request.waitFor!)")
}
