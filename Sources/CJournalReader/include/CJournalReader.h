#ifndef NOTIFY_ROUTE_CJOURNALREADER_H
#define NOTIFY_ROUTE_CJOURNALREADER_H

#include <stddef.h>
#include <stdint.h>

/* Reading the journal (sd-journal), for the daemon's sources. libsystemd is not linked:
 * it is loaded with dlopen when a source first opens the journal, so a `send` (which
 * links this module through the daemon's code) maps none of it. Only libc headers: no
 * <systemd/sd-journal.h>. Every function returns 0 (or a count) or a negative errno,
 * as libsystemd does; a `journal` is an sd_journal pointer. */

/* Loads libsystemd.so.0 and resolves the sd_journal functions, once per process
 * (thread-safe). 0, or -ELIBACC (the reason: notify_route_reader_load_error). */
int notify_route_reader_load(void);
const char *notify_route_reader_load_error(void);

/* sd_journal_open's flags. */
enum {
    NOTIFY_ROUTE_JOURNAL_LOCAL_ONLY = 1 << 0,
    NOTIFY_ROUTE_JOURNAL_SYSTEM = 1 << 2,
    NOTIFY_ROUTE_JOURNAL_CURRENT_USER = 1 << 3,
};

int notify_route_reader_open(void **journal, int flags);
void notify_route_reader_close(void *journal);

int notify_route_reader_add_match(void *journal, const void *data, size_t size);
int notify_route_reader_add_disjunction(void *journal);
int notify_route_reader_add_conjunction(void *journal);
void notify_route_reader_flush_matches(void *journal);

int notify_route_reader_seek_head(void *journal);
int notify_route_reader_seek_tail(void *journal);
int notify_route_reader_seek_cursor(void *journal, const char *cursor);
/* > 0 when the current entry is the one `cursor` names. */
int notify_route_reader_test_cursor(void *journal, const char *cursor);
int notify_route_reader_seek_realtime(void *journal, uint64_t usec);

/* 1 moved to the next (previous) entry, 0 at the end, or a negative errno. */
int notify_route_reader_next(void *journal);
int notify_route_reader_previous(void *journal);

/* The current entry's cursor in `buffer` (NUL-terminated, truncated to `size`): its
 * length, or a negative errno. */
int notify_route_reader_cursor(void *journal, char *buffer, size_t size);
int notify_route_reader_realtime(void *journal, uint64_t *usec);

/* The current entry's fields, one `NAME=value` at a time: 1 and the field in
 * `data`/`size` (valid until the next call), 0 after the last. Fields the reader cannot
 * decompress are skipped. */
void notify_route_reader_restart_data(void *journal);
int notify_route_reader_enumerate_data(void *journal, const void **data, size_t *size);

/* Waits until the journal changes, `stop_fd` becomes readable, or `timeout_ms` passes
 * (-1: no limit), then lets sd-journal process what changed (new entries, new or
 * rotated files). 1 when `stop_fd` is readable, 0 otherwise, or a negative errno. */
int notify_route_reader_wait(void *journal, int stop_fd, int timeout_ms);

#endif
