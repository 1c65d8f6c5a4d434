import Logging
import NIOCore
import NIOEmbedded
import NotifyRoute
@testable import NotifyRouteClient
@testable import NotifyRouteDaemon
import NotifyRouteTesting
import Testing

struct ConnectionHandlerTests {
    /// A connection's queue holds its handler (answers are written through it) and the
    /// handler its queue: a closed connection must let both go, or every connection a
    /// daemon ever served stays in memory.
    @Test func aClosedConnectionLetsItsHandlerGo() throws {
        let router = try NotificationRouter(configuration: RouterConfiguration(fallback: ["r"]), sinks: ["r": RecordingSink()])
        let daemon = RouterDaemon(
            listener: .path("/nonexistent/socket"), host: try RouterHost(load: { router }),
            rendering: .init(exitCode: { _ in 0 }, text: { _ in "" }, problems: { _ in [] }), logger: Logger(label: "test"))
        weak var released: ConnectionHandler?
        do {
            let channel = EmbeddedChannel()
            let handler = ConnectionHandler(
                daemon: daemon, registry: ConnectionRegistry(), loopExecutor: EventLoopExecutor(channel.eventLoop), refusal: nil)
            released = handler
            try channel.pipeline.syncOperations.addHandler(handler)
            _ = try channel.finish(acceptAlreadyClosed: true)
        }
        #expect(released == nil)
    }
}
