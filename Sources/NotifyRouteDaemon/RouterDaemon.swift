#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Logging
import NIOCore
import NIOPosix
import NotifyRoute
import NotifyRouteClient
import ServiceLifecycle
import Synchronization

/// `notify-route serve`: one long-lived router behind a Unix socket that speaks
/// ``DaemonProtocol``.
///
/// A `Service`: run it in a `ServiceGroup`. On graceful shutdown it stops accepting,
/// answers the requests it already read, lets the router's sinks finish within
/// ``Options/drainLimit``, and returns.
public struct RouterDaemon: Service {
    /// Where the daemon listens.
    public enum Listener: Sendable {
        /// Bind a new socket at this path (its directory must exist and be private).
        case path(String)
        /// A listening socket handed over by systemd (`LISTEN_FDS`).
        case inherited(Int32)
    }

    /// How a report becomes what the CLI prints, so the daemon's answers say exactly what
    /// a local `send` would: its exit code, its text and its stderr lines.
    public struct Rendering: Sendable {
        public var exitCode: @Sendable (DeliveryReport) -> Int32
        public var text: @Sendable (DeliveryReport) -> String
        public var problems: @Sendable (DeliveryReport) -> [String]

        public init(
            exitCode: @escaping @Sendable (DeliveryReport) -> Int32, text: @escaping @Sendable (DeliveryReport) -> String,
            problems: @escaping @Sendable (DeliveryReport) -> [String]
        ) {
            self.exitCode = exitCode
            self.text = text
            self.problems = problems
        }
    }

    public struct Options: Sendable {
        /// Who is served besides the config's `serve.allow`, which is added to it (and
        /// read again on reload).
        public var peers = PeerPolicy()
        /// The socket's directory when the daemon owns it (its state directory): its mode
        /// follows who is allowed, as the socket's does.
        public var ownedDirectory: String?
        /// How long sinks may take to finish what they hold once shutdown begins.
        public var drainLimit: Duration = .seconds(5)
        /// Called once the socket listens (after `READY=1` went to systemd).
        public var onReady: @Sendable () -> Void = {}
        /// How many connections are served at once; past it a new one is closed unread,
        /// and its client routes its event itself.
        public var maximumConnections = 4096
        /// How long a request line may take to arrive once it has begun: a client that
        /// sends half a line and waits is told so and closed.
        public var lineTimeout: Duration = .seconds(10)

        public init() {}
    }

    public let listener: Listener
    public let host: RouterHost
    public let rendering: Rendering
    public let options: Options
    private let logger: Logger
    /// The state writes of requests routed at once, committed together.
    private let writes = StateWriteBatching()
    /// The replace keys guests sent, so that each may close its own and no one else's.
    private let guestKeys = GuestReplaceKeys()

    public init(listener: Listener, host: RouterHost, rendering: Rendering, options: Options = Options(), logger: Logger) {
        self.listener = listener
        self.host = host
        self.rendering = rendering
        self.options = options
        self.logger = logger
    }

    public func run() async throws {
        let connections = ConnectionRegistry()
        let lineBudget = LineBudget()
        // One loop for the listener and its connections: handing each new channel to another
        // loop costs wake-ups between the two, and one loop keeps up with its share of routing
        // (Tests/Benchmarks/README.md, "Why the code is so").
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let loopExecutor = EventLoopExecutor(loop)
        let bootstrap = ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                // All of it at once on the loop: the bootstrap's child options and a chain of
                // futures made an accept several times dearer (Tests/Benchmarks/README.md, "Why the code is so").
                // Logged once a run of refusals, not once a connection: a flood at the cap
                // would otherwise write its own flood to the journal.
                switch connections.add(channel, limit: options.maximumConnections) {
                case .refused(let first):
                    if first { logger.warning("refusing connections: the daemon serves at most \(options.maximumConnections) at once") }
                    return channel.close()
                case .admitted(let refused) where refused > 0:
                    logger.notice("taking connections again, after refusing \(refused) at the cap")
                case .admitted:
                    break
                }
                do {
                    // A client that shuts down its writing side still gets the answers to what it sent.
                    try channel.syncOptions?.setOption(.allowRemoteHalfClosure, value: true)
                    let peer = Self.peerCredentials(of: channel)
                    let policy = peerPolicy()
                    let refusal = peer.map(policy.refusal(for:)) ?? "the peer's credentials could not be read"
                    if let refusal {
                        logger.warning("refused a connection", metadata: ["pid": "\(peer?.pid ?? 0)", "uid": "\(peer.map { String($0.uid) } ?? "?")", "reason": "\(refusal)"])
                    }
                    // Let in by serve.allow, not as the owner: it may hand events in, no more.
                    let guest = peer.flatMap { $0.uid == policy.owner ? nil : $0.uid }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(LineTimeout(options.lineTimeout))
                    try pipeline.addHandler(ByteToMessageHandler(LineFrameDecoder(limit: DaemonProtocol.maximumLineBytes, budget: lineBudget)))
                    if let peer, refusal == nil {
                        try pipeline.addHandler(GreetingHandler(peerPID: peer.pid, welcome: { [host] in host.welcome }))
                    }
                    try pipeline.addHandler(ConnectionHandler(daemon: self, registry: connections, loopExecutor: loopExecutor, refusal: refusal, guest: guest, peerPID: peer?.pid))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    connections.remove(channel)
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let server: any Channel
        switch listener {
        case .path(let path):
            // Bound under a name of its own and renamed once its mode is set, so that whoever
            // finds the socket at its path never finds it with the umask's mode.
            let staging = path + ".\(getpid()).new"
            let fits = staging.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path)
            server = try await bootstrap.bind(unixDomainSocketPath: fits ? staging : path, cleanupExistingSocketFile: true).get()
            await applySocketAccess(at: fits ? staging : path)
            if fits, rename(staging, path) != 0 {
                let reason = String(cString: strerror(errno))
                unlink(staging)
                try? await server.close()
                throw SocketError(description: "cannot move the socket to \(path): \(reason)")
            }
        case .inherited(let fd):
            // Before the first client is served: its refusal would otherwise come first.
            checkInheritedSocket(fd)
            server = try await bootstrap.withBoundSocket(fd).get()
        }
        let memory = host.router.memory
        // What goes on after an answer (retries, count updates, history folds) runs as this
        // task's children, cancelled once the sinks have finished.
        await withDiscardingTaskGroup { group in
            group.addTask { await host.runtime.run() }
            group.addTask { await Self.foldHistory(of: memory) }
            Systemd.notify("READY=1\nMAINPID=\(getpid())")
            logger.info("listening", metadata: ["socket": "\(listenerDescription)"])
            options.onReady()
            await serve(on: server, connections: connections)
            group.cancelAll()
        }
        memory?.foldSpooledRecords()
        if case .path(let path) = listener { unlink(path) }
    }

    /// The history's records go to its spool, one write each, and are folded into history.db
    /// a while after the first of a batch: one transaction for many events. Whoever reads
    /// the history folds the spool first, so the wait delays no reader.
    private static func foldHistory(of memory: RouterMemory?) async {
        guard let memory, let batches = memory.spoolRecords() else { return }
        for await _ in batches {
            let first = ContinuousClock.now
            repeat {
                try? await Task.sleep(for: historyFoldTick)
            } while !Task.isCancelled && ContinuousClock.now - first < historyFoldDelay
                && memory.spooledBytes < historyFoldSoonBytes
            memory.foldSpooledRecords()
        }
    }

    /// Serves until the listener closes or a graceful shutdown, then lets the connections
    /// drain and the sinks finish.
    private func serve(on server: any Channel, connections: ConnectionRegistry) async {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                // Ends when the listener is closed: at shutdown, or if it fails.
                try? await server.closeFuture.get()
            } onCancel: {
                server.close(promise: nil)
                connections.closeAll()
            }
            // Every request read is answered (or its client gone) and routed before the sinks
            // finish; a client that does not read its answers is dropped at the drain limit.
            connections.shutDown()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await connections.drained() }
                group.addTask { [logger, drainLimit = options.drainLimit] in
                    guard (try? await Task.sleep(for: drainLimit)) != nil else { return }
                    logger.warning("connections still open at the drain limit are closed", metadata: ["limit": "\(DurationParser.format(drainLimit))"])
                    connections.closeAll()
                }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            Systemd.notify("STOPPING=1")
            // Stop accepting; a client mid-request gets its answer, an idle one sees the end.
            server.close(promise: nil)
            connections.shutDown()
        }
        await finishSinks()
    }

    /// Lets the sinks finish what they hold, within the drain limit. What a sink queued is
    /// written or stays in the outbox: the outbox's rows are settled while the queues empty,
    /// then frozen before the sinks give up the rest, which a new `serve` delivers.
    private func finishSinks() async {
        let end = ContinuousClock.now + options.drainLimit
        if let outbox = host.outbox {
            let router = host.router
            while outbox.hasQueuedRows && ContinuousClock.now < end {
                outbox.settle(with: router)
                guard outbox.hasQueuedRows, (try? await Task.sleep(for: .milliseconds(20))) != nil else { break }
            }
            outbox.freeze()
            let left = outbox.count
            if left > 0 { logger.notice("deliveries kept in the outbox for the next serve", metadata: ["count": "\(left)"]) }
        }
        await host.router.finish(within: max(.milliseconds(100), end - .now))
    }

    /// How long the history's spooled records wait to be folded, from the first of a batch:
    /// sends one by one then fold by the hundred, not each lone send a fold of its own
    /// (Tests/Benchmarks/README.md, "Why the code is so").
    static let historyFoldDelay = Duration.seconds(1)
    /// How often a batch waiting to be folded looks at the spool's size.
    static let historyFoldTick = Duration.milliseconds(25)
    /// A spool this large is folded at the next tick: a loaded daemon folds as often as before.
    static let historyFoldSoonBytes = 64 << 10

    /// The peer of a connection just accepted, read on its loop (where the option is read
    /// at once: the future is complete when returned); `nil` when it cannot be read.
    static func peerCredentials(of channel: any Channel) -> PeerCredentials? {
        // `struct ucred` needs _GNU_SOURCE, which Glibc's module is not built with; this has its layout.
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        var peer: PeerCredentials?
        let read: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        read.assumeIsolated().whenSuccess { peer = $0 }
        return peer
    }

    /// ``Options/peers`` with the current config's `serve.allow`.
    func peerPolicy() -> PeerPolicy {
        var policy = options.peers
        let serve = host.welcome.serve
        policy.uids.formUnion(serve.allowedUIDs)
        policy.groups.formUnion(serve.allowedGroups)
        policy.firstGroup = policy.firstGroup ?? serve.allowedGroups.first
        return policy
    }

    /// Gives the socket (and its owned directory) the modes who is allowed needs; after a
    /// reload too. An inherited socket's mode is systemd's (`SocketMode=`).
    public func applySocketAccess() async {
        switch listener {
        case .path(let path): await applySocketAccess(at: path)
        case .inherited(let fd): checkInheritedSocket(fd)
        }
    }

    /// An inherited socket's mode is its unit's to set: one that keeps out whom serve.allow
    /// names is said now, not found out by the first client refused.
    private func checkInheritedSocket(_ fd: Int32) {
        guard let path = Systemd.socketPath(of: fd), let problem = peerPolicy().exclusion(bySocket: path) else { return }
        logger.warning("\(problem)")
    }

    private func applySocketAccess(at path: String) async {
        for problem in peerPolicy().applyAccess(toSocket: path, directory: options.ownedDirectory) {
            logger.warning("\(problem)")
        }
    }

    private var listenerDescription: String {
        switch listener {
        case .path(let path): path
        case .inherited(let fd): "fd \(fd) (socket activation)"
        }
    }

    /// What one connection has said so far.
    struct Session {
        /// Reports of this connection's sends, for `wait` (the latest few only).
        var reports: [Int: DeliveryReport] = [:]
        /// A send found no silence and no pause stored (`router`'s history), and `count`
        /// requests were queued behind it then: they arrived before that was read, so they
        /// may take it as their own reading (a change made since is concurrent with them),
        /// and skip the marker's `lstat`, which every send would otherwise make.
        var noControls: (router: NotificationRouter, count: Int)?
        /// The router this connection's sends used last (``RouterHost/begin(reusing:)``).
        var router: RouterHost.Lease?
        /// The peer's uid when serve.allow let it in rather than being the daemon's owner:
        /// it may send, and close and wait for what it sent, nothing else.
        var guest: UInt32?
        /// The peer's process, whose terminal a send may name (``CallerTerminal``).
        var peerPID: Int32?
    }

    /// An answer line, and the commit it waits for before it is written.
    struct Pending: Sendable {
        var line: [UInt8]
        var committed: Committed?
    }

    /// - Parameter queuedBehind: how many of this connection's requests wait behind this
    ///   one (its state commit may wait for theirs).
    nonisolated(nonsending) func handle(_ line: some Collection<UInt8>, _ session: inout Session, queuedBehind: Int = 0) async -> Pending {
        let request: DaemonProtocol.Request
        do {
            request = try DaemonProtocol.Request.parse(line)
        } catch {
            return Pending(line: DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(error.description, exit: 64)))
        }
        let (answer, committed) = await answer(request, &session, queuedBehind: queuedBehind)
        return Pending(line: answer.line(), committed: committed)
    }

    /// The answer to a request, and for a send the commit of its state that the answer waits for.
    private nonisolated(nonsending) func answer(_ request: DaemonProtocol.Request, _ session: inout Session, queuedBehind: Int) async -> (DaemonProtocol.Answer, Committed?) {
        // Any request but a send that uses it ends what a send read of the controls.
        let noControls = session.noControls
        session.noControls = nil
        if request.kind == .send {
            let router = host.begin(reusing: &session.router)
            // How many more requests the reading of an earlier one still covers, this one included.
            let covered = noControls.flatMap { $0.count > 0 && $0.router === router ? $0.count : nil }
            let ((sent, report, controls), committed) = await writes.route(queued: queuedBehind > 0 && !request.wait) { batch in
                await send(request, through: router, controls: covered == nil ? nil : Controls.none, guest: session.guest,
                           peerPID: session.peerPID, in: batch)
            }
            if let covered {
                session.noControls = (router, covered - 1)
            } else if controls?.isEmpty == true {
                session.noControls = (router, queuedBehind)
            }
            host.end(report)
            guard let report else { return (sent, committed) }
            if let guest = session.guest, !request.dryRun, let key = report.event.replaceKey { guestKeys.add(key, by: guest) }
            if let id = request.id {
                if session.reports.count >= 64 { session.reports.removeAll() }
                session.reports[id] = report
            }
            guard request.wait && !request.dryRun && report.summary == .delivered else { return (sent, committed) }
            var answer = consume sent
            await committed.wait()
            answer.interaction = await interaction(router, report)
            return (answer, committed)
        }
        if let guest = session.guest, let refusal = guestRefusal(request, guest: guest) {
            logger.warning("refused a request", metadata: ["uid": "\(guest)", "request": "\(request.kind.rawValue)", "reason": "\(refusal)"])
            return (.failure(refusal, exit: 69, id: request.id), nil)
        }
        var answer = DaemonProtocol.Answer(id: request.id)
        switch request.kind {
        case .send:
            preconditionFailure("a send is answered above")
        case .close:
            let router = host.begin()
            let key = request.replaceKey ?? ""
            let report = await router.close(replaceKey: session.guest.map { Self.guestKey(key, of: $0) } ?? key)
            host.end(report)
            fill(&answer, with: report, dryRun: false)
            answer.exit = report.outcomes.contains(where: \.status.isSuccess) ? 0 : 1
        case .wait:
            guard let id = request.waitFor, let report = session.reports[id] else {
                return (.failure("wait: no send with id \(request.waitFor ?? -1) on this connection", exit: 64, id: request.id), nil)
            }
            answer.interaction = await interaction(host.router, report)
            answer.exit = 0
        case .reload:
            do {
                Systemd.notify("RELOADING=1")
                let router = try await host.reload()
                await applySocketAccess()
                Systemd.notify("READY=1")
                logger.info("reloaded", metadata: ["config": "\(router.configuration.origin)"])
                answer.status = .object(["config": .string(router.configuration.origin)])
                answer.exit = 0
            } catch {
                Systemd.notify("READY=1")
                logger.error("reload refused; the previous config stays", metadata: ["error": "\(error)"])
                return (.failure("\(error)", exit: 78, id: request.id), nil)
            }
        case .resume:
            let router = host.begin()
            do {
                let release = try await router.resume() ?? PauseRelease(held: 0)
                for report in release.reports { host.end(report); _ = host.begin() }
                host.end(nil)
                let held = Double(release.held)
                answer.status = .object(["held": .number(held), "summarised": .bool(release.summarised)])
                let failed = release.reports.contains { $0.summary == .failed || $0.summary == .noSinkAvailable }
                answer.exit = failed ? 1 : 0
            } catch {
                host.end(nil)
                return (.failure("resume: \(error)", exit: 78, id: request.id), nil)
            }
        case .status:
            answer.status = await host.statusValue(pid: getpid())
            answer.exit = 0
        }
        return (answer, nil)
    }

    /// A guest's replace key, in a space of its own: what it sends replaces and closes only
    /// what it sent, never its owner's or another guest's notification of the same key.
    static func guestKey(_ key: String, of guest: UInt32) -> String {
        "uid \(guest)/\(key)"
    }

    /// Why a guest (``Session/guest``) may not make `request`; `nil` when it may: a send, a
    /// wait for its own send, a close of a replace key it sent.
    private func guestRefusal(_ request: DaemonProtocol.Request, guest: UInt32) -> String? {
        switch request.kind {
        case .send, .wait:
            return nil
        case .close:
            let key = request.replaceKey ?? ""
            return guestKeys.contains(Self.guestKey(key, of: guest), by: guest)
                ? nil : "uid \(guest) may close only what it sent itself; the replace key \"\(key)\" is not one of those"
        case .status, .reload, .resume:
            return "uid \(guest) may only hand events to this daemon; \(request.kind.rawValue) is its owner's (uid \(options.peers.owner))"
        }
    }

    /// Routes a `send` request's event: the answer, the report when there is one, and the
    /// silences and pause it was routed with.
    ///
    /// - Parameter known: the controls to route with, read for an earlier request; `nil`:
    ///   read them now (and release a pause that ended).
    private nonisolated(nonsending) func send(
        _ request: DaemonProtocol.Request, through router: NotificationRouter, controls known: Controls?, guest: UInt32?, peerPID: Int32?,
        in batch: StateBatch
    ) async -> (DaemonProtocol.Answer, DeliveryReport?, Controls?) {
        var event: NotificationEvent
        do {
            // Read with the line when it was plain; otherwise the ingest decoder's, so that
            // a bad event reads as it does in `ingest`.
            if let notification = request.notification {
                event = notification
            } else if let object = request.eventObject {
                event = try NotificationEvent.decode(object: object)
            } else {
                event = try NotificationEvent.decode(jsonLine: String(decoding: DaemonProtocol.encodeLine(request.event ?? .null).dropLast(), as: UTF8.self))
            }
        } catch {
            return (.failure("bad event: \(error.description)", exit: 65, id: request.id), nil, nil)
        }
        if let guest, let key = event.replaceKey { event.replaceKey = Self.guestKey(key, of: guest) }
        if let sinks = request.sinks {
            let declared = router.configuration.sinks
            // Looked up in place: the list of names (an array a request) only for the message.
            if let unknown = sinks.first(where: { name in !declared.contains { $0.name == name } }) {
                let names = declared.map(\.name)
                let message = "--sink \"\(unknown)\": no such sink in \(router.configuration.origin); known sinks: \(names.joined(separator: ", "))"
                return (.failure(message, exit: 64, id: request.id), nil, nil)
            }
        }
        let controls: Controls?
        if request.dryRun {
            controls = nil
        } else if let known {
            controls = known
        } else {
            controls = await router.releaseEndedPauseReadingControls()
        }
        let report: DeliveryReport
        // A guest's terminal is never drawn on: it is another user's.
        let terminal = guest == nil ? request.terminal.flatMap { CallerTerminal.checked($0, heldBy: peerPID) } : nil
        do {
            if let terminal {
                report = try await SinkCaller.$terminal.withValue(terminal) {
                    try await Self.route(event, request, through: router, controls: controls, in: batch)
                }
            } else {
                report = try await Self.route(event, request, through: router, controls: controls, in: batch)
            }
        } catch let error as EventError {
            return (.failure("bad event: \(error.description)", exit: 65, id: request.id), nil, nil)
        } catch {
            return (.failure("bad event: \(error)", exit: 65, id: request.id), nil, nil)
        }
        var answer = DaemonProtocol.Answer(id: request.id)
        fill(&answer, with: report, dryRun: request.dryRun)
        return (answer, report, controls)
    }

    private static nonisolated(nonsending) func route(
        _ event: NotificationEvent, _ request: DaemonProtocol.Request, through router: NotificationRouter, controls: Controls?,
        in batch: StateBatch
    ) async throws(EventError) -> DeliveryReport {
        request.dryRun
            ? try await router.dryRun(event, only: request.sinks)
            : try await router.send(event, only: request.sinks, controls: controls, in: batch)
    }

    private func fill(_ answer: inout DaemonProtocol.Answer, with report: DeliveryReport, dryRun: Bool) {
        answer.routedReport = report
        answer.text = rendering.text(report)
        answer.problems = rendering.problems(report)
        answer.exit = dryRun ? 0 : rendering.exitCode(report)
    }

    private func interaction(_ router: NotificationRouter, _ report: DeliveryReport) async -> String? {
        guard let (_, interaction) = await router.firstInteraction(with: report) else { return nil }
        switch interaction {
        case .actionInvoked(let id): return id
        case .dismissed(let reason): return reason.rawValue
        case .shown: return nil
        }
    }
}

/// The listening socket could not be put in place.
struct SocketError: Error, CustomStringConvertible {
    var description: String
}

/// Which guest sent which replace key, for the guest's `close`. Bounded: past the bound it
/// starts again empty, and a guest then cannot close what it sent before (never another's).
final class GuestReplaceKeys: Sendable {
    static let limit = 10_000
    private let keys = Mutex<[String: Set<UInt32>]>([:])

    func add(_ key: String, by uid: UInt32) {
        keys.withLock { keys in
            if keys.count >= Self.limit, keys[key] == nil { keys.removeAll() }
            keys[key, default: []].insert(uid)
        }
    }

    func contains(_ key: String, by uid: UInt32) -> Bool {
        keys.withLock { $0[key]?.contains(uid) ?? false }
    }
}
