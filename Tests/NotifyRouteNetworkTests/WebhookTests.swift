import Foundation
import NotifyRouteTestSupport
import Testing

/// `kind: webhook` against a receiver of the test's own, through the CLI.
@Suite(.serialized)
struct WebhookTests {
    static func host(url: String, extra: String = "") throws -> NotifyRouteHost {
        try NotifyRouteHost(sinks: "  hook:\n    kind: webhook\n    url: \"\(url)\"\n\(extra)", routes: "fallback: [hook]")
    }

    @Test func theBodyAndHeadersReachTheReceiver() throws {
        let receiver = try HTTPReceiver.start()
        defer { receiver.stop() }
        let token = try TestEnvironment.temporaryDirectory().appendingPathComponent("token")
        try "s3cret-token\n".write(to: token, atomically: true, encoding: .utf8)
        chmod(token.path, 0o600)
        let host = try Self.host(
            url: receiver.url + "/hook", extra: "    headers: { X-Team: ops }\n    token_file: \(token.path)")
        let (result, report) = try host.send(
            ["-l", "error", "-s", "backup", "-r", "nightly", "-g", "ops", "-f", "exit=3", "Backup failed", "exit 3"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(report.sink("hook")?["status"] as? String == "delivered")

        let request = try #require(try receiver.requests(path: "/hook").first)
        #expect(request.headers["authorization"] == "Bearer s3cret-token")
        #expect(request.headers["x-team"] == "ops")
        #expect(request.headers["content-type"] == "application/json")
        let body = try #require(request.body as? [String: Any])
        #expect(body["title"] as? String == "Backup failed")
        #expect(body["body"] as? String == "exit 3")
        #expect(body["level"] as? String == "error")
        #expect(body["source"] as? String == "backup")
        #expect(body["replace_key"] as? String == "nightly")
        #expect(body["tags"] as? [String] == ["ops"])
        #expect(body["fields"] as? [String: String] == ["exit": "3"])
        #expect(body["host"] as? String == hostName)
        let time = try #require(body["time"] as? String)
        #expect(time.hasSuffix("Z") && time.count == 24, "\(time)")
        let decision = try #require(body["decision"] as? [String: Any])
        #expect(decision["sink"] as? String == "hook")
        #expect(decision["intent"] as? String == "show")
        #expect(decision["count"] as? Int == 1)

        // The same replace key again: the decision says it replaces.
        #expect(try host.send(["-l", "success", "-r", "nightly", "Backup done"]).result.status == 0)
        let second = try #require(try receiver.requests(path: "/hook").last?.body as? [String: Any])
        #expect((second["decision"] as? [String: Any])?["intent"] as? String == "replace")
    }

    @Test(arguments: [0o644, 0o620])
    func aTokenFileOthersCanReadOrWriteIsRefused(mode: Int) throws {
        let token = try TestEnvironment.temporaryDirectory().appendingPathComponent("token")
        try "s3cret".write(to: token, atomically: true, encoding: .utf8)
        chmod(token.path, mode_t(mode))
        let host = try Self.host(url: "http://127.0.0.1:9/hook", extra: "    token_file: \(token.path)")
        let result = try host.run(["send", "x"])
        #expect(result.status == 78)
        #expect(result.standardError.contains("token_file \(token.path): others can read or write it"), "\(result.standardError)")
        #expect(result.standardError.contains("chmod 600"))
    }

    @Test func aServerErrorIsRetryableAndAClientErrorIsNot() throws {
        let receiver = try HTTPReceiver.start(statuses: [503, 404])
        defer { receiver.stop() }
        let host = try Self.host(url: receiver.url + "/hook")
        let (unavailable, first) = try host.send(["One"])
        #expect(unavailable.status == 1)
        #expect(first.sink("hook")?["status"] as? String == "failed")
        #expect(first.sink("hook")?["retryable"] as? Bool == true)
        #expect(first.error(of: "hook").contains("answered 503: scripted answer"))
        let (missing, second) = try host.send(["Two"])
        #expect(missing.status == 1)
        #expect(second.sink("hook")?["retryable"] as? Bool == false)
        #expect(second.error(of: "hook").contains("answered 404"))
        #expect(try host.send(["Three"]).result.status == 0)
    }

    @Test func aURLThatIsNotHTTPIsAConfigError() throws {
        let host = try Self.host(url: "ftp://example.org/x")
        let result = try host.run(["send", "x"])
        #expect(result.status == 78)
        #expect(result.standardError.contains("\"ftp://example.org/…\" is not an http:// or https:// URL with a host"), "\(result.standardError)")
    }

    /// A 2xx is a delivery whatever its body: two gigabytes are not read, not retried, and
    /// cost no more than a small answer's time. A failure's body is read up to a cap.
    @Test func aHugeAnswerBodyIsNoFailure() throws {
        let receiver = try HTTPReceiver.start(answers: ["200+huge", "503+huge"])
        defer { receiver.stop() }
        let host = try Self.host(url: receiver.url + "/hook")
        let (delivered, report) = try host.send(["Big answer"])
        #expect(delivered.status == 0, "\(delivered.standardError)")
        #expect(report.sink("hook")?["status"] as? String == "delivered", "\(report)")
        #expect(delivered.duration < .seconds(5))
        let (failed, failure) = try host.send(["Big error"])
        #expect(failed.status == 1)
        #expect(failure.sink("hook")?["retryable"] as? Bool == true)
        let error = failure.error(of: "hook")
        #expect(error.contains("answered 503: xxxx") && error.utf8.count < 2_000, "\(error.prefix(300))")
        #expect(try receiver.requests(path: "/hook").count == 2, "each posted once")
    }

    /// A redirect is followed nowhere: the event and the configured headers stay with the
    /// configured origin, and the failure says where it pointed (redacted), not retryable.
    @Test func aRedirectIsAFailureThatSaysWhereItPointed() throws {
        let elsewhere = try HTTPReceiver.start()
        defer { elsewhere.stop() }
        let receiver = try HTTPReceiver.start(answers: ["307>\(elsewhere.url)/stolen?key=s3cret", "302>/moved"])
        defer { receiver.stop() }
        let host = try Self.host(url: receiver.url + "/hook", extra: "    headers: { X-Secret: s3cret }")
        let (result, report) = try host.send(["Redirected"])
        #expect(result.status == 1)
        let error = report.error(of: "hook")
        #expect(error == "\(receiver.url)/… redirected (307) to \(elsewhere.url)/…; redirects are not followed: point the sink's url at where the events belong", "\(error)")
        #expect(report.sink("hook")?["retryable"] as? Bool == false)
        #expect(!result.standardOutput.contains("s3cret") && !result.standardError.contains("s3cret"))
        let (_, same) = try host.send(["Moved"])
        #expect(same.error(of: "hook").contains("redirected (302) to a path on the same server"), "\(same)")
        usleep(300_000)
        #expect(try elsewhere.requests().isEmpty, "nothing reached the other origin")
    }

    /// A URL's path and query may be a secret (a hook's token): reports and errors show
    /// the origin alone. A user or password in the URL is refused where it is written.
    @Test func aURLsSecretsStayOutOfReportsAndErrors() throws {
        let host = try Self.host(url: "http://127.0.0.1:9/hooks/T0KEN?key=s3cret")
        let (result, report) = try host.send(["Nobody listens"])
        #expect(result.status == 1)
        #expect(report.error(of: "hook") == "http://127.0.0.1:9/…: connection refused", "\(report)")
        for text in [result.standardOutput, result.standardError] {
            #expect(!text.contains("T0KEN") && !text.contains("s3cret"), "\(text)")
        }
        let userinfo = try Self.host(url: "https://alice:pa55word@hooks.example/notify")
        let refused = try userinfo.run(["send", "x"])
        #expect(refused.status == 78)
        #expect(refused.standardError.contains("config.yaml:4:5: "), "\(refused.standardError)")
        #expect(refused.standardError.contains("https://hooks.example/…: a user or password in the URL is not sent"), "\(refused.standardError)")
        #expect(!refused.standardError.contains("pa55word") && !refused.standardError.contains("alice"))
    }

    /// A certificate nobody trusts will not be trusted on the next try: the failure is
    /// permanent and says so in words, and nothing was posted.
    @Test func anUntrustedCertificateIsNotRetryable() throws {
        let receiver = try HTTPReceiver.start(answers: [], selfSignedTLS: true)
        defer { receiver.stop() }
        let host = try Self.host(url: receiver.url + "/hook")
        let (result, report) = try host.send(["Over TLS"])
        #expect(result.status == 1)
        let error = report.error(of: "hook")
        #expect(error.hasPrefix("\(receiver.url)/…: the TLS handshake failed; the server's certificate was not accepted"), "\(error)")
        #expect(report.sink("hook")?["retryable"] as? Bool == false, "\(report)")
        #expect(try receiver.requests().isEmpty)
    }

    /// `config show` keeps a URL's path, query and userinfo and the header values to
    /// itself unless asked; `--show-secrets` prints them as written.
    @Test func configShowRedactsSecretsUnlessAsked() throws {
        let host = try NotifyRouteHost(
            sinks: "  hook:\n    kind: webhook\n    url: \"https://hooks.example/T0KEN?key=s3cret\"\n    headers: { X-Api-Key: k3y }\n"
                + "  am:\n    kind: alertmanager\n    urls: [\"http://am-1:9093/pr0xy\", \"http://am-2:9093\"]",
            routes: "fallback: [hook]")
        func show(_ options: [String] = []) throws -> ProcessResult {
            try ProcessRunner.notifyRoute(["config", "show", "--config", host.config.path] + options, environment: host.environment)
        }
        let shown = try show()
        #expect(shown.status == 0, "\(shown.standardError)")
        for secret in ["T0KEN", "s3cret", "k3y", "pr0xy"] {
            #expect(!shown.standardOutput.contains(secret), "\(secret) in:\n\(shown.standardOutput)")
        }
        // The emitter writes ASCII: "…" as \u2026.
        #expect(shown.standardOutput.contains(#"url: "https://hooks.example/\u2026""#), "\(shown.standardOutput)")
        #expect(shown.standardOutput.contains(#"X-Api-Key: "<secret>""#), "\(shown.standardOutput)")
        #expect(shown.standardOutput.contains(#""http://am-1:9093/\u2026""#) && shown.standardOutput.contains("http://am-2:9093"), "\(shown.standardOutput)")
        let secrets = try show(["--show-secrets"])
        #expect(secrets.status == 0)
        for secret in ["https://hooks.example/T0KEN?key=s3cret", "k3y", "http://am-1:9093/pr0xy"] {
            #expect(secrets.standardOutput.contains(secret), "\(secret) missing from:\n\(secrets.standardOutput)")
        }
    }

    /// Under `serve`, a 500 is retried with backoff until the receiver answers 200, and
    /// `status` counts it.
    @Test func theDaemonRetriesA500ToDelivered() throws {
        let receiver = try HTTPReceiver.start(statuses: [500])
        defer { receiver.stop() }
        let host = try Self.host(url: receiver.url + "/hook")
        let daemon = try DaemonProcess.start(config: host.config)
        defer { daemon.stop() }
        let sent = try ProcessRunner.notifyRoute(["send", "--json", "Deploy finished"], environment: daemon.environment)
        let report = (try? JSONSerialization.jsonObject(with: Data(sent.standardOutput.utf8)) as? [String: Any]) ?? [:]
        #expect(report["via"] as? String == "daemon", "\(sent.standardOutput) \(sent.standardError)")
        #expect(report.sink("hook")?["retryable"] as? Bool == true, "\(sent.standardOutput) \(sent.standardError)")
        let requests = try receiver.wait(path: "/hook", timeout: .seconds(15)) { $0.count >= 2 }
        #expect(requests.count == 2, "\(daemon.log)")
        #expect(requests.allSatisfy { ($0.body as? [String: Any])?["title"] as? String == "Deploy finished" })

        let status = try ProcessRunner.notifyRoute(["status", "--json", "--socket", daemon.socketPath])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.standardOutput.utf8)) as? [String: Any])
        let retries = try #require(object["retries"] as? [String: [String: Int]], "\(status.standardOutput)")
        #expect(retries["hook"] == ["recovered": 1, "dropped": 0, "waiting": 0])
    }
}
