#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NotifyRoute
import Synchronization

/// The alerts of events still open (sent with a replace key, not closed), posted again
/// before Alertmanager would end them, for as long as this process lives.
///
/// Alertmanager resolves an alert once its `endsAt` has passed (without one, its
/// `resolve_timeout` after the last post), as it does for a Prometheus alert that stopped
/// coming. An event with a replace key stays open until `notify-route close`, so a
/// long-lived process (`serve`, an application that keeps its router) posts its alert
/// again every third of `resolve_after` (every minute without it), as Prometheus does
/// every `resend_delay`; `close` stops that. A one-shot `send` exits first: its alert ends
/// at its `endsAt`.
///
/// Kept per sink name, not per sink object: a daemon's reload makes new sinks, and what
/// the old one posted must stay alive. Re-posts go through the newest sink of the name
/// still alive; when none is (the sink left the config), its alerts are forgotten and end
/// at their `endsAt`.
final class OpenAlerts: Sendable {
    static let shared = OpenAlerts()

    private struct Open {
        var alert: AlertmanagerAlert
        var due: ContinuousClock.Instant
    }

    private struct WeakSink {
        weak var sink: AlertmanagerSink?
    }

    private struct Slot {
        var alerts: [String: Open] = [:]
        var sinks: [WeakSink] = []
        var refreshing = false

        mutating func newestSink() -> AlertmanagerSink? {
            sinks.removeAll { $0.sink == nil }
            return sinks.last?.sink
        }
    }

    private enum Step {
        case stop
        case wait(Duration)
        case post(AlertmanagerSink, [AlertmanagerAlert])
    }

    private let slots = Mutex<[String: Slot]>([:])
    private let logger = Logger(label: "notify-route.alertmanager")

    /// `sink` is the newest of its name: re-posts go through it from now on.
    func adopt(_ sink: AlertmanagerSink) {
        slots.withLock { $0[sink.name, default: Slot()].sinks.append(WeakSink(sink: sink)) }
    }

    /// Keeps `alert` active until ``close(_:sink:)``: posted again one interval of `sink`'s from now.
    func open(_ alert: AlertmanagerAlert, sink: AlertmanagerSink) {
        let due = ContinuousClock.now + sink.repostInterval
        let start = slots.withLock { slots in
            var slot = slots[sink.name, default: Slot()]
            slot.alerts[Self.key(alert.labels)] = Open(alert: alert, due: due)
            let start = !slot.refreshing
            slot.refreshing = true
            slots[sink.name] = slot
            return start
        }
        // Unstructured on purpose: the loop outlives the sink and the router that started it
        // (a reload keeps the name's alerts alive) and ends by itself once none is open.
        if start { Task { await self.refresh(sink.name) } }
    }

    /// Stops re-posting the alert with these labels.
    func close(_ labels: [String: String], sink name: String) {
        _ = slots.withLock { $0[name]?.alerts.removeValue(forKey: Self.key(labels)) }
    }

    /// Whether the alert with these labels is being kept active.
    func isOpen(_ labels: [String: String], sink name: String) -> Bool {
        slots.withLock { $0[name]?.alerts[Self.key(labels)] != nil }
    }

    /// Re-posts what is due, sleeping in between, until the name has no open alert.
    private func refresh(_ name: String) async {
        while true {
            switch nextStep(name) {
            case .stop:
                return
            case .wait(let duration):
                try? await Task.sleep(for: duration)
            case .post(let sink, let alerts):
                let now = Date()
                let fresh = alerts.map { sink.template.reposted($0, now: now) }
                do throws(SinkError) {
                    _ = try await sink.post(fresh, deadline: .now + (sink.timeout ?? .seconds(5)))
                    logger.debug("re-posted open alerts", metadata: ["sink": "\(name)", "alerts": "\(fresh.count)"])
                } catch {
                    logger.warning("re-posting open alerts failed; tried again in \(DurationParser.format(sink.repostInterval))",
                                   metadata: ["sink": "\(name)", "error": "\(error.message)"])
                }
                // One closed while it was being re-posted: the re-post may have arrived after the
                // resolve, so it is resolved again.
                let closed = fresh.filter { !isOpen($0.labels, sink: name) }.map { AlertHandle($0).resolved(at: Date()) }
                if !closed.isEmpty { _ = try? await sink.post(closed, deadline: .now + (sink.timeout ?? .seconds(5))) }
            }
        }
    }

    private func nextStep(_ name: String) -> Step {
        let now = ContinuousClock.now
        let (step, forgotten) = slots.withLock { slots -> (Step, Int) in
            guard var slot = slots[name], !slot.alerts.isEmpty else {
                slots[name]?.refreshing = false
                return (.stop, 0)
            }
            defer { slots[name] = slot }
            guard let sink = slot.newestSink() else {
                let count = slot.alerts.count
                slot.alerts = [:]
                slot.refreshing = false
                return (.stop, count)
            }
            let due = slot.alerts.filter { $0.value.due <= now }
            guard !due.isEmpty else {
                let next = slot.alerts.values.map(\.due).min() ?? now
                return (.wait(min(next - now, sink.repostInterval)), 0)
            }
            for key in due.keys { slot.alerts[key]?.due = now + sink.repostInterval }
            return (.post(sink, due.values.map(\.alert)), 0)
        }
        if forgotten > 0 {
            logger.info("the sink left the config; its open alerts end at their endsAt", metadata: ["sink": "\(name)", "alerts": "\(forgotten)"])
        }
        return step
    }

    /// A label set as one string, the same for the same labels in any order.
    private static func key(_ labels: [String: String]) -> String {
        labels.sorted { $0.key < $1.key }.map { "\($0.key)\u{1F}\($0.value)" }.joined(separator: "\u{1E}")
    }
}
