import Foundation

/// A private D-Bus session bus with python-dbusmock's `notification_daemon` template on
/// it: a real bus and a real daemon process, one per test, so a test that stops its
/// daemon (SIGSTOP) disturbs no other.
///
/// Every bus is hermetic, the way python-dbusmock's own `DBusTestCase` makes its buses:
/// a config of its own whose only service directory is one the test controls, so a
/// notification daemon installed on the host (dunst's service file in
/// /usr/share/dbus-1/services, or one on `XDG_DATA_DIRS`) is never activatable.
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
///
/// The bus and the daemon are started with a clean signal mask (``ProcessRunner/spawn(_:_:environment:actions:)``):
/// a bus that inherits the test process's blocked SIGCHLD never learns that a service it
/// started has exited, and reports a failed start as a hang.
public final class DBusMockDaemon {
    public static let fullCapabilities = "actions body body-markup persistence"
    public static let notificationsName = "org.freedesktop.Notifications"

    /// The bus address, for `DBUS_SESSION_BUS_ADDRESS`; the same after ``restartBus()``.
    public let busAddress: String
    /// The bus's own directory: its config, its socket and ``serviceDirectory``.
    public let directory: URL
    /// The bus's only service directory: what a test installs here is activatable, nothing else.
    public var serviceDirectory: URL { directory.appendingPathComponent("services") }
    private var busPID: pid_t?
    private var daemonProcess: pid_t?
    private let busEnvironment: [String: String]

    /// `DBUS_SESSION_BUS_ADDRESS` for a child process.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": busAddress] }

    /// The daemon's process id (for SIGSTOP), `nil` when the bus has no daemon we started.
    public var daemonPID: Int32? { daemonProcess }

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
    ///
    /// - Parameter busEnvironment: extra environment of the `dbus-daemon` process (a test
    ///   that checks the bus ignores `XDG_DATA_DIRS` sets it here).
    public static func start(
        capabilities: String = fullCapabilities, withDaemon: Bool = true, busEnvironment: [String: String] = [:]
    ) throws -> DBusMockDaemon {
        if let missing = missingComponents { throw Failure(message: "desktop test components: \(missing)") }
        let mock = try DBusMockDaemon(busEnvironment: busEnvironment)
        if withDaemon {
            do { try mock.startDaemon(capabilities: capabilities) } catch { mock.shutdown(); throw error }
        }
        return mock
    }

    /// Starts a bus that starts the notification daemon itself on first use (D-Bus
    /// activation, as dunst and mako are on many desktops); nothing runs until then.
    ///
    /// - Parameter delay: how long the service waits before it starts the daemon (a slow start).
    public static func startActivatable(delay: Duration = .zero) throws -> DBusMockDaemon {
        let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        return try startActivatable(script: """
            sleep \(seconds)
            exec /usr/bin/python3 -m dbusmock --template notification_daemon
            """)
    }

    /// Starts a bus on which `org.freedesktop.Notifications` is activatable with `script`
    /// (see ``installNotificationService(script:)``): `exit 1` for a daemon that cannot
    /// start, `exec sleep 60` for one whose start never ends.
    public static func startActivatable(script: String) throws -> DBusMockDaemon {
        let mock = try start(withDaemon: false)
        do { try mock.installNotificationService(script: script) } catch { mock.shutdown(); throw error }
        return mock
    }

    /// Installs a service file that makes `org.freedesktop.Notifications` activatable
    /// with `script` (run by /bin/sh) as its `Exec=`. The bus reads its service
    /// directory again when asked for a name it does not know, so this works on a running bus.
    /// The script's process id is kept, so ``shutdown()`` ends a script that never exits.
    public func installNotificationService(script: String) throws {
        let file = directory.appendingPathComponent("notification-service.sh")
        try "echo $$ >>'\(directory.path)/activated.pids'\n\(script)\n".write(to: file, atomically: true, encoding: .utf8)
        try """
            [D-BUS Service]
            Name=\(Self.notificationsName)
            Exec=/bin/sh \(file.path)

            """.write(to: serviceDirectory.appendingPathComponent("\(Self.notificationsName).service"), atomically: true, encoding: .utf8)
    }

    private init(busEnvironment: [String: String]) throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-bus")
        self.busEnvironment = busEnvironment
        busAddress = "unix:path=\(directory.path)/bus"
        do {
            try FileManager.default.createDirectory(at: serviceDirectory, withIntermediateDirectories: true)
            try Self.configuration(directory: directory, services: serviceDirectory)
                .write(to: directory.appendingPathComponent("session.conf"), atomically: true, encoding: .utf8)
            busPID = try startBus()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { shutdown() }

    /// A session bus config with one service directory and nothing of the host's
    /// (no `<standard_session_servicedirs/>`, no `<includedir>`), as RECIPES.md shows.
    static func configuration(directory: URL, services: URL) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(directory.path)/bus</listen>
          <auth>EXTERNAL</auth>
          <servicedir>\(services.path)</servicedir>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// Starts `dbus-daemon` with the bus's config and waits until it prints its address.
    /// Its output goes to a file, not a pipe: the services it starts inherit it, and
    /// python-dbusmock fails with a broken pipe once a pipe's reader is gone.
    private func startBus() throws -> pid_t {
        guard let program = ProcessRunner.which("dbus-daemon") else { throw Failure(message: "dbus-daemon is not on PATH") }
        unlink(directory.path + "/bus")
        let addressFile = directory.appendingPathComponent("bus.address")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, addressFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, directory.path + "/bus.log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        var env = ProcessInfo.processInfo.environment
        env.merge(busEnvironment) { _, new in new }
        let pid = try ProcessRunner.spawn(program.path, [
            "--config-file=\(directory.path)/session.conf", "--nofork", "--nopidfile", "--print-address=1",
        ], environment: env, actions: &actions)
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        var text = ""
        while !text.contains("\n") && ContinuousClock.now < deadline {
            usleep(5_000)
            text = (try? String(contentsOf: addressFile, encoding: .utf8)) ?? ""
        }
        guard text.hasPrefix("unix:path=\(directory.path)/bus") else {
            Self.end(pid)
            let log = (try? String(contentsOf: directory.appendingPathComponent("bus.log"), encoding: .utf8)) ?? ""
            throw Failure(message: "dbus-daemon printed no address (\(text)): \(log)")
        }
        return pid
    }

    /// Ends the bus (and with it every connection to it) and starts a new one at the same
    /// address: what a long-running process sees when the session bus restarts. The daemon
    /// we started goes with the old bus.
    public func restartBus() throws {
        stopBus()
        busPID = try startBus()
    }

    /// Ends the bus and the daemons on it, leaving the address unanswered.
    public func stopBus() {
        stopDaemon()
        if let busPID { Self.end(busPID) }
        busPID = nil
    }

    /// Starts the notification daemon on the bus and waits until it owns its name.
    public func startDaemon(capabilities: String = fullCapabilities) throws {
        // A daemon a test killed itself is reaped here: a zombie child of the test process
        // would keep Swift Testing's exit-test monitor from ever seeing its own child end.
        if let old = daemonProcess { Self.end(old) }
        let parameters = String(decoding: try JSONEncoder().encode(["capabilities": capabilities]), as: UTF8.self)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
        }
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        daemonProcess = try ProcessRunner.spawn(
            "/usr/bin/python3", ["-m", "dbusmock", "--template", "notification_daemon", "-p", parameters],
            environment: env, actions: &actions)
        let wait = try gdbus(["wait", "--session", "--timeout", "10", Self.notificationsName])
        guard wait.status == 0 else {
            throw Failure(message: "the mock notification daemon did not appear on the bus: \(wait.standardError)")
        }
    }

    /// SIGKILLs the daemon we started (its name is released by the bus).
    public func stopDaemon() {
        if let daemonProcess { Self.end(daemonProcess) }
        daemonProcess = nil
        if let pid = try? activatedDaemonPID() { kill(pid, SIGKILL) }  // started by the bus, not by us
        let pids = (try? String(contentsOf: directory.appendingPathComponent("activated.pids"), encoding: .utf8)) ?? ""
        for line in pids.split(separator: "\n") { if let pid = Int32(line) { kill(pid, SIGKILL) } }
    }

    /// SIGSTOP: the daemon keeps its name on the bus but answers nothing (a hung daemon).
    public func freezeDaemon() {
        if let pid = daemonPID { kill(pid, SIGSTOP) }
    }

    /// Stops the daemon and then the bus; safe to call twice.
    public func shutdown() {
        stopBus()
        try? FileManager.default.removeItem(at: directory)
    }

    /// SIGKILL (works on a stopped process too, and through a blocked SIGTERM), then reaps it.
    private static func end(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// The process id of a daemon the bus started on demand, from the bus itself.
    private func activatedDaemonPID() throws -> Int32? {
        guard busPID != nil else { return nil }
        let result = try gdbus([
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", Self.notificationsName,
        ])
        guard result.status == 0 else { return nil }
        return Self.uint32(in: result.standardOutput).map { Int32(bitPattern: $0) }
    }

    /// The number in gdbus's `(uint32 12345,)`.
    private static func uint32(in text: String) -> UInt32? {
        guard let range = text.firstRange(of: "uint32 ") else { return nil }
        return UInt32(text[range.upperBound...].prefix { $0.isNumber })
    }

    /// The names the bus can start on demand (`ListActivatableNames`).
    public func activatableNames() throws -> [String] {
        let result = try gdbus([
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.ListActivatableNames",
        ])
        guard result.status == 0 else { throw Failure(message: "ListActivatableNames failed: \(result.standardError)") }
        // "(['org.freedesktop.DBus', ...],)"
        return result.standardOutput.split(separator: "'").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// Shows a notification as another application would (`gdbus call ... Notify`), and
    /// returns the id the daemon gave it.
    public func notifyAsAnotherApplication(summary: String) throws -> UInt32 {
        let result = try gdbus([
            "call", "--session", "--dest", Self.notificationsName, "--object-path", "/org/freedesktop/Notifications",
            "--method", "org.freedesktop.Notifications.Notify", "\"other-app\"", "uint32 0", "\"\"", "\"\(summary)\"", "\"\"",
            "@as []", "@a{sv} {}", "int32 -1",
        ])
        guard result.status == 0, let id = Self.uint32(in: result.standardOutput) else {
            throw Failure(message: "Notify from another application failed: \(result.standardError)")
        }
        return id
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
