/// The value cascade, written once: built-in → config defaults → per level → rules →
/// route → sink → the event's own values. Every stage that needs a value of the event
/// (the matchers' subject, the resolved event, each sink's copy) asks this type.
struct Cascade: Sendable {
    let defaults: EventDefaults
    /// By ``Level/ordinal``: ``RouterConfiguration/style(for:)`` of each level.
    let styles: [LevelStyle]

    init(_ configuration: RouterConfiguration) {
        defaults = configuration.defaults
        styles = Level.allCases.map { configuration.style(for: $0) }
    }

    /// What matchers see: the cascade without the route and sink layers.
    func subject(_ explicit: NotificationEvent, rules: EventEffects) -> MatchSubject {
        MatchSubject(
            level: explicit.level ?? rules.level ?? defaults.level ?? EventDefaults.builtInLevel,
            source: explicit.source ?? rules.source ?? defaults.source,
            app: app(explicit, rules: rules),
            title: explicit.title,
            body: explicit.body,
            category: explicit.category ?? rules.category ?? defaults.category,
            tags: rules.tags.isEmpty ? explicit.tags : explicit.tags.union(rules.tags))
    }

    /// The event as a sink gets it; without `route` and `sink`, as the report shows it.
    func resolve(_ explicit: NotificationEvent, rules: EventEffects, subject: MatchSubject,
                 route: EventEffects? = nil, sink: SinkDeclaration? = nil) -> ResolvedEvent {
        let style = styles[subject.level.ordinal]
        var fields = rules.fields
        if !explicit.fields.isEmpty { fields.merge(explicit.fields) { _, explicitValue in explicitValue } }
        return ResolvedEvent(
            title: explicit.title,
            body: explicit.body,
            level: subject.level,
            timeout: explicit.timeout ?? sink?.timeout ?? route?.timeout ?? rules.timeout ?? style.timeout,
            app: explicit.app ?? sink?.app ?? route?.app ?? app(explicit, rules: rules),
            source: subject.source,
            tags: subject.tags,
            dedupKey: explicit.dedupKey ?? rules.dedupKey?.render(subject),
            replaceKey: explicit.replaceKey ?? rules.replaceKey?.render(subject),
            icon: explicit.icon ?? sink?.icon ?? route?.icon ?? rules.icon ?? defaults.icon,
            category: explicit.category ?? route?.category ?? rules.category ?? defaults.category,
            actions: explicit.actions,
            fields: fields,
            messageID: explicit.messageID ?? rules.messageID,
            callSite: explicit.callSite,
            style: style,
            progress: explicit.progress)
    }

    /// Whether a route or a sink sets a value the cascade lays over the rules: when
    /// neither does, every sink shares the event resolved once.
    static func layers(route: EventEffects?, sink: SinkDeclaration?) -> Bool {
        route?.timeout != nil || route?.app != nil || route?.icon != nil || route?.category != nil
            || sink?.timeout != nil || sink?.app != nil || sink?.icon != nil
    }

    private func app(_ explicit: NotificationEvent, rules: EventEffects) -> String {
        explicit.app ?? rules.app ?? defaults.app ?? EventDefaults.builtInApp
    }
}
