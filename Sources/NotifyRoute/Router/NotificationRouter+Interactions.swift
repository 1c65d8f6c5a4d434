/// An interaction with a notification, with the sink that reported it and, when the
/// router remembers one, the replace key of the event that showed it.
public struct RoutedInteraction: Hashable, Sendable {
    /// The sink's instance name in the config (`desktop`, `tty`, ...).
    public var sink: String
    /// The sink's handle of the notification, as in ``SinkOutcome/handle``.
    public var handle: SinkHandle
    public var interaction: NotificationInteraction
    /// The replace key under which the router remembers this handle, if any: the
    /// identity a caller can act on (`router.close(replaceKey:)`) without keeping handles.
    public var replaceKey: String?

    public init(sink: String, handle: SinkHandle, interaction: NotificationInteraction, replaceKey: String? = nil) {
        self.sink = sink
        self.handle = handle
        self.interaction = interaction
        self.replaceKey = replaceKey
    }
}

extension NotificationRouter {
    /// Every interaction reported by the router's sinks, merged: shown, an action invoked,
    /// dismissed by the user, expired or closed (``NotificationInteraction``).
    ///
    /// Each call subscribes afresh to every sink whose capabilities say it
    /// ``SinkCapabilities/reportsInteractions``, so several consumers, and
    /// ``firstInteraction(with:)``, each see every interaction. The stream ends when every
    /// sink's stream has ended; stop iterating (or cancel the iterating task) to unsubscribe.
    /// A sink may replay its recent interactions to a new subscriber (the desktop sink does,
    /// so that an action taken before you subscribed is not lost). A consumer that falls
    /// behind keeps the newest 256 unread interactions.
    ///
    /// ```swift
    /// for await routed in router.interactions() {
    ///     if case .actionInvoked("open") = routed.interaction, routed.replaceKey == "backup" {
    ///         openBackupReport()
    ///     }
    /// }
    /// ```
    public func interactions() -> AsyncStream<RoutedInteraction> {
        let sources: [(String, AsyncStream<SinkInteraction>)] = instances.keys.sorted().compactMap { name in
            guard let sink = instances[name]?.sink, sink.capabilities.reportsInteractions,
                  let stream = sink.interactions() else { return nil }
            return (name, stream)
        }
        let (merged, continuation) = AsyncStream.makeStream(of: RoutedInteraction.self, bufferingPolicy: .bufferingNewest(256))
        guard !sources.isEmpty else {
            continuation.finish()
            return merged
        }
        // The merge needs a task that outlives this call (the other unstructured task of the
        // library, with the daemon's routing): the stream owns it, and ending or abandoning
        // the stream cancels it, which ends each sink subscription in turn.
        let pump = Task {
            await withTaskGroup(of: Void.self) { group in
                for (name, stream) in sources {
                    group.addTask {
                        for await item in stream {
                            continuation.yield(RoutedInteraction(
                                sink: name, handle: item.handle, interaction: item.interaction,
                                replaceKey: self.replaceKey(sink: name, handle: item.handle)))
                        }
                    }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in pump.cancel() }
        return merged
    }

    /// The replace key the state remembers for a sink's handle.
    func replaceKey(sink: String, handle: SinkHandle) -> String? {
        (try? store.withState { $0.replaceKey(sink: sink, handle: handle) }) ?? nil
    }
}
