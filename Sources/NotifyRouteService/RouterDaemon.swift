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

        public init() {}
    }

    public let listener: Listener
    public let host: RouterHost
    public let rendering: Rendering
    public let options: Options
    private let logger: Logger
    /// The state writes of requests routed at once, committed together.
    private let writes = StateWriteBatching()

    public init(listener: Listener, host: RouterHost, rendering: Rendering, options: Options = Options(), logger: Logger) {
        self.listener = listener
        self.host = host
        self.rendering = rendering
        self.options = options
        self.logger = logger
    }

    typealias Connection = NIOAsyncChannel<LineFrame, ByteBuffer>

    public func run() async throws {
        let connections = ConnectionRegistry()
        // One loop for the listener and its connections: handing each new channel to the other
        // loop cost four wake-ups between the two per connection (perf sched), and a loop's
        // share of routing an event is small enough that one keeps up (Benchmarks README, seventh pass).
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let bootstrap = ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            // A client that shuts down its writing side still gets the answers to what it sent.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<(Connection, PeerCredentials?)> = { channel in
            // `struct ucred` needs _GNU_SOURCE, which Glibc's module is not built with; this has its layout.
            let credentials: EventLoopFuture<PeerCredentials>? = (channel as? any SocketOptionProvider)?
                .unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            return (credentials ?? channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported))
                .map { $0 as PeerCredentials? }
                .recover { _ in nil }
                .flatMapThrowing { peer in
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineFrameDecoder(limit: DaemonProtocol.maximumLineBytes)))
                    if let peer, peerPolicy().refusal(for: peer) == nil {
                        try channel.pipeline.syncOperations.addHandler(GreetingHandler(peerPID: peer.pid, welcome: { [host] in host.welcome }))
                    }
                    let connection = try Connection(wrappingChannelSynchronously: channel)
                    connections.add(channel)
                    channel.closeFuture.whenComplete { _ in connections.remove(channel) }
                    return (connection, peer)
                }
        }
        let server: NIOAsyncChannel<(Connection, PeerCredentials?), Never>
        switch listener {
        case .path(let path):
            // Bound under a name of its own and renamed once its mode is set, so that whoever
            // finds the socket at its path never finds it with the umask's mode.
            let staging = path + ".\(getpid()).new"
            let fits = staging.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path)
            server = try await bootstrap.bind(
                unixDomainSocketPath: fits ? staging : path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            await applySocketAccess(at: fits ? staging : path)
            if fits, rename(staging, path) != 0 {
                let reason = String(cString: strerror(errno))
                unlink(staging)
                try? await server.channel.close()
                throw SocketError(description: "cannot move the socket to \(path): \(reason)")
            }
        case .inherited(let fd):
            server = try await bootstrap.bind(fd, childChannelInitializer: initializer)
        }
        // The history's records go to its spool, one write each, and are folded into history.db
        // a moment after the first of a batch: one transaction for many events.
        let memory = await host.router.memory
        let folds = Task {
            guard let memory, let batches = memory.spoolRecords() else { return }
            for await _ in batches {
                try? await Task.sleep(for: Self.historyFoldDelay)
                memory.foldSpooledRecords()
            }
        }
        defer { folds.cancel() }
        Systemd.notify("READY=1\nMAINPID=\(getpid())")
        logger.info("listening", metadata: ["socket": "\(listenerDescription)"])
        options.onReady()

        try await withGracefulShutdownHandler {
            try await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await (connection, peer) in inbound {
                        // Started on this thread, up to its first wait: a task enqueued instead woke
                        // another pool thread per connection.
                        group.addImmediateTask { await serve(connection, peer: peer, connections: connections) }
                    }
                }
            }
        } onGracefulShutdown: {
            Systemd.notify("STOPPING=1")
            // Stop accepting; a client mid-request gets its answer, an idle one sees the end.
            server.channel.close(promise: nil)
            connections.shutDown()
        }
        await host.router.finish(within: options.drainLimit)
        folds.cancel()
        memory?.foldSpooledRecords()
        if case .path(let path) = listener { unlink(path) }
    }

    /// How long the history's spooled records wait to be folded, from the first of a batch.
    static let historyFoldDelay = Duration.milliseconds(25)

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
        guard case .path(let path) = listener else { return }
        await applySocketAccess(at: path)
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

    private func serve(_ connection: Connection, peer: PeerCredentials?, connections: ConnectionRegistry) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                // The same check as the greeting's (GreetingHandler), which this connection
                // did not get if it is refused.
                let policy = peerPolicy()
                if let refusal = peer.map(policy.refusal(for:)) ?? "the peer's credentials could not be read" {
                    logger.warning("refused a connection", metadata: ["pid": "\(peer?.pid ?? 0)", "uid": "\(peer.map { String($0.uid) } ?? "?")", "reason": "\(refusal)"])
                    try await outbound.write(ByteBuffer(bytes: DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(refusal, exit: 69))))
                    return
                }
                var session = Session()
                // Answers go out in request order, each once its event's state is committed,
                // while the next requests are read and routed (a pipelining client's events
                // then share commits); at most `window` answers wait at a time.
                let queue = AnswerQueue()
                let window = AnswerWindow(limit: 128)
                // One answer written, by the writer or the reader: true when the connection ends
                // now (the daemon is shutting down and nothing is left to answer).
                @Sendable func written() -> Bool {
                    window.release()
                    return connections.answered(connection.channel)
                }
                try await withThrowingDiscardingTaskGroup { group in
                    group.addImmediateTask {
                        defer { window.close() }
                        do {
                            // The answers due at once go out in one write: each write is a hop to
                            // the event loop and a syscall, dearer than the answer.
                            var buffer = ByteBuffer()
                            var buffered = 0
                            func flush() async throws -> Bool {
                                guard buffered > 0 else { return false }
                                try await outbound.write(buffer)
                                buffer.clear()
                                for _ in 0..<buffered {
                                    if written() { return true }
                                }
                                buffered = 0
                                return false
                            }
                            while let due = await queue.next() {
                                for pending in due {
                                    if let committed = pending.committed, !committed.isDone {
                                        if try await flush() { connection.channel.close(promise: nil); return }
                                        await committed.wait()
                                    }
                                    buffer.writeBytes(pending.line)
                                    buffered += 1
                                }
                                if try await flush() { connection.channel.close(promise: nil); return }
                            }
                        } catch {
                            connection.channel.close(promise: nil)
                            throw error
                        }
                    }
                    defer { queue.finish() }
                    for try await frame in inbound {
                        switch frame {
                        case .tooLong(let length):
                            let answer = DaemonProtocol.Answer.failure(
                                "a request line of more than \(length) bytes; at most \(DaemonProtocol.maximumLineBytes) are read", exit: 64)
                            if await window.acquire() { queue.push(Pending(line: DaemonProtocol.encodeLine(answer))) }
                            return
                        case .line(let line):
                            guard !GreetingHandler.isBlank(line) else { continue }
                            guard await window.acquire() else { return }
                            connections.setBusy(connection.channel)
                            let pending = await handle(line.readableBytesView, &session)
                            // Due, with nothing before it: written here, since handing it to
                            // the writer would wake another pool thread for one answer.
                            guard pending.committed?.isDone ?? true, queue.writerIsIdle else {
                                queue.push(pending)
                                continue
                            }
                            try await outbound.write(ByteBuffer(bytes: pending.line))
                            if written() {
                                connection.channel.close(promise: nil)
                                return
                            }
                        }
                    }
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// What one connection has said so far.
    struct Session {
        /// Reports of this connection's sends, for `wait` (the latest few only).
        var reports: [Int: DeliveryReport] = [:]
    }

    /// An answer line, and the commit it waits for before it is written.
    struct Pending: Sendable {
        var line: [UInt8]
        var committed: Committed?
    }

    private func handle(_ line: some Collection<UInt8>, _ session: inout Session) async -> Pending {
        let request: DaemonProtocol.Request
        do {
            request = try DaemonProtocol.Request.parse(line)
        } catch {
            return Pending(line: DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(error.description, exit: 64)))
        }
        let (answer, committed) = await answer(request, &session)
        return Pending(line: answer.line(), committed: committed)
    }

    /// The answer to a request, and for a send the commit of its state that the answer waits for.
    private func answer(_ request: DaemonProtocol.Request, _ session: inout Session) async -> (DaemonProtocol.Answer, Committed?) {
        var answer = DaemonProtocol.Answer(id: request.id)
        switch request.kind {
        case .send:
            let router = await host.begin()
            let ((sent, report), committed) = await writes.route { await send(request, through: router) }
            await host.end(report)
            guard let report else { return (sent, committed) }
            answer = sent
            if let id = request.id {
                if session.reports.count >= 64 { session.reports.removeAll() }
                session.reports[id] = report
            }
            if request.wait && !request.dryRun && report.summary == .delivered {
                await committed.wait()
                answer.interaction = await interaction(router, report)
            }
            return (answer, committed)
        case .close:
            let router = await host.begin()
            let report = await router.close(replaceKey: request.replaceKey ?? "")
            await host.end(report)
            fill(&answer, with: report, dryRun: false)
            answer.exit = report.outcomes.contains(where: \.status.isSuccess) ? 0 : 1
        case .wait:
            guard let id = request.waitFor, let report = session.reports[id] else {
                return (.failure("wait: no send with id \(request.waitFor ?? -1) on this connection", exit: 64, id: request.id), nil)
            }
            answer.interaction = await interaction(await host.router, report)
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
            let router = await host.begin()
            do {
                let release = try await router.resume() ?? PauseRelease(held: 0)
                for report in release.reports { await host.end(report); _ = await host.begin() }
                await host.end(nil)
                let held = Double(release.held)
                answer.status = .object(["held": .number(held), "summarised": .bool(release.summarised)])
                let failed = release.reports.contains { $0.summary == .failed || $0.summary == .noSinkAvailable }
                answer.exit = failed ? 1 : 0
            } catch {
                await host.end(nil)
                return (.failure("resume: \(error)", exit: 78, id: request.id), nil)
            }
        case .status:
            let status = await host.status(pid: getpid())
            answer.status = (try? JSONDecoder().decode(JSONValue.self, from: Data(DaemonProtocol.encodeLine(status)))) ?? .null
            answer.exit = 0
        }
        return (answer, nil)
    }

    /// Routes a `send` request's event: the answer, and the report when there is one.
    private func send(_ request: DaemonProtocol.Request, through router: NotificationRouter) async -> (DaemonProtocol.Answer, DeliveryReport?) {
        let event: NotificationEvent
        do {
            // The ingest decoder, so that a bad event reads as it does in `ingest`.
            if let object = request.eventObject {
                event = try NotificationEvent.decode(object: object)
            } else {
                event = try NotificationEvent.decode(jsonLine: String(decoding: DaemonProtocol.encodeLine(request.event ?? .null).dropLast(), as: UTF8.self))
            }
        } catch {
            return (.failure("bad event: \(error.description)", exit: 65, id: request.id), nil)
        }
        if let sinks = request.sinks {
            let known = router.configuration.sinks.map(\.name)
            if let unknown = sinks.first(where: { !known.contains($0) }) {
                let message = "--sink \"\(unknown)\": no such sink in \(router.configuration.origin); known sinks: \(known.joined(separator: ", "))"
                return (.failure(message, exit: 64, id: request.id), nil)
            }
        }
        if !request.dryRun { await router.releaseEndedPause() }
        let report: DeliveryReport
        do {
            report = request.dryRun ? try await router.dryRun(event, only: request.sinks) : try await router.send(event, only: request.sinks)
        } catch {
            return (.failure("bad event: \(error.description)", exit: 65, id: request.id), nil)
        }
        var answer = DaemonProtocol.Answer(id: request.id)
        fill(&answer, with: report, dryRun: request.dryRun)
        return (answer, report)
    }

    private func fill(_ answer: inout DaemonProtocol.Answer, with report: DeliveryReport, dryRun: Bool) {
        answer.encodedReport = report.json()
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

/// The open connections, so that shutdown can end the idle ones at once and the busy ones
/// once they have answered.
final class ConnectionRegistry: Sendable {
    private struct State {
        /// Per connection, the requests read and not yet answered.
        var channels: [ObjectIdentifier: (channel: any Channel, unanswered: Int)] = [:]
        var closing = false
    }
    private let state = Mutex(State())

    func add(_ channel: any Channel) {
        let closing = state.withLock { state in
            state.channels[ObjectIdentifier(channel)] = (channel, 0)
            return state.closing
        }
        if closing { channel.close(promise: nil) }
    }

    func remove(_ channel: any Channel) {
        _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// A request was read on this connection.
    func setBusy(_ channel: any Channel) {
        state.withLock { $0.channels[ObjectIdentifier(channel)]?.unanswered += 1 }
    }

    /// A request was answered; true when the daemon is shutting down and the connection
    /// has nothing left to answer.
    func answered(_ channel: any Channel) -> Bool {
        state.withLock { state in
            state.channels[ObjectIdentifier(channel)]?.unanswered -= 1
            return state.closing && (state.channels[ObjectIdentifier(channel)]?.unanswered ?? 0) <= 0
        }
    }

    func shutDown() {
        let idle = state.withLock { state in
            state.closing = true
            return state.channels.values.filter { $0.unanswered <= 0 }.map(\.channel)
        }
        for channel in idle { channel.close(promise: nil) }
    }
}

/// How many answers of one connection may wait to be written: a client that stops reading
/// stops being read once that many are due, as it would with one request at a time.
final class AnswerWindow: Sendable {
    private struct State {
        var waiting = 0
        var reader: CheckedContinuation<Bool, Never>?
        var closed = false
    }
    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Takes a place for one more answer, waiting for one while the window is full; false
    /// once the writer is gone.
    func acquire() async -> Bool {
        let taken: Bool? = state.withLock { state in
            if state.closed { return false }
            guard state.waiting >= limit else { state.waiting += 1; return true }
            return nil
        }
        if let taken { return taken }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let taken: Bool? = state.withLock { state in
                if state.closed { return false }
                guard state.waiting >= limit else { state.waiting += 1; return true }
                state.reader = continuation
                return nil
            }
            if let taken { continuation.resume(returning: taken) }
        }
    }

    /// An answer was written: its place goes to the reader waiting for one, if any.
    func release() {
        let reader = state.withLock { state in
            defer { state.reader = nil }
            if state.reader == nil { state.waiting -= 1 }
            return state.reader
        }
        reader?.resume(returning: true)
    }

    func close() {
        let reader = state.withLock { state in
            state.closed = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: false)
    }
}

/// The answers of one connection in request order, from its reader to its writer, which
/// takes all that are queued at once.
final class AnswerQueue: Sendable {
    private struct State {
        var queued: [RouterDaemon.Pending] = []
        var finished = false
        var writer: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func push(_ pending: RouterDaemon.Pending) {
        let writer = state.withLock { state in
            state.queued.append(pending)
            defer { state.writer = nil }
            return state.writer
        }
        writer?.resume()
    }

    func finish() {
        let writer = state.withLock { state in
            state.finished = true
            defer { state.writer = nil }
            return state.writer
        }
        writer?.resume()
    }

    /// Whether the writer waits with nothing queued: then, since only the reader pushes,
    /// the reader may write an answer itself without passing the writer.
    var writerIsIdle: Bool {
        state.withLock { $0.writer != nil && $0.queued.isEmpty }
    }

    /// Everything queued, waiting while nothing is; `nil` once finished and empty.
    func next() async -> [RouterDaemon.Pending]? {
        while true {
            let taken: [RouterDaemon.Pending]?? = state.withLock { state in
                if !state.queued.isEmpty {
                    var taken: [RouterDaemon.Pending] = []
                    swap(&taken, &state.queued)
                    return taken
                }
                return state.finished ? .some(nil) : nil
            }
            if let taken { return taken }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    guard state.queued.isEmpty && !state.finished else { return true }
                    state.writer = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}
