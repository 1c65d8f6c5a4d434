#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import NotifyRouteClient
import NotifyRouteService
import Synchronization

/// What the daemon accepted and has not delivered yet, kept in the state database so that
/// a stop or a crash loses none of it: a record its journal sink answered `queued` (journald
/// not reading) and a network delivery it retries. A row is added before the client gets its
/// answer and removed once the delivery is done (written, delivered, or dropped with a
/// reason in the log and `status`); a new `serve` delivers what it finds, once.
///
/// A queued row is done when its sink's queue has emptied after the row was added
/// (``NotificationSink/queuedCount`` is 0): nothing the sink answered `queued` before then
/// still waits. Only sinks that hold their queue in this process say how many they hold; an
/// exec plugin's `queued` is the plugin's to keep, and is not in the outbox.
public final class Outbox: Sendable {
    /// Who holds an accepted delivery now.
    public enum State: String, Sendable {
        /// The sink, in a queue of its own.
        case queued
        /// The daemon's ``RetryQueue``.
        case retrying
    }

    /// One delivery found in the outbox when the daemon starts.
    public struct Entry: Sendable {
        public var id: Int64
        public var sink: String
        public var accepted: Date
        /// `nil` when the stored event cannot be read (written by another version); it is dropped.
        public var event: ResolvedEvent?
    }

    private struct Watermarks {
        /// Per sink, the newest queued row not yet known to be written.
        var queuedThrough: [String: Int64] = [:]
        /// Set when the daemon finishes its sinks: what a sink gives up then stays for the next `serve`.
        var frozen = false
    }

    private let store: any OutboxStore
    private let watermarks = Mutex(Watermarks())
    private let logger: Logger
    /// Poked when a queued row is added, for whoever calls ``settle(with:)``.
    public let wakeup = TimerWakeup()

    package init(store: any OutboxStore, logger: Logger = Logger(label: "notify-route.outbox")) {
        self.store = store
        self.logger = logger
    }

    /// Keeps `deliveries`, in one transaction; their row ids in the same order (`nil`: not
    /// kept, because the database failed: logged, and the delivery goes on in memory).
    public func accept(_ deliveries: [(sink: String, event: ResolvedEvent, state: State)]) -> [Int64?] {
        guard !deliveries.isEmpty else { return [] }
        let encoder = JSONEncoder()
        var rows: [(sink: String, state: String, event: String)] = []
        for delivery in deliveries {
            guard let data = try? encoder.encode(delivery.event) else { continue }
            rows.append((delivery.sink, delivery.state.rawValue, String(decoding: data, as: UTF8.self)))
        }
        let ids: [Int64]
        do {
            ids = try store.addOutboxRows(rows, accepted: Date())
        } catch {
            logger.error("cannot keep accepted deliveries in the outbox; a stop now loses them", metadata: ["error": "\(error)"])
            return deliveries.map { _ in nil }
        }
        var queued = false
        watermarks.withLock { marks in
            for (index, delivery) in deliveries.enumerated() where delivery.state == .queued && index < ids.count {
                marks.queuedThrough[delivery.sink] = max(marks.queuedThrough[delivery.sink] ?? 0, ids[index])
                queued = true
            }
        }
        if queued { wakeup.poke() }
        return deliveries.indices.map { $0 < ids.count ? ids[$0] : nil }
    }

    /// The delivery of row `id` is done: delivered, or dropped with its reason logged.
    public func remove(_ id: Int64) {
        do { try store.removeOutboxRows([id]) } catch {
            logger.error("cannot remove a finished delivery from the outbox; the next serve delivers it again", metadata: ["error": "\(error)"])
        }
    }

    /// Row `id`, retried, was taken by `sink` into its own queue.
    public func queued(_ id: Int64, sink: String) {
        do { try store.setOutboxState(State.queued.rawValue, ids: [id]) } catch {
            logger.error("cannot update the outbox", metadata: ["error": "\(error)"])
        }
        watermarks.withLock { $0.queuedThrough[sink] = max($0.queuedThrough[sink] ?? 0, id) }
        wakeup.poke()
    }

    /// Whether queued rows wait for their sink's queue to empty.
    public var hasQueuedRows: Bool { watermarks.withLock { !$0.queuedThrough.isEmpty } }

    /// Removes the queued rows of each sink of `router` whose queue has emptied since they
    /// were added. Nothing once ``freeze()`` was called.
    public func settle(with router: NotificationRouter) {
        let marks = watermarks.withLock { $0.frozen ? [:] : $0.queuedThrough }
        for (sink, through) in marks {
            // A sink a reload removed: its rows stay for the next start, which drops them with a reason.
            guard let instance = router.sink(named: sink) else {
                watermarks.withLock { marks in if marks.queuedThrough[sink] == through { marks.queuedThrough[sink] = nil } }
                continue
            }
            guard instance.queuedCount ?? 0 == 0 else { continue }
            // Read after the queue was seen empty: a queue emptied by giving up (the daemon
            // finishing) is seen as frozen here, and its rows stay.
            let settled = watermarks.withLock { marks -> Bool in
                guard !marks.frozen else { return false }
                if marks.queuedThrough[sink] == through { marks.queuedThrough[sink] = nil }
                return true
            }
            guard settled else { return }
            do { try store.removeQueuedOutboxRows(sink: sink, through: through) } catch {
                logger.error("cannot remove written records from the outbox; the next serve writes them again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Stops ``settle(with:)``: called before the sinks finish, when what they give up must
    /// stay in the outbox.
    public func freeze() {
        watermarks.withLock { $0.frozen = true }
        wakeup.stop()
    }

    /// What a daemon that stopped left, oldest first; every row is taken over by the caller.
    public func entries() throws -> [Entry] {
        let decoder = JSONDecoder()
        return try store.outboxRows().map { row in
            Entry(id: row.id, sink: row.sink, accepted: row.accepted,
                  event: try? decoder.decode(ResolvedEvent.self, from: Data(row.event.utf8)))
        }
    }

    /// How many deliveries the outbox holds now.
    public var count: Int { (try? store.outboxCount()) ?? 0 }
}
