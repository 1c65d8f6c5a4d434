#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension RouterState {
    /// One open group of a route's `group` policy (``GroupPolicy``): what its notification
    /// shows, and when it is next sent or updated. Kept in the state so that a reload or a
    /// new daemon sends it on time.
    public struct GroupRecord: Codable, Hashable, Sendable {
        /// The route's label and the sink, as the current config may no longer have them.
        public var route: String
        public var sink: String
        /// The `by` values: `backup`.
        public var name: String
        public var count: Int
        /// Events since the notification was last sent or updated.
        public var pending: Int
        /// The newest titles first, at most ``titlesKept``.
        public var titles: [String]
        public var highest: Level
        /// When it is next sent (the end of `wait`, then of each `interval`).
        public var due: Date
        /// The interval in seconds, as the config said when the last event joined.
        public var interval: Double
        /// What the sink showed for it, to update in place.
        public var handle: SinkHandle?

        public static let titlesKept = 10

        public init(route: String, sink: String, name: String, due: Date, interval: Double) {
            self.route = route
            self.sink = sink
            self.name = name
            self.count = 0
            self.pending = 0
            self.titles = []
            self.highest = .debug
            self.due = due
            self.interval = interval
        }

        mutating func add(_ event: ResolvedEvent) {
            count += 1
            pending += 1
            titles.insert(event.title, at: 0)
            if titles.count > Self.titlesKept { titles.removeLast(titles.count - Self.titlesKept) }
            if event.level > highest { highest = event.level }
        }

        /// "backup: 14 failures".
        var title: String {
            let noun: (String, String) = switch highest {
            case .error, .critical: ("failure", "failures")
            case .warning: ("warning", "warnings")
            default: ("event", "events")
            }
            return "\(name): \(count) \(count == 1 ? noun.0 : noun.1)"
        }

        /// The titles, newest first, and how many more there were.
        var body: String {
            var lines = titles
            if count > titles.count { lines.append("… and \(count - titles.count) more") }
            return lines.joined(separator: "\n")
        }
    }
}

/// A store written before grouping existed keeps no groups: its routes with a `group`
/// deliver at once.
extension RouterStateTransaction {
    public func group(forKey key: String) -> RouterState.GroupRecord? { nil }
    public func storeGroup(_ record: RouterState.GroupRecord?, forKey key: String) {}
    public func groups(dueBy date: Date) -> [(key: String, record: RouterState.GroupRecord)] { [] }
    public func nextGroupDue() -> Date? { nil }
}
