/// One event between the event stages: what normalise, rules and routes made of it.
struct RoutedEvent: Sendable {
    /// A step of `explain`'s account: a rule or a route, and why it matched or not.
    struct Trace: Sendable {
        var label: String
        var matched: Bool
        var reasons: [String]
        var detail: String
    }

    /// The event as given (normalised): the explicit layer of the cascade.
    var explicit: NotificationEvent
    /// `--sink`: deliver to these sinks only, bypassing the routes.
    ///
    /// Constants, as they are: set through a `var`, an optional array made the compiler
    /// build the whole event in a temporary and copy it out.
    let only: [String]?
    /// `explain`: the rules and routes stages record a ``Trace`` of every step.
    let tracing: Bool
    /// The state batch the event's transactions and history line join (``StateBatch``);
    /// `nil`: each commits alone.
    let batch: StateBatch?
    /// What the matching rules set, later rules over earlier ones.
    var ruleLayer = EventEffects()
    /// What matchers see: the cascade without the route and sink layers.
    var subject: MatchSubject
    var matchedRules: [String] = []
    var droppedBy: String?
    var matchedRoutes: [String] = []
    var targets: [RouteTarget] = []
    var notes: [String] = []
    var ruleTraces: [Trace] = []
    var routeTraces: [Trace] = []

    // Inlined: made out of line, the event was built in a temporary and copied out whole.
    @inline(__always)
    init(_ event: NotificationEvent, only: [String]?, tracing: Bool, batch: StateBatch? = nil) {
        explicit = event
        self.only = only
        self.tracing = tracing
        self.batch = batch
        subject = MatchSubject(level: .info, title: event.title)
    }
}

/// One sink a route (or the fallback, or `--sink`) sends to. A class made once per
/// config: every delivery refers to it rather than copying its route.
final class RouteTarget: Sendable {
    let sinkName: String
    /// `route 2 "pager"`, `fallback`, `--sink`.
    let label: String
    /// `nil` for the fallback and for `--sink`.
    let route: Route?
    /// The sink made for ``sinkName``; `nil` when the config has none.
    let instance: SinkInstance?
    /// Whether the route or the sink lays values over the rules (``Cascade/layers(route:sink:)``):
    /// decided once, so that a delivery neither copies the route's effects nor the sink's declaration.
    let layers: Bool
    /// The route's policies, which every delivery reads: reading them through ``route``
    /// copied the whole route out of its optional.
    let dedupWindow: Duration?, rateLimit: RateLimit?, quietHours: QuietHours?, group: GroupPolicy?
    /// ``dedupWindow`` in seconds, as the state takes it: converting a `Duration` divides
    /// 128-bit attoseconds, for every delivery.
    let dedupSeconds: Double
    /// Whether there are ``quietHours``, read without copying them (with their time zone)
    /// out of the target for every delivery of a route that has none.
    let hasQuietHours: Bool
    /// The route's failover sinks (none for the fallback and `--sink`).
    let failover: [String]

    init(sinkName: String, label: String, route: Route?, instance: SinkInstance?) {
        self.sinkName = sinkName
        self.label = label
        self.route = route
        self.instance = instance
        dedupWindow = route?.dedupWindow
        dedupSeconds = route?.dedupWindow?.seconds ?? 0
        rateLimit = route?.rateLimit
        quietHours = route?.quietHours
        group = route?.group
        hasQuietHours = route?.quietHours != nil
        failover = route?.failover ?? []
        layers = Cascade.layers(route: route?.effects, sink: instance?.declaration)
    }

    static func label(_ what: String, _ index: Int, _ name: String?) -> String {
        "\(what) \(index + 1)" + (name.map { " \"\($0)\"" } ?? "")
    }
}
