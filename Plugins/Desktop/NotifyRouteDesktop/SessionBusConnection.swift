import CLibNotify
import Glibc
import NotifyRoute
import Synchronization

/// The process's session bus connection, the same one libnotify's proxy uses.
///
/// GLib makes bus connections exit the process when the bus goes away
/// (`exit-on-close`); a router inside a long-running service must not die with the
/// session bus, so the plugin turns that off and keeps a reference for the process.
///
/// When the bus goes away the connection stays closed for good: the next call connects
/// again (to the same address, where a restarted bus listens), and libnotify, whose
/// proxy holds the old connection, is started afresh (``LibNotifyPresenter/reset()``).
enum SessionBusConnection {
    private static let shared = Mutex<BusPointer?>(nil)

    /// Whether the connection in hand has been closed (the bus went away). Any thread.
    static var isClosed: Bool {
        shared.withLock { $0.map { g_dbus_connection_is_closed($0.pointer) != 0 } ?? false }
    }

    /// The connection, made on first use. Call on the GLib thread.
    static func get() throws(SinkError) -> OpaquePointer {
        if let connection = shared.withLock({ $0 }) {
            if g_dbus_connection_is_closed(connection.pointer) == 0 { return connection.pointer }
            // GLib forgets its shared session connection once closed; libnotify must too.
            LibNotifyPresenter.reset()
            forget()
        }
        if let missing = missing() { throw missing }
        let address = variable("DBUS_SESSION_BUS_ADDRESS").flatMap { $0.isEmpty ? nil : $0 }
        var error: UnsafeMutablePointer<GError>?
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {
            let message = error?.pointee.message.map { String(cString: $0) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw SinkError(.unavailable, "no session bus: cannot connect to \(address ?? "$XDG_RUNTIME_DIR/bus"): \(message)",
                            isRetryable: true)
        }
        g_dbus_connection_set_exit_on_close(connection, 0)
        shared.withLock { old in
            if let old { g_object_unref(UnsafeMutableRawPointer(old.pointer)) }
            old = BusPointer(pointer: connection)
        }
        return connection
    }

    /// No session bus to connect to: no address, and no `$XDG_RUNTIME_DIR/bus` socket. Any
    /// thread, and without GLib, which a process with no bus (a server, cron, CI) then never
    /// loads. GLib would otherwise try that socket, then autolaunch a bus with dbus-launch
    /// under X11: the socket is looked for here, and no bus is ever autolaunched.
    static func missing() -> SinkError? {
        if let address = variable("DBUS_SESSION_BUS_ADDRESS"), !address.isEmpty { return nil }
        if let runtime = variable("XDG_RUNTIME_DIR"), isSocket(runtime + "/bus") { return nil }
        return SinkError(.unavailable, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus socket")
    }

    /// Drops a closed connection so the next call reconnects.
    static func forget() {
        shared.withLock { old in
            if let old { g_object_unref(UnsafeMutableRawPointer(old.pointer)) }
            old = nil
        }
    }

    private static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    private static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }
}

/// A `GDBusConnection` pointer.
///
/// `@unchecked Sendable` because raw pointers are not `Sendable`; GDBusConnection is
/// documented thread-safe, and the plugin only uses it on the GLib thread anyway.
private struct BusPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}
