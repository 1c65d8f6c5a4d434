#ifndef NOTIFY_ROUTE_CLIBNOTIFY_H
#define NOTIFY_ROUTE_CLIBNOTIFY_H

// The part of libnotify, GLib and GIO the desktop plugin uses, declared here (GLib's
// ABI is stable) and resolved at run time: `notify-route` does not link libnotify, so
// a command that shows no desktop notification never maps it (nor the 20-odd GLib and
// gdk-pixbuf libraries it pulls in). Call nr_libnotify_load() once before anything
// else here; every other function goes through the table it fills.
//
// The wrappers are static inline (local to each object file), so they never interpose
// on GLib's own exported symbols of the same name.

#include <stddef.h>
#include <stdint.h>

// MARK: GLib types

typedef char gchar;
typedef int gint;
typedef gint gboolean;
typedef unsigned int guint;
typedef uint32_t guint32;
typedef int32_t gint32;
typedef uint8_t guint8;
typedef unsigned long gulong;
typedef size_t gsize;
typedef void *gpointer;
typedef guint32 GQuark;

/// GLib's GError: public and stable since GLib 2.0.
typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;

typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;
typedef struct _GMainContext GMainContext;
typedef struct _GMainLoop GMainLoop;
typedef struct _GSource GSource;
typedef struct _GClosure GClosure;
typedef struct _GCancellable GCancellable;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _NotifyNotification NotifyNotification;

typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef void (*GDestroyNotify)(gpointer data);
typedef void (*GFreeFunc)(gpointer data);
typedef void (*GClosureNotify)(gpointer data, GClosure *closure);
typedef void (*NotifyActionCallback)(NotifyNotification *notification, char *action, gpointer user_data);

#define G_PRIORITY_DEFAULT 0

typedef enum { G_BUS_TYPE_SESSION = 2 } GBusType;

typedef enum {
    G_CONNECT_AFTER = 1,
    G_CONNECT_SWAPPED = 2
} GConnectFlags;

typedef enum {
    G_DBUS_CALL_FLAGS_NONE = 0,
    G_DBUS_CALL_FLAGS_NO_AUTO_START = 1
} GDBusCallFlags;

/// The GDBusError codes the plugin tells apart (gioenums.h).
typedef enum {
    G_DBUS_ERROR_SERVICE_UNKNOWN = 2,
    G_DBUS_ERROR_NAME_HAS_NO_OWNER = 3,
    G_DBUS_ERROR_NO_REPLY = 4,
    G_DBUS_ERROR_TIMEOUT = 12,
    G_DBUS_ERROR_TIMED_OUT = 20
} GDBusError;

/// The GIOErrorEnum codes the plugin tells apart (gioenums.h).
typedef enum {
    G_IO_ERROR_CLOSED = 18,
    G_IO_ERROR_TIMED_OUT = 24
} GIOErrorEnum;

typedef enum {
    NOTIFY_URGENCY_LOW = 0,
    NOTIFY_URGENCY_NORMAL = 1,
    NOTIFY_URGENCY_CRITICAL = 2
} NotifyUrgency;

// MARK: Loading

/// Loads libnotify (`libnotify.so.4`, or `$NOTIFY_ROUTE_TEST_LIBNOTIFY` when set: for
/// tests only) and resolves every function below, once per process, thread-safe.
///
/// Returns NULL when everything resolved, otherwise why not (static storage), e.g.
/// "libnotify.so.4 could not be loaded: ...; install libnotify4".
const char *nr_libnotify_load(void);

/// The resolved functions; filled by nr_libnotify_load(), read-only afterwards.
struct nr_libnotify_api {
    // libnotify
    gboolean (*notify_init)(const char *app_name);
    gboolean (*notify_is_initted)(void);
    void (*notify_uninit)(void);
    NotifyNotification *(*notify_notification_new)(const char *summary, const char *body, const char *icon);
    void (*notify_notification_set_app_name)(NotifyNotification *, const char *);
    void (*notify_notification_set_urgency)(NotifyNotification *, NotifyUrgency);
    void (*notify_notification_set_timeout)(NotifyNotification *, gint);
    void (*notify_notification_set_category)(NotifyNotification *, const char *);
    void (*notify_notification_set_hint)(NotifyNotification *, const char *, GVariant *);
    void (*notify_notification_add_action)(NotifyNotification *, const char *action, const char *label,
                                           NotifyActionCallback, gpointer, GFreeFunc);
    gboolean (*notify_notification_show)(NotifyNotification *, GError **);
    gint (*notify_notification_get_closed_reason)(const NotifyNotification *);
    // GObject
    void (*g_object_get)(gpointer object, const gchar *first_property_name, ...);
    void (*g_object_set)(gpointer object, const gchar *first_property_name, ...);
    void (*g_object_unref)(gpointer object);
    gulong (*g_signal_connect_data)(gpointer instance, const gchar *signal, void (*handler)(void), gpointer data,
                                    GClosureNotify destroy, GConnectFlags flags);
    // GLib
    void (*g_error_free)(GError *);
    void (*g_free)(gpointer);
    GMainContext *(*g_main_context_new)(void);
    void (*g_main_context_push_thread_default)(GMainContext *);
    GMainLoop *(*g_main_loop_new)(GMainContext *, gboolean is_running);
    void (*g_main_loop_run)(GMainLoop *);
    GSource *(*g_idle_source_new)(void);
    void (*g_source_set_priority)(GSource *, gint);
    void (*g_source_set_callback)(GSource *, GSourceFunc, gpointer, GDestroyNotify);
    guint (*g_source_attach)(GSource *, GMainContext *);
    void (*g_source_unref)(GSource *);
    GVariant *(*g_variant_new_boolean)(gboolean);
    GVariant *(*g_variant_new_byte)(guint8);
    GVariant *(*g_variant_new_int32)(gint32);
    GVariant *(*g_variant_new_uint32)(guint32);
    GVariant *(*g_variant_new_string)(const gchar *);
    GVariant *(*g_variant_new_tuple)(GVariant *const *children, gsize n_children);
    GVariant *(*g_variant_get_child_value)(GVariant *, gsize index);
    const gchar *(*g_variant_get_string)(GVariant *, gsize *length);
    gsize (*g_variant_n_children)(GVariant *);
    void (*g_variant_unref)(GVariant *);
    // GIO
    GQuark (*g_io_error_quark)(void);
    GQuark (*g_dbus_error_quark)(void);
    gchar *(*g_dbus_error_get_remote_error)(const GError *);
    GDBusConnection *(*g_bus_get_sync)(GBusType, GCancellable *, GError **);
    gboolean (*g_dbus_connection_is_closed)(GDBusConnection *);
    void (*g_dbus_connection_set_exit_on_close)(GDBusConnection *, gboolean);
    const gchar *(*g_dbus_connection_get_guid)(GDBusConnection *);
    GVariant *(*g_dbus_connection_call_sync)(GDBusConnection *, const gchar *bus_name, const gchar *object_path,
                                             const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                                             const GVariantType *reply_type, GDBusCallFlags flags, gint timeout_msec,
                                             GCancellable *, GError **);
};

extern struct nr_libnotify_api nr_libnotify;

/// Names the calling thread (at most 15 bytes), as `ps -L` and debuggers show it.
void nr_name_current_thread(const char *name);

// MARK: libnotify

static inline gboolean notify_init(const char *app_name) { return nr_libnotify.notify_init(app_name); }
static inline gboolean notify_is_initted(void) { return nr_libnotify.notify_is_initted(); }
static inline void notify_uninit(void) { nr_libnotify.notify_uninit(); }
static inline NotifyNotification *notify_notification_new(const char *summary, const char *body, const char *icon) {
    return nr_libnotify.notify_notification_new(summary, body, icon);
}
static inline void notify_notification_set_app_name(NotifyNotification *n, const char *name) {
    nr_libnotify.notify_notification_set_app_name(n, name);
}
static inline void notify_notification_set_urgency(NotifyNotification *n, NotifyUrgency urgency) {
    nr_libnotify.notify_notification_set_urgency(n, urgency);
}
static inline void notify_notification_set_timeout(NotifyNotification *n, gint timeout) {
    nr_libnotify.notify_notification_set_timeout(n, timeout);
}
static inline void notify_notification_set_category(NotifyNotification *n, const char *category) {
    nr_libnotify.notify_notification_set_category(n, category);
}
static inline void notify_notification_set_hint(NotifyNotification *n, const char *key, GVariant *value) {
    nr_libnotify.notify_notification_set_hint(n, key, value);
}
static inline void notify_notification_add_action(NotifyNotification *n, const char *action, const char *label,
                                                  NotifyActionCallback callback, gpointer user_data, GFreeFunc free_func) {
    nr_libnotify.notify_notification_add_action(n, action, label, callback, user_data, free_func);
}
static inline gboolean notify_notification_show(NotifyNotification *n, GError **error) {
    return nr_libnotify.notify_notification_show(n, error);
}
static inline gint notify_notification_get_closed_reason(const NotifyNotification *n) {
    return nr_libnotify.notify_notification_get_closed_reason(n);
}

// MARK: Swift cannot call variadic C functions nor use GLib's macros: these stand in.

/// The notification's "id" property: 0 until shown, then the server-assigned id.
static inline guint32 nr_notification_get_id(NotifyNotification *notification) {
    gint id = 0;
    nr_libnotify.g_object_get(notification, "id", &id, NULL);
    return (guint32)id;
}

/// Setting "id" before show makes Notify carry it as replaces_id, so a notification
/// shown by another process (or an object we no longer hold) is updated in place.
static inline void nr_notification_set_id(NotifyNotification *notification, guint32 id) {
    nr_libnotify.g_object_set(notification, "id", (gint)id, NULL);
}

typedef void (*nr_closed_callback)(NotifyNotification *notification, gpointer user_data);

/// g_signal_connect_data for "closed", with a destroy notify that releases user_data.
static inline gulong nr_notification_connect_closed(
    NotifyNotification *notification, nr_closed_callback callback, gpointer user_data, GClosureNotify destroy) {
    return nr_libnotify.g_signal_connect_data(notification, "closed", (void (*)(void))callback, user_data, destroy, (GConnectFlags)0);
}

static inline void nr_notification_unref(NotifyNotification *notification) {
    nr_libnotify.g_object_unref(notification);
}

/// A GVariantType from its text ("(ssss)"): G_VARIANT_TYPE is a cast of the string.
static inline const GVariantType *nr_variant_type(const gchar *text) {
    return (const GVariantType *)text;
}

/// "()" for methods without arguments.
static inline GVariant *nr_variant_new_unit(void) {
    return nr_libnotify.g_variant_new_tuple(NULL, 0);
}

/// "(u)": CloseNotification's argument.
static inline GVariant *nr_variant_new_uint32_tuple(guint32 value) {
    GVariant *child = nr_libnotify.g_variant_new_uint32(value);
    return nr_libnotify.g_variant_new_tuple(&child, 1);
}

/// "(s)": GetNameOwner's argument.
static inline GVariant *nr_variant_new_string_tuple(const gchar *value) {
    GVariant *child = nr_libnotify.g_variant_new_string(value);
    return nr_libnotify.g_variant_new_tuple(&child, 1);
}

static inline GQuark nr_io_error_quark(void) { return nr_libnotify.g_io_error_quark(); }
static inline GQuark nr_dbus_error_quark(void) { return nr_libnotify.g_dbus_error_quark(); }
static inline gchar *g_dbus_error_get_remote_error(const GError *error) { return nr_libnotify.g_dbus_error_get_remote_error(error); }
static inline void g_free(gpointer memory) { nr_libnotify.g_free(memory); }

// MARK: GLib, GObject, GIO

static inline void g_object_unref(gpointer object) { nr_libnotify.g_object_unref(object); }
static inline void g_error_free(GError *error) { nr_libnotify.g_error_free(error); }
static inline GMainContext *g_main_context_new(void) { return nr_libnotify.g_main_context_new(); }
static inline void g_main_context_push_thread_default(GMainContext *context) {
    nr_libnotify.g_main_context_push_thread_default(context);
}
static inline GMainLoop *g_main_loop_new(GMainContext *context, gboolean is_running) {
    return nr_libnotify.g_main_loop_new(context, is_running);
}
static inline void g_main_loop_run(GMainLoop *loop) { nr_libnotify.g_main_loop_run(loop); }
static inline GSource *g_idle_source_new(void) { return nr_libnotify.g_idle_source_new(); }
static inline void g_source_set_priority(GSource *source, gint priority) { nr_libnotify.g_source_set_priority(source, priority); }
static inline void g_source_set_callback(GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify) {
    nr_libnotify.g_source_set_callback(source, func, data, notify);
}
static inline guint g_source_attach(GSource *source, GMainContext *context) { return nr_libnotify.g_source_attach(source, context); }
static inline void g_source_unref(GSource *source) { nr_libnotify.g_source_unref(source); }
static inline GVariant *g_variant_new_boolean(gboolean value) { return nr_libnotify.g_variant_new_boolean(value); }
static inline GVariant *g_variant_new_byte(guint8 value) { return nr_libnotify.g_variant_new_byte(value); }
static inline GVariant *g_variant_new_int32(gint32 value) { return nr_libnotify.g_variant_new_int32(value); }
static inline GVariant *g_variant_new_string(const gchar *value) { return nr_libnotify.g_variant_new_string(value); }
static inline GVariant *g_variant_get_child_value(GVariant *value, gsize index) {
    return nr_libnotify.g_variant_get_child_value(value, index);
}
static inline const gchar *g_variant_get_string(GVariant *value, gsize *length) {
    return nr_libnotify.g_variant_get_string(value, length);
}
static inline gsize g_variant_n_children(GVariant *value) { return nr_libnotify.g_variant_n_children(value); }
static inline void g_variant_unref(GVariant *value) { nr_libnotify.g_variant_unref(value); }
static inline GDBusConnection *g_bus_get_sync(GBusType type, GCancellable *cancellable, GError **error) {
    return nr_libnotify.g_bus_get_sync(type, cancellable, error);
}
static inline gboolean g_dbus_connection_is_closed(GDBusConnection *connection) {
    return nr_libnotify.g_dbus_connection_is_closed(connection);
}
static inline void g_dbus_connection_set_exit_on_close(GDBusConnection *connection, gboolean exit_on_close) {
    nr_libnotify.g_dbus_connection_set_exit_on_close(connection, exit_on_close);
}
static inline const gchar *g_dbus_connection_get_guid(GDBusConnection *connection) {
    return nr_libnotify.g_dbus_connection_get_guid(connection);
}
static inline GVariant *g_dbus_connection_call_sync(
    GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name,
    const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags,
    gint timeout_msec, GCancellable *cancellable, GError **error) {
    return nr_libnotify.g_dbus_connection_call_sync(connection, bus_name, object_path, interface_name, method_name,
                                                   parameters, reply_type, flags, timeout_msec, cancellable, error);
}

#endif
