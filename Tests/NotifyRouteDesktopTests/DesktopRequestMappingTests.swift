import NotifyRoute
@testable import NotifyRouteDesktop
import Testing

/// The event → `Notify` mapping on its own, without a bus: what the bus tests then
/// check end to end against a real daemon.
@Suite("desktop request mapping")
struct DesktopRequestMappingTests {
    static let everything: Set<String> = ["actions", "body", "body-markup", "persistence"]
    static let daemon = DaemonIdentity(busGUID: "0c5f1e2a9b8d7c6e5f4a3b2c6560a1b2", owner: ":1.42")

    func request(
        _ event: ResolvedEvent, intent: SinkDelivery.Intent = .show, capabilities: Set<String> = everything,
        hints: [String: DesktopHint] = [:], daemon: DaemonIdentity? = Self.daemon, serverName: String = "mock-notify"
    ) -> (DesktopNotificationRequest, [String]) {
        let made = DesktopNotificationRequest.make(
            for: SinkDelivery(event: event, sinkName: "desktop", intent: intent), serverCapabilities: capabilities,
            serverName: serverName, configuredHints: hints, daemon: daemon)
        return (made.request, made.notes)
    }

    @Test("timeout: never is 0, a duration is milliseconds, default is -1", arguments: [
        (NotificationTimeout.never, Int32(0)), (.after(.milliseconds(1500)), 1500), (.after(.seconds(8)), 8000),
        (.serverDefault, -1), (.after(.zero), 1), (.after(.seconds(10_000_000)), Int32.max),
    ])
    func expireTimeout(timeout: NotificationTimeout, expected: Int32) {
        #expect(DesktopNotificationRequest.expireTimeout(timeout) == expected)
    }

    @Test("urgency follows the level's style", arguments: [
        (Level.debug, UInt8(0)), (.info, 1), (.success, 1), (.warning, 1), (.error, 1), (.critical, 2),
    ])
    func urgency(level: Level, byte: UInt8) {
        #expect(request(ResolvedEvent(title: "t", level: level)).0.urgency == byte)
    }

    @Test func bodyIsEscapedOnlyForServersThatReadMarkup() {
        let event = ResolvedEvent(title: "Disk <full>", body: "a & b <i>c</i> \"q\"")
        #expect(request(event).0.body == "a &amp; b &lt;i&gt;c&lt;/i&gt; \"q\"")
        #expect(request(event).0.summary == "Disk <full>", "the summary is plain text to the spec's servers")
        #expect(request(event, capabilities: ["actions", "body"]).0.body == "a & b <i>c</i> \"q\"")
    }

    /// Links are markup: a server that reads them (`body-hyperlinks`) reads `&` and `<` too.
    @Test func bodyIsEscapedForServersThatReadOnlyLinks() {
        let event = ResolvedEvent(title: "t", body: "<a href=\"https://example.invalid\">fix</a> & more")
        #expect(request(event, capabilities: ["body", "body-hyperlinks"]).0.body
            == "&lt;a href=\"https://example.invalid\"&gt;fix&lt;/a&gt; &amp; more")
    }

    /// dunst reads the summary with the body's markup (its `format`, `<b>%s</b>\n%b`).
    @Test func theSummaryIsEscapedForDunstOnly() {
        let event = ResolvedEvent(title: "Disk <b>full</b> & hot", body: "b")
        #expect(request(event, serverName: "dunst").0.summary == "Disk &lt;b&gt;full&lt;/b&gt; &amp; hot")
        #expect(request(event, capabilities: ["body", "body-hyperlinks"], serverName: "dunst").0.summary
            == "Disk &lt;b&gt;full&lt;/b&gt; &amp; hot")
        #expect(request(event, capabilities: ["body"], serverName: "dunst").0.summary == "Disk <b>full</b> & hot")
        #expect(request(event, serverName: "gnome-shell").0.summary == "Disk <b>full</b> & hot")
        let count = request(event, intent: .updateDuplicateCount(SinkHandle("42@:1.42/0c5f1e2a"), count: 3), serverName: "dunst")
        #expect(count.0.summary == "Disk &lt;b&gt;full&lt;/b&gt; &amp; hot (×3)")
    }

    @Test func fieldsAndHints() {
        let event = ResolvedEvent(
            title: "Backup", body: "done", app: "backup", icon: "/usr/share/icons/backup.png", category: "transfer.complete",
            actions: [NotificationAction(id: "open", label: "Open")])
        let (made, notes) = request(event, hints: ["transient": .boolean(true), "category": .string("default.cat")])
        #expect(made.appName == "backup")
        #expect(made.icon == "/usr/share/icons/backup.png")
        #expect(made.category == "transfer.complete", "the event's category wins over the sink's")
        #expect(made.hints == ["transient": .boolean(true)])
        #expect(made.actions == [NotificationAction(id: "open", label: "Open")])
        #expect(notes.isEmpty)
        #expect(request(ResolvedEvent(title: "x"), hints: ["category": .string("default.cat")]).0.category == "default.cat")
    }

    @Test func actionsAreDroppedWithANoteWhenTheServerLacksThem() {
        let event = ResolvedEvent(title: "t", actions: [NotificationAction(id: "ack", label: "OK")])
        let (made, notes) = request(event, capabilities: ["body"])
        #expect(made.actions.isEmpty)
        #expect(notes.contains { $0.contains("actions dropped") })
    }

    @Test func replaceAndDuplicateCountReuseTheId() {
        let event = ResolvedEvent(title: "Disk full")
        #expect(request(event).0.replacesID == 0)
        #expect(request(event, intent: .replace(SinkHandle("42@:1.42/0c5f1e2a"))).0.replacesID == 42)
        let (update, _) = request(event, intent: .updateDuplicateCount(SinkHandle("42@:1.42/0c5f1e2a"), count: 3))
        #expect(update.replacesID == 42)
        #expect(update.summary == "Disk full (×3)")
        let (bad, notes) = request(event, intent: .replace(SinkHandle("journal-cursor")))
        #expect(bad.replacesID == 0)
        #expect(notes.contains { $0.contains("not a desktop notification id") })
    }

    @Test("a handle of another daemon instance is never replaced", arguments: [
        "42@:1.43/0c5f1e2a",  // another daemon on the same bus
        "42@:1.42/99999999",  // the same unique name on another bus (a restarted one)
        "42",                 // an older notify-route's handle: its daemon is not known
    ])
    func aHandleOfAnotherDaemonIsShownAnew(handle: String) {
        let (made, notes) = request(ResolvedEvent(title: "t"), intent: .replace(SinkHandle(handle)))
        #expect(made.replacesID == 0)
        #expect(notes.contains { $0.contains("no longer owns the name") }, "\(notes)")
        #expect(request(ResolvedEvent(title: "t"), intent: .replace(SinkHandle(handle)), daemon: nil).0.replacesID == 0)
    }

    @Test func hintsFromConfigAreTypedBySpecification() throws {
        let sink = try DesktopSink(options: SinkOptions(sinkName: "desktop", kind: "desktop", [
            "hints": ConfigNode(.mapping([
                ConfigEntry(key: "transient", value: ConfigNode(.scalar("true"))),
                ConfigEntry(key: "x", value: ConfigNode(.scalar("12"))),
                ConfigEntry(key: "desktop-entry", value: ConfigNode(.scalar("backup"))),
                ConfigEntry(key: "x-vendor-thing", value: ConfigNode(.scalar("7"))),
            ])),
            "probe_timeout": ConfigNode(.scalar("250ms")),
        ]))
        #expect(sink.configuration.hints == [
            "transient": .boolean(true), "x": .int32(12), "desktop-entry": .string("backup"), "x-vendor-thing": .string("7"),
        ])
        #expect(sink.configuration.probeTimeout == .milliseconds(250))
    }

    @Test("bad hints are config errors", arguments: [
        ("transient", "yes", "must be true or false"), ("urgency", "2", "comes from the level"), ("x", "left", "whole number"),
    ])
    func badHints(name: String, value: String, message: String) {
        let options = SinkOptions(sinkName: "desktop", kind: "desktop", [
            "hints": ConfigNode(.mapping([ConfigEntry(key: name, value: ConfigNode(.scalar(value)))])),
        ])
        #expect { try DesktopSink(options: options) } throws: { error in
            "\(error)".contains(message) && "\(error)".contains("sink \"desktop\"")
        }
    }
}
