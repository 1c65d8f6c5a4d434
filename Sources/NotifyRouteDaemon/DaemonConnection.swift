import NIOCore
import NotifyRoute
import NotifyRouteClient
import Synchronization

/// One connection's requests, between its channel's handler (on the event loop) and the
/// task that routes them.
///
/// Requests are routed in order by one task at a time, started when a request finds none
/// running and ended when none is left: a connection waiting for its next line holds no
/// task, and its end resumes none. Answers are written in request order, each once its
/// event's state is committed, from whichever thread routed or committed it. (A task per
/// connection over `NIOAsyncChannel` woke a thread many times per send: Tests/Benchmarks/README.md, "Why the code is so".)
final class DaemonConnection: Sendable {
    enum Request: Sendable {
        case line(ByteBuffer)
        /// A line that will not be read (``LineFrame/refused(_:)``): answered, then the connection ends.
        case refused(String)
    }

    private struct State {
        var requests = CircularBuffer<Request>()
        var routing = false
        var session = RouterDaemon.Session()
        /// Answers not yet handed to the loop, in request order.
        var answers = CircularBuffer<RouterDaemon.Pending>()
        /// The commit the first answer waits for, once told to call back.
        var waitingFor: Committed?
        /// Answers due, for the loop's next write: their lines, copied into one buffer
        /// by the loop outside the lock (a commit moves dozens of answers at once, and the
        /// loop spun on this lock to queue the next request while they were copied).
        var outgoing: [[UInt8]] = []
        var writeAsked = false
    }

    private let state = Mutex(State())
    private let handler: NIOLoopBound<ConnectionHandler>
    private let loop: any EventLoop
    private let registry: ConnectionRegistry

    /// - Parameter guest: the peer's uid when serve.allow let it in (``RouterDaemon/Session/guest``).
    /// - Parameter peerPID: the peer's process (``RouterDaemon/Session/peerPID``).
    init(handler: ConnectionHandler, loop: any EventLoop, registry: ConnectionRegistry, guest: UInt32? = nil, peerPID: Int32? = nil) {
        self.handler = NIOLoopBound(handler, eventLoop: loop)
        self.loop = loop
        self.registry = registry
        state.withLock { state in
            state.session.guest = guest
            state.session.peerPID = peerPID
        }
    }

    /// Queues a request; true when no task routes this connection's requests now, and the
    /// caller must start one (``startRouting(with:on:)``).
    func push(_ request: Request) -> Bool {
        state.withLock { state in
            state.requests.append(request)
            defer { state.routing = true }
            return !state.routing
        }
    }

    /// Starts the task that routes what is queued: on the event loop when `loop` is given
    /// (a connection's first request) and no other request is routed there, for that request
    /// only (no thread is woken to route it, none to write its answer); else on the pool.
    ///
    /// One of the two unstructured tasks of the library, on purpose: a child of a group could
    /// not run on the event loop that read the request. The registry owns it instead: it
    /// counts it, and the daemon waits for ``ConnectionRegistry/drained()`` before it stops.
    func startRouting(with daemon: RouterDaemon, on loop: EventLoopExecutor?) {
        let registry = self.registry
        registry.routingStarted()
        if let loop, registry.claimLoop() {
            Task(executorPreference: loop) {
                await self.route(with: daemon, one: true)
                registry.releaseLoop()
                registry.routingEnded()
            }
        } else {
            // Detached, with no executor preference: a task that has one takes its status
            // record lock at every await to look the preference up, and the global
            // executor is where it would run anyway.
            Task.detached {
                await self.route(with: daemon)
                registry.routingEnded()
            }
        }
    }

    /// Routes what is queued, in order, until nothing is; then the next request starts a
    /// task again. With `one`, only the first: what follows it goes on in a task of the
    /// pool (the caller's task runs on the event loop, which must go back to its sockets).
    private nonisolated(nonsending) func route(with daemon: RouterDaemon, one: Bool = false) async {
        var session = state.withLock { $0.session }
        var routed = 0
        while true {
            let request: Request
            let behind: Int
            switch next(keeping: session, handingOver: one && routed > 0) {
            case .request(let next, let queued): (request, behind) = (next, queued)
            case .done: return
            case .handedOver:
                startRouting(with: daemon, on: nil)
                return
            }
            let pending: RouterDaemon.Pending
            switch request {
            case .line(let line): pending = await daemon.handle(line.readableBytesView, &session, queuedBehind: behind)
            case .refused(let reason):
                pending = RouterDaemon.Pending(line: DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(reason, exit: 64)))
            }
            answer(pending)
            routed += 1
        }
    }

    private enum Next {
        /// The next request, and how many wait behind it.
        case request(Request, behind: Int)
        /// Nothing is queued: the next request starts a task.
        case done
        /// More is queued, for another task to route (this one keeps ``State/routing``).
        case handedOver
    }

    private func next(keeping session: RouterDaemon.Session, handingOver: Bool) -> Next {
        state.withLock { state in
            if state.requests.isEmpty {
                state.routing = false
                state.session = session
                return .done
            }
            if handingOver {
                state.session = session
                return .handedOver
            }
            let request = state.requests.removeFirst()
            return .request(request, behind: state.requests.count)
        }
    }

    private func answer(_ pending: RouterDaemon.Pending) {
        let ask = state.withLock { state in
            state.answers.append(pending)
            return writeDue(&state)
        }
        if ask { askWrite() }
    }

    /// Moves the answers that are due, in order, to what the loop writes next; true when
    /// the caller must then ask the loop to write it (``askWrite()``, once the lock is let
    /// go: the loop's queue takes a lock and may wake its thread, and the commit that calls
    /// this for every connection it answers waited on connections held meanwhile). Answers
    /// made before that write go in it.
    private func writeDue(_ state: inout State) -> Bool {
        var count = 0
        // The requests of a round share their commit: asked once for a run of them.
        var settled: Committed?
        while let first = state.answers.first {
            if let committed = first.committed, committed !== settled {
                if state.waitingFor === committed { break }
                if committed.whenDone({ [self] in self.committedFirst() }) {
                    state.waitingFor = committed
                    break
                }
                settled = committed
            }
            state.answers.removeFirst()
            state.outgoing.append(first.line)
            count += 1
        }
        guard count > 0, !state.writeAsked else { return false }
        state.writeAsked = true
        return true
    }

    private func askWrite() {
        loop.execute { [self] in
            let lines = self.state.withLock { state in
                state.writeAsked = false
                var lines: [[UInt8]] = []
                swap(&lines, &state.outgoing)
                return lines
            }
            var buffer = ByteBuffer()
            buffer.reserveCapacity(lines.reduce(0) { $0 + $1.count })
            for line in lines { buffer.writeBytes(line) }
            self.handler.value.write(buffer, answers: lines.count)
        }
    }

    private func committedFirst() {
        let ask = state.withLock { state in
            state.waitingFor = nil
            return writeDue(&state)
        }
        if ask { askWrite() }
    }
}

/// A connection's place in the pipeline after its line decoder (and greeting): hands
/// requests to its ``DaemonConnection``, writes the answers, stops reading while too many
/// wait or the client does not read them, and closes the connection once everything read
/// is answered and the client is done (or the daemon is shutting down).
final class ConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = LineFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How many requests may wait for their answers before the connection is not read:
    /// a client that stops reading stops being read.
    static let window = 128

    private let daemon: RouterDaemon
    private let registry: ConnectionRegistry
    private let loopExecutor: EventLoopExecutor
    private let refusal: String?
    private let guest: UInt32?
    private let peerPID: Int32?
    private var connection: DaemonConnection?
    private var context: ChannelHandlerContext?
    /// Requests read and not yet answered, on this loop.
    private var unanswered = 0
    private var readHeld = false
    private var routedBefore = false
    /// Requests were queued for a task that is not started yet.
    private var startPending = false
    /// The client said it is done, or a line was too long: close once all is answered.
    private var ending = false
    /// The daemon is stopping: close once what was read is answered.
    private var shuttingDown = false
    private var lastWrite: EventLoopFuture<Void>?

    /// - Parameter refusal: why the peer is not served; it is told so, and nothing is read.
    /// - Parameter guest: the peer's uid when serve.allow let it in, not as the owner.
    /// - Parameter peerPID: the peer's process, from its socket's credentials.
    init(daemon: RouterDaemon, registry: ConnectionRegistry, loopExecutor: EventLoopExecutor, refusal: String?, guest: UInt32? = nil, peerPID: Int32? = nil) {
        self.daemon = daemon
        self.registry = registry
        self.loopExecutor = loopExecutor
        self.refusal = refusal
        self.guest = guest
        self.peerPID = peerPID
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connection = DaemonConnection(handler: self, loop: context.eventLoop, registry: registry, guest: guest, peerPID: peerPID)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // The connection holds this handler for its answers: let both go once routed.
        connection = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if let refusal {
            let channel = context.channel
            let line = DaemonProtocol.encodeLine(DaemonProtocol.Answer.failure(refusal, exit: 69))
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: line))).whenComplete { _ in channel.close(promise: nil) }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil, !ending, let connection else { return }
        let request: DaemonConnection.Request
        switch unwrapInboundIn(data) {
        case .line(let line):
            guard !GreetingHandler.isBlank(line) else { return }
            request = .line(line)
        case .refused(let reason):
            ending = true
            request = .refused(reason)
        }
        unanswered += 1
        // Started once the read's lines are all queued: a task started at the first would
        // often route it and end before the next, and each line would cost a task.
        if connection.push(request) { startPending = true }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        startRouting()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        startRouting()  // lines read before the hang-up are routed all the same
        context.fireChannelInactive()
    }

    private func startRouting() {
        guard startPending, let connection else { return }
        startPending = false
        // Only a connection's first on the loop: a client that pipelines keeps its requests on
        // the pool, where the loop does not route them in turn with everyone's reads and writes.
        connection.startRouting(with: daemon, on: routedBefore ? nil : loopExecutor)
        routedBefore = true
    }

    func read(context: ChannelHandlerContext) {
        guard unanswered < Self.window, context.channel.isWritable, !ending else {
            readHeld = true
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReading(context)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            startRouting()  // the last lines come from the decoder at the hang-up, with no read-complete
            ending = true
            if unanswered == 0 { close(context) }
        } else if let expired = event as? LineTimeout.Expired {
            guard refusal == nil, !ending, let connection else { return }
            ending = true
            unanswered += 1
            let reason = "a request line did not end within \(DurationParser.format(expired.limit)); this connection is closed"
            if connection.push(.refused(reason)) { startPending = true }
            startRouting()
            return
        } else if event is ConnectionRegistry.ShuttingDown {
            shuttingDown = true
            if unanswered == 0 { close(context) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Answers handed over by the ``DaemonConnection``, in request order.
    fileprivate func write(_ buffer: ByteBuffer, answers count: Int) {
        guard let context else { return }
        lastWrite = context.writeAndFlush(wrapOutboundOut(buffer))
        unanswered -= count
        if unanswered == 0 && (ending || shuttingDown) {
            close(context)
        } else {
            resumeReading(context)
        }
    }

    private func resumeReading(_ context: ChannelHandlerContext) {
        guard readHeld, unanswered < Self.window, context.channel.isWritable, !ending else { return }
        readHeld = false
        context.read()
    }

    /// Closes once the last answer is in the socket (a close fails writes still queued).
    private func close(_ context: ChannelHandlerContext) {
        let channel = context.channel
        if let lastWrite {
            lastWrite.whenComplete { _ in channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
    }
}

/// The open connections, so that shutdown can end the idle ones at once and the busy ones
/// once they have answered, and wait until every one is closed and routed.
final class ConnectionRegistry: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var closing = false
        /// Connections refused at the cap since one was last let in.
        var refused = 0
        /// Connections whose requests a task is routing (also after they closed).
        var routing = 0
        /// Whether a request is routed on the event loop.
        var loopClaimed = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// What ``add(_:limit:)`` did with a connection.
    enum Admission: Equatable {
        /// Registered; `afterRefusing` connections were refused at the cap just before it.
        case admitted(afterRefusing: Int)
        /// Refused: `limit` are open; `first` when the one before it was let in.
        case refused(first: Bool)
    }

    /// Registers a connection just accepted, unless `limit` are open already (then the
    /// caller closes it); removed again when it closes.
    func add(_ channel: any Channel, limit: Int) -> Admission {
        let (admission, closing) = state.withLock { state -> (Admission, Bool) in
            guard state.channels.count < limit else {
                state.refused += 1
                return (.refused(first: state.refused == 1), false)
            }
            state.channels[ObjectIdentifier(channel)] = channel
            defer { state.refused = 0 }
            return (.admitted(afterRefusing: state.refused), state.closing)
        }
        guard case .admitted = admission else { return admission }
        channel.closeFuture.whenComplete { [self] _ in remove(channel) }
        if closing { channel.close(promise: nil) }
        return admission
    }

    func remove(_ channel: any Channel) {
        update { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func routingStarted() {
        state.withLock { $0.routing += 1 }
    }

    func routingEnded() {
        update { $0.routing -= 1 }
    }

    /// Takes the event loop for routing one request; false when another has it.
    func claimLoop() -> Bool {
        state.withLock { state in
            defer { state.loopClaimed = true }
            return !state.loopClaimed
        }
    }

    func releaseLoop() {
        state.withLock { $0.loopClaimed = false }
    }

    /// Told to each connection's ``ConnectionHandler`` at shutdown, which knows what it has
    /// left to answer.
    struct ShuttingDown: Sendable {}

    /// Stops new connections; each open one closes once what it read is answered (at once
    /// when nothing is).
    func shutDown() {
        let open = state.withLock { state in
            state.closing = true
            return Array(state.channels.values)
        }
        for channel in open { channel.pipeline.fireUserInboundEventTriggered(ShuttingDown()) }
    }

    /// Closes every connection, answered or not.
    func closeAll() {
        let all = state.withLock { state in
            state.closing = true
            return Array(state.channels.values)
        }
        for channel in all { channel.close(promise: nil) }
    }

    /// Returns once, after ``shutDown()`` or ``closeAll()``, every connection is closed and
    /// no task routes a request read from one.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                let done = state.channels.isEmpty && state.routing == 0
                if !done { state.waiter = continuation }
                return done
            }
            if done { continuation.resume() }
        }
    }

    private func update<Result>(_ body: (inout State) -> Result) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            _ = body(&state)
            guard state.channels.isEmpty, state.routing == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}

/// Runs the jobs of tasks that prefer it on an event loop, between its I/O. A task that
/// starts on the loop it was read on, and answers there, wakes no other thread.
final class EventLoopExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
