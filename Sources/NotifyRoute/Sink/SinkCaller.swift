/// The process that asked for the deliveries under way, when another process routes them:
/// `notify-route serve` routes a client's `send` with the client's terminal set here, so
/// that a sink that draws on the caller's terminal (banners) draws where the send was typed.
///
/// Request-scoped, as swift-distributed-tracing's `ServiceContext` is: the router's
/// deliveries of one event run in tasks under the call that routes it, and see it; a
/// delivery made later by a timer (a held summary, an escalation) has no caller.
public enum SinkCaller {
    /// The caller's terminal device (`/dev/pts/3`), set only when the router's host checked
    /// that the caller has it open; `nil` when the routing process is the caller.
    @TaskLocal public static var terminal: String?
}
