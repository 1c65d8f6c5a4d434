import Foundation

/// A private D-Bus session bus with python-dbusmock's `notification_daemon` template on
/// it: a real bus and a real daemon process, one per test, so a test that stops its
/// daemon (SIGSTOP) disturbs no other.
///
/// ```swift
/// let daemon = try DBusMockDaemon.start()
/// defer { daemon.shutdown() }
/// let result = try ProcessRunner.notifyRoute(["send", "Hi"], environment: daemon.environment)
/// let notify = try daemon.notifyCalls()  // what the daemon received
/// ```
///
/// Read back with the mock's `org.freedesktop.DBus.Mock.GetCalls` (through dbus-python
/// under `/usr/bin/python3`, the interpreter that has dbusmock).
public final class DBusMockDaemon {
    public static let fullCapabilities = "actions body body-markup persistence"

    /// The bus address, for `DBUS_SESSION_BUS_ADDRESS`.
    public let busAddress: String
    private let bus: Process
    private var daemon: Process?

    /// `DBUS_SESSION_BUS_ADDRESS` for a child process.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": busAddress] }

    /// The daemon's process id (for SIGSTOP), `nil` when the bus has no daemon.
    public var daemonPID: Int32? { daemon?.processIdentifier }

    /// Why the desktop tests cannot run here, `nil` when they can.
    public static var missingComponents: String? {
        var missing: [String] = []
        if ProcessRunner.which("dbus-daemon") == nil { missing.append("dbus-daemon") }
        if ProcessRunner.which("gdbus") == nil { missing.append("gdbus") }
        let check = try? ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", "import dbus, dbusmock"], timeLimit: .seconds(10))
        if check?.status != 0 { missing.append("python3-dbusmock (for /usr/bin/python3)") }
        return missing.isEmpty ? nil : "missing \(missing.joined(separator: ", ")) (run: bash .ci/setup)"
    }

    /// True when the tests must run: components present, or required (CI, with-components.sh),
    /// in which case a missing one fails the test instead of skipping it.
    public static var shouldRun: Bool {
        TestEnvironment.componentsRequired || missingComponents == nil
    }

    /// Starts a bus, and on it a notification daemon with `capabilities` unless `withDaemon` is false.
    public static func start(capabilities: String = fullCapabilities, withDaemon: Bool = true) throws -> DBusMockDaemon {
        if let missing = missingComponents { throw Failure(message: "desktop test components: \(missing)") }
        let mock = try DBusMockDaemon(bus: startBus())
        if withDaemon {
            do { try mock.startDaemon(capabilities: capabilities) } catch { mock.shutdown(); throw error }
        }
        return mock
    }

    /// Starts a bus that starts the notification daemon itself on first use (D-Bus
    /// activation, as dunst and mako are on many desktops); nothing runs until then.
    public static func startActivatable() throws -> DBusMockDaemon {
        if let missing = missingComponents { throw Failure(message: "desktop test components: \(missing)") }
        let directory = try TestEnvironment.temporaryDirectory("notify-route-bus")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        try """
            [D-BUS Service]
            Name=org.freedesktop.Notifications
            Exec=/usr/bin/python3 -m dbusmock --template notification_daemon

            """.write(to: services.appendingPathComponent("org.freedesktop.Notifications.service"), atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("session.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:tmpdir=\(directory.path)</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(services.path)</servicedir>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
        let mock = try DBusMockDaemon(bus: startBus(["--config-file=\(config.path)"]))
        mock.cleanup = directory
        return mock
    }

    private var cleanup: URL?

    private init(bus: (Process, String)) throws {
        self.bus = bus.0
        self.busAddress = bus.1
    }

    deinit { shutdown() }

    private static func startBus(_ configuration: [String] = ["--session"]) throws -> (Process, String) {
        let process = Process()
        process.executableURL = ProcessRunner.which("dbus-daemon")
        process.arguments = configuration + ["--nofork", "--nopidfile", "--print-address=1"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        let address = text.split(separator: "\n").first.map(String.init) ?? ""
        guard !address.isEmpty else {
            kill(process.processIdentifier, SIGKILL)
            throw Failure(message: "dbus-daemon printed no address")
        }
        return (process, address)
    }

    /// Starts the notification daemon on the bus and waits until it owns its name.
    public func startDaemon(capabilities: String = fullCapabilities) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let parameters = String(decoding: try JSONEncoder().encode(["capabilities": capabilities]), as: UTF8.self)
        process.arguments = ["-m", "dbusmock", "--template", "notification_daemon", "-p", parameters]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        daemon = process
        let wait = try gdbus(["wait", "--session", "--timeout", "10", "org.freedesktop.Notifications"])
        guard wait.status == 0 else {
            throw Failure(message: "the mock notification daemon did not appear on the bus: \(wait.standardError)")
        }
    }

    /// SIGSTOP: the daemon keeps its name on the bus but answers nothing (a hung daemon).
    public func freezeDaemon() {
        if let pid = daemonPID { kill(pid, SIGSTOP) }
    }

    /// Stops the daemon and then the bus; safe to call twice.
    public func shutdown() {
        if let daemon, daemon.isRunning {
            kill(daemon.processIdentifier, SIGKILL)  // works on a stopped process too
            daemon.waitUntilExit()
        }
        daemon = nil
        if let pid = try? activatedDaemonPID() { kill(pid, SIGKILL) }  // started by the bus, not by us
        if bus.isRunning {
            // SIGKILL: a child spawned from a test process can inherit a mask that blocks SIGTERM.
            kill(bus.processIdentifier, SIGKILL)
            bus.waitUntilExit()
        }
        if let cleanup { try? FileManager.default.removeItem(at: cleanup) }
        cleanup = nil
    }

    /// The process id of a daemon the bus started on demand, from the bus itself.
    private func activatedDaemonPID() throws -> Int32? {
        guard cleanup != nil, bus.isRunning else { return nil }
        let result = try gdbus([
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.freedesktop.Notifications",
        ])
        guard result.status == 0 else { return nil }
        // "(uint32 12345,)"
        return Int32(result.standardOutput.filter(\.isNumber))
    }

    // MARK: Reading back and acting as the user

    /// One method call the daemon received.
    public struct Call: Decodable, Sendable {
        public var method: String
        public var args: [Value]
    }

    /// A D-Bus value as dbus-python saw it: its type signature and its text, or items.
    public struct Value: Decodable, Sendable {
        /// `s`, `u`, `i`, `y`, `b`, `as`, `a{sv}`, ...
        public var type: String
        public var text: String?
        public var items: [Value]?
        public var entries: [String: Value]?
    }

    /// A `Notify` call, decoded.
    public struct NotifyCall: Sendable {
        public var appName: String
        public var replacesID: UInt32
        public var appIcon: String
        public var summary: String
        public var body: String
        /// Action ids and labels, alternating, as on the wire.
        public var actions: [String]
        public var hints: [String: Value]
        public var expireTimeout: Int32
    }

    /// Every call the daemon received, in order.
    public func calls() throws -> [Call] {
        let script = """
            import dbus, json, sys
            bus = dbus.bus.BusConnection(sys.argv[1])
            mock = dbus.Interface(bus.get_object('org.freedesktop.Notifications', '/org/freedesktop/Notifications'),
                                  'org.freedesktop.DBus.Mock')
            def conv(v):
                if isinstance(v, dbus.Boolean): return {'type': 'b', 'text': 'true' if v else 'false'}
                for t, c in (('y', dbus.Byte), ('u', dbus.UInt32), ('i', dbus.Int32), ('x', dbus.Int64),
                             ('t', dbus.UInt64), ('d', dbus.Double), ('s', dbus.String)):
                    if isinstance(v, c): return {'type': t, 'text': str(int(v)) if t in 'yuixt' else str(v)}
                if isinstance(v, dict): return {'type': 'a{sv}', 'entries': {str(k): conv(x) for k, x in v.items()}}
                if isinstance(v, (list, tuple)): return {'type': 'a', 'items': [conv(x) for x in v]}
                return {'type': '?', 'text': repr(v)}
            print(json.dumps([{'method': str(m), 'args': [conv(a) for a in args]} for (_, m, args) in mock.GetCalls()]))
            """
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, busAddress],
                                           timeLimit: .seconds(10))
        guard result.status == 0 else { throw Failure(message: "GetCalls failed: \(result.standardError)") }
        return try JSONDecoder().decode([Call].self, from: Data(result.standardOutput.utf8))
    }

    /// The `Notify` calls, decoded, in order.
    public func notifyCalls() throws -> [NotifyCall] {
        try calls().filter { $0.method == "Notify" }.map { call in
            let a = call.args
            guard a.count == 8 else { throw Failure(message: "Notify with \(a.count) arguments") }
            return NotifyCall(
                appName: a[0].text ?? "", replacesID: UInt32(a[1].text ?? "") ?? 0, appIcon: a[2].text ?? "",
                summary: a[3].text ?? "", body: a[4].text ?? "", actions: (a[5].items ?? []).map { $0.text ?? "" },
                hints: a[6].entries ?? [:], expireTimeout: Int32(a[7].text ?? "") ?? -99)
        }
    }

    /// The ids passed to `CloseNotification`, in order.
    public func closeCalls() throws -> [UInt32] {
        try calls().filter { $0.method == "CloseNotification" }.compactMap { UInt32($0.args.first?.text ?? "") }
    }

    /// As if the user clicked an action button.
    public func emitActionInvoked(id: UInt32, action: String) throws {
        try Self.emitActionInvoked(busAddress: busAddress, id: id, action: action)
    }

    /// As if the notification went away: 1 expired, 2 dismissed by the user, 3 closed by a call.
    public func emitNotificationClosed(id: UInt32, reason: UInt32) throws {
        try Self.emitNotificationClosed(busAddress: busAddress, id: id, reason: reason)
    }

    /// The same, from a process that has only the address (an exit test's child).
    public static func emitActionInvoked(busAddress: String, id: UInt32, action: String) throws {
        try emit(busAddress, "ActionInvoked", "us", "[<uint32 \(id)>, <\"\(action)\">]")
    }

    public static func emitNotificationClosed(busAddress: String, id: UInt32, reason: UInt32) throws {
        try emit(busAddress, "NotificationClosed", "uu", "[<uint32 \(id)>, <uint32 \(reason)>]")
    }

    private static func emit(_ busAddress: String, _ signal: String, _ signature: String, _ arguments: String) throws {
        let result = try gdbus(busAddress, [
            "call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
            "--method", "org.freedesktop.DBus.Mock.EmitSignal", "org.freedesktop.Notifications", signal, signature, arguments,
        ])
        guard result.status == 0 else { throw Failure(message: "EmitSignal \(signal) failed: \(result.standardError)") }
    }

    private func gdbus(_ arguments: [String]) throws -> ProcessResult {
        try Self.gdbus(busAddress, arguments)
    }

    private static func gdbus(_ busAddress: String, _ arguments: [String]) throws -> ProcessResult {
        guard let gdbus = ProcessRunner.which("gdbus") else { throw Failure(message: "gdbus is not on PATH") }
        return try ProcessRunner.run(gdbus, arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress], timeLimit: .seconds(15))
    }

    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }
}
