#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute
import NotifyRouteClient
import NotifyRouteService
import Synchronization

/// The daemon's current router, swapped whole on reload between two requests, and the
/// counts `status` shows. Dedup windows, replace handles and held events live in the
/// state store, not in the router, so a reload keeps them.
///
/// What every routed event touches (the router, the counts) is behind a mutex, not the
/// actor, whose two hops per event crowd the pool under load (Tests/Benchmarks/README.md, "Why the code is so").
/// Reload and `status` stay on the actor.
public actor RouterHost {
    /// Builds a router from the config the daemon was started with, or throws what is
    /// wrong with it (a ``ConfigError`` with file:line:col).
    public typealias Loader = @Sendable () throws -> NotificationRouter

    /// The router in use now; a reload swaps it.
    public nonisolated var router: NotificationRouter { live.withLock { $0.router } }
    public private(set) var loadedAt: Date
    public private(set) var reloads = 0
    private let load: Loader
    private let startedAt = ContinuousClock.now
    private struct Live {
        var router: NotificationRouter
        var counts: [String: SinkCounts] = [:]
        /// When a paused event last woke the timer (``tally(_:)``).
        var lastPausePoke = ContinuousClock.now - .seconds(2)
    }
    private let live: Mutex<Live>
    /// Events between ``begin()`` and ``end(_:)``, counted without the lock.
    private let inFlight = Atomic(0)
    /// Bumped, under `live`'s lock, each time a reload swaps the router: while it stays
    /// the same, a connection routes with the router it read last and takes no lock for it
    /// (``begin(reusing:)``).
    private let generation = Atomic(0)
    /// Network deliveries that failed and may succeed later.
    public let retries: RetryQueue
    /// What goes on after a request was answered: retries, each router's own runtime (count
    /// updates), a replaced router finishing. The daemon runs it for as long as it serves.
    public nonisolated let runtime = RouterRuntime()
    /// Wakes the daemon's held-summary timer when something new is held, and on reload.
    public nonisolated let summaryWakeup = TimerWakeup()
    private let welcomeBox: Mutex<Welcome>

    /// What a new connection is told and checked against, from the current config: the
    /// server's event loop reads it without waiting for this actor, so a greeting costs a
    /// read and a write rather than two hops between threads.
    public struct Welcome: Sendable {
        /// The greeting line (``DaemonProtocol/Hello``), newline included, for a version-1 hello.
        public var greeting: [UInt8]
        /// The same for a version-2 hello (``DaemonProtocol/pipeliningVersion``).
        public var pipeliningGreeting: [UInt8]
        /// The config's `serve` settings (who besides the daemon's user may connect).
        public var serve: ServeSettings
        /// The config file routed with; `nil` for the embedded config.
        public var configFile: DaemonProtocol.FileIdentity?
    }

    /// The ``Welcome`` of the router in use; it changes on reload.
    public nonisolated var welcome: Welcome { welcomeBox.withLock { $0 } }

    /// Per sink, what happened to the events the daemon routed.
    public struct SinkCounts: Codable, Hashable, Sendable {
        public var delivered = 0, replaced = 0, queued = 0, suppressed = 0, failed = 0, unavailable = 0
        /// A network sink's failures that `serve` retried to success, dropped, and retries waiting now.
        public var recovered: Int?, dropped: Int?, retrying: Int?

        fileprivate mutating func count(_ status: SinkOutcome.Status) {
            switch status {
            case .delivered: delivered += 1
            case .replaced: replaced += 1
            case .queued: queued += 1
            case .suppressed: suppressed += 1
            case .failed: failed += 1
            case .unavailable: unavailable += 1
            case .planned: break
            }
        }
    }


    /// What the daemon accepted and has not delivered, kept across a stop (`nil`: kept in memory only).
    public nonisolated var outbox: Outbox? { retries.outbox }

    public init(load: @escaping Loader, retryPolicy: RetryQueue.Policy = RetryQueue.Policy(), outbox: Outbox? = nil) throws {
        self.load = load
        self.retries = RetryQueue(policy: retryPolicy, outbox: outbox, runtime: runtime)
        let router = try load()
        runtime.start { await router.runtime.run() }
        self.live = Mutex(Live(router: router))
        self.loadedAt = Date()
        self.welcomeBox = Mutex(Self.welcome(for: router))
    }

    private static func welcome(for router: NotificationRouter) -> Welcome {
        func greeting(_ version: Int) -> [UInt8] {
            DaemonProtocol.encodeLine(DaemonProtocol.Hello(
                version: version, pid: getpid(), answerWithinMS: answerWithinMS(router.configuration), config: router.configuration.origin))
        }
        return Welcome(
            greeting: greeting(DaemonProtocol.version), pipeliningGreeting: greeting(DaemonProtocol.pipeliningVersion),
            serve: router.configuration.serve,
            configFile: router.configuration.origin == ConfigSource.embeddedOrigin ? nil : DaemonProtocol.FileIdentity(path: router.configuration.origin))
    }

    /// Loads the config again; on an error the old router stays and the error is thrown.
    public func reload() throws -> NotificationRouter {
        let fresh = try load()
        let old = live.withLock { live in
            defer {
                live.router = fresh
                generation.add(1, ordering: .releasing)
            }
            return live.router
        }
        loadedAt = Date()
        reloads += 1
        welcomeBox.withLock { $0 = Self.welcome(for: fresh) }
        summaryWakeup.poke()  // the new config's periods and windows
        runtime.start { await fresh.runtime.run() }
        // What the old router's sinks still hold (banners, queued records) finishes on its own.
        runtime.start {
            await old.finish(within: .seconds(5))
            old.runtime.end()
        }
        return fresh
    }

    /// Twice the longest sink deadline: a failover runs after the first wave's deadline.
    public var answerWithinMS: Int { Self.answerWithinMS(router.configuration) }

    private static func answerWithinMS(_ configuration: RouterConfiguration) -> Int {
        let longest = configuration.sinks.map { $0.deadline ?? configuration.defaults.deadline ?? EventDefaults.builtInDeadline }.max()
        return DurationParser.milliseconds((longest ?? EventDefaults.builtInDeadline) * 2) + 1000
    }

    /// The router for an event about to be routed, counted in flight until ``end(_:)``.
    package nonisolated func begin() -> NotificationRouter {
        inFlight.add(1, ordering: .relaxed)
        return live.withLock(\.router)
    }

    /// A router read by ``begin(reusing:)``, and which reload it came from.
    package struct Lease: Sendable {
        package let router: NotificationRouter
        fileprivate let generation: Int
    }

    /// ``begin()`` for a connection, which keeps `lease` between its events: unless a
    /// reload came since, the same router, without the lock that every routed event took
    /// twice (a connection's events and the other connections' then waited on it).
    package nonisolated func begin(reusing lease: inout Lease?) -> NotificationRouter {
        inFlight.add(1, ordering: .relaxed)
        if let lease, lease.generation == generation.load(ordering: .acquiring) { return lease.router }
        let fresh = live.withLock { Lease(router: $0.router, generation: generation.load(ordering: .relaxed)) }
        lease = fresh
        return fresh.router
    }

    package nonisolated func end(_ report: DeliveryReport?) {
        inFlight.subtract(1, ordering: .relaxed)
        guard let report else { return }
        account(for: report)
    }

    /// Counts what `report`'s sinks did (``tally(_:)``), keeps in the outbox what a sink
    /// queued or what failed and is retried, before the caller answers anyone, and hands the
    /// retried deliveries to ``retries``. For every report the daemon routes, timers' too.
    public nonisolated func account(for report: DeliveryReport) {
        tally(report)
        let outbox = outbox
        let (queued, failed) = report.outcomes.withUnsafeBufferPointer { outcomes -> (Bool, Bool) in
            var queued = false, failed = false
            for index in outcomes.indices {
                switch outcomes[index].status {
                case .queued: queued = true
                case .failed(let error) where error.isRetryable: failed = true
                default: break
                }
            }
            return (queued && outbox != nil, failed)
        }
        guard queued || failed else { return }
        let router = router
        let retried = failed && report.outcomes.contains { RetryQueue.isRetried($0, by: router) }
        guard queued || retried else { return }
        var kept: [Int: Int64] = [:]
        if let outbox {
            var indices: [Int] = []
            var deliveries: [(sink: String, event: ResolvedEvent, state: Outbox.State)] = []
            for (index, outcome) in report.outcomes.enumerated() {
                if case .queued = outcome.status {
                    // Only a queue this process holds (``NotificationSink/queuedCount``); what an
                    // exec plugin answered queued is the plugin's to keep.
                    guard router.sink(named: outcome.sink)?.queuedCount != nil else { continue }
                    deliveries.append((outcome.sink, report.event, .queued))
                } else if RetryQueue.isRetried(outcome, by: router) {
                    deliveries.append((outcome.sink, report.event, .retrying))
                } else {
                    continue
                }
                indices.append(index)
            }
            for (index, id) in zip(indices, outbox.accept(deliveries)) { kept[index] = id }
        }
        if retried {
            runtime.start { [retries, kept] in await retries.schedule(report, router: router, kept: kept) }
        }
    }

    /// Counts what a report's sinks did, for `status`; the first event held in a rate
    /// period or quiet hours sets the time its summary is due.
    public nonisolated func tally(_ report: DeliveryReport) {
        if live.withLock({ Self.tally(report, into: &$0) }) { summaryWakeup.poke() }
    }

    /// ``tally(_:)`` under the lock; whether the summary timer must be woken.
    private static func tally(_ report: DeliveryReport, into live: inout Live) -> Bool {
        var poke = false
        // Borrowed in place: a loop variable was a copy of the outcome and of its strings.
        report.outcomes.withUnsafeBufferPointer { outcomes in
            for index in outcomes.indices {
                if case .suppressed(let reason) = outcomes[index].status {
                    switch reason {
                    case .rateLimited(_, _, held: 1), .quietHours(_, held: 1), .grouped(_, count: 1, _): poke = true
                    case .paused:
                        // The timer learns the pause's end from the state; once a second is enough.
                        let now = ContinuousClock.now
                        if now - live.lastPausePoke > .seconds(1) {
                            live.lastPausePoke = now
                            poke = true
                        }
                    default: break
                    }
                }
                // In place: one lookup of the sink's name, not a read and a write.
                live.counts[outcomes[index].sink, default: SinkCounts()].count(outcomes[index].status)
            }
        }
        return poke
    }

    /// What `notify-route status` prints.
    public struct Status: Codable, Sendable {
        public var pid: Int32
        public var config: String
        public var loadedAt: String
        public var uptimeSeconds: Double
        public var reloads: Int
        public var inFlight: Int
        public var sinks: [String: SinkCounts]
        /// Per network sink: failed deliveries retried to success, and dropped.
        public var retries: [String: RetryQueue.Counts]
        /// Per sink: records queued now (`nil`: the sink has no queue), and whether it still
        /// has work to finish (a banner, a queue, a plugin process).
        public var queues: [String: Queue]
        /// What rate limits and quiet hours hold for a summary, per route and sink.
        public var held: [Held]
        /// `notify-route pause`, while in effect, and how many events it holds.
        public var pause: PauseStatus?
        /// The active silences.
        public var silences: [SilenceStatus] = []
        /// Open groups and the escalations and snoozes waiting, earliest first, and how many
        /// there are in all (the lists stop at ``RouterHost/pendingListed``).
        public var groups: [GroupStatus] = []
        public var timers: [TimerStatus] = []
        public var groupsOpen = 0, timersWaiting = 0
        /// Inhibit rules whose source event is active now, and what they hold back.
        public var inhibitions: [InhibitionStatus] = []
        /// The state directory (dedup, replace handles, the socket by default); `nil`: none is used.
        public var state: String?
        /// Deliveries accepted and not yet done, kept across a stop (`nil`: no outbox).
        public var outbox: Int?

        enum CodingKeys: String, CodingKey {
            case pid, config, reloads, sinks, retries, queues, held, pause, silences, groups, timers, inhibitions, state, outbox
            case loadedAt = "loaded_at", uptimeSeconds = "uptime_seconds", inFlight = "in_flight"
            case groupsOpen = "groups_open", timersWaiting = "timers_waiting"
        }
    }

    public static let pendingListed = 20

    public struct GroupStatus: Codable, Hashable, Sendable {
        public var route: String
        public var sink: String
        public var name: String
        public var count: Int
        public var pending: Int
        public var due: String
    }

    public struct InhibitionStatus: Codable, Hashable, Sendable {
        /// The rule's number in the config, from 1.
        public var rule: Int
        /// The events it holds back, as a matcher line (`level<=warning`).
        public var inhibits: String
        /// The `equal` values the held events must share with the source event.
        public var equal: [String: String]
        public var until: String
        /// The source event's replace key, when it has one (`close` ends the inhibition).
        public var replaceKey: String?

        enum CodingKeys: String, CodingKey {
            case rule, inhibits, equal, until
            case replaceKey = "replace_key"
        }
    }

    public struct TimerStatus: Codable, Hashable, Sendable {
        /// `escalate` or `snooze`.
        public var kind: String
        public var route: String
        public var sinks: [String]
        public var replaceKey: String?
        public var title: String
        public var due: String
        public var sent: Int

        enum CodingKeys: String, CodingKey {
            case kind, route, sinks, title, due, sent
            case replaceKey = "replace_key"
        }
    }

    public struct Queue: Codable, Hashable, Sendable {
        public var depth: Int?
        public var pending: Bool
    }

    public struct Held: Codable, Hashable, Sendable {
        /// `rate` or `quiet`.
        public var kind: String
        public var route: String
        public var sink: String
        public var held: Int
        public var highest: String
        /// Held events by source.
        public var sources: [String: Int]
    }

    private func heldRecords(_ state: RouterState?) -> [Held] {
        guard let state else { return [] }
        let records = state.rates.map { ("rate", $0.key, $0.value) } + state.quiet.map { ("quiet", $0.key, $0.value) }
        return records.filter { $0.2.held > 0 }.map { kind, key, record in
            let parts = key.split(separator: "\u{1E}", maxSplits: 1, omittingEmptySubsequences: false)
            return Held(kind: kind, route: String(parts.first ?? ""), sink: parts.count > 1 ? String(parts[1]) : "",
                        held: record.held, highest: record.highest.rawValue, sources: record.sources)
        }.sorted { ($0.route, $0.sink, $0.kind) < ($1.route, $1.sink, $1.kind) }
    }

    private func inhibitionRecords(_ state: RouterState?, _ router: NotificationRouter) -> [InhibitionStatus] {
        guard let state else { return [] }
        let rules = router.configuration.inhibitRules, now = Date()
        return state.inhibitors.values.filter { $0.expires > now && rules.indices.contains($0.rule) }.map { record in
            let rule = rules[record.rule]
            let values = record.signature.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
            return InhibitionStatus(rule: record.rule + 1, inhibits: MatcherLine.format(rule.target),
                                    equal: Dictionary(zip(rule.equal, values), uniquingKeysWith: { first, _ in first }),
                                    until: HistoryTime.format(record.expires), replaceKey: record.replaceKey)
        }.sorted { ($0.rule, $0.until) < ($1.rule, $1.until) }
    }

    /// What a daemon would show of `router`'s shared state (the state database and the
    /// history), read by the calling process: `status` when no daemon answers (`pid` 0, no counts).
    package static func sharedStatus(of router: NotificationRouter) async throws -> JSONValue {
        try await RouterHost(load: { router }).statusValue(pid: 0)
    }

    /// ``status(pid:)`` as the protocol's answer carries it.
    package func statusValue(pid: Int32) async -> JSONValue {
        let status = await status(pid: pid)
        return (try? JSONDecoder().decode(JSONValue.self, from: Data(DaemonProtocol.encodeLine(status)))) ?? .null
    }

    public func status(pid: Int32) async -> Status {
        let uptime = ContinuousClock.now - startedAt
        let (router, counts) = live.withLock { ($0.router, $0.counts) }
        let state = router.stateSnapshot()  // one read of the whole state for the held events and the inhibitions
        let inFlight = inFlight.load(ordering: .relaxed)
        var sinks = counts
        for sink in router.configuration.sinks where sinks[sink.name] == nil { sinks[sink.name] = SinkCounts() }
        let retried = await retries.counts
        for (name, count) in retried {
            var sink = sinks[name] ?? SinkCounts()
            (sink.recovered, sink.dropped, sink.retrying) = (count.recovered, count.dropped, count.waiting)
            sinks[name] = sink
        }
        var status = Status(
            pid: pid, config: router.configuration.origin, loadedAt: loadedAt.formatted(.iso8601),
            uptimeSeconds: ((Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18) * 1000).rounded() / 1000,
            reloads: reloads, inFlight: inFlight, sinks: sinks, retries: retried,
            queues: Dictionary(uniqueKeysWithValues: router.configuration.sinks.compactMap { declaration in
                router.sink(named: declaration.name).map { (declaration.name, Queue(depth: $0.queuedCount, pending: $0.hasPendingWork)) }
            }),
            held: heldRecords(state), pause: pauseStatus(router), silences: silenceStatus(router))
        status.inhibitions = inhibitionRecords(state, router)
        status.state = router.stateDirectory
        status.outbox = outbox?.count
        if let work = try? router.pendingWork(limit: Self.pendingListed) {
            status.groups = work.groups.map {
                GroupStatus(route: $0.route, sink: $0.sink, name: $0.name, count: $0.count, pending: $0.pending, due: HistoryTime.format($0.due))
            }
            status.timers = work.timers.map {
                TimerStatus(kind: $0.kind, route: $0.route, sinks: $0.sinks, replaceKey: $0.replaceKey, title: $0.title,
                            due: HistoryTime.format($0.due), sent: $0.sent)
            }
            (status.groupsOpen, status.timersWaiting) = (work.groupCount, work.timerCount)
        }
        return status
    }

    public struct PauseStatus: Codable, Hashable, Sendable {
        /// Events below this level are held.
        public var below: String
        public var since: String
        /// `nil`: until `notify-route resume`.
        public var until: String?
        public var held: Int
    }

    public struct SilenceStatus: Codable, Hashable, Sendable {
        public var id: String
        public var matchers: String
        public var ends: String
        public var comment: String?
    }

    private func pauseStatus(_ router: NotificationRouter) -> PauseStatus? {
        guard let state = try? router.memory?.pauseState(), let pause = state.pause, pause.isActive(at: Date()) else { return nil }
        return PauseStatus(below: pause.below.rawValue, since: HistoryTime.format(pause.since), until: pause.until.map(HistoryTime.format),
                           held: state.held)
    }

    private func silenceStatus(_ router: NotificationRouter) -> [SilenceStatus] {
        let now = Date()
        return ((try? router.memory?.silences(now: now)) ?? []).filter { $0.isActive(at: now) }.map {
            SilenceStatus(id: $0.id, matchers: MatcherLine.format($0.matcher), ends: HistoryTime.format($0.ends), comment: $0.comment)
        }
    }
}
