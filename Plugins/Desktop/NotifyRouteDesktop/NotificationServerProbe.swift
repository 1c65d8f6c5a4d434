import CLibNotify
import NotifyRoute
import Synchronization

/// What the notification daemon said about itself.
struct NotificationServer: Hashable, Sendable {
    var name: String
    var vendor: String
    var version: String
    var specVersion: String
    /// `actions`, `body`, `body-markup`, `persistence`, ...
    var capabilities: Set<String>
}

/// Short, bounded D-Bus calls to `org.freedesktop.Notifications` on the session bus
/// that libnotify uses (the process's `G_BUS_TYPE_SESSION` connection).
///
/// libnotify calls with GDBus's default 25 s timeout and auto-start; these calls use
/// `G_DBUS_CALL_FLAGS_NO_AUTO_START` and a timeout of at most 500 ms, so no bus, no
/// daemon and a hung daemon are told apart and reported within a second. A daemon the
/// bus starts on demand is started only when the bus says it can (its name is
/// activatable), within the same budget.
/// Every function here must run on the ``GLibLoopThread``.
enum NotificationServerProbe {
    static let busName = "org.freedesktop.Notifications"
    static let objectPath = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"

    /// `GetServerInformation` then `GetCapabilities`, both within `timeout` together.
    ///
    /// A daemon the bus starts on demand (its name is activatable) is started within the
    /// same budget, or until `startDeadline` when that is later (a delivery that can wait
    /// for a slow start). `startPending`: an earlier probe saw this start go on past its
    /// budget; then the bus is not asked to start it again, only whether it is up now,
    /// unless `startDeadline` allows a wait.
    static func probe(
        timeout: Duration, startDeadline: ContinuousClock.Instant? = nil, startPending: Bool = false
    ) throws(SinkError) -> NotificationServer {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let connection = try SessionBusConnection.get()
        let info: OpaquePointer
        do {
            info = try call(connection, "GetServerInformation", nr_variant_new_unit(), reply: "(ssss)", timeout: timeout)
        } catch let error where error.kind == .unavailable && isActivatable(connection, timeout: deadline - .now) {
            // Started on demand by D-Bus (dunst, mako, notification-daemon): let the bus
            // start it, within what is left of the same budget.
            let waitUntil = max(deadline, startDeadline ?? deadline)
            if startPending && startDeadline == nil { throw stillStarting }
            info = try start(connection, until: waitUntil, budget: waitUntil == deadline ? timeout : nil)
        }
    defer { g_variant_unref(info) }
        let strings = (0..<4).map { index in
            let child = g_variant_get_child_value(info, gsize(index))
            defer { g_variant_unref(child) }
            return String(cString: g_variant_get_string(child, nil))
        }
        let remaining = max(.milliseconds(1), deadline - .now)
        let caps = try call(connection, "GetCapabilities", nr_variant_new_unit(), reply: "(as)", timeout: remaining, budget: timeout)
        defer { g_variant_unref(caps) }
        let list = g_variant_get_child_value(caps, 0)
        defer { g_variant_unref(list) }
        var capabilities: Set<String> = []
        for index in 0..<g_variant_n_children(list) {
            let child = g_variant_get_child_value(list, index)
            capabilities.insert(String(cString: g_variant_get_string(child, nil)))
            g_variant_unref(child)
        }
        return NotificationServer(name: strings[0], vendor: strings[1], version: strings[2], specVersion: strings[3],
                                  capabilities: capabilities)
    }

    /// The daemon instance that owns the notification name now, asked of the bus
    /// (`GetNameOwner`, no daemon round trip); `nil` when nobody owns it or the bus
    /// does not answer in time (the full ``probe(timeout:)`` then says why).
    static func identity(timeout: Duration) -> DaemonIdentity? {
        guard let connection = try? SessionBusConnection.get(), let guid = g_dbus_connection_get_guid(connection) else { return nil }
        var error: UnsafeMutablePointer<GError>?
        guard let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            nr_variant_new_string_tuple(busName), nr_variant_type("(s)"), G_DBUS_CALL_FLAGS_NONE,
            Int32(clamping: max(1, DurationParser.milliseconds(timeout))), nil, &error)
        else {
            if let error { g_error_free(error) }
            return nil
        }
        defer { g_variant_unref(reply) }
        let child = g_variant_get_child_value(reply, 0)
        defer { g_variant_unref(child) }
        return DaemonIdentity(busGUID: String(cString: guid), owner: String(cString: g_variant_get_string(child, nil)))
    }

    /// The GUID of the bus in hand (from the connection's handshake, no call).
    static func busGUID() -> String? {
        guard let connection = try? SessionBusConnection.get(), let guid = g_dbus_connection_get_guid(connection) else { return nil }
        return String(cString: guid)
    }

    /// `CloseNotification(id)`, bounded, instead of `notify_notification_close`'s 25 s.
    static func closeNotification(id: UInt32, timeout: Duration) throws(SinkError) {
        let connection = try SessionBusConnection.get()
        let reply = try call(connection, "CloseNotification", nr_variant_new_uint32_tuple(id), reply: "()", timeout: timeout)
        g_variant_unref(reply)
    }

    /// What a probe says while the bus is still starting the daemon (see ``start(_:until:budget:)``).
    static let stillStarting = SinkError(
        .unavailable, "the notification daemon is not up yet: \(pendingStart) (a start that timed out before)", isRetryable: true)

    /// Whether the GLib thread is waiting for the bus to start the daemon (so a caller
    /// that finds it busy is told that, not that the daemon may be hung). Any thread.
    static var isWaitingForStart: Bool { waitingForStart.load(ordering: .acquiring) }
    private static let waitingForStart = Atomic<Bool>(false)

    /// The words of every error that means "the bus is still starting the daemon".
    static let pendingStart = "the session bus was still starting \(busName)"

    static func isStartPending(_ error: SinkError) -> Bool {
        error.kind == .unavailable && error.message.contains(pendingStart)
    }

    /// The words of every error that carries the bus's own reason for a failed start.
    static let failedStart = "the session bus tried to start \(busName) and got "

    static func isStartFailure(_ error: SinkError) -> Bool {
        error.kind == .unavailable && error.message.contains(failedStart)
    }

    /// `GetServerInformation` with auto-start: the bus starts the daemon and then passes
    /// the call on. D-Bus's own error for a start that failed (`Spawn.ChildExited`, ...)
    /// is named; a start still going on at `deadline` is told apart from a daemon that
    /// started and does not answer by asking the bus who owns the name.
    private static func start(_ connection: OpaquePointer, until deadline: ContinuousClock.Instant, budget: Duration?) throws(SinkError) -> OpaquePointer {
        waitingForStart.store(true, ordering: .releasing)
        defer { waitingForStart.store(false, ordering: .releasing) }
        let allowance = deadline - .now
        // A few milliseconds kept back to ask the bus who owns the name, should the start time out.
        let reserve = min(.milliseconds(50), allowance / 10)
        var error: UnsafeMutablePointer<GError>?
        if let result = g_dbus_connection_call_sync(
            connection, busName, objectPath, interface, "GetServerInformation", nr_variant_new_unit(), nr_variant_type("(ssss)"),
            G_DBUS_CALL_FLAGS_NONE, Int32(clamping: max(1, DurationParser.milliseconds(allowance - reserve))), nil, &error) {
            return result
        }
        guard let error else { throw SinkError(.failed, "GetServerInformation failed without an error message") }
        if let remote = g_dbus_error_get_remote_error(error) {
            let name = String(cString: remote)
            g_free(remote)
            if name.hasPrefix("org.freedesktop.DBus.Error.Spawn.") || name == "org.freedesktop.DBus.Error.TimedOut" {
                let message = error.pointee.message.map { String(cString: $0) } ?? ""
                g_error_free(error)
                // "GDBus.Error:NAME: text": the text alone, after the name we give.
                let text = message.firstRange(of: name + ": ").map { String(message[$0.upperBound...]) } ?? message
                throw SinkError(.unavailable, "the notification daemon could not be started: \(failedStart)\(name) (\(text))",
                                isRetryable: true)
            }
        }
        let failure = failure(error, method: "GetServerInformation", timeout: budget ?? allowance)
        if failure.kind == .timedOut && identity(timeout: reserve) == nil {
            throw SinkError(.unavailable, "the notification daemon could not be started within \(DurationParser.format(budget ?? allowance)): \(pendingStart) (the start timed out)",
                            isRetryable: true)
        }
        throw failure
    }

    /// Whether the bus can start a notification daemon on demand (a `.service` file).
    private static func isActivatable(_ connection: OpaquePointer, timeout: Duration) -> Bool {
        guard timeout > .zero else { return false }
        var error: UnsafeMutablePointer<GError>?
        guard let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListActivatableNames",
            nr_variant_new_unit(), nr_variant_type("(as)"), G_DBUS_CALL_FLAGS_NONE,
            Int32(clamping: max(1, DurationParser.milliseconds(timeout))), nil, &error)
        else {
            if let error { g_error_free(error) }
            return false
        }
        defer { g_variant_unref(reply) }
        let list = g_variant_get_child_value(reply, 0)
        defer { g_variant_unref(list) }
        for index in 0..<g_variant_n_children(list) {
            let child = g_variant_get_child_value(list, index)
            defer { g_variant_unref(child) }
            if String(cString: g_variant_get_string(child, nil)) == busName { return true }
        }
        return false
    }

    private static func call(
        _ connection: OpaquePointer, _ method: String, _ arguments: OpaquePointer?, reply: String, timeout: Duration,
        budget: Duration? = nil
    ) throws(SinkError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        let milliseconds = Int32(clamping: max(1, DurationParser.milliseconds(timeout)))
        guard let result = g_dbus_connection_call_sync(
            connection, busName, objectPath, interface, method, arguments, nr_variant_type(reply),
            G_DBUS_CALL_FLAGS_NO_AUTO_START, milliseconds, nil, &error)
        else {
            // Name the whole budget in messages ("within 500ms"), not what was left of it.
            throw failure(error, method: method, timeout: budget ?? timeout)
        }
        return result
    }

    /// Names what went wrong the way a user can act on it.
    static func failure(_ error: UnsafeMutablePointer<GError>?, method: String, timeout: Duration) -> SinkError {
        guard let error else { return SinkError(.failed, "\(method) failed without an error message") }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
        let domain = error.pointee.domain, code = error.pointee.code
        if domain == nr_dbus_error_quark() {
            switch UInt32(bitPattern: code) {
            case G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue, G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue:
                return SinkError(.unavailable, "no notification daemon: nothing owns \(busName) on the session bus", isRetryable: true)
            case G_DBUS_ERROR_NO_REPLY.rawValue, G_DBUS_ERROR_TIMEOUT.rawValue, G_DBUS_ERROR_TIMED_OUT.rawValue:
                return hung(method: method, timeout: timeout)
            default:
                break
            }
        } else if domain == nr_io_error_quark() {
            switch UInt32(bitPattern: code) {
            case G_IO_ERROR_TIMED_OUT.rawValue:
                return hung(method: method, timeout: timeout)
            case G_IO_ERROR_CLOSED.rawValue:
                SessionBusConnection.forget()
                return SinkError(.unavailable, "no session bus: the connection to the bus was closed", isRetryable: true)
            default:
                break
            }
        }
        return SinkError(.failed, "the notification daemon answered \(method) with an error: \(message)")
    }

    static func hung(method: String, timeout: Duration) -> SinkError {
        SinkError(.timedOut, "the notification daemon did not answer \(method) within \(DurationParser.format(timeout)); it may be hung",
                  isRetryable: true)
    }
}
