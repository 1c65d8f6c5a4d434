#define _GNU_SOURCE
#include "CLibNotify.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct nr_libnotify_api nr_libnotify;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error = NULL;
static char load_message[1024];

/// Resolves NAME into the table's member of the same name; stops at the first miss.
#define RESOLVE(name)                                                                                   \
    do {                                                                                                \
        void *symbol = dlsym(handle, #name);                                                            \
        if (symbol == NULL) {                                                                           \
            snprintf(load_message, sizeof load_message, "%s has no %s: %s (libnotify 0.7 or later is needed)", \
                     soname, #name, dlerror());                                                         \
            load_error = load_message;                                                                  \
            return;                                                                                     \
        }                                                                                               \
        *(void **)(&nr_libnotify.name) = symbol;                                                        \
    } while (0)

static void load(void) {
    // Tests point this at a missing library to see the sink report it; nothing else should.
    const char *soname = getenv("NOTIFY_ROUTE_TEST_LIBNOTIFY");
    if (soname == NULL || soname[0] == '\0') soname = "libnotify.so.4";
    // Local: GLib's symbols stay out of the global namespace. The g_* functions resolve
    // through the same handle, from libnotify's own dependencies (GIO, GObject, GLib).
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(load_message, sizeof load_message, "%s could not be loaded: %s; install libnotify4", soname, dlerror());
        load_error = load_message;
        return;
    }
    RESOLVE(notify_init);
    RESOLVE(notify_is_initted);
    RESOLVE(notify_uninit);
    RESOLVE(notify_notification_new);
    RESOLVE(notify_notification_set_app_name);
    RESOLVE(notify_notification_set_urgency);
    RESOLVE(notify_notification_set_timeout);
    RESOLVE(notify_notification_set_category);
    RESOLVE(notify_notification_set_hint);
    RESOLVE(notify_notification_add_action);
    RESOLVE(notify_notification_show);
    RESOLVE(notify_notification_get_closed_reason);
    RESOLVE(g_object_get);
    RESOLVE(g_object_set);
    RESOLVE(g_object_unref);
    RESOLVE(g_signal_connect_data);
    RESOLVE(g_error_free);
    RESOLVE(g_free);
    RESOLVE(g_main_context_new);
    RESOLVE(g_main_context_push_thread_default);
    RESOLVE(g_main_loop_new);
    RESOLVE(g_main_loop_run);
    RESOLVE(g_idle_source_new);
    RESOLVE(g_source_set_priority);
    RESOLVE(g_source_set_callback);
    RESOLVE(g_source_attach);
    RESOLVE(g_source_unref);
    RESOLVE(g_variant_new_boolean);
    RESOLVE(g_variant_new_byte);
    RESOLVE(g_variant_new_int32);
    RESOLVE(g_variant_new_uint32);
    RESOLVE(g_variant_new_string);
    RESOLVE(g_variant_new_tuple);
    RESOLVE(g_variant_get_child_value);
    RESOLVE(g_variant_get_string);
    RESOLVE(g_variant_n_children);
    RESOLVE(g_variant_unref);
    RESOLVE(g_io_error_quark);
    RESOLVE(g_dbus_error_quark);
    RESOLVE(g_dbus_error_get_remote_error);
    RESOLVE(g_bus_get_sync);
    RESOLVE(g_dbus_connection_is_closed);
    RESOLVE(g_dbus_connection_set_exit_on_close);
    RESOLVE(g_dbus_connection_get_guid);
    RESOLVE(g_dbus_connection_call_sync);
    // The handle stays open for the life of the process.
}

const char *nr_libnotify_load(void) {
    pthread_once(&load_once, load);
    return load_error;
}

void nr_name_current_thread(const char *name) {
    pthread_setname_np(pthread_self(), name);
}
