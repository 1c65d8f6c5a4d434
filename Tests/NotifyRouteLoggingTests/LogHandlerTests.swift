import Logging
import NotifyRoute
import NotifyRouteTesting
import NotifyRouteLogging
import Synchronization
import Testing

/// A router with one recording sink, a manual clock and a long deadline (a loaded CI
/// machine must not turn a recording sink into a timeout).
private func makeRouter(_ sink: some NotificationSink = RecordingSink()) throws -> NotificationRouter {
    var config = RouterConfiguration(fallback: ["tty"])
    config.defaults.deadline = .seconds(60)
    return try NotificationRouter(configuration: config, sinks: ["tty": sink], clock: ManualClock())
}

/// Runs the bridge's drain around `body`, then shuts it down and waits until everything
/// buffered has been sent: the tests await delivery instead of sleeping.
private func draining(_ bridge: NotificationLogBridge, _ body: () throws -> Void) async rethrows {
    let drain = Task { await bridge.run() }
    defer { bridge.shutdown() }
    try body()
    bridge.shutdown()
    await drain.value
}

/// A console stand-in for a `MultiplexLogHandler`: remembers every record it is given.
private struct CapturingLogHandler: LogHandler {
    final class Box: Sendable {
        let records = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])
        var messages: [String] { records.withLock { $0.map(\.message) } }
    }

    let box: Box
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        box.records.withLock { $0.append((event.level, event.message.description, event.metadata ?? [:])) }
    }
}

@Suite struct LogHandlerTests {
    @Test func recordsBelowTheMinimumLevelAreNotSent() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let logger = Logger(label: "svc") { bridge.handler(label: $0, minimumLevel: .warning) }
        await draining(bridge) {
            logger.trace("t")
            logger.debug("d")
            logger.info("i")
            logger.notice("n")
            logger.warning("w")
            logger.error("e")
        }
        #expect(recorder.deliveries.map(\.event.title) == ["w", "e"])
        #expect(bridge.statistics.accepted == 2)
        #expect(bridge.statistics.sent == 2)
    }

    @Test func aLowerLogLevelDoesNotLowerTheMinimum() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        var logger = Logger(label: "svc") { bridge.handler(label: $0, minimumLevel: .error) }
        // What a service does for a chattier console; MultiplexLogHandler passes it on to every handler.
        logger.logLevel = .debug
        await draining(bridge) {
            logger.debug("chatter")
            logger.warning("still below")
            logger.critical("sent")
        }
        #expect(recorder.deliveries.map(\.event.title) == ["sent"])
    }

    @Test func aRecordBecomesAnEvent() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let provider = Logger.MetadataProvider { ["request": "r-42", "shared": "provider"] }
        var logger = Logger(label: "db.pool") {
            bridge.handler(label: $0, minimumLevel: .trace, metadataProvider: provider)
        }
        logger[metadataKey: "host"] = "db1"
        logger[metadataKey: "shared"] = "handler"
        struct Refused: Error, CustomStringConvertible { var description: String { "connection refused" } }
        let line = #line + 2
        await draining(bridge) {
            logger.error(
                "Connection lost\nretrying in 5s\nattempt 3", error: Refused(),
                metadata: ["shared": "record", "pool": ["size": "8", "hosts": ["a", "b"]], "attempt": .stringConvertible(3)],
                source: "db")
        }
        let event = try #require(recorder.deliveries.first?.event)
        #expect(event.title == "Connection lost")
        #expect(event.body == "retrying in 5s\nattempt 3\nerror: connection refused")
        #expect(event.level == .error)
        #expect(event.app == "db.pool")
        #expect(event.source == "db")
        #expect(event.tags == ["log"])
        #expect(event.fields == [
            "host": "db1", "request": "r-42", "shared": "record", "attempt": "3",
            "pool.size": "8", "pool.hosts.0": "a", "pool.hosts.1": "b", "error": "connection refused",
        ])
        let callSite = try #require(event.callSite)
        #expect(callSite.file == #fileID)
        #expect(callSite.line == line)
        #expect(callSite.function.hasPrefix("aRecordBecomesAnEvent"))
    }

    @Test func theSourceDefaultsToTheModuleAndLevelsMapToOurs() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let logger = Logger(label: "svc") { bridge.handler(label: $0, minimumLevel: .trace) }
        await draining(bridge) {
            for level in Logger.Level.allCases { logger.log(level: level, "\(level)") }
        }
        let pairs = recorder.deliveries.map { "\($0.event.title)=\($0.event.level)" }
        #expect(pairs == [
            "trace=debug", "debug=debug", "info=info", "notice=notice", "warning=warning", "error=error",
            "critical=critical",
        ])
        #expect(recorder.deliveries.first?.event.source == "NotifyRouteLoggingTests")
        #expect(Level(Logger.Level.trace) == .debug)
    }

    @Test func aBlankMessageStillHasATitle() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let logger = Logger(label: "svc") { bridge.handler(label: $0) }
        await draining(bridge) {
            logger.error("  \n")
            logger.error("\n  first real line  \n\nmore\n")
        }
        #expect(recorder.deliveries.map(\.event.title) == ["(empty log message)", "first real line"])
        #expect(recorder.deliveries.last?.event.body == "more")
        #expect(bridge.statistics.rejected == 0)
    }

    @Test func pastTheBoundRecordsAreDroppedAndCounted() async throws {
        let recorder = RecordingSink()
        let notes = CapturingLogHandler.Box()
        let bridge = NotificationLogBridge(
            router: try makeRouter(recorder), capacity: 3,
            logger: Logger(label: "notify-route.log-bridge") { _ in CapturingLogHandler(box: notes) })
        let logger = Logger(label: "svc") { bridge.handler(label: $0) }
        // Nothing drains yet: the buffer fills, and logging still returns at once.
        for index in 1...10 { logger.error("record \(index)") }
        #expect(bridge.statistics.accepted == 3)
        #expect(bridge.statistics.dropped == 7)
        #expect(bridge.statistics.pending == 3)
        await draining(bridge) {}
        #expect(recorder.deliveries.map(\.event.title) == ["record 1", "record 2", "record 3"])
        #expect(bridge.statistics.pending == 0)
        let note = try #require(notes.records.withLock { $0.first })
        #expect(note.level == .warning)
        #expect(note.metadata["dropped"] == "7")
    }

    @Test func afterShutdownNothingMoreIsTaken() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let logger = Logger(label: "svc") { bridge.handler(label: $0) }
        await draining(bridge) { logger.error("before") }
        logger.error("after")
        #expect(recorder.deliveries.map(\.event.title) == ["before"])
        #expect(bridge.statistics.dropped == 1)
    }

    @Test func aCancelledDrainReturnsAndCountsWhatIsLeft() async throws {
        let bridge = NotificationLogBridge(router: try makeRouter())
        let drain = Task { await bridge.run() }
        drain.cancel()
        await drain.value  // returns whether it was waiting for records or not yet started
        Logger(label: "svc") { bridge.handler(label: $0) }.error("too late")
        #expect(bridge.statistics.dropped == 1)
        #expect(bridge.statistics.pending == 0)
    }

    @Test func theRoutersOwnLoggersAreNeverSent() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        let handler = bridge.handler(label: "notify-route.router", minimumLevel: .trace)
        // Asks for nothing, so it never lowers a MultiplexLogHandler's effective level.
        #expect(handler.logLevel == .critical)
        let routerLogger = Logger(label: "notify-route.router") { _ in handler }
        await draining(bridge) {
            routerLogger.critical("sink failed")
            Logger(label: "svc") { bridge.handler(label: $0) }.error("real")
        }
        #expect(recorder.deliveries.map(\.event.title) == ["real"])
        #expect(bridge.statistics.accepted == 1)
    }

    @Test func aSinkThatLogsWhileDeliveringDoesNotFeedItself() async throws {
        // A sink whose own logger goes through the bridge under a label that the
        // prefix guard does not catch: the bridge still must not re-send its record.
        final class ChattySink: NotificationSink {
            let recorder = RecordingSink()
            let logger = Mutex<Logger?>(nil)
            var capabilities: SinkCapabilities { recorder.capabilities }
            func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
                logger.withLock { $0 }?.error("delivering \(delivery.event.title)")
                return try await recorder.deliver(delivery)
            }
        }
        let sink = ChattySink()
        let bridge = NotificationLogBridge(router: try makeRouter(sink))
        sink.logger.withLock { $0 = Logger(label: "my.sink") { bridge.handler(label: $0) } }
        await draining(bridge) {
            Logger(label: "svc") { bridge.handler(label: $0) }.error("disk full")
        }
        #expect(sink.recorder.deliveries.map(\.event.title) == ["disk full"])
        #expect(bridge.statistics.accepted == 1)
    }

    @Test func oneLineInAMultiplexLogHandler() async throws {
        let recorder = RecordingSink()
        let console = CapturingLogHandler.Box()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder))
        // The same factory a service passes to LoggingSystem.bootstrap (not called here:
        // bootstrapping is once per process, and the test process is shared).
        let factory: @Sendable (String) -> any LogHandler = { label in
            MultiplexLogHandler([CapturingLogHandler(box: console), bridge.handler(label: label, minimumLevel: .error)])
        }
        let logger = Logger(label: "payments", factory: factory)
        await draining(bridge) {
            logger.info("started")
            logger.warning("slow response")
            logger.error("card processor unreachable", metadata: ["processor": "acme"])
        }
        #expect(console.messages == ["started", "slow response", "card processor unreachable"])
        #expect(recorder.deliveries.count == 1)
        let event = try #require(recorder.deliveries.first?.event)
        #expect(event.title == "card processor unreachable")
        #expect(event.app == "payments")
        #expect(event.fields["processor"] == "acme")
    }

    @Test func customizeAdjustsEachEvent() async throws {
        let recorder = RecordingSink()
        let bridge = NotificationLogBridge(router: try makeRouter(recorder), tags: ["log", "ops"]) { event in
            event.replaceKey = "log:\(event.app ?? "")"
        }
        let logger = Logger(label: "svc") { bridge.handler(label: $0) }
        await draining(bridge) { logger.error("one") }
        let event = try #require(recorder.deliveries.first?.event)
        #expect(event.replaceKey == "log:svc")
        #expect(event.tags == ["log", "ops"])
    }
}
