import Logging

/// One-call helpers for library users: a `Result` reported as good or bad news, and a
/// sequence of values watched as events. They build ``NotificationEvent``s and hand them
/// to ``NotificationRouter/send(_:only:)``; the pipeline is the same as for any event.
extension NotificationRouter {
    /// Sends a success or an error event for a `Result`, built by the closure for its case.
    ///
    /// A level the closure leaves `nil` becomes ``Level/success`` or ``Level/error``, and a
    /// missing call site becomes the caller's position, so the closures only say what differs:
    ///
    /// ```swift
    /// let result = Result { try archive.verify() }  // Result<ArchiveStats, any Error>
    /// try await router.report(
    ///     result,
    ///     success: { stats in NotificationEvent(title: "Archive verified", body: "\(stats.files) files", source: "backup") },
    ///     failure: { error in NotificationEvent(title: "Archive damaged", body: "\(error)", source: "backup") })
    /// ```
    ///
    /// - Throws: ``EventError`` when the event built is unusable (an empty title).
    @discardableResult
    public func report<Success, Failure: Error>(
        _ result: Result<Success, Failure>,
        file: String = #fileID, line: Int = #line, function: String = #function,
        success: (Success) -> NotificationEvent,
        failure: (Failure) -> NotificationEvent
    ) async throws(EventError) -> DeliveryReport {
        var event: NotificationEvent
        switch result {
        case .success(let value):
            event = success(value)
            event.level = event.level ?? .success
        case .failure(let error):
            event = failure(error)
            event.level = event.level ?? .error
        }
        event.callSite = event.callSite ?? CallSite(file: file, line: line, function: function)
        return try await send(event)
    }

    /// Sends `success` as a ``Level/success`` event, or `failure` as an ``Level/error`` event
    /// whose body is the error's description; `configure` then sets what differs for both.
    ///
    /// ```swift
    /// try await router.report(result, success: "Deployed", failure: "Deploy failed") { $0.source = "deploy" }
    /// ```
    @discardableResult
    public func report<Success, Failure: Error>(
        _ result: Result<Success, Failure>, success: String, failure: String,
        file: String = #fileID, line: Int = #line, function: String = #function,
        configure: (inout NotificationEvent) -> Void = { _ in }
    ) async throws(EventError) -> DeliveryReport {
        var event: NotificationEvent
        switch result {
        case .success:
            event = NotificationEvent(title: success, level: .success)
        case .failure(let error):
            event = NotificationEvent(title: failure, body: String(describing: error), level: .error)
        }
        event.callSite = CallSite(file: file, line: line, function: function)
        configure(&event)
        return try await send(event)
    }

    /// Sends one event for each element of `sequence` that `transform` maps to an event,
    /// until the sequence ends; elements mapped to `nil` are skipped.
    ///
    /// Events are sent one after the other, in order, and each send completes before the
    /// next element is read, so a fast producer is slowed to the pace of the sinks rather
    /// than piling events up. An event the router rejects (an empty title) is counted and
    /// the observation goes on: one bad value must not end a long-lived watch.
    ///
    /// ```swift
    /// try await router.observe(diskMonitor.usage) { percent in
    ///     percent < 90 ? nil : NotificationEvent(title: "Disk \(percent)% full", level: .warning, replaceKey: "disk")
    /// }
    /// ```
    ///
    /// - Returns: what was sent, skipped and rejected, once the sequence has ended.
    /// - Throws: what the sequence throws; a sequence that cannot fail needs no `try`.
    @discardableResult
    public func observe<Values: AsyncSequence>(
        _ sequence: Values,
        isolation: isolated (any Actor)? = #isolation,
        _ transform: (Values.Element) -> NotificationEvent?
    ) async throws(Values.Failure) -> ObservationSummary {
        var summary = ObservationSummary()
        var iterator = sequence.makeAsyncIterator()
        while let value = try await iterator.next(isolation: isolation) {
            summary.elements += 1
            guard let event = transform(value) else {
                summary.skipped += 1
                continue
            }
            do {
                let report = try await send(event)
                summary.sent += 1
                switch report.summary {
                case .delivered, .suppressed, .planned: break
                case .failed, .noSinkAvailable: summary.undelivered += 1
                }
            } catch {
                summary.rejected += 1
                logger.warning("observed value rejected", metadata: ["error": "\(error.message)"])
            }
        }
        return summary
    }
}

/// What ``NotificationRouter/observe(_:isolation:_:)`` did with a sequence.
public struct ObservationSummary: Hashable, Sendable {
    /// Elements read from the sequence.
    public var elements = 0
    /// Events sent through the pipeline (each has its own ``DeliveryReport``).
    public var sent = 0
    /// Elements the transform mapped to `nil`.
    public var skipped = 0
    /// Events the router refused (``EventError``, an empty title); not sent.
    public var rejected = 0
    /// Sent events that no sink delivered (every sink failed or was unavailable).
    public var undelivered = 0

    public init() {}
}
