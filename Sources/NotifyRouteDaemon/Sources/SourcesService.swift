#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Logging
import NotifyRoute
import ServiceLifecycle
import Synchronization

/// The config's `sources:` as a swift-service-lifecycle `Service`: each source reads the
/// journal on a thread of its own and hands its events to the daemon's current router,
/// where they go through the same rules, routes and policies as any other.
///
/// A reload that changes `sources:` restarts them (each goes on from its saved place);
/// graceful shutdown stops them at once, lets each send the summary it holds, and returns.
public struct SourcesService: Service {
    public let host: RouterHost
    private let positions: SourcePositions
    private let logger: Logger

    /// - Parameter store: where each source keeps its place in the journal; `nil` keeps it in
    ///   memory (a restart then starts at the end of the journal again).
    package init(host: RouterHost, store: (any SourcePositionStore)?, logger: Logger) {
        self.host = host
        self.positions = SourcePositions(store: store)
        self.logger = logger
    }

    /// One action and the reader thread waiting for it to be routed.
    struct Work: Sendable {
        let action: SourceAction
        let done: DispatchSemaphore
    }

    /// How long a reader thread waits for the router: past it, it goes on (the action is
    /// routed all the same, later); it never waits for a router that stopped.
    static let routeWait = DispatchTimeInterval.seconds(30)

    public func run() async throws {
        var current = host.router.configuration.sources
        let (stream, continuation) = AsyncStream.makeStream(of: Work.self)
        let deliver: @Sendable (SourceAction) -> Void = { action in
            let work = Work(action: action, done: DispatchSemaphore(value: 0))
            guard case .enqueued = continuation.yield(work) else { return }
            _ = work.done.wait(timeout: .now() + Self.routeWait)
        }
        let readers = ReaderSet()
        readers.replace(with: start(current, deliver: deliver))

        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await work in stream {
                    await route(work.action)
                    work.done.signal()
                }
            }
            await withGracefulShutdownHandler {
                // A reload may change the sources: look every second, between requests.
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
                    let fresh = host.router.configuration.sources
                    guard fresh != current, !Task.isShuttingDownGracefully else { continue }
                    logger.info("sources changed on reload; restarting them")
                    await readers.stopAll()
                    current = fresh
                    readers.replace(with: start(current, deliver: deliver))
                }
            } onGracefulShutdown: {
                readers.requestStop()
            }
            await readers.stopAll()
            continuation.finish()
        }
    }

    private func start(_ declarations: [SourceDeclaration], deliver: @escaping @Sendable (SourceAction) -> Void) -> [SourceReader] {
        declarations.compactMap { declaration in
            do {
                let reader = try SourceReader(declaration: declaration, positions: positions, logger: logger, deliver: deliver)
                guard reader.start() else {
                    logger.error("source \(declaration.name): the system refused a thread; the source is not read")
                    return nil
                }
                logger.info("source \(declaration.name) (kind \(declaration.kind.rawValue)) started")
                return reader
            } catch {
                logger.error("source \(declaration.name): \(error)")
                return nil
            }
        }
    }

    private func route(_ action: SourceAction) async {
        let router = host.begin()
        let report: DeliveryReport?
        switch action {
        case .send(let event):
            do { report = try await router.send(event) } catch {
                logger.error("a source's event was refused: \(error)")
                report = nil
            }
        case .close(let replaceKey):
            report = await router.close(replaceKey: replaceKey)
        }
        host.end(report)
    }
}

/// The running readers, stopped together on shutdown or reload.
final class ReaderSet: Sendable {
    private let readers = Mutex<[SourceReader]>([])

    func replace(with fresh: [SourceReader]) {
        readers.withLock { $0 = fresh }
    }

    func requestStop() {
        for reader in readers.withLock({ $0 }) { reader.stop() }
    }

    /// Stops every reader and waits until each thread has ended (each finishes the
    /// record at hand and sends what its throttle holds first).
    func stopAll() async {
        let all = readers.withLock { readers in
            defer { readers = [] }
            return readers
        }
        for reader in all { reader.stop() }
        while all.contains(where: { !$0.hasExited }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
