import Glibc

/// Where a `send` could deliver an event, known before anything is delivered or the state is
/// opened: the `notify-route` executable asks it to decide whether the event needs the one
/// that links the network sinks.
extension NotificationRouter {
    /// The kinds of the sinks a `send` of `event` (with `--sink` names `only`) could ask:
    /// the rules and routes stages decide the targets, as ``send(_:only:)`` does; a target that
    /// the fan-out keeps below its `min_level` asks no sink and has no failover; every other
    /// may fail, so its route's failover sinks count too (each against its own `min_level`).
    /// Last-resort sinks are targets. What the policy stages decide later (a duplicate, a
    /// silence) is not known here and only ever asks fewer sinks. An event the stages refuse,
    /// or that a rule drops, reaches none.
    public func sinkKindsReached(by event: NotificationEvent, only sinkNames: [String]?) -> Set<String> {
        var routing = RoutedEvent(event, only: sinkNames, tracing: false)
        do { try pipeline.route(&routing) } catch { return [] }
        guard routing.droppedBy == nil else { return [] }
        let level = routing.subject.level
        var kinds: Set<String> = []
        func reaches(_ instance: SinkInstance?) -> Bool {
            guard let minimum = instance?.declaration.minimumLevel else { return true }
            return level >= minimum
        }
        for target in routing.targets where reaches(target.instance) {
            if let kind = target.instance?.declaration.kind { kinds.insert(kind) }
            for name in target.failover where reaches(instances[name]) {
                if let kind = instances[name]?.declaration.kind { kinds.insert(kind) }
            }
        }
        return kinds
    }

    /// Whether a `send` may first deliver what a pause held (``releaseEndedPause()``), through
    /// any route: false only when no pause can be stored, known without opening the history
    /// from ``ControlsMarker`` or, before the first event was recorded, from no history at all.
    public var mayReleaseHeldEvents: Bool {
        memory?.mayHoldPause(at: clock.now()) ?? false
    }
}
