import CLibNotify
import Foundation
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
/// daemon and a hung daemon are told apart and reported within a second.
/// Every function here must run on the ``GLibLoopThread``.
enum NotificationServerProbe {
    static let busName = "org.freedesktop.Notifications"
    static let objectPath = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"

    /// `GetServerInformation` then `GetCapabilities`, each within `timeout`.
    static func probe(timeout: Duration) throws(SinkError) -> NotificationServer {
        let connection = try SessionBusConnection.get()
        let info = try call(connection, "GetServerInformation", nr_variant_new_unit(), reply: "(ssss)", timeout: timeout)
        defer { g_variant_unref(info) }
        let strings = (0..<4).map { index in
            let child = g_variant_get_child_value(info, gsize(index))
            defer { g_variant_unref(child) }
            return String(cString: g_variant_get_string(child, nil))
        }
        let caps = try call(connection, "GetCapabilities", nr_variant_new_unit(), reply: "(as)", timeout: timeout)
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

    /// `CloseNotification(id)`, bounded, instead of `notify_notification_close`'s 25 s.
    static func closeNotification(id: UInt32, timeout: Duration) throws(SinkError) {
        let connection = try SessionBusConnection.get()
        let reply = try call(connection, "CloseNotification", nr_variant_new_uint32_tuple(id), reply: "()", timeout: timeout)
        g_variant_unref(reply)
    }

    private static func call(
        _ connection: OpaquePointer, _ method: String, _ arguments: OpaquePointer?, reply: String, timeout: Duration
    ) throws(SinkError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        let milliseconds = Int32(clamping: max(1, DurationParser.milliseconds(timeout)))
        guard let result = g_dbus_connection_call_sync(
            connection, busName, objectPath, interface, method, arguments, nr_variant_type(reply),
            G_DBUS_CALL_FLAGS_NO_AUTO_START, milliseconds, nil, &error)
        else {
            throw failure(error, method: method, timeout: timeout)
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

/// The process's session bus connection, the same one libnotify's proxy uses.
///
/// GLib makes bus connections exit the process when the bus goes away
/// (`exit-on-close`); a router inside a long-running service must not die with the
/// session bus, so the plugin turns that off and keeps a reference for the process.
enum SessionBusConnection {
    private static let shared = Mutex<BusPointer?>(nil)

    /// The connection, made on first use. Call on the GLib thread.
    static func get() throws(SinkError) -> OpaquePointer {
        if let connection = shared.withLock({ $0 }), g_dbus_connection_is_closed(connection.pointer) == 0 {
            return connection.pointer
        }
        let environment = ProcessInfo.processInfo.environment
        let address = environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        if address == nil {
            // GLib would otherwise try $XDG_RUNTIME_DIR/bus, then autolaunch a bus with
            // dbus-launch under X11: look for the socket ourselves and never autolaunch.
            let runtimeBus = environment["XDG_RUNTIME_DIR"].map { $0 + "/bus" }
            guard let runtimeBus, isSocket(runtimeBus) else {
                throw SinkError(.unavailable, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus socket")
            }
        }
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

    /// Drops a closed connection so the next call reconnects.
    static func forget() {
        shared.withLock { old in
            if let old { g_object_unref(UnsafeMutableRawPointer(old.pointer)) }
            old = nil
        }
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
