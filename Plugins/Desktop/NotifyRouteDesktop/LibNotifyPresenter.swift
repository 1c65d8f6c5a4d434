import CLibNotify
import NotifyRoute
import Synchronization

/// Shows notifications with libnotify and keeps the shown `NotifyNotification`
/// objects alive, so their `ActionInvoked` and `NotificationClosed` signals reach us.
/// Every function here must run on the ``GLibLoopThread``.
enum LibNotifyPresenter {
    /// Live notifications by server id, oldest first. Only the GLib thread touches it;
    /// the Mutex is there for the compiler, and is never contended.
    private static let live = Mutex<[(id: UInt32, object: NotificationObject)]>([])
    /// Enough for any screen; past it the oldest objects are let go (their signals with them).
    static let liveLimit = 512

    /// Shows `request` and returns the server's id for it; the caller publishes `.shown`
    /// (``shown(_:hub:daemon:)``) once it has passed the id on.
    ///
    /// Call only after a successful probe: on a hung daemon `notify_notification_show`
    /// blocks 25 s, and dropping an object whose show failed may block 25 s more.
    /// - Parameter daemon: the ``DaemonIdentity/token`` of the daemon shown to, for the
    ///   handles of its interactions (the same as the receipt's).
    static func show(_ request: DesktopNotificationRequest, hub: InteractionHub, daemon: String) throws(SinkError) -> UInt32 {
        if notify_is_initted() == 0 { _ = notify_init("notify-route") }
        let context = NotificationContext(hub: hub, daemon: daemon)

        let notification = notify_notification_new(request.summary, request.body, request.icon)!
        if request.replacesID != 0 { nr_notification_set_id(notification, request.replacesID) }
        notify_notification_set_app_name(notification, request.appName)
        notify_notification_set_urgency(notification, NotifyUrgency(UInt32(request.urgency)))
        notify_notification_set_timeout(notification, request.expireTimeout)
        if let category = request.category { notify_notification_set_category(notification, category) }
        for (name, hint) in request.hints.sorted(by: { $0.key < $1.key }) {
            notify_notification_set_hint(notification, name, hint.variant)
        }
        for action in request.actions {
            notify_notification_add_action(
                notification, action.id, action.label, { notification, action, userData in
                    guard let notification, let action, let userData else { return }
                    let context = Unmanaged<NotificationContext>.fromOpaque(userData).takeUnretainedValue()
                    let id = nr_notification_get_id(notification)
                    context.hub.publish(SinkInteraction(handle: context.handle(id), interaction: .actionInvoked(String(cString: action))))
                },
                Unmanaged.passRetained(context).toOpaque(), { userData in
                    if let userData { Unmanaged<NotificationContext>.fromOpaque(userData).release() }
                })
        }
        _ = nr_notification_connect_closed(notification, { notification, userData in
            guard let notification, let userData else { return }
            let context = Unmanaged<NotificationContext>.fromOpaque(userData).takeUnretainedValue()
            // libnotify resets the id to 0 right after this signal: read it now.
            let id = nr_notification_get_id(notification)
            let reason: DismissReason = switch notify_notification_get_closed_reason(notification) {
            case 1: .expired
            case 2: .dismissed
            case 3: .closed
            default: .undefined
            }
            context.hub.publish(SinkInteraction(handle: context.handle(id), interaction: .dismissed(reason)))
            let object = NotificationObject(notification)
            // Not while libnotify is still emitting on the object: on the next turn of the loop.
            GLibLoopThread.running.submit { LibNotifyPresenter.forget(id: id, object: object) }
        }, Unmanaged.passRetained(context).toOpaque(), { userData, _ in
            if let userData { Unmanaged<NotificationContext>.fromOpaque(userData).release() }
        })

        var error: UnsafeMutablePointer<GError>?
        guard notify_notification_show(notification, &error) != 0 else {
            // Let go of it on a later turn, after the caller has its answer: its dispose
            // may itself wait on the daemon.
            let object = NotificationObject(notification)
            GLibLoopThread.running.submit { nr_notification_unref(object.pointer) }
            throw NotificationServerProbe.failure(error, method: "Notify", timeout: .seconds(25))
        }
        let id = nr_notification_get_id(notification)
        remember(id: id, object: NotificationObject(notification))
        return id
    }

    /// Tells the hub's streams that `id` is shown. Called after the delivery's caller is
    /// resumed: each stream's consumer is a task to wake, which the answer need not wait for.
    static func shown(_ id: UInt32, hub: InteractionHub, daemon: String) {
        hub.publish(SinkInteraction(handle: DesktopHandle(id: id, daemon: daemon).sinkHandle, interaction: .shown))
    }

    /// Lets go of every notification and of libnotify's proxy, after the session bus went
    /// away: the next `show` makes a new proxy on the new connection. The objects are
    /// released while the old proxy still exists (their finalizer looks the proxy up, and
    /// would otherwise make a new one to disconnect from).
    static func reset() {
        let released = live.withLock { live in
            defer { live.removeAll() }
            return live.map(\.object)
        }
        for object in released { nr_notification_unref(object.pointer) }
        if notify_is_initted() != 0 { notify_uninit() }
    }

    /// Keeps `object` as the one notification for `id`; the one it replaces (same id) is
    /// let go, so one action is never reported twice.
    private static func remember(id: UInt32, object: NotificationObject) {
        let released = live.withLock { live in
            var released: [NotificationObject] = []
            if let index = live.firstIndex(where: { $0.id == id }) { released.append(live.remove(at: index).object) }
            live.append((id, object))
            while live.count > liveLimit { released.append(live.removeFirst().object) }
            return released
        }
        for old in released { nr_notification_unref(old.pointer) }
    }

    private static func forget(id: UInt32, object: NotificationObject) {
        let found = live.withLock { live in
            guard let index = live.firstIndex(where: { $0.id == id && $0.object.pointer == object.pointer }) else { return false }
            live.remove(at: index)
            return true
        }
        if found { nr_notification_unref(object.pointer) }
    }
}

/// What a notification's signal handlers need: where to publish, and the daemon for the handle.
private final class NotificationContext: Sendable {
    let hub: InteractionHub
    let daemon: String
    init(hub: InteractionHub, daemon: String) {
        self.hub = hub
        self.daemon = daemon
    }

    func handle(_ id: UInt32) -> SinkHandle { DesktopHandle(id: id, daemon: daemon).sinkHandle }
}

/// A `NotifyNotification` we hold a reference to.
///
/// `@unchecked Sendable`: raw pointers are not `Sendable`, and GObjects are not
/// thread-safe; these are created, used and released only on the GLib thread (the
/// closures that carry them are all submitted to it).
private struct NotificationObject: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

extension DesktopHint {
    /// A floating GVariant; `notify_notification_set_hint` sinks it.
    var variant: OpaquePointer {
        switch self {
        case .string(let value): g_variant_new_string(value)
        case .boolean(let value): g_variant_new_boolean(value ? 1 : 0)
        case .int32(let value): g_variant_new_int32(value)
        case .byte(let value): g_variant_new_byte(value)
        }
    }
}
