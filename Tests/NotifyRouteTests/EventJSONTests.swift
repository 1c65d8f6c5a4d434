import Foundation
import NotifyRoute
import Testing

/// `NotificationEvent.decode(jsonLine:)`: the input of `notify-route ingest`.
@Suite struct EventJSONTests {
    @Test func everyKey() throws {
        let event = try NotificationEvent.decode(jsonLine: #"""
            {"title":"Disk \u00e9 full","body":"a\nb","level":"Warning","timeout":"1500ms","app":"cron","source":"disk",
             "tags":["ops","disk"],"dedup_key":"d","replace_key":"r","icon":"drive","category":"device",
             "actions":["ack=Acknowledge",{"id":"snooze","label":"Snooze"}],"fields":{"PCT":92,"OK":false,"DEV":"/dev/sda"},
             "message_id":"0123456789abcdef0123456789abcdef"}
            """#.replacingOccurrences(of: "\n ", with: " "))
        #expect(event.title == "Disk é full")
        #expect(event.body == "a\nb")
        #expect(event.level == .warning)
        #expect(event.timeout == .after(.milliseconds(1500)))
        #expect(event.tags == ["ops", "disk"])
        #expect(event.actions == [NotificationAction(id: "ack", label: "Acknowledge"), NotificationAction(id: "snooze", label: "Snooze")])
        #expect(event.fields == ["PCT": "92", "OK": "false", "DEV": "/dev/sda"])
        #expect(event.messageID == "0123456789abcdef0123456789abcdef")
        #expect(try NotificationEvent.decode(jsonLine: #"{"title":"x","body":null,"tags":null}"#) == NotificationEvent(title: "x"))
    }

    @Test func preciseErrors() {
        let cases: [(String, String)] = [
            (#"{"titel":"x"}"#, #"unknown key "titel" (did you mean "title"?)"#),
            (#"{"title":"x","colour":"red"}"#, #"unknown key "colour"; expected one of: title, body, level, timeout, app, source, tags, dedup_key, replace_key, icon, category, actions, fields, message_id, progress"#),
            (#"{"title":1}"#, #""title": expected a string, found the number 1"#),
            (#"{"title":null}"#, #""title": expected a string, found null"#),
            (#"{"title":"x","timeout":"5"}"#, #""timeout": invalid duration "5"; expected a number with a unit: ms, s, m, h or d (for example 1500ms, 5s, 2m), or never, or default"#),
            (#"{"title":"x","actions":["nolabel"]}"#, #""actions"[0]: expected "id=Label", found "nolabel""#),
            (#"{"title":"x","title":"y"}"#, #"invalid JSON at column 14: duplicate key "title""#),
            (#"{"title":"x"} {"title":"y"}"#, "invalid JSON at column 15: unexpected text after the JSON value; put one event per line"),
            (#"{"title":'x'}"#, "invalid JSON at column 10: strings take double quotes in JSON, not single quotes"),
            (#"{"title":"x"#, #"invalid JSON at column 12: unexpected end of the line inside a string; a closing " is missing"#),
        ]
        for (line, message) in cases {
            #expect(throws: EventError(message), "\(line)") { _ = try NotificationEvent.decode(jsonLine: line) }
        }
    }
}
