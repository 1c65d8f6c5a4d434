#ifndef NOTIFY_ROUTE_CLIBNOTIFY_SHIM_H
#define NOTIFY_ROUTE_CLIBNOTIFY_SHIM_H

#include <libnotify/notify.h>
#include <gio/gio.h>

// Swift cannot call variadic C functions (g_object_get/set, g_signal_connect's
// macro) nor use GLib's type macros, so the desktop plugin goes through these.

/// The notification's "id" property: 0 until shown, then the server-assigned id.
static inline guint32 nr_notification_get_id(NotifyNotification *notification) {
    gint id = 0;
    g_object_get(notification, "id", &id, NULL);
    return (guint32)id;
}

/// Setting "id" before show makes Notify carry it as replaces_id, so a notification
/// shown by another process (or an object we no longer hold) is updated in place.
static inline void nr_notification_set_id(NotifyNotification *notification, guint32 id) {
    g_object_set(notification, "id", (gint)id, NULL);
}

typedef void (*nr_closed_callback)(NotifyNotification *notification, gpointer user_data);

/// g_signal_connect_data for "closed", with a destroy notify that releases user_data.
static inline gulong nr_notification_connect_closed(
    NotifyNotification *notification, nr_closed_callback callback, gpointer user_data, GClosureNotify destroy) {
    return g_signal_connect_data(notification, "closed", G_CALLBACK(callback), user_data, destroy, (GConnectFlags)0);
}

static inline void nr_notification_unref(NotifyNotification *notification) {
    g_object_unref(notification);
}

/// A GVariantType from its text ("(ssss)"); static storage, never freed.
static inline const GVariantType *nr_variant_type(const gchar *text) {
    return G_VARIANT_TYPE(text);
}

/// "()" for methods without arguments.
static inline GVariant *nr_variant_new_unit(void) {
    return g_variant_new_tuple(NULL, 0);
}

/// "(u)": CloseNotification's argument.
static inline GVariant *nr_variant_new_uint32_tuple(guint32 value) {
    GVariant *child = g_variant_new_uint32(value);
    return g_variant_new_tuple(&child, 1);
}

static inline GQuark nr_io_error_quark(void) { return G_IO_ERROR; }
static inline GQuark nr_dbus_error_quark(void) { return G_DBUS_ERROR; }

#endif
