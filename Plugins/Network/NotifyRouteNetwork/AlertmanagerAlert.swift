#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NotifyRoute
import NotifyRouteNetworkSchema

/// One alert of Alertmanager's API v2 (`POST /api/v2/alerts` takes a list of them).
///
/// Its labels are its identity: Alertmanager fingerprints the label set, so the same event
/// posted by several hosts, or twice by one, is one alert as long as the labels agree.
/// What may change between posts (the text, the fields) goes into annotations.
struct AlertmanagerAlert: Codable, Hashable, Sendable {
    var labels: [String: String]
    var annotations: [String: String]?
    var startsAt: String?
    var endsAt: String?
    var generatorURL: String?
}

/// How a `kind: alertmanager` sink turns events into alerts.
struct AlertTemplate: Sendable {
    /// Static labels from the config, whose names the plugin checked when it loaded
    /// (Alertmanager 0.25 answers 400 for a name outside `[a-zA-Z_][a-zA-Z0-9_]*`).
    var staticLabels: [String: String] = [:]
    /// The `instance` label; empty: no such label, so every host's event is the same alert.
    var instance: String
    /// A field whose value becomes `alertname` instead of the title.
    var alertnameField: String?
    var generatorURL: String?
    /// A one-shot event's alert resolves this long after it was posted; `nil`: Alertmanager's `resolve_timeout`.
    var resolveAfter: Duration?

    /// The alert for `event`, posted at `now`.
    func alert(for event: ResolvedEvent, now: Date, count: Int = 1) -> AlertmanagerAlert {
        var labels = staticLabels
        // The event's own labels win over static ones of the same name.
        labels["alertname"] = alertnameField.flatMap { event.fields[$0] } ?? event.title
        labels["severity"] = event.level.rawValue
        if !instance.isEmpty { labels["instance"] = instance }
        if let source = event.source, !source.isEmpty { labels["source"] = source }
        labels["app"] = event.app
        if let replaceKey = event.replaceKey {
            labels["replace_key"] = replaceKey
        } else {
            labels["dedup_key"] = Self.keyLabel(event.dedupKey)
        }

        var annotations = ["summary": event.title]
        if let body = event.body, !body.isEmpty { annotations["description"] = body }
        if count > 1 { annotations["count"] = String(count) }
        for (name, value) in event.fields {
            let name = Self.sanitizedName(name)
            if annotations[name] == nil { annotations[name] = value }
        }
        return AlertmanagerAlert(
            labels: labels, annotations: annotations, startsAt: Self.timestamp(now),
            endsAt: endsAt(postedAt: now), generatorURL: generatorURL)
    }

    /// `alert` posted again at `now`, as an open event's alert is: the same labels, start and
    /// annotations, and a new `endsAt`.
    func reposted(_ alert: AlertmanagerAlert, now: Date) -> AlertmanagerAlert {
        var alert = alert
        alert.endsAt = endsAt(postedAt: now)
        return alert
    }

    /// `resolve_after` past `now`; `nil`: Alertmanager's `resolve_timeout` after it gets the post.
    func endsAt(postedAt now: Date) -> String? {
        resolveAfter.map { Self.timestamp(now + TimeInterval(DurationParser.milliseconds($0)) / 1000) }
    }

    /// A label name Alertmanager 0.25 accepts (``AlertmanagerSettings/sanitizedName(_:)``).
    static func sanitizedName(_ name: String) -> String {
        AlertmanagerSettings.sanitizedName(name)
    }

    /// The dedup key as a label value: as it is when it is readable (a key the producer or a
    /// rule set), else (the default key joins level, source, title and body with control
    /// characters) a stable 64-bit FNV-1a hash of it, the same on every host.
    static func keyLabel(_ key: String) -> String {
        guard key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return key }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// RFC 3339 in UTC with milliseconds, as Alertmanager parses it.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(milliseconds % 1000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}

/// What a delivery leaves in the router's state for a later replace or `close`: the labels
/// (the alert's identity), when it started and its annotations, as JSON in the ``SinkHandle``.
/// The annotations go with the resolve: Alertmanager shows a resolved alert's last ones, and
/// a resolve without them tells the receiver nothing of what ended.
struct AlertHandle: Codable, Hashable, Sendable {
    var labels: [String: String]
    var startsAt: String?
    /// `nil` in a handle stored before they were kept.
    var annotations: [String: String]?

    init(_ alert: AlertmanagerAlert) {
        labels = alert.labels
        startsAt = alert.startsAt
        annotations = alert.annotations
    }

    var handle: SinkHandle {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Strings only: encoding cannot fail.
        return SinkHandle(String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self))
    }

    init?(_ handle: SinkHandle) {
        guard let decoded = try? JSONDecoder().decode(AlertHandle.self, from: Data(handle.value.utf8)) else { return nil }
        self = decoded
    }

    /// The same alert, resolved at `now`.
    func resolved(at now: Date) -> AlertmanagerAlert {
        AlertmanagerAlert(labels: labels, annotations: annotations, startsAt: startsAt, endsAt: AlertTemplate.timestamp(now))
    }
}
