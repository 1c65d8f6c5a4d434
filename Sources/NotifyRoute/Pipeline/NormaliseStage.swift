/// Cleans the event's text and refuses an unusable event (``EventNormalizer``).
struct NormaliseStage: EventStage {
    func run(_ event: inout RoutedEvent) throws(EventError) {
        event.explicit = try EventNormalizer.normalize(event.explicit)
    }
}
