import Foundation
import NotifyRoute
import NotifyRouteExec
import NotifyRouteTestSupport
import Testing

/// The exec sink driven directly, with small plugins written as shell scripts (the
/// plugin may use a shell inside itself; the sink never starts one).
@Suite struct ExecSinkTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/examples/notify-route-sink-example").path

    func delivery(_ title: String, intent: SinkDelivery.Intent = .show, within seconds: Int = 20) -> SinkDelivery {
        SinkDelivery(event: ResolvedEvent(title: title), sinkName: "t", intent: intent, deadline: .now.advanced(by: .seconds(seconds)))
    }

    @Test func oneLongLivedChildAnswersEveryDelivery() async throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let log = directory.appendingPathComponent("log").path
        let sink = ExecSink(name: "t", command: [Self.example], environment: ["NOTIFY_ROUTE_EXAMPLE_LOG": log])
        #expect(await sink.availability() == .available)
        let first = try await sink.deliver(delivery("one"))
        let second = try await sink.deliver(delivery("two", intent: .replace(first.handle!)))
        #expect(first.handle == SinkHandle("1"))
        #expect(second.handle == SinkHandle("1"))  // a replace keeps the handle
        _ = try await sink.close(SinkCloseRequest(sinkName: "t", handle: first.handle!, replaceKey: "k", deadline: .now.advanced(by: .seconds(20))))
        await sink.finish()
        let requests = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(requests.map { $0["type"] as? String } == ["deliver", "deliver", "close"])
        #expect(Set(requests.compactMap { $0["pid"] as? Int }).count == 1)
        #expect(requests[2]["replace_key"] as? String == "k")
    }

    @Test func answersWithoutIdsGoToTheOldestRequestAndStatusesMapToErrors() async throws {
        let script = """
            while read -r line; do
              case "$line" in
                *'"title":"retry"'*) echo '{"status":"failed","error":"HTTP 503","retryable":true}' ;;
                *'"title":"later"'*) echo '{"status":"queued","reason":"offline"}' ;;
                *'"title":"nope"'*) echo '{"status":"unavailable","error":"no token"}' ;;
                *) echo '{"status":"delivered","handle":42}' ;;
              esac
            done
            """
        let sink = ExecSink(name: "t", command: ["/bin/sh", "-c", script])
        #expect(try await sink.deliver(delivery("fine")).handle == SinkHandle("42"))
        #expect(try await sink.deliver(delivery("later")).disposition == .queued("offline"))
        await #expect(throws: SinkError(.failed, "HTTP 503", isRetryable: true)) { try await sink.deliver(delivery("retry")) }
        await #expect(throws: SinkError(.unavailable, "no token")) { try await sink.deliver(delivery("nope")) }
        await sink.finish()
    }

    @Test func garbageOnStdoutFailsTheDeliveryAndRestartsThePlugin() async throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let count = directory.appendingPathComponent("starts").path
        // The first run answers garbage; later runs answer properly.
        let script = """
            echo x >> "$0"
            if [ "$(wc -l < "$0")" -eq 1 ]; then read -r line; echo 'oops, not JSON'; cat > /dev/null; fi
            while read -r line; do echo '{"status":"delivered"}'; done
            """
        let sink = ExecSink(name: "t", command: ["/bin/sh", "-c", script, count])
        do {
            _ = try await sink.deliver(delivery("first"))
            Issue.record("garbage was accepted")
        } catch let error as SinkError {
            #expect(error.message.contains("not a JSON object: \"oops, not JSON\""), "\(error)")
        }
        _ = try await sink.deliver(delivery("second"))
        #expect(try String(contentsOfFile: count, encoding: .utf8) == "x\nx\n")
        await sink.finish()
    }

    @Test func aMissingProgramIsUnavailable() async throws {
        let sink = ExecSink(name: "t", command: ["no-such-notify-route-plugin"], environment: ["PATH": "/nonexistent"])
        #expect(await sink.availability() == .unavailable(reason: "command not found: no executable \"no-such-notify-route-plugin\" in PATH"))
        await #expect(throws: SinkError.self) { try await sink.deliver(delivery("x")) }
    }

    @Test func theConfigNeedsACommandAndRefusesRelativePaths() throws {
        let registry = try SinkRegistry([ExecSink.plugin])
        for (yaml, message) in [
            ("sinks: { p: { kind: exec } }\nfallback: [p]\n", "needs `command: [program, args...]`"),
            ("sinks: { p: { kind: exec, command: [./plugin] } }\nfallback: [p]\n", "is a relative path"),
            ("sinks: { p: { kind: exec, command: [/bin/cat], shell: true } }\nfallback: [p]\n", "unknown key \"shell\""),
        ] {
            do {
                let config = try RouterConfiguration.load(yaml: yaml, file: "c.yaml", registry: registry)
                _ = try NotificationRouter(configuration: config, registry: registry)
                Issue.record("accepted: \(yaml)")
            } catch {
                #expect(error.description.contains(message), "\(error)")
            }
        }
    }
}
