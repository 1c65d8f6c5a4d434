#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import NotifyRouteClient
import NotifyRouteService
import ServiceLifecycle

/// Delivers, when the daemon starts, what a daemon before it accepted and did not deliver
/// (the ``Outbox``), in the order it was accepted, once; then removes the outbox's queued
/// rows as their sinks write them.
///
/// A delivery that fails again in a way that may pass goes to the ``RetryQueue``, its age
/// counted from when it was first accepted; one that cannot succeed (its sink left the
/// config, a permanent error, an event this version cannot read) is dropped and counted,
/// with the reason in the log.
public struct OutboxService: Service {
    let host: RouterHost
    let outbox: Outbox
    let logger: Logger
    /// How often queued rows are looked at while their sink's queue is not empty.
    var settleInterval: Duration = .milliseconds(200)

    public init(host: RouterHost, outbox: Outbox, logger: Logger) {
        self.host = host
        self.outbox = outbox
        self.logger = logger
    }

    public func run() async throws {
        await outbox.wakeup.running {
            await redeliver()
            while !outbox.wakeup.isStopped {
                outbox.settle(with: host.router)
                await outbox.wakeup.wait(upTo: outbox.hasQueuedRows ? settleInterval : nil)
            }
        }
    }

    private func redeliver() async {
        let entries: [Outbox.Entry]
        do { entries = try outbox.entries() } catch {
            logger.error("cannot read the outbox; what the last daemon left waits there", metadata: ["error": "\(error)"])
            return
        }
        guard !entries.isEmpty else { return }
        logger.notice("delivering what the last daemon accepted and did not deliver", metadata: ["count": "\(entries.count)"])
        let router = host.router
        var delivered = 0
        for entry in entries {
            guard let event = entry.event else {
                await host.retries.drop(entry.sink, "its stored event cannot be read by this version", title: "?", row: entry.id)
                continue
            }
            guard let sink = router.sink(named: entry.sink), let declaration = router.configuration.sinks.first(where: { $0.name == entry.sink }) else {
                await host.retries.drop(entry.sink, "its sink is no longer in the config", title: event.title, row: entry.id)
                continue
            }
            let deadline = declaration.deadline ?? router.configuration.defaults.deadline ?? EventDefaults.builtInDeadline
            do {
                let receipt = try await sink.deliver(SinkDelivery(event: event, sinkName: entry.sink, deadline: .now + deadline))
                if case .queued = receipt.disposition, sink.queuedCount != nil { outbox.queued(entry.id, sink: entry.sink) } else { outbox.remove(entry.id) }
                delivered += 1
            } catch let error as SinkError where error.isRetryable || error.kind == .unavailable {
                await host.retries.resume(event, sink: entry.sink, router: router, accepted: entry.accepted, lastError: error, row: entry.id)
            } catch {
                await host.retries.drop(entry.sink, "a permanent failure: \(error)", title: event.title, row: entry.id)
            }
        }
        logger.notice("delivered what the last daemon left", metadata: ["delivered": "\(delivered)", "of": "\(entries.count)"])
    }
}
