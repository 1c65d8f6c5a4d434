/// Steps 1 to 3 of the pipeline for one event, without sending anything: the
/// normalised event, what the rules did, which routes matched, and the sinks it goes to.
/// `send`, `--dry-run` and `explain` all start from one.
struct RoutingPlan: Sendable {
    /// A class, made once per route when the router is built: a plan refers to its
    /// targets instead of copying a ``Route`` (a score of reference-counted fields) per event.
    final class Target: Sendable {
        let sinkName: String
        /// ``sinkName`` holds no U+001E: the state's keys are made from it without looking
        /// (see ``RouterState/Key/init(sink:key:)``).
        let sinkNameIsPlain: Bool
        /// `sinkName.hashValue`, for the state's keys.
        let sinkNameHash: Int
        /// `route 2 "pager"`, `fallback`, `--sink`.
        let label: String
        /// `nil` for the fallback and for `--sink`.
        let route: Route?
        /// The sink's instance, when the router knows the name.
        let instance: NotificationRouter.SinkInstance?
        /// What a delivery reads of the route, taken out once: reaching a field as
        /// `target.route?.field` copied the whole route (a score of reference-counted
        /// fields) each time, a dozen times per event.
        let dedupWindow: Duration?
        /// ``dedupWindow`` in seconds, converted once.
        let dedupWindowSeconds: Double?
        let failover: [String]
        /// The route's layer of the cascade.
        let timeout: NotificationTimeout?, app: String?, icon: String?, category: String?
        /// Quiet hours or a rate limit: the policies that hold events back, decided by
        /// ``PolicyDecision/decide(for:sink:route:routeKey:inhibitRules:capabilities:now:state:maxEntries:dedupStateKey:handleStateKey:)``
        /// in full; without them dedup and replace are all there is.
        let holdsEvents: Bool

        init(sinkName: String, label: String, route: Route?, instance: NotificationRouter.SinkInstance? = nil) {
            self.sinkName = sinkName
            sinkNameIsPlain = !sinkName.utf8.contains(0x1E)
            sinkNameHash = sinkName.hashValue
            self.label = label
            self.route = route
            self.instance = instance
            dedupWindow = route?.dedupWindow
            dedupWindowSeconds = route?.dedupWindow?.seconds
            failover = route?.failover ?? []
            timeout = route?.effects.timeout
            app = route?.effects.app
            icon = route?.effects.icon
            category = route?.effects.category
            holdsEvents = route?.quietHours != nil || route?.rateLimit != nil
        }
    }

    /// A matcher behind a reference: the plan's loops borrow it instead of copying
    /// a rule or a route (and their matchers' arrays of globs) for every event.
    final class Matcher: Sendable {
        let matcher: EventMatcher
        /// The first bytes a source (an app) must start with for the matcher to have a
        /// chance, when every glob of the condition is an exact or prefix literal starting
        /// with ASCII: a 128-bit set. Most routes of a config are told apart by such a
        /// condition, and most events fail it on their first byte.
        let sourceLeads: LeadSet?, appLeads: LeadSet?

        init(_ matcher: EventMatcher) {
            self.matcher = matcher
            sourceLeads = matcher.source.flatMap(LeadSet.init)
            appLeads = matcher.app.flatMap(LeadSet.init)
        }

        /// Matches in a method of the class, which borrows the matcher: reached from the
        /// plan as `matchers[index].matcher.matches(_:)`, it was copied (its globs, tags,
        /// a retain each) for every route of every event. The lead sets turn most
        /// mismatches away before any glob runs.
        func matches(_ subject: MatchSubject, leads: SubjectLeads) -> Bool {
            if let sourceLeads, !sourceLeads.admits(leads.source) { return false }
            if let appLeads, !appLeads.admits(leads.app) { return false }
            return matcher.matches(subject)
        }

        func matches(_ subject: MatchSubject) -> Bool { matches(subject, leads: SubjectLeads(subject)) }
    }

    /// The first UTF-8 byte of a subject's source and app (nil: none, or empty).
    struct SubjectLeads {
        var source: UInt8?, app: UInt8?
        init(_ subject: MatchSubject) {
            source = subject.source?.utf8.first
            app = subject.app?.utf8.first
        }
    }

    /// ASCII first bytes that a glob list can match; see ``Matcher/sourceLeads``.
    struct LeadSet: Sendable {
        var low: UInt64 = 0, high: UInt64 = 0

        /// Nil when some glob does not start with a literal ASCII character (`*x`, `[ab]*`, ``).
        init?(_ globs: [Glob]) {
            for glob in globs {
                guard let lead = glob.leadingASCII else { return nil }
                if lead < 64 { low |= 1 << UInt64(lead) } else { high |= 1 << UInt64(lead - 64) }
            }
        }

        /// False only when no glob can match a text starting with `lead`: no text (an
        /// empty one matches none of these literals), or an ASCII byte none starts with.
        /// A non-ASCII first byte is left to the globs (canonical equivalents).
        func admits(_ lead: UInt8?) -> Bool {
            guard let lead else { return false }
            if lead >= 0x80 { return true }
            return (lead < 64 ? low >> UInt64(lead) : high >> UInt64(lead - 64)) & 1 == 1
        }
    }

    /// What a router computes once from its config for ``NotificationRouter/plan(_:only:tracing:)``.
    struct Tables: Sendable {
        var ruleMatchers: [Matcher]
        var routeMatchers: [Matcher]
        var routeContinues: [Bool]
        var ruleLabels: [String]
        var routeLabels: [String]
        /// `[label]` per rule and per route: what an event that matched one of them alone
        /// reports, shared instead of an array allocated per event.
        var ruleLabelLists: [[String]]
        var routeLabelLists: [[String]]
        /// Per rule, its effects behind a reference (read without copying the rule).
        var ruleEffects: [Effects]
        /// Per route, its targets without repeats: what the plan takes whole when the
        /// route is the first to match (most events), instead of appending one by one.
        var routeDistinctTargets: [[Target]]
        /// For each first byte of a source (see ``slot(_:)``), the routes whose source
        /// condition it does not rule out (``LeadSet``), in order: the plan tries only
        /// these, not every route of the config.
        var routeCandidates: [[Int]]

        /// 0-127: an ASCII first byte; 128: a non-ASCII one; 129: no source, or an empty one.
        static func slot(_ lead: UInt8?) -> Int {
            guard let lead else { return 129 }
            return lead < 0x80 ? Int(lead) : 128
        }
        /// Per route, one target per sink it names.
        var routeTargets: [[Target]]
        var fallbackTargets: [Target]
        /// The config's defaults as the plan and the cascade read them.
        let defaults: Defaults

        init(_ config: RouterConfiguration, instances: [String: NotificationRouter.SinkInstance]) {
            defaults = Defaults(config)
            ruleMatchers = config.rules.map { Matcher($0.matcher) }
            routeMatchers = config.routes.map { Matcher($0.matcher) }
            routeContinues = config.routes.map(\.continues)
            ruleLabels = config.rules.enumerated().map { NotificationRouter.label("rule", $0.offset, $0.element.name) }
            routeLabels = config.routes.enumerated().map { NotificationRouter.label("route", $0.offset, $0.element.name) }
            routeTargets = zip(config.routes, routeLabels).map { route, label in
                route.sinks.map { Target(sinkName: $0, label: label, route: route, instance: instances[$0]) }
            }
            fallbackTargets = config.fallback.map { Target(sinkName: $0, label: "fallback", route: nil, instance: instances[$0]) }
            ruleLabelLists = ruleLabels.map { [$0] }
            routeLabelLists = routeLabels.map { [$0] }
            ruleEffects = config.rules.map { Effects($0.effects) }
            let matchers = routeMatchers
            routeCandidates = (0..<130).map { slot in
                matchers.indices.filter { index in
                    guard let leads = matchers[index].sourceLeads else { return true }
                    switch slot {
                    case 0..<128: return leads.admits(UInt8(slot))
                    case 128: return true  // non-ASCII: left to the globs
                    default: return false  // no source: no literal glob matches
                    }
                }
            }
            routeDistinctTargets = routeTargets.map { targets in
                var distinct: [Target] = []
                for target in targets where !distinct.contains(where: { $0.sinkName == target.sinkName }) { distinct.append(target) }
                return distinct
            }
        }
    }

    /// The config's defaults with the built-in values filled in, and the level styles,
    /// made once per router behind a reference: read per event as
    /// `configuration.defaults`, the struct was copied whole (a retain per field), and
    /// `configuration.style(for:)` hashed the level into the overrides' dictionary.
    final class Defaults: Sendable {
        let level: Level
        let source: String?
        let app: String
        let icon: String?
        let category: String?
        /// By ``Level/ordinal``: ``RouterConfiguration/style(for:)`` of each level.
        let styles: [LevelStyle]

        init(_ config: RouterConfiguration) {
            level = config.defaults.level ?? EventDefaults.builtInLevel
            source = config.defaults.source
            app = config.defaults.app ?? EventDefaults.builtInApp
            icon = config.defaults.icon
            category = config.defaults.category
            styles = Level.allCases.map { config.style(for: $0) }
        }
    }

    /// A rule's effects behind a reference: the plan applies them without copying the rule.
    final class Effects: Sendable {
        let effects: EventEffects
        /// Whether applying them can change what matchers see (level, source, app,
        /// category, tags): when not, the plan keeps the subject it has.
        let changesSubject: Bool

        init(_ effects: EventEffects) {
            self.effects = effects
            changesSubject = effects.level != nil || effects.source != nil || effects.app != nil || effects.category != nil
                || !effects.tags.isEmpty
        }

        /// ``EventEffects/apply(_:)`` read field by field from the class: passing
        /// `effects.effects` as an argument copied the whole struct (a retain per field)
        /// and destroyed it after. Keep the two in step.
        func apply(to layer: inout EventEffects) {
            if let level = effects.level { layer.level = level }
            if let timeout = effects.timeout { layer.timeout = timeout }
            if let app = effects.app { layer.app = app }
            if let source = effects.source { layer.source = source }
            if let icon = effects.icon { layer.icon = icon }
            if let category = effects.category { layer.category = category }
            if !effects.tags.isEmpty { layer.tags.formUnion(effects.tags) }
            if let dedupKey = effects.dedupKey { layer.dedupKey = dedupKey }
            if let replaceKey = effects.replaceKey { layer.replaceKey = replaceKey }
            if let messageID = effects.messageID { layer.messageID = messageID }
            if !effects.fields.isEmpty { layer.fields.merge(effects.fields) { _, new in new } }
            if effects.drop { layer.drop = true }
        }
    }

    struct Trace: Sendable {
        var label: String
        var matched: Bool
        var reasons: [String]
        var detail: String
    }

    var explicit: NotificationEvent
    /// Which of the values that route and sink layers set the event itself set: all a
    /// wave needs of ``explicit``.
    struct ExplicitLayer: Sendable {
        var timeout, app, icon, category: Bool
    }
    var explicitLayer: ExplicitLayer {
        ExplicitLayer(timeout: explicit.timeout != nil, app: explicit.app != nil, icon: explicit.icon != nil,
                      category: explicit.category != nil)
    }
    /// What the matching rules set, later rules over earlier ones.
    var ruleLayer = EventEffects()
    var subject: MatchSubject
    var matchedRules: [String] = []
    var droppedBy: String?
    var matchedRoutes: [String] = []
    var targets: [Target] = []
    var notes: [String] = []
    /// Filled only when explaining.
    var ruleTraces: [Trace] = []
    var routeTraces: [Trace] = []
}

extension NotificationRouter {
    /// `consuming`: the plan keeps the event as its explicit layer, moved in, not copied.
    ///
    /// The plan is built in local variables and made once at the end: filled in field by
    /// field, the struct (an event, a rule layer, a subject, five arrays) was copied whole
    /// whenever one of its fields was read to compute another (`plan.subject =
    /// subject(plan.explicit, ruleLayer: plan.ruleLayer)`).
    func plan(_ event: consuming NotificationEvent, only sinkNames: [String]? = nil, tracing: Bool = false) -> RoutingPlan {
        let explicit = event
        var ruleLayer = EventEffects()
        var subject = subject(explicit)
        var matchedRules: [String] = []
        var ruleTraces: [RoutingPlan.Trace] = []
        var routeTraces: [RoutingPlan.Trace] = []

        // Rules: every match applies, in file order, each seeing what the earlier ones left.
        // Loops by index over the tables: no rule or route is copied unless it matched.
        var leads = RoutingPlan.SubjectLeads(subject)
        for index in tables.ruleMatchers.indices {
            let matched: Bool
            if tracing {
                let rule = configuration.rules[index]
                let verdict = rule.matcher.explain(subject)
                matched = verdict.matched
                ruleTraces.append(.init(label: tables.ruleLabels[index], matched: matched, reasons: verdict.reasons,
                                        detail: Self.describe(rule.effects)))
            } else {
                matched = tables.ruleMatchers[index].matches(subject, leads: leads)
            }
            guard matched else { continue }
            let effects = tables.ruleEffects[index]
            if matchedRules.isEmpty { matchedRules = tables.ruleLabelLists[index] } else { matchedRules.append(tables.ruleLabels[index]) }
            effects.apply(to: &ruleLayer)
            if effects.changesSubject {
                subject = self.subject(explicit, ruleLayer: ruleLayer)
                leads = RoutingPlan.SubjectLeads(subject)
            }
            if effects.effects.drop {
                return RoutingPlan(explicit: explicit, ruleLayer: ruleLayer, subject: subject, matchedRules: matchedRules,
                                   droppedBy: tables.ruleLabels[index], ruleTraces: ruleTraces)
            }
        }

        if let sinkNames {
            return RoutingPlan(
                explicit: explicit, ruleLayer: ruleLayer, subject: subject, matchedRules: matchedRules, matchedRoutes: ["--sink"],
                targets: sinkNames.map { RoutingPlan.Target(sinkName: $0, label: "--sink", route: nil, instance: instances[$0]) },
                ruleTraces: ruleTraces)
        }

        // Routes: first match wins unless it says `continue`. Without tracing, only the
        // routes that the source's first byte leaves in the running are tried (in order).
        var matchedRoutes: [String] = []
        var targets: [RoutingPlan.Target] = []
        var notes: [String] = []
        let candidates = tracing ? Array(tables.routeMatchers.indices) : tables.routeCandidates[RoutingPlan.Tables.slot(leads.source)]
        var stopped = false
        for index in candidates {
            if stopped {
                guard tracing else { break }
                routeTraces.append(.init(label: tables.routeLabels[index], matched: false, reasons: ["not tried: an earlier route matched without `continue`"], detail: ""))
                continue
            }
            let matched: Bool
            if tracing {
                let label = tables.routeLabels[index]
                let route = configuration.routes[index]
                let verdict = route.matcher.explain(subject)
                matched = verdict.matched
                routeTraces.append(.init(
                    label: label, matched: matched, reasons: verdict.reasons,
                    detail: "to \(route.sinks.joined(separator: ", "))" + (route.continues ? ", continue" : "")
                        + (route.failover.isEmpty ? "" : ", failover \(route.failover.joined(separator: ", "))")))
            } else {
                matched = tables.routeMatchers[index].matches(subject, leads: leads)
            }
            guard matched else { continue }
            // The label is read only for a route that matched: one retain less per route tried.
            if matchedRoutes.isEmpty {
                matchedRoutes = tables.routeLabelLists[index]
            } else {
                matchedRoutes.append(tables.routeLabels[index])
            }
            if targets.isEmpty {
                targets = tables.routeDistinctTargets[index]
            } else {
                for target in tables.routeTargets[index] where !targets.contains(where: { $0.sinkName == target.sinkName }) {
                    targets.append(target)
                }
            }
            if !tables.routeContinues[index] { stopped = true }
        }

        if matchedRoutes.isEmpty {
            if tables.fallbackTargets.isEmpty {
                notes.append("no route matched and the config has no fallback; nothing was sent")
            } else {
                matchedRoutes = ["fallback"]
                targets = tables.fallbackTargets
            }
        }
        // Moved, not copied: the layer and the subject are a dozen reference-counted fields each.
        return RoutingPlan(explicit: explicit, ruleLayer: consume ruleLayer, subject: consume subject, matchedRules: matchedRules,
                           matchedRoutes: matchedRoutes, targets: targets, notes: notes, ruleTraces: ruleTraces,
                           routeTraces: routeTraces)
    }

    /// What matchers see: explicit values over the rules' over the config defaults.
    func subject(_ event: NotificationEvent, ruleLayer: EventEffects) -> MatchSubject {
        let defaults = tables.defaults
        return MatchSubject(
            level: event.level ?? ruleLayer.level ?? defaults.level,
            source: event.source ?? ruleLayer.source ?? defaults.source,
            app: event.app ?? ruleLayer.app ?? defaults.app,
            title: event.title,
            body: event.body,
            category: event.category ?? ruleLayer.category ?? defaults.category,
            tags: ruleLayer.tags.isEmpty ? event.tags : event.tags.union(ruleLayer.tags))
    }

    /// ``subject(_:ruleLayer:)`` before any rule has set anything.
    func subject(_ event: NotificationEvent) -> MatchSubject {
        let defaults = tables.defaults
        return MatchSubject(
            level: event.level ?? defaults.level, source: event.source ?? defaults.source, app: event.app ?? defaults.app,
            title: event.title, body: event.body, category: event.category ?? defaults.category, tags: event.tags)
    }

    /// The cascade: built-in → config defaults → per level → rules → route → sink → explicit.
    func resolve(_ plan: RoutingPlan, route: Route?, declaration: SinkDeclaration?) -> ResolvedEvent {
        let explicit = plan.explicit
        let rules = plan.ruleLayer
        let defaults = tables.defaults
        let subject = plan.subject
        let style = defaults.styles[subject.level.ordinal]
        var fields = rules.fields
        if !explicit.fields.isEmpty { fields.merge(explicit.fields) { _, explicitValue in explicitValue } }
        let event = ResolvedEvent(
            title: explicit.title,
            body: explicit.body,
            level: subject.level,
            timeout: explicit.timeout ?? rules.timeout ?? style.timeout,
            app: explicit.app ?? rules.app ?? defaults.app,
            source: subject.source,
            tags: subject.tags,
            dedupKey: explicit.dedupKey ?? rules.dedupKey?.render(subject),
            replaceKey: explicit.replaceKey ?? rules.replaceKey?.render(subject),
            icon: explicit.icon ?? rules.icon ?? defaults.icon,
            category: explicit.category ?? rules.category ?? defaults.category,
            actions: explicit.actions,
            fields: fields,
            messageID: explicit.messageID ?? rules.messageID,
            callSite: explicit.callSite,
            style: style)
        // Without a route or a sink there is nothing to lay over it (what `send` asks for).
        guard route != nil || declaration != nil else { return event }
        return resolve(event, plan: plan, route: route, declaration: declaration)
    }

    /// Lays the route's and the sink's values over `event`, resolved without them: only
    /// timeout, app, icon and category differ by route or sink, so one resolution serves
    /// every sink of a wave, and most sinks (setting none of them) share it untouched.
    func resolve(_ event: ResolvedEvent, plan: RoutingPlan, route: Route?, declaration: SinkDeclaration?) -> ResolvedEvent {
        let explicit = plan.explicit
        let routeLayer = route?.effects
        let timeout = explicit.timeout == nil ? declaration?.timeout ?? routeLayer?.timeout : nil
        let app = explicit.app == nil ? declaration?.app ?? routeLayer?.app : nil
        let icon = explicit.icon == nil ? declaration?.icon ?? routeLayer?.icon : nil
        let category = explicit.category == nil ? routeLayer?.category : nil
        guard timeout != nil || app != nil || icon != nil || category != nil else { return event }
        var event = event
        if let timeout { event.timeout = timeout }
        if let app { event.app = app }
        if let icon { event.icon = icon }
        if let category { event.category = category }
        return event
    }

    /// ``resolve(_:plan:route:declaration:)`` in place, for a wave's delivery: the event is
    /// copied once per sink and changed there, not copied again on return; the route and
    /// the declaration are read through the target and the instance that hold them, field
    /// by field (passed as values, each was copied whole per delivery).
    func layer(_ event: inout ResolvedEvent, explicit: RoutingPlan.ExplicitLayer, target: RoutingPlan.Target, instance: SinkInstance) {
        let timeout = explicit.timeout ? nil : instance.timeout ?? target.timeout
        let app = explicit.app ? nil : instance.app ?? target.app
        let icon = explicit.icon ? nil : instance.icon ?? target.icon
        let category = explicit.category ? nil : target.category
        if let timeout { event.timeout = timeout }
        if let app { event.app = app }
        if let icon { event.icon = icon }
        if let category { event.category = category }
    }

    static func label(_ what: String, _ index: Int, _ name: String?) -> String {
        "\(what) \(index + 1)" + (name.map { " \"\($0)\"" } ?? "")
    }

    static func describe(_ effects: EventEffects) -> String {
        var parts: [String] = []
        if let level = effects.level { parts.append("level \(level.rawValue)") }
        if let timeout = effects.timeout { parts.append("timeout \(timeout)") }
        if let app = effects.app { parts.append("app \(app)") }
        if let source = effects.source { parts.append("source \(source)") }
        if let icon = effects.icon { parts.append("icon \(icon)") }
        if let category = effects.category { parts.append("category \(category)") }
        if !effects.tags.isEmpty { parts.append("tags +\(effects.tags.sorted().joined(separator: ",+"))") }
        if let key = effects.dedupKey { parts.append("dedup key \(key)") }
        if let key = effects.replaceKey { parts.append("replace key \(key)") }
        if let id = effects.messageID { parts.append("message id \(id)") }
        if !effects.fields.isEmpty { parts.append("fields \(effects.fields.keys.sorted().joined(separator: ","))") }
        if effects.drop { parts.append("drop") }
        return parts.isEmpty ? "no effect" : "set " + parts.joined(separator: ", ")
    }
}

extension EventEffects {
    /// Layers `other` over `self`: its values win, its tags and fields add up.
    mutating func apply(_ other: EventEffects) {
        level = other.level ?? level
        timeout = other.timeout ?? timeout
        app = other.app ?? app
        source = other.source ?? source
        icon = other.icon ?? icon
        category = other.category ?? category
        if !other.tags.isEmpty { tags.formUnion(other.tags) }
        dedupKey = other.dedupKey ?? dedupKey
        replaceKey = other.replaceKey ?? replaceKey
        messageID = other.messageID ?? messageID
        if !other.fields.isEmpty { fields.merge(other.fields) { _, new in new } }
        drop = drop || other.drop
    }
}
