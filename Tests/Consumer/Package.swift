// swift-tools-version:6.1
import PackageDescription

// A service that depends on notify-route as any other package would: proves the library
// products still build as a dependency (SwiftPM refuses unsafe flags there, which is why
// the tuned release options live in the Makefile, not in notify-route's Package.swift).
// Built by .ci/run: swift build --package-path Tests/Consumer
let package = Package(
    name: "notify-route-consumer",
    dependencies: [
        .package(name: "notify-route", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "consumer",
            dependencies: [
                .product(name: "NotifyRoute", package: "notify-route"),
                .product(name: "NotifyRouteLogging", package: "notify-route"),
                .product(name: "NotifyRouteJournal", package: "notify-route"),
            ]
        ),
    ]
)
