import NotifyRoute
import NotifyRouteJournal
import NotifyRouteLogging

// The swift-log bridge is a product a service uses too: its handler type must be there.
_ = NotificationLogHandler.self

// A config loaded with a plugin of the library, as a service embedding notify-route does.
let registry = try SinkRegistry([JournalSink.plugin])
let configuration = try RouterConfiguration.load(
    yaml: """
        sinks:
          journal: { kind: journal }
        routes:
          - to: [journal]
        """,
    file: "consumer.yaml", registry: registry)
print("consumer: \(configuration.sinks.map(\.name)) from \(configuration.origin)")
