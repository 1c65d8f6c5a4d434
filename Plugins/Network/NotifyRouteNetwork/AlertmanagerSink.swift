#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NotifyRoute
import NotifyRouteNetworkSchema

/// Posts each event as an alert to Prometheus Alertmanager's API v2, to every peer of a
/// cluster at once: delivered when at least one peer accepts it, as Prometheus' notifier
/// counts it, since the peers gossip what they were told.
///
/// ```yaml
/// sinks:
///   fleet:
///     kind: alertmanager
///     urls: [http://am-1:9093, http://am-2:9093]
///     labels: { team: ops }
///     resolve_after: 1h
/// ```
///
/// A replace updates the same alert (its labels, hence its fingerprint, are kept in the
/// router's state); `notify-route close --replace-key K` posts it again with `endsAt` now.
public final class AlertmanagerSink: NotificationSink {
    public let name: String
    /// The `POST /api/v2/alerts` endpoint of each peer.
    public let endpoints: [String]
    let template: AlertTemplate
    let timeout: Duration?
    let transport = HTTPTransport()

    init(name: String, endpoints: [String], template: AlertTemplate, timeout: Duration?) {
        self.name = name
        self.endpoints = endpoints
        self.template = template
        self.timeout = timeout
        OpenAlerts.shared.adopt(self)
    }

    /// How often an open event's alert is posted again (see ``OpenAlerts``): three tries
    /// before it would end, as a third of `resolve_after`, or of 3m without it (Alertmanager's
    /// `resolve_timeout` is 5m by default).
    var repostInterval: Duration {
        max((template.resolveAfter ?? .seconds(180)) / 3, .milliseconds(100))
    }

    public var capabilities: SinkCapabilities {
        SinkCapabilities(canReplace: true, canClose: true, worthRetrying: true)
    }

    /// Nothing runs after a delivery has answered.
    public var hasPendingWork: Bool { false }

    public func deliver(_ delivery: SinkDelivery) async throws -> SinkReceipt {
        let now = Date()
        var alert = template.alert(for: delivery.event, now: now, count: delivery.duplicateCount)
        var batch: [AlertmanagerAlert] = []
        switch delivery.intent {
        case .show:
            break
        case .replace(let handle), .updateDuplicateCount(let handle, _):
            if let earlier = AlertHandle(handle) {
                if earlier.labels == alert.labels {
                    alert.startsAt = earlier.startsAt ?? alert.startsAt
                } else {
                    // New labels are a new alert: the one it replaces must not linger until it times out.
                    batch.append(earlier.resolved(at: now))
                }
            }
        }
        batch.insert(alert, at: 0)
        let notes = try await post(batch, deadline: delivery.deadline)
        for replaced in batch.dropFirst() { OpenAlerts.shared.close(replaced.labels, sink: name) }
        // Open until `close`: kept active while this process lives.
        if delivery.event.replaceKey != nil { OpenAlerts.shared.open(alert, sink: self) }
        return SinkReceipt(handle: AlertHandle(alert).handle, notes: notes)
    }

    public func close(_ request: SinkCloseRequest) async throws -> SinkReceipt {
        guard let earlier = AlertHandle(request.handle) else {
            throw SinkError(.failed, "the stored handle is not an Alertmanager alert: \(request.handle)")
        }
        // Before the post: a re-post must not come after the resolve.
        OpenAlerts.shared.close(earlier.labels, sink: name)
        let notes = try await post([earlier.resolved(at: Date())], deadline: request.deadline)
        return SinkReceipt(handle: request.handle, notes: notes)
    }

    /// How long the other peers may still take once one has accepted: a hung peer must not
    /// hold every delivery until the deadline, and a healthy pair answers within milliseconds.
    static let peerGrace: Duration = .milliseconds(500)

    /// Posts to every peer at once; returns a note per peer that failed or had not answered
    /// ``peerGrace`` after another accepted, and throws when none accepted (retryable when any
    /// failure was).
    func post(_ alerts: [AlertmanagerAlert], deadline: ContinuousClock.Instant) async throws(SinkError) -> [String] {
        enum Answer: Sendable {
            case accepted(Int)
            case failed(Int, SinkError)
            case graceOver
        }
        let body = Self.encode(alerts)
        let (failures, late) = await withTaskGroup(of: Answer.self) { group in
            for (index, endpoint) in endpoints.enumerated() {
                group.addTask { [transport, timeout] in
                    do throws(SinkError) {
                        _ = try await transport.post(body, to: endpoint, headers: [], deadline: deadline, timeout: timeout)
                        return .accepted(index)
                    } catch {
                        return .failed(index, error)
                    }
                }
            }
            var failures: [SinkError] = []
            var waiting = Set(endpoints.indices)
            var accepted = false
            while !waiting.isEmpty, let answer = await group.next() {
                switch answer {
                case .accepted(let index):
                    waiting.remove(index)
                    if !accepted && !waiting.isEmpty {
                        group.addTask { try? await Task.sleep(for: Self.peerGrace); return .graceOver }
                    }
                    accepted = true
                case .failed(let index, let error):
                    waiting.remove(index)
                    failures.append(error)
                case .graceOver:
                    group.cancelAll()
                    return (failures, waiting.sorted().map { endpoints[$0] })
                }
            }
            group.cancelAll()
            return (failures, [String]())
        }
        if failures.count < endpoints.count {
            return failures.map { "peer \($0.message)" }
                + late.map { "peer \(SecretText.redactedURL($0)): no answer \(DurationParser.format(Self.peerGrace)) after another peer accepted" }
        }
        let kind: SinkError.Kind = failures.allSatisfy { $0.kind == .timedOut } ? .timedOut : .failed
        throw SinkError(kind, failures.map(\.message).joined(separator: "; "), isRetryable: failures.contains(where: \.isRetryable))
    }

    static func encode(_ alerts: [AlertmanagerAlert]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings only: encoding cannot fail.
        return Array((try? encoder.encode(alerts)) ?? Data("[]".utf8))
    }
}

extension AlertmanagerSink {
    /// `kind: alertmanager`.
    public static let plugin = NetworkSinkSchema.alertmanager { options, settings in
        let template = AlertTemplate(
            staticLabels: settings.staticLabels, instance: settings.instance ?? NetworkSinkSchema.hostName,
            alertnameField: settings.alertnameField, generatorURL: settings.generatorURL, resolveAfter: settings.resolveAfter)
        return AlertmanagerSink(name: options.sinkName, endpoints: settings.endpoints, template: template, timeout: settings.timeout)
    }
}
