#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A silence (Alertmanager's): while active, events its matcher matches are suppressed
/// on every sink with the reason `silenced` and the silence's id.
public struct Silence: Hashable, Sendable {
    public var id: String
    public var matcher: EventMatcher
    public var starts: Date
    public var ends: Date
    public var comment: String?
    public var created: Date

    public func isActive(at now: Date) -> Bool { starts <= now && now < ends }
}

/// `notify-route pause`: events below ``below`` are held until ``until`` (or `resume`).
public struct Pause: Hashable, Sendable {
    public var below: Level
    public var since: Date
    public var until: Date?

    public func holds(_ level: Level, at now: Date) -> Bool { isActive(at: now) && level < below }
    public func isActive(at now: Date) -> Bool { until.map { now < $0 } ?? true }
}

/// An event a pause held, to be delivered (or summarised) when the pause ends.
public struct HeldEvent: Sendable {
    public var time: Date
    public var level: Level
    public var source: String?
    /// The event as it was given, in the ingest schema.
    public var input: String
}

/// What the silence and pause stages read, once per wave. `package` so that the daemon can
/// hand what the pause's release read to the `send` that follows, and an empty reading to
/// the sends queued behind it.
package struct Controls: Sendable {
    var silences: [Silence] = []
    var pause: Pause?

    package static let none = Controls()

    package var isEmpty: Bool { silences.isEmpty && pause == nil }
}
