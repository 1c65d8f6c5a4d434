import Foundation
import NotifyRouteTestSupport
import Testing

/// The test buses ignore what the host has installed: a notification daemon's service
/// file (dunst's, mako's) must never be activatable on a bus the suite starts, or tests
/// that expect "no notification daemon" see the bus try to start the host's daemon.
@Suite(
    "hermetic test buses", .serialized,
    .enabled(if: DBusMockDaemon.shouldRun, "needs dbus-daemon, gdbus and python3-dbusmock (bash .ci/setup)"))
struct HermeticBusTests {
    @Test func aNotificationServiceOnXDGDataDirsIsIgnored() throws {
        let data = try TestEnvironment.temporaryDirectory("notify-route-xdg-data")
        defer { try? FileManager.default.removeItem(at: data) }
        let services = data.appendingPathComponent("dbus-1/services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        try """
            [D-BUS Service]
            Name=org.freedesktop.Notifications
            Exec=/bin/sh -c 'touch \(data.path)/started; exit 1'

            """.write(to: services.appendingPathComponent("org.freedesktop.Notifications.service"), atomically: true, encoding: .utf8)
        let environment = ["XDG_DATA_DIRS": data.path]

        // The control: a bus with the standard session config reads it (as dbus-run-session's does).
        let plain = try ProcessRunner.run(try #require(ProcessRunner.which("dbus-run-session")), [
            "--", "gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.ListActivatableNames",
        ], environment: environment, timeLimit: .seconds(20))
        #expect(plain.standardOutput.contains("org.freedesktop.Notifications"), "the service file is valid: \(plain.standardOutput)")

        // The suite's bus, started with the same environment, has nothing to start but itself.
        let bus = try DBusMockDaemon.start(withDaemon: false, busEnvironment: environment)
        defer { bus.shutdown() }
        #expect(try bus.activatableNames() == ["org.freedesktop.DBus"])
        let config = data.appendingPathComponent("c.yaml")
        try "sinks: { desktop: { kind: desktop } }\nroutes: [ { to: [desktop] } ]\n".write(to: config, atomically: true, encoding: .utf8)
        let send = try ProcessRunner.notifyRoute(["send", "--config", config.path, "Hello"], environment: bus.environment)
        #expect(send.status == 69, "\(send.standardError)")
        #expect(send.standardError.contains("no notification daemon"), "\(send.standardError)")
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("started").path), "never started")
    }
}
