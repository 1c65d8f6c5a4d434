// swift-tools-version:6.1
import PackageDescription

// Plugins/ holds *runtime* sink plugins (terminal, desktop, journal), not SwiftPM
// build-tool plugins. Each is an ordinary module declared with an explicit `path:`;
// each depends on the core only, never on another plugin or on the CLI.

let package = Package(
    name: "notify-route",
    products: [
        .library(name: "NotifyRoute", targets: ["NotifyRoute"]),
        .library(name: "NotifyRouteTerminal", targets: ["NotifyRouteTerminal"]),
        .library(name: "NotifyRouteDesktop", targets: ["NotifyRouteDesktop"]),
        .library(name: "NotifyRouteJournal", targets: ["NotifyRouteJournal"]),
        .library(name: "NotifyRouteExec", targets: ["NotifyRouteExec"]),
        .library(name: "NotifyRouteNetwork", targets: ["NotifyRouteNetwork"]),
        .library(name: "NotifyRouteLogging", targets: ["NotifyRouteLogging"]),
        .library(name: "NotifyRouteService", targets: ["NotifyRouteService"]),
        .library(name: "NotifyRouteDaemon", targets: ["NotifyRouteDaemon"]),
        .library(name: "NotifyRouteClient", targets: ["NotifyRouteClient"]),
        .library(name: "NotifyRouteTesting", targets: ["NotifyRouteTesting"]),
        .executable(name: "notify-route", targets: ["notify-route"]),
        .executable(name: "notify-route-network", targets: ["notify-route-network"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // HTTP for the network sinks (Alertmanager, webhooks): keep-alive pools, deadlines, TLS.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already under async-http-client; named so that a refused certificate is told from a dropped connection.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Only for `swift package generate-documentation`; it adds no code to any target.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: Core: no system C library but SQLite (the state) and, through YAMLDocument, libyaml; no knowledge of any sink.
        .target(
            name: "NotifyRoute",
            dependencies: [
                "YAMLDocument",
                "TimeZoneInfo",
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The config's YAML: libyaml's events composed into a tree, and a tree written back.
        .target(name: "YAMLDocument", dependencies: ["CYAML"]),
        // libyaml (Debian libyaml-dev), linked as libyaml-0.so.2 by its module map, as a
        // distribution ships it (`make install TUNED=1` links the archive instead).
        .systemLibrary(name: "CYAML", path: "Sources/CYAML", providers: [.apt(["libyaml-dev"])]),
        // Quiet hours' time zones, read from the system's tzdata without ICU or Foundation.
        .target(name: "TimeZoneInfo"),
        // SQLite (Debian libsqlite3-dev), the state database, linked as libsqlite3.so.0 the same way.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),

        // MARK: Sink plugins
        .target(
            name: "NotifyRouteTerminal",
            dependencies: ["NotifyRoute"],
            path: "Plugins/Terminal/NotifyRouteTerminal"
        ),
        // Not a system library: libnotify is loaded with dlopen on first use (see its header).
        .target(name: "CLibNotify", path: "Plugins/Desktop/CLibNotify"),
        .target(
            name: "NotifyRouteDesktop",
            dependencies: ["NotifyRoute", "CLibNotify"],
            path: "Plugins/Desktop/NotifyRouteDesktop"
        ),
        // Not a system library: libsystemd is loaded with dlopen on first use (see its header).
        .target(name: "CSystemdJournal", path: "Plugins/Journal/CSystemdJournal"),
        .target(
            name: "NotifyRouteJournal",
            dependencies: ["NotifyRoute", "CSystemdJournal"],
            path: "Plugins/Journal/NotifyRouteJournal"
        ),

        // A child that dies with the thread that started it (PR_SET_PDEATHSIG), for `run`.
        .target(name: "CTetheredSpawn", path: "Plugins/Exec/CTetheredSpawn"),
        .target(
            name: "NotifyRouteExec",
            dependencies: ["NotifyRoute"],
            path: "Plugins/Exec/NotifyRouteExec"
        ),

        // Network sinks: Prometheus Alertmanager (API v2) and JSON webhooks, over async-http-client.
        .target(
            name: "NotifyRouteNetwork",
            dependencies: [
                "NotifyRoute",
                "NotifyRouteNetworkSchema",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Plugins/Network/NotifyRouteNetwork"
        ),
        // Their kinds and options alone (no HTTP): what the `notify-route` executable knows of them.
        .target(name: "NotifyRouteNetworkSchema", dependencies: ["NotifyRoute"], path: "Plugins/Network/NotifyRouteNetworkSchema"),

        // MARK: swift-log bridge: log records at or above a level become events.
        .target(
            name: "NotifyRouteLogging",
            dependencies: ["NotifyRoute", .product(name: "Logging", package: "swift-log")]
        ),

        // MARK: The long-lived router. NotifyRouteService: the runtime a Swift service runs in
        // its own ServiceGroup (timers, count updates). NotifyRouteDaemon: `serve`, its socket
        // server (SwiftNIO), connections, router host, outbox, retries and sources.
        // NotifyRouteClient: the wire protocol and the client that `notify-route` links, without NIO.
        .target(
            name: "NotifyRouteService",
            dependencies: [
                "NotifyRoute",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "NotifyRouteDaemon",
            dependencies: [
                "NotifyRoute",
                "NotifyRouteClient",
                "NotifyRouteService",
                "CJournalReader",
                "CMallocTuning",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .target(name: "NotifyRouteClient", dependencies: ["NotifyRoute"]),
        .target(name: "CJournalReader"),

        // MARK: CLI: wires the built-in plugins by an explicit list.
        // The commands, in a library that two executables share. `notify-route` links no
        // network code and no daemon server: a `send` whose event can reach an alertmanager or
        // webhook sink, another command whose config declares one, and `serve`, `status` and
        // `explain --journal-record` exec `notify-route-network`, installed beside it, which
        // links it all; SwiftNIO's HTTP, async-http-client and BoringSSL would otherwise slow
        // the start of every send (Tests/Benchmarks/README.md, "Why the code is so").
        .target(
            name: "NotifyRouteCLI",
            dependencies: [
                "NotifyRoute",
                "NotifyRouteTerminal",
                "NotifyRouteDesktop",
                "NotifyRouteJournal",
                "NotifyRouteExec",
                "NotifyRouteNetworkSchema",
                "NotifyRouteClient",
                "CTetheredSpawn",
                "CBuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            resources: [.embedInCode("Resources/notify-route.yaml")]
        ),
        .executableTarget(name: "notify-route", dependencies: ["NotifyRouteCLI", "CArguments"], path: "Sources/Executables/notify-route"),
        // `CommandLine` without the Swift runtime's scan of /proc/self/maps at every start (Arguments.c).
        .target(name: "CArguments"),
        .executableTarget(
            name: "notify-route-network",
            dependencies: [
                "NotifyRoute", "NotifyRouteCLI", "NotifyRouteClient", "NotifyRouteDaemon", "NotifyRouteJournal", "NotifyRouteNetwork",
                "NotifyRouteTerminal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Executables/notify-route-network"
        ),

        // The version `make` built (`git describe`), for `--version`.
        .target(name: "CBuildInfo"),
        // mallopt for the daemon (DaemonMemory).
        .target(name: "CMallocTuning"),
        // The test kit of the core (RecordingSink), for tests and benchmarks.
        .target(name: "NotifyRouteTesting", dependencies: ["NotifyRoute"]),

        // MARK: Benchmarks (Tests/Benchmarks/run.sh builds it in release mode).
        .executableTarget(
            name: "notify-route-bench",
            dependencies: [
                "NotifyRoute", "NotifyRouteDesktop", "NotifyRouteClient", "NotifyRouteDaemon", "NotifyRouteJournal", "NotifyRouteTesting",
                "NotifyRouteService",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Tests/Benchmarks/notify-route-bench"
        ),

        // MARK: Fuzzing: one executable for every target (Tests/Fuzz/run.sh builds it with
        // -sanitize=fuzzer; a plain build replays files: `notify-route-fuzz TARGET PATH...`).
        .executableTarget(
            name: "notify-route-fuzz",
            dependencies: ["NotifyRoute", "NotifyRouteClient", "NotifyRouteTerminal", "NotifyRouteDesktop", "NotifyRouteJournal", "NotifyRouteExec"],
            path: "Tests/Fuzz/notify-route-fuzz"
        ),

        // MARK: Tests: one target per module, plus end-to-end tests of the CLI binary.
        .target(
            name: "NotifyRouteTestSupport",
            dependencies: ["NotifyRoute"],
            path: "Tests/NotifyRouteTestSupport"
        ),
        .testTarget(name: "NotifyRouteTests", dependencies: ["NotifyRoute", "NotifyRouteTesting", "NotifyRouteTestSupport"]),
        .testTarget(name: "TimeZoneInfoTests", dependencies: ["TimeZoneInfo", "NotifyRoute", "NotifyRouteTestSupport"]),
        .testTarget(name: "NotifyRouteTerminalTests", dependencies: ["NotifyRouteTerminal", "NotifyRouteTestSupport"]),
        .testTarget(name: "NotifyRouteDesktopTests", dependencies: ["NotifyRouteDesktop", "NotifyRouteTestSupport"]),
        .testTarget(name: "NotifyRouteJournalTests", dependencies: ["NotifyRouteJournal", "NotifyRouteTestSupport"]),
        .testTarget(name: "NotifyRouteExecTests", dependencies: ["NotifyRouteExec", "NotifyRouteTestSupport"]),
        .testTarget(
            name: "NotifyRouteNetworkTests",
            dependencies: ["NotifyRouteNetwork", "NotifyRouteDaemon", "NotifyRouteClient", "notify-route", "notify-route-network", "NotifyRouteTestSupport"]
        ),
        .testTarget(name: "NotifyRouteLoggingTests", dependencies: ["NotifyRouteLogging", "NotifyRouteTesting", "NotifyRouteTestSupport"]),
        .testTarget(
            name: "NotifyRouteServiceTests",
            dependencies: [
                "NotifyRouteService", "NotifyRouteTesting", "NotifyRouteTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "NotifyRouteDaemonTests",
            dependencies: [
                "NotifyRouteDaemon", "NotifyRouteClient", "NotifyRouteService", "NotifyRouteTesting", "NotifyRouteTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "NotifyRouteClientTests", dependencies: ["NotifyRouteClient", "NotifyRouteTesting", "NotifyRouteTestSupport"]),
        .testTarget(
            name: "NotifyRouteCLITests",
            dependencies: ["NotifyRouteCLI", "notify-route", "notify-route-network", "NotifyRouteTestSupport"],
            exclude: ["BrokenConfigs"]
        ),
    ]
)

// Upcoming features for every target of ours, in one place (as swift-log does).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
}
