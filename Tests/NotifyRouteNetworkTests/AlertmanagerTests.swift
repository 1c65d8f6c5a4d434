import Foundation
import NotifyRoute
@testable import NotifyRouteNetwork
import NotifyRouteTestSupport
import Testing

/// `kind: alertmanager` against a real Alertmanager 0.25 on loopback, through the CLI.
@Suite(.serialized, .enabled(if: alertmanagerTestsEnabled, "needs prometheus-alertmanager (apt-get install prometheus-alertmanager)"))
struct AlertmanagerTests {
    static func host(urls: [String], extra: String = "", deadline: String = "5s") throws -> NotifyRouteHost {
        try NotifyRouteHost(
            sinks: """
                  am:
                    kind: alertmanager
                    urls: [\(urls.joined(separator: ", "))]
                    instance: host-a
                    deadline: \(deadline)
                \(extra)
                """,
            routes: "fallback: [am]")
    }

    @Test func anEventArrivesWithItsLabelsAndAnnotations() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try Self.host(urls: [cluster.peers[0].url], extra: "    labels: { team: ops }")
        let (result, report) = try host.send(
            ["-l", "warning", "-s", "disk", "-a", "diskwatch", "-r", "disk-sda", "-f", "mount=/", "-f", "used-pct=97",
             "Disk full", "97% of / used"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(report.sink("am")?["status"] as? String == "delivered")

        let alerts = try cluster.alerts()
        let alert = try #require(alerts.first { ($0["labels"] as? [String: String])?["replace_key"] == "disk-sda" })
        #expect(alert["labels"] as? [String: String] == [
            "alertname": "Disk full", "severity": "warning", "instance": "host-a", "source": "disk", "app": "diskwatch",
            "replace_key": "disk-sda", "team": "ops",
        ])
        #expect(alert["annotations"] as? [String: String] == [
            "summary": "Disk full", "description": "97% of / used", "mount": "/", "used_pct": "97",
        ])
        // And Alertmanager notified its receiver.
        let firing = try receiver.wait { notifications($0, status: "firing", replaceKey: "disk-sda").count >= 1 }
        #expect(notifications(firing, status: "firing", replaceKey: "disk-sda").count == 1, "\(cluster.logs)")
    }

    @Test func aReplaceKeyUpdatesTheSameAlert() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try Self.host(urls: [cluster.peers[0].url])
        for used in ["91", "97"] {
            let (result, _) = try host.send(["-l", "warning", "-r", "disk-sdb", "Disk filling", "\(used)% used"])
            #expect(result.status == 0, "\(result.standardError)")
        }
        let alerts = try cluster.alerts().filter { ($0["labels"] as? [String: String])?["replace_key"] == "disk-sdb" }
        #expect(alerts.count == 1)
        #expect((alerts.first?["annotations"] as? [String: String])?["description"] == "97% used")
    }

    @Test func closeResolvesTheAlertAndTheReceiverHearsOfIt() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try Self.host(urls: [cluster.peers[0].url])
        #expect(try host.send(["-l", "error", "-r", "backup", "Backup failed", "rsync exited 23"]).result.status == 0)
        try receiver.wait { notifications($0, status: "firing", replaceKey: "backup").count >= 1 }
        #expect(try cluster.alerts(active: true).contains { ($0["labels"] as? [String: String])?["replace_key"] == "backup" })

        let closed = try host.run(["close", "--json", "-r", "backup"])
        #expect(closed.status == 0, "\(closed.standardOutput) \(closed.standardError)")
        #expect(!(try cluster.alerts(active: true).contains { ($0["labels"] as? [String: String])?["replace_key"] == "backup" }))
        let resolved = try receiver.wait { notifications($0, status: "resolved", replaceKey: "backup").count >= 1 }
        #expect(notifications(resolved, status: "resolved", replaceKey: "backup").count == 1, "\(cluster.logs)")
        // The resolved alert still says what it was about: its last summary and description.
        let alert = try #require(notifications(resolved, status: "resolved", replaceKey: "backup").first?["alerts"] as? [[String: Any]])
            .first { ($0["labels"] as? [String: String])?["replace_key"] == "backup" }
        #expect(alert?["annotations"] as? [String: String] == ["summary": "Backup failed", "description": "rsync exited 23"], "\(String(describing: alert))")
    }

    /// Under `serve`, an open event's alert (sent with a replace key, not closed) is posted
    /// again before its `endsAt`: still active after three times `resolve_after`, while a
    /// one-shot event's alert beside it ended on its own, and a reload does not stop that.
    /// `close` resolves it, the receiver hears of it, and no later re-post makes it fire again.
    @Test func serveKeepsAnOpenAlertActiveUntilClose() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let host = try Self.host(urls: [cluster.peers[0].url], extra: "    resolve_after: 3s")
        let daemon = try DaemonProcess.start(config: host.config)
        defer { daemon.stop() }
        let sent = try ProcessRunner.notifyRoute(["send", "--json", "-l", "error", "-r", "incident", "Database down"], environment: daemon.environment)
        #expect(decodeObject(sent.standardOutput)["via"] as? String == "daemon", "\(sent.standardOutput) \(sent.standardError)")
        #expect(sent.status == 0, "\(sent.standardError)")
        let oneShot = try ProcessRunner.notifyRoute(["send", "-l", "warning", "Deploy slow"], environment: daemon.environment)
        #expect(oneShot.status == 0, "\(oneShot.standardError)")
        func active(_ alertname: String) throws -> Bool {
            try cluster.alerts(active: true).contains { ($0["labels"] as? [String: String])?["alertname"] == alertname }
        }
        #expect(try active("Database down") && active("Deploy slow"))

        sleep(10)
        #expect(try active("Database down"), "resolve_after 3s, 10s later:\n\(daemon.log)\n\(cluster.logs)")
        #expect(try !active("Deploy slow"), "a one-shot event's alert ends at its endsAt")
        #expect(notifications(try receiver.requests(), status: "resolved", replaceKey: "incident").isEmpty)
        // A reload makes new sinks; what the old one kept active stays so.
        let reloaded = try ProcessRunner.notifyRoute(["reload", "--socket", daemon.socketPath])
        #expect(reloaded.status == 0, "\(reloaded.standardError)")
        sleep(6)
        #expect(try active("Database down"), "6s after a reload:\n\(daemon.log)")

        let closed = try ProcessRunner.notifyRoute(["close", "--json", "-r", "incident"], environment: daemon.environment)
        #expect(closed.status == 0, "\(closed.standardOutput) \(closed.standardError)")
        #expect(try !active("Database down"))
        let resolved = try receiver.wait { notifications($0, status: "resolved", replaceKey: "incident").count >= 1 }
        #expect(notifications(resolved, status: "resolved", replaceKey: "incident").count == 1)
        // Longer than a re-post interval (1s): nothing brings it back.
        sleep(3)
        #expect(try !active("Database down"), "\(daemon.log)")
    }

    /// Nothing listens: the connection is refused, which fails the post at once instead of
    /// waiting out the sink's deadline (5s); the failover (a webhook) gets the event.
    @Test func alertmanagerDownFailsOverWithinTheDeadline() throws {
        let receiver = try HTTPReceiver.start()
        defer { receiver.stop() }
        let port = try FreePort.pick()
        let host = try NotifyRouteHost(
            sinks: """
                  am: { kind: alertmanager, url: "http://127.0.0.1:\(port)" }
                  spare: { kind: webhook, url: "\(receiver.url)/spare" }
                """,
            routes: "routes:\n  - to: [am]\n    failover: [spare]")
        let (result, report) = try host.send(["-r", "down", "Disk full"])
        #expect(result.status == 0, "\(result.standardError)")
        let am = try #require(report.sink("am"))
        #expect(am["status"] as? String == "failed")
        #expect(am["retryable"] as? Bool == true)
        #expect(report.sink("spare")?["status"] as? String == "delivered")
        #expect(try receiver.requests(path: "/spare").count == 1)
        #expect(am["error"] as? String == "http://127.0.0.1:\(port)/…: connection refused")
        #expect(result.duration < .seconds(2.5), "deadline 5s, took \(result.duration)")
    }

    /// One peer of a pair is down (its port refuses connections): the other takes the
    /// event at once, and the report names the one that refused, without waiting out the
    /// sink's deadline (5s) for a connection that cannot be made.
    @Test func onePeerDownDeliversThroughTheOtherWithoutWaiting() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(peers: 2, notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        cluster.stop(peer: 1)
        let host = try Self.host(urls: cluster.peers.map(\.url))
        let (result, report) = try host.send(["-r", "half", "Disk full"])
        #expect(result.status == 0, "\(result.standardError) \(result.standardOutput)")
        #expect(report.sink("am")?["status"] as? String == "delivered")
        let notes = report.sink("am")?["notes"] as? [String] ?? []
        #expect(notes.contains { $0.contains(cluster.peers[1].url) && $0.contains("connection refused") }, "\(notes)")
        #expect(result.duration < .seconds(2.5), "deadline 5s, took \(result.duration)")
        #expect(try cluster.alerts(peer: 0).contains { ($0["labels"] as? [String: String])?["replace_key"] == "half" })
    }

    /// One peer accepts connections and never answers (a hung process): once the other
    /// accepted, it gets half a second more, not the rest of the deadline.
    @Test func aHungPeerDoesNotHoldTheDelivery() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let silent = try SilentListener()
        defer { silent.close() }
        let host = try Self.host(urls: [cluster.peers[0].url, "http://127.0.0.1:\(silent.port)"])
        let (result, report) = try host.send(["-r", "hung", "Disk full"])
        #expect(result.status == 0, "\(result.standardError) \(result.standardOutput)")
        #expect(report.sink("am")?["status"] as? String == "delivered")
        let notes = report.sink("am")?["notes"] as? [String] ?? []
        #expect(notes == ["peer http://127.0.0.1:\(silent.port)/…: no answer 500ms after another peer accepted"], "\(notes)")
        #expect(result.duration < .seconds(2.5), "deadline 5s, took \(result.duration)")
        #expect(try cluster.alerts().contains { ($0["labels"] as? [String: String])?["replace_key"] == "hung" })
    }

    /// It accepts the connection and never answers: the sink gives up at its deadline,
    /// the failover still gets the event, and without one the send exits 1.
    @Test func alertmanagerHungFailsOverWithinTheDeadline() throws {
        let receiver = try HTTPReceiver.start()
        defer { receiver.stop() }
        let silent = try SilentListener()
        defer { silent.close() }
        let host = try NotifyRouteHost(
            sinks: """
                  am: { kind: alertmanager, url: "http://127.0.0.1:\(silent.port)", deadline: 1s }
                  spare: { kind: webhook, url: "\(receiver.url)/spare" }
                """,
            routes: "routes:\n  - to: [am]\n    failover: [spare]")
        let (result, report) = try host.send(["Disk full"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(report.sink("am")?["retryable"] as? Bool == true)
        #expect(report.sink("spare")?["status"] as? String == "delivered")
        #expect(result.duration < .seconds(3), "deadline 1s, took \(result.duration)")

        let alone = try NotifyRouteHost(
            sinks: "  am: { kind: alertmanager, url: \"http://127.0.0.1:\(silent.port)\", deadline: 1s }", routes: "fallback: [am]")
        let (lonely, lonelyReport) = try alone.send(["Disk full"])
        #expect(lonely.status == 1)
        #expect(lonelyReport.sink("am")?["status"] as? String == "timed-out" || lonelyReport.sink("am")?["status"] as? String == "failed")
        #expect(lonelyReport.sink("am")?["retryable"] as? Bool == true)
        #expect(lonely.duration < .seconds(3), "deadline 1s, took \(lonely.duration)")
    }

    /// Alertmanager 0.25 refuses a whole post (400) when one label name is outside
    /// `[a-zA-Z_][a-zA-Z0-9_]*`: a static label so named is refused when the config loads,
    /// at its place, with the name to write instead.
    @Test func aBadStaticLabelNameIsAConfigErrorWithTheNameToWrite() throws {
        let host = try Self.host(urls: ["http://127.0.0.1:9"], extra: "    labels: { team: ops, \"bad-name\": x }")
        for arguments in [["send", "--config", host.config.path, "Disk full"], ["config", "check", "--config", host.config.path]] {
            let result = try ProcessRunner.notifyRoute(arguments, environment: host.environment)
            #expect(result.status == 78, "\(arguments)")
            #expect(result.standardError.contains(
                "\(host.config.path):7:26: sink \"am\": labels: \"bad-name\" is not a label name Alertmanager accepts ([a-zA-Z_][a-zA-Z0-9_]*); write bad_name"),
                "\(arguments): \(result.standardError)")
        }
        let digit = try Self.host(urls: ["http://127.0.0.1:9"], extra: "    labels: { 9lives: x }")
        #expect(try ProcessRunner.notifyRoute(["config", "check", "--config", digit.config.path]).standardError.contains("\"9lives\" is not a label name Alertmanager accepts ([a-zA-Z_][a-zA-Z0-9_]*); write _9lives"))
    }

    /// Our alerts' label and annotation names are all valid now, so the sink can no longer
    /// provoke a 400 on purpose; what Alertmanager refuses is still reported with its own
    /// message, by the transport every post goes through, tested on the real refusal.
    @Test func aRefusalIsReportedWithAlertmanagersMessage() async throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let alert = #"[{"labels":{"alertname":"Disk full","bad-name":"x"}}]"#
        do {
            _ = try await HTTPTransport().post(
                Array(alert.utf8), to: cluster.peers[0].url + "/api/v2/alerts", headers: [], deadline: .now + .seconds(5), timeout: nil)
            Issue.record("Alertmanager accepted a label named bad-name")
        } catch {
            #expect(error.message.contains("answered 400: invalid label set: invalid name \"bad-name\""), "\(error.message)")
            #expect(!error.isRetryable)
        }
    }

    /// Alertmanager's schema refuses a generatorURL that is not a URI (422, every post):
    /// caught when the config loads instead.
    @Test func aGeneratorURLThatIsNotAURLIsAConfigError() throws {
        let host = try Self.host(urls: ["http://127.0.0.1:9"], extra: "    generator_url: \"not a uri\"")
        let result = try host.run(["send", "x"])
        #expect(result.status == 78)
        #expect(result.standardError.contains("\(host.config.path):7:5: sink \"am\": \"not a uri\" is not an http:// or https:// URL with a host"),
                "\(result.standardError)")
    }

    /// Two hosts (two state directories) send the same event to both peers of a pair: the
    /// peers gossip their notification log, and the receiver hears of it once.
    @Test func anHAPairNotifiesOnceForTwoHosts() throws {
        let receiver = try HTTPReceiver.start()
        let cluster = try AlertmanagerCluster.start(peers: 2, notifying: receiver)
        defer { cluster.stop(); receiver.stop() }
        let urls = cluster.peers.map(\.url)
        let hosts = try [Self.host(urls: urls), Self.host(urls: urls)]
        #expect(hosts[0].environment["XDG_RUNTIME_DIR"] != hosts[1].environment["XDG_RUNTIME_DIR"])
        for host in hosts {
            let (result, report) = try host.send(["-l", "critical", "-r", "db-primary", "Database down"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(report.sink("am")?["notes"] == nil || (report.sink("am")?["notes"] as? [String] ?? []).isEmpty)
        }
        for peer in 0..<2 {
            #expect(try cluster.alerts(peer: peer).filter { ($0["labels"] as? [String: String])?["replace_key"] == "db-primary" }.count == 1)
        }
        try receiver.wait { notifications($0, status: "firing", replaceKey: "db-primary").count >= 1 }
        // Long enough for the second peer's own notification (group_wait 1s + peer_timeout 2s) to have come, had it not been deduplicated.
        sleep(6)
        let firing = notifications(try receiver.requests(), status: "firing", replaceKey: "db-primary")
        #expect(firing.count == 1, "\(firing)\n\(cluster.logs)")
    }
}

/// A TCP listener that never accepts: connections complete (the kernel's backlog) and
/// nothing ever answers, as a hung server.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw FixtureError(description: "listen: errno \(errno)") }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
