/// A configured sink: its declaration and the sink made for it, with its deadline.
final class SinkInstance: Sendable {
    let declaration: SinkDeclaration
    let sink: any NotificationSink
    let deadline: Duration
    /// The name's `hashValue`, hashed once for the state keys of every delivery; `nil`
    /// when the name holds U+001E (see ``RouterState/Key/init(sink:key:)``).
    let nameHash: Int?
    /// ``SinkCapabilities/lastResort``, read once: the router splits every event's targets by it.
    let lastResort: Bool
    /// ``SinkCapabilities/worthRetrying``, read once.
    let worthRetrying: Bool

    init(declaration: SinkDeclaration, sink: any NotificationSink, deadline: Duration) {
        self.declaration = declaration
        self.sink = sink
        self.deadline = deadline
        lastResort = sink.capabilities.lastResort
        worthRetrying = sink.capabilities.worthRetrying
        nameHash = declaration.name.utf8.contains(0x1E) ? nil : declaration.name.hashValue
    }

    /// The state's key of `key` on this sink; `keyHash` is `key.hashValue`.
    func stateKey(_ key: String, keyHash: Int) -> RouterState.Key {
        guard let nameHash else { return RouterState.Key(sink: declaration.name, key: key) }
        return RouterState.Key(plainSink: declaration.name, sinkHash: nameHash, key: key, keyHash: keyHash)
    }

    /// One call to the sink under its deadline. `inline`: the sink's
    /// ``SinkCapabilities/deliversInline``, when the caller has read them.
    func attempt(_ delivery: SinkDelivery, inline: Bool? = nil) async -> Result<SinkReceipt, SinkError> {
        let sink = sink
        if inline ?? sink.capabilities.deliversInline {
            // Answers at once by its own word: no deadline task to start.
            do { return .success(try await sink.deliver(delivery)) } catch { return .failure(SinkError(wrapping: error)) }
        }
        switch await Deadline.run(within: deadline, { try await sink.deliver(delivery) }) {
        case .finished(.success(let receipt)): return .success(receipt)
        case .finished(.failure(let error)): return .failure(SinkError(wrapping: error))
        case .timedOut:
            return .failure(SinkError(.timedOut, "no answer within \(DurationParser.format(deadline)) (the sink's deadline)", isRetryable: true))
        }
    }

    /// The sink's availability, probed within its deadline.
    func availability(timeoutReason: String) async -> SinkAvailability {
        let sink = sink
        switch await Deadline.run(within: deadline, { await sink.availability() }) {
        case .finished(.success(let value)): return value
        case .finished(.failure(let error)): return .unavailable(reason: "\(error)")
        case .timedOut: return .unavailable(reason: "\(timeoutReason) within \(DurationParser.format(deadline))")
        }
    }
}
