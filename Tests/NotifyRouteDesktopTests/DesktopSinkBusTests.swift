import Foundation
import NotifyRoute
import NotifyRouteDesktop
import NotifyRouteTestSupport
import Synchronization
import Testing

/// The desktop sink against a real session bus and python-dbusmock's notification
/// daemon, one bus and daemon per test. The sink runs in an exit test's child process
/// (see ``Child``); the parent owns the bus and reads back what the daemon received.
@Suite(
    "desktop sink on a real session bus", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct DesktopSinkBusTests {
    @Test func everyMappedFieldReachesTheDaemon() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router("""
                    sinks:
                      desktop:
                        kind: desktop
                        hints: { transient: "true", desktop-entry: backup-tool, x-notify-route-test: hello }
                    routes:
                      - match: {}
                        to: [desktop]
                    """)
                let first = try await router.send(NotificationEvent(
                    title: "Disk <full>", body: "a & b <c>", level: .critical, timeout: .never, app: "backup",
                    icon: "drive-harddisk", category: "device.error",
                    actions: [NotificationAction(id: "ack", label: "Acknowledge"), NotificationAction(id: "snooze", label: "Snooze")]))
                #expect(first.summary == .delivered)
                #expect(first.outcomes.first?.handle?.value.hasPrefix("1@:1.") == true)
                #expect(try await router.send(NotificationEvent(title: "Low", level: .debug, timeout: .after(.milliseconds(1500)))).summary == .delivered)
                #expect(try await router.send(NotificationEvent(title: "Warn", level: .warning, timeout: .serverDefault)).summary == .delivered)
            }
        }

        let calls = try daemon.notifyCalls()
        try #require(calls.count == 3)
        let critical = calls[0]
        #expect(critical.appName == "backup")
        #expect(critical.replacesID == 0)
        // libnotify puts the icon in app_icon, or in the image-path hint for spec 1.2 servers.
        let icons = [critical.appIcon, critical.hints["image-path"]?.text, critical.hints["image_path"]?.text]
        #expect(icons.contains("drive-harddisk"), "icon: \(icons)")
        #expect(critical.summary == "Disk <full>")
        #expect(critical.body == "a &amp; b &lt;c&gt;", "escaped: the daemon advertises body-markup")
        #expect(pairs(critical.actions) == ["ack": "Acknowledge", "snooze": "Snooze"])
        #expect(critical.hints["urgency"]?.type == "y")
        #expect(critical.hints["urgency"]?.text == "2")
        #expect(critical.hints["category"]?.text == "device.error")
        #expect(critical.hints["transient"]?.type == "b")
        #expect(critical.hints["transient"]?.text == "true")
        #expect(critical.hints["desktop-entry"]?.text == "backup-tool")
        #expect(critical.hints["x-notify-route-test"]?.text == "hello")
        #expect(critical.expireTimeout == 0, "never is 0")

        #expect(calls[1].hints["urgency"]?.text == "0")
        #expect(calls[1].expireTimeout == 1500)
        #expect(calls[1].body == "")
        #expect(calls[2].hints["urgency"]?.text == "1")
        #expect(calls[2].expireTimeout == -1, "the server's default only when asked for")
    }

    @Test func bodyIsPlainWhenTheServerHasNoMarkup() async throws {
        let daemon = try DBusMockDaemon.start(capabilities: "actions body")
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                #expect(await sink.availability() == .available)
                #expect(sink.capabilities.supportsMarkup == false)
                #expect(sink.capabilities.supportsActions == true)
                _ = try await sink.deliver(SinkDelivery(event: ResolvedEvent(title: "t", body: "a & b <c>"), sinkName: "desktop"))
            }
        }
        #expect(try daemon.notifyCalls().map(\.body) == ["a & b <c>"])
    }

    @Test func actionsAreDroppedWithANoteWithoutTheActionsCapability() async throws {
        let daemon = try DBusMockDaemon.start(capabilities: "body body-markup")
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                let actions = [NotificationAction(id: "ack", label: "OK")]
                // First send: nothing probed yet, the sink drops them itself.
                let first = try await router.send(NotificationEvent(title: "one", actions: actions))
                #expect(first.summary == .delivered)
                #expect(first.outcomes.first?.notes.contains { $0.contains("actions dropped") } == true)
                // Then the probed capabilities say so, and the router drops them.
                #expect(router.sink(named: "desktop")?.capabilities.supportsActions == false)
                let second = try await router.send(NotificationEvent(title: "two", actions: actions))
                #expect(second.outcomes.first?.notes.contains { $0.contains("actions dropped") } == true)
            }
        }
        #expect(try daemon.notifyCalls().map(\.actions) == [[], []])
    }

    @Test func theSameReplaceKeyUpdatesTheSameNotification() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                let first = try await router.send(NotificationEvent(title: "Backup 10%", replaceKey: "backup"))
                let second = try await router.send(NotificationEvent(title: "Backup 90%", replaceKey: "backup"))
                let other = try await router.send(NotificationEvent(title: "Unrelated"))
                #expect(first.outcomes.first?.handle?.value.hasPrefix("1@:1.") == true)
                #expect(second.outcomes.first?.status.name == "replaced")
                #expect(second.outcomes.first?.handle == first.outcomes.first?.handle)
                #expect(other.outcomes.first?.handle?.value.hasPrefix("2@:1.") == true)
            }
        }
        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.replacesID) == [0, 1, 0])
        #expect(calls.map(\.summary) == ["Backup 10%", "Backup 90%", "Unrelated"])
    }

    @Test func aDuplicateUpdatesTheNotificationWithItsCount() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                var statuses: [String] = []
                for _ in 1...3 {
                    let report = try await router.send(NotificationEvent(title: "Disk full", level: .error))
                    statuses.append(report.outcomes.first?.status.name ?? "none")
                    #expect(report.summary != .failed)
                }
                #expect(statuses == ["delivered", "suppressed", "suppressed"])
                // A duplicate sooner than the coalescing interval after the last update
                // waits; finishing sends it, so the notification ends showing the count.
                await router.finish(within: .seconds(2))
            }
        }
        let calls = try daemon.notifyCalls()
        #expect(calls.map(\.summary) == ["Disk full", "Disk full (×2)", "Disk full (×3)"])
        #expect(calls.map(\.replacesID) == [0, 1, 1], "updated in place, never stacked")
    }

    @Test func closeSendsCloseNotification() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                _ = try await router.send(NotificationEvent(title: "Uploading", timeout: .never, replaceKey: "upload"))
                let report = await router.close(replaceKey: "upload")
                #expect(report.outcomes.map(\.status.name) == ["delivered"])
                #expect(report.outcomes.first?.handle?.value.hasPrefix("1@") == true)
            }
        }
        #expect(try daemon.closeCalls() == [1])
    }

    @Test func actionsAndDismissalsReachInteractionsAndTheCallback() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let seen = CallbackLog()
                let sink = DesktopSink { seen.append($0) }
                // A sink made in code, with its callback, in place of the one the config declares.
                let router = try NotificationRouter(
                    configuration: RouterConfiguration.load(yaml: Child.oneRoute, file: "t.yaml", registry: SinkRegistry([DesktopSink.plugin])),
                    sinks: ["desktop": sink])
                let actions = [NotificationAction(id: "ack", label: "Acknowledge")]

                // The user acts before anyone listens: the sink buffers it for the late subscriber.
                let report = try await router.send(NotificationEvent(title: "Deploy?", timeout: .never, actions: actions))
                let handle = try #require(report.outcomes.first?.handle)
                let id = try #require(UInt32(handle.value.prefix { $0.isNumber }))
                try DBusMockDaemon.emitActionInvoked(busAddress: address, id: id, action: "ack")
                try await Task.sleep(for: .milliseconds(100))
                let action = await Child.within(.seconds(5)) { await router.firstInteraction(with: report) }
                #expect(action?.interaction == .actionInvoked("ack"))
                #expect(action?.sink == "desktop")

                // Listening first, then the user dismisses it.
                let second = try await router.send(NotificationEvent(title: "Second", timeout: .never))
                let secondHandle = try #require(second.outcomes.first?.handle)
                let secondID = try #require(UInt32(secondHandle.value.prefix { $0.isNumber }))
                async let dismissal = Child.within(.seconds(5)) { await router.firstInteraction(with: second) }
                try await Task.sleep(for: .milliseconds(50))
                try DBusMockDaemon.emitNotificationClosed(busAddress: address, id: secondID, reason: 2)
                #expect(await dismissal?.interaction == .dismissed(.dismissed))

                #expect(seen.items.contains(SinkInteraction(handle: handle, interaction: .actionInvoked("ack"))))
                #expect(seen.items.contains(SinkInteraction(handle: secondHandle, interaction: .dismissed(.dismissed))))
            }
        }
    }

    @Test func aDaemonTheBusStartsOnDemandIsStarted() async throws {
        let bus = try DBusMockDaemon.startActivatable()
        defer { bus.shutdown() }
        await #expect(processExitsWith: .success) { [address = bus.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                // python-dbusmock takes a while to start; a real daemon (dunst, mako) far less.
                let sink = DesktopSink(configuration: .init(probeTimeout: .seconds(3)))
                #expect(await sink.availability() == .available)
                _ = try await sink.deliver(SinkDelivery(event: ResolvedEvent(title: "started on demand"), sinkName: "desktop"))
            }
        }
        #expect(try bus.notifyCalls().map(\.summary) == ["started on demand"])
    }

    @Test func aSlowStartDeliversTheFirstNotification() async throws {
        // The bus's start takes 700 ms, then python-dbusmock's own start: past the probe's 500 ms.
        let bus = try DBusMockDaemon.startActivatable(delay: .milliseconds(700))
        defer { bus.shutdown() }
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [address = bus.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                let clock = ContinuousClock()
                var receipt: SinkReceipt?
                let elapsed = try await clock.measure {
                    receipt = try await sink.deliver(SinkDelivery(
                        event: ResolvedEvent(title: "started late"), sinkName: "desktop", deadline: .now + .seconds(5)))
                }
                #expect(receipt?.handle != nil)
                #expect(elapsed > .milliseconds(700), "it did wait for the start")
                Child.report("slow-start", elapsed)
            }
        }
        #expect(try bus.notifyCalls().map(\.summary) == ["started late"])
        print("desktop sink, daemon started in 700 ms + dbusmock's start: delivered in \(result?.standardOutputContent.measurements["slow-start"] ?? -1) ms")
    }

    @Test func aStartThatTimedOutIsNotWaitedForAgainByEveryCall() async throws {
        let bus = try DBusMockDaemon.startActivatable(script: "exec sleep 60")
        defer { bus.shutdown() }
        await #expect(processExitsWith: .success) { [address = bus.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                guard let (reason, firstElapsed) = await Child.unavailability(of: sink) else { return }
                #expect(reason.contains("the start timed out"), "\(reason)")
                #expect(firstElapsed < .milliseconds(900))
                // Past the failure's lifetime the sink asks again: the bus only, not another wait.
                try await Task.sleep(for: ServerProbeCacheLifetime.failure + .milliseconds(100))
                guard let (again, secondElapsed) = await Child.unavailability(of: sink) else { return }
                #expect(again.contains("still starting"), "\(again)")
                #expect(secondElapsed < .milliseconds(200), "\(secondElapsed)")
            }
        }
    }

    @Test func aDeliveryWaitingForAStartIsNotCalledAHangByTheNext() async throws {
        let bus = try DBusMockDaemon.startActivatable(script: "exec sleep 60")
        defer { bus.shutdown() }
        await #expect(processExitsWith: .success) { [address = bus.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                async let first = Child.failedDelivery(sink, SinkDelivery(
                    event: ResolvedEvent(title: "first"), sinkName: "desktop", deadline: .now + .seconds(3)))
                // The first delivery waits for the start on the GLib thread; the second finds it busy.
                try await Task.sleep(for: .milliseconds(1500))
                let (error, elapsed) = try await Child.failedDelivery(sink, SinkDelivery(
                    event: ResolvedEvent(title: "second"), sinkName: "desktop", deadline: .now + .seconds(3)))
                #expect(error.kind == .unavailable)
                #expect(error.message.contains("is not up yet"), "\(error.message)")
                #expect(!error.message.contains("may be hung"))
                #expect(elapsed < .milliseconds(100))
                let (firstError, _) = try await first
                #expect(firstError.message.contains("the start timed out"), "\(firstError.message)")
            }
        }
    }

    @Test func aLongRunningSinkReconnectsWhenTheBusComesBack() async throws {
        await #expect(processExitsWith: .success) {
            await Child.reportingErrors {
                // The bus is this process's own, so it can restart it under the sink.
                let bus = try DBusMockDaemon.start()
                defer { bus.shutdown() }
                Child.useBus(bus.busAddress)
                let router = try Child.router(Child.oneRoute)
                #expect(try await router.send(NotificationEvent(title: "before")).summary == .delivered)

                bus.stopBus()
                let gone = try await router.send(NotificationEvent(title: "while gone"))
                #expect(gone.summary != .delivered)

                try bus.restartBus()
                try bus.startDaemon()
                try await Task.sleep(for: ServerProbeCacheLifetime.failure + .milliseconds(100))
                let back = try await router.send(NotificationEvent(title: "after"))
                #expect(back.summary == .delivered, "\(back.outcomes.map(\.status))")
                #expect(try bus.notifyCalls().map(\.summary) == ["after"], "the new bus's daemon showed it")
            }
        }
    }

    @Test func noDaemonOnTheBusIsReportedWithTheReason() async throws {
        let bus = try DBusMockDaemon.start(withDaemon: false)
        defer { bus.shutdown() }
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [address = bus.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                guard let (reason, elapsed) = await Child.unavailability(of: sink) else { return }
                #expect(reason.contains("no notification daemon"))
                #expect(elapsed < .seconds(1))
                Child.report("no-daemon", elapsed)
                await #expect { _ = try await sink.deliver(SinkDelivery(event: ResolvedEvent(title: "t"), sinkName: "desktop")) } throws: {
                    ($0 as? SinkError)?.kind == .unavailable
                }
            }
        }
        print("desktop sink, no daemon on the bus: reported in \(result?.standardOutputContent.measurements["no-daemon"] ?? -1) ms")
    }

    @Test func noSessionBusIsReportedWithTheReason() async throws {
        await #expect(processExitsWith: .success) {
            Child.useBus(nil)
            await Child.reportingErrors {
                guard case .unavailable(let reason) = await DesktopSink().availability() else {
                    Issue.record("expected unavailable without a bus")
                    return
                }
                #expect(reason.contains("no session bus"))
                #expect(reason.contains("DBUS_SESSION_BUS_ADDRESS is not set"))
            }
        }
        await #expect(processExitsWith: .success) {
            Child.useBus("unix:path=/nonexistent/notify-route-test-bus")
            await Child.reportingErrors {
                let clock = ContinuousClock()
                var availability = SinkAvailability.available
                let elapsed = await clock.measure { availability = await DesktopSink().availability() }
                guard case .unavailable(let reason) = availability else {
                    Issue.record("expected unavailable with a dead bus address")
                    return
                }
                #expect(reason.contains("no session bus: cannot connect"))
                #expect(elapsed < .seconds(1))
            }
        }
    }

    @Test func aHungDaemonIsReportedWithinASecondAndAHalf() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        daemon.freezeDaemon()
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let sink = DesktopSink()
                let (error, elapsed) = try await Child.failedDelivery(sink, SinkDelivery(event: ResolvedEvent(title: "t"), sinkName: "desktop"))
                #expect(error.kind == .timedOut)
                #expect(error.isRetryable)
                #expect(error.message.contains("may be hung"))
                #expect(elapsed < .milliseconds(1500))
                Child.report("hung-deliver", elapsed)
                // Known now: availability answers at once, without waiting again.
                let again = await ContinuousClock().measure { #expect(await sink.availability() != .available) }
                #expect(again < .milliseconds(100))
            }
        }
        let ms = result?.standardOutputContent.measurements["hung-deliver"] ?? -1
        print("desktop sink, hung daemon (SIGSTOP): deliver failed in \(ms) ms")
    }

    @Test func aDeadlineBeforeTheProbeAnswersSaysSo() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        daemon.freezeDaemon()
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                // The probe may take 500 ms; the delivery has 150.
                let (error, elapsed) = try await Child.failedDelivery(DesktopSink(), SinkDelivery(
                    event: ResolvedEvent(title: "t"), sinkName: "desktop", deadline: .now + .milliseconds(150)))
                #expect(error.kind == .timedOut)
                #expect(error.message == "the notification daemon was not probed before the sink's deadline; it may be hung")
                #expect(elapsed < .milliseconds(450))
            }
        }
        // Thawed, the daemon shows that nothing was sent after the probe that hung.
        if let pid = daemon.daemonPID { kill(pid, SIGCONT) }
        #expect(try daemon.notifyCalls().isEmpty)
    }

    @Test func aDaemonThatHangsAfterAnsweringIsCutOffByTheDeadline() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        let pid = try #require(daemon.daemonPID)
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String, pid = pid as Int32] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                #expect(try await router.send(NotificationEvent(title: "fine")).summary == .delivered)
                kill(pid, SIGSTOP)
                // libnotify's show now blocks its thread for 25 s; the router's 1 s deadline answers.
                let clock = ContinuousClock()
                var report: DeliveryReport?
                let elapsed = try await clock.measure { report = try await router.send(NotificationEvent(title: "stuck")) }
                #expect(report?.summary == .failed)
                #expect(elapsed < .milliseconds(1500))
                // And later events fail at once instead of queueing behind the stuck call.
                var next: DeliveryReport?
                let nextElapsed = try await clock.measure { next = try await router.send(NotificationEvent(title: "next")) }
                guard case .failed(let error)? = next?.outcomes.first?.status else {
                    Issue.record("expected a failure, got \(String(describing: next?.outcomes.first?.status.name))")
                    return
                }
                #expect(error.message.contains("has not answered an earlier request"))
                #expect(nextElapsed < .milliseconds(200))
            }
        }
    }

    @Test func makingASinkLoadsNothingUntilItIsUsed() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                _ = router.sink(named: "desktop")
                #expect(!Child.mappedObjects().contains { $0.contains("libnotify") }, "no dlopen when a sink is made")
                #expect(!Child.threadNames().contains("notify-route-gl"), "no GLib thread either")
                #expect(try await router.send(NotificationEvent(title: "now")).summary == .delivered)
                #expect(Child.mappedObjects().contains { $0.hasSuffix("/libnotify.so.4") || $0.contains("/libnotify.so.4.") })
                #expect(Child.threadNames().contains("notify-route-gl"))
            }
        }
        #expect(try daemon.notifyCalls().map(\.summary) == ["now"])
    }

    /// `capabilities` is declared, not probed: reading it (as `explain` and `--dry-run` do)
    /// loads no libnotify and starts no thread; the first delivery probes, and what it
    /// learnt shows in the capabilities read afterwards.
    @Test func readingCapabilitiesLoadsNothingAndStartsNoThread() async throws {
        let daemon = try DBusMockDaemon.start(capabilities: "body body-markup")
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            await Child.reportingErrors {
                let router = try Child.router(Child.oneRoute)
                let sink = try #require(router.sink(named: "desktop"))
                let threadsBefore = Child.threadCount()
                let first = sink.capabilities
                // Time for a thread started in the background to load libnotify and name itself.
                usleep(300_000)
                #expect(Child.threadCount() == threadsBefore, "no thread started")
                #expect(!Child.mappedObjects().contains { $0.contains("libnotify") }, "no dlopen")
                #expect(Child.threadNames().isDisjoint(with: ["notify-route-gl", "gmain", "gdbus"]))
                #expect(first.supportsActions && !first.supportsMarkup, "nothing known yet: actions let through")
                #expect(try await router.send(NotificationEvent(title: "now")).summary == .delivered)
                #expect(Child.mappedObjects().contains { $0.hasSuffix("/libnotify.so.4") || $0.contains("/libnotify.so.4.") })
                let probed = sink.capabilities
                #expect(!probed.supportsActions && probed.supportsMarkup, "what the delivery's probe found")
            }
        }
        #expect(try daemon.notifyCalls().map(\.summary) == ["now"])
    }

    @Test func withoutLibnotifyTheSinkIsUnavailableWithTheReason() async throws {
        let daemon = try DBusMockDaemon.start()
        defer { daemon.shutdown() }
        await #expect(processExitsWith: .success) { [address = daemon.busAddress as String] in
            Child.useBus(address)
            // The loader's test hook: a library that does not exist, as without libnotify4.
            setenv("NOTIFY_ROUTE_TEST_LIBNOTIFY", "libnotify-missing.so.4", 1)
            await Child.reportingErrors {
                let sink = DesktopSink()
                guard case .unavailable(let reason) = await sink.availability() else {
                    Issue.record("expected unavailable without libnotify")
                    return
                }
                #expect(reason.hasPrefix("libnotify-missing.so.4 could not be loaded: "), "\(reason)")
                #expect(reason.hasSuffix("; install libnotify4"), "\(reason)")
                await #expect { _ = try await sink.deliver(SinkDelivery(event: ResolvedEvent(title: "t"), sinkName: "desktop")) } throws: {
                    ($0 as? SinkError)?.kind == .unavailable && "\($0)".contains("could not be loaded")
                }
                await #expect { _ = try await sink.close(SinkCloseRequest(sinkName: "desktop", handle: SinkHandle("1"), replaceKey: "k", deadline: .now + .seconds(1))) } throws: {
                    ($0 as? SinkError)?.kind == .unavailable
                }
            }
        }
        #expect(try daemon.calls().isEmpty, "nothing reached the daemon")
    }

    private func pairs(_ flat: [String]) -> [String: String] {
        var result: [String: String] = [:]
        var index = 0
        while index + 1 < flat.count {
            result[flat[index]] = flat[index + 1]
            index += 2
        }
        return result
    }
}

/// The probe cache's failure lifetime, as the tests wait it out.
enum ServerProbeCacheLifetime {
    static let failure: Duration = .seconds(2)
}

/// What the `onInteraction` callback saw (it is called on the plugin's GLib thread).
final class CallbackLog: Sendable {
    private let storage = Mutex<[SinkInteraction]>([])
    func append(_ item: SinkInteraction) { storage.withLock { $0.append(item) } }
    var items: [SinkInteraction] { storage.withLock { $0 } }
}
