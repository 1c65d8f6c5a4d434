#include "CJournalReader.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- libsystemd, loaded on first use ---- */

static struct {
    int (*open)(void **, int);
    void (*close)(void *);
    int (*add_match)(void *, const void *, size_t);
    int (*add_disjunction)(void *);
    int (*add_conjunction)(void *);
    void (*flush_matches)(void *);
    int (*seek_head)(void *);
    int (*seek_tail)(void *);
    int (*seek_cursor)(void *, const char *);
    int (*test_cursor)(void *, const char *);
    int (*seek_realtime_usec)(void *, uint64_t);
    int (*next)(void *);
    int (*previous)(void *);
    int (*get_cursor)(void *, char **);
    int (*get_realtime_usec)(void *, uint64_t *);
    void (*restart_data)(void *);
    int (*enumerate_data)(void *, const void **, size_t *);
    int (*get_fd)(void *);
    int (*get_events)(void *);
    int (*get_timeout)(void *, uint64_t *);
    int (*process)(void *);
} sd;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* Written once inside pthread_once, read only after it. */
static int loaded;
static char load_failure[512];

static void load_libsystemd(void) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_failure, sizeof load_failure, "%s", reason != NULL ? reason : "libsystemd.so.0: cannot be loaded");
        return;
    }
#define RESOLVE(field, name)                                                                    \
    do {                                                                                        \
        *(void **)(&sd.field) = dlsym(library, name);                                           \
        if (sd.field == NULL) {                                                                 \
            snprintf(load_failure, sizeof load_failure, "libsystemd.so.0 has no %s", name);     \
            return;                                                                             \
        }                                                                                       \
    } while (0)
    RESOLVE(open, "sd_journal_open");
    RESOLVE(close, "sd_journal_close");
    RESOLVE(add_match, "sd_journal_add_match");
    RESOLVE(add_disjunction, "sd_journal_add_disjunction");
    RESOLVE(add_conjunction, "sd_journal_add_conjunction");
    RESOLVE(flush_matches, "sd_journal_flush_matches");
    RESOLVE(seek_head, "sd_journal_seek_head");
    RESOLVE(seek_tail, "sd_journal_seek_tail");
    RESOLVE(seek_cursor, "sd_journal_seek_cursor");
    RESOLVE(test_cursor, "sd_journal_test_cursor");
    RESOLVE(seek_realtime_usec, "sd_journal_seek_realtime_usec");
    RESOLVE(next, "sd_journal_next");
    RESOLVE(previous, "sd_journal_previous");
    RESOLVE(get_cursor, "sd_journal_get_cursor");
    RESOLVE(get_realtime_usec, "sd_journal_get_realtime_usec");
    RESOLVE(restart_data, "sd_journal_restart_data");
    RESOLVE(get_fd, "sd_journal_get_fd");
    RESOLVE(get_events, "sd_journal_get_events");
    RESOLVE(get_timeout, "sd_journal_get_timeout");
    RESOLVE(process, "sd_journal_process");
    /* Skips fields it cannot decompress instead of failing on them (systemd 246). */
    *(void **)(&sd.enumerate_data) = dlsym(library, "sd_journal_enumerate_available_data");
    if (sd.enumerate_data == NULL) RESOLVE(enumerate_data, "sd_journal_enumerate_data");
#undef RESOLVE
    loaded = 1;
}

int notify_route_reader_load(void) {
    pthread_once(&load_once, load_libsystemd);
    return loaded ? 0 : -ELIBACC;
}

const char *notify_route_reader_load_error(void) {
    return notify_route_reader_load() == 0 ? NULL : load_failure;
}

/* ---- sd_journal ---- */

int notify_route_reader_open(void **journal, int flags) {
    int loaded_status = notify_route_reader_load();
    if (loaded_status < 0) return loaded_status;
    return sd.open(journal, flags);
}

void notify_route_reader_close(void *journal) {
    if (journal != NULL && loaded) sd.close(journal);
}

int notify_route_reader_add_match(void *journal, const void *data, size_t size) { return sd.add_match(journal, data, size); }
int notify_route_reader_add_disjunction(void *journal) { return sd.add_disjunction(journal); }
int notify_route_reader_add_conjunction(void *journal) { return sd.add_conjunction(journal); }
void notify_route_reader_flush_matches(void *journal) { sd.flush_matches(journal); }
int notify_route_reader_seek_head(void *journal) { return sd.seek_head(journal); }
int notify_route_reader_seek_tail(void *journal) { return sd.seek_tail(journal); }
int notify_route_reader_seek_cursor(void *journal, const char *cursor) { return sd.seek_cursor(journal, cursor); }
int notify_route_reader_test_cursor(void *journal, const char *cursor) { return sd.test_cursor(journal, cursor); }
int notify_route_reader_seek_realtime(void *journal, uint64_t usec) { return sd.seek_realtime_usec(journal, usec); }
int notify_route_reader_next(void *journal) { return sd.next(journal); }
int notify_route_reader_previous(void *journal) { return sd.previous(journal); }
int notify_route_reader_realtime(void *journal, uint64_t *usec) { return sd.get_realtime_usec(journal, usec); }
void notify_route_reader_restart_data(void *journal) { sd.restart_data(journal); }
int notify_route_reader_enumerate_data(void *journal, const void **data, size_t *size) {
    return sd.enumerate_data(journal, data, size);
}

int notify_route_reader_cursor(void *journal, char *buffer, size_t size) {
    char *cursor = NULL;
    int status = sd.get_cursor(journal, &cursor);
    if (status < 0) return status;
    size_t length = strlen(cursor);
    if (size > 0) {
        size_t copied = length < size - 1 ? length : size - 1;
        memcpy(buffer, cursor, copied);
        buffer[copied] = '\0';
    }
    free(cursor);
    return (int)length;
}

int notify_route_reader_wait(void *journal, int stop_fd, int timeout_ms) {
    int fd = sd.get_fd(journal);
    if (fd < 0) return fd;
    int events = sd.get_events(journal);
    if (events < 0) return events;
    /* sd-journal may ask to be woken earlier (inotify is not everywhere: it then polls). */
    uint64_t until = UINT64_MAX;
    if (sd.get_timeout(journal, &until) >= 0 && until != UINT64_MAX) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t current = (uint64_t)now.tv_sec * 1000000ULL + (uint64_t)now.tv_nsec / 1000ULL;
        int wanted = until <= current ? 0 : (int)((until - current + 999) / 1000);
        if (timeout_ms < 0 || wanted < timeout_ms) timeout_ms = wanted;
    }
    struct pollfd pollers[2] = {{.fd = fd, .events = (short)events}, {.fd = stop_fd, .events = POLLIN}};
    int ready = poll(pollers, stop_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno != EINTR) return -errno;
    if (stop_fd >= 0 && (pollers[1].revents & (POLLIN | POLLHUP))) return 1;
    int processed = sd.process(journal);
    return processed < 0 ? processed : 0;
}
