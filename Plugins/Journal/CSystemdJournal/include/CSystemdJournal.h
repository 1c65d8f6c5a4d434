#ifndef NOTIFY_ROUTE_CSYSTEMDJOURNAL_H
#define NOTIFY_ROUTE_CSYSTEMDJOURNAL_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The journal sink's C side. libsystemd is not linked: it is loaded with dlopen the
 * first time a record needs sd_journal_sendv (a `notify-route --version`, or a send
 * whose records all go the fast way, maps none of libsystemd, libgcrypt, lz4, zstd...).
 * Only libc headers: no <systemd/sd-journal.h>, no -I paths. Every function returns 0
 * or a negative errno, as libsystemd does. */

/* Loads libsystemd.so.0 and resolves sd_journal_sendv, once per process (thread-safe).
 * 0, or -ELIBACC when it cannot be loaded (the reason: notify_route_journal_load_error). */
int notify_route_journal_load(void);

/* Why libsystemd could not be loaded (dlerror's words); NULL when it was. */
const char *notify_route_journal_load_error(void);

/* sd_journal_sendv from libsystemd, loaded on first use: -ELIBACC when it cannot be.
 * Writes to /run/systemd/journal/socket on a blocking socket of libsystemd's own: it
 * blocks for as long as journald's receive queue is full (forever when journald hangs). */
int notify_route_journal_sendv(const struct iovec *iov, int n);

/* 0 when `path` exists and is a socket, otherwise a negative errno
 * (-ENOENT absent, -ENOTSOCK something else is there). One stat(2). */
int notify_route_journal_socket_present(const char *path);

/* 0 when someone is bound to the datagram socket at `path`, otherwise a negative errno
 * (-ENOENT absent, -ECONNREFUSED a stale socket left by a journald that is gone).
 * connect(2) on a Unix datagram socket only records the peer: it never waits, even
 * when journald is hung, so this is safe as a probe. */
int notify_route_journal_probe(const char *path);

/* A non-blocking datagram socket connect()ed to `path`: the descriptor (>= 0), or a
 * negative errno (-ENOENT absent, -ECONNREFUSED stale). Connected, so that poll(2)
 * reports it not writable while journald's receive queue is full. */
int notify_route_journal_connect(const char *path);

/* Sends one datagram of journald's native protocol on a socket from
 * notify_route_journal_connect, waiting at most `timeout_ms` (0: not at all) for
 * journald's queue to have room. 0 when journald took it; -EAGAIN when its queue stayed
 * full (hung or overloaded); -EMSGSIZE/-ENOBUFS when it is too big for one datagram
 * (sd_journal_sendv passes such records in a memfd); -ECONNREFUSED/-ENOTCONN when the
 * journald it was connected to is gone. Never blocks past `timeout_ms`. */
int notify_route_journal_send_nowait(int fd, const void *datagram, size_t size, int timeout_ms);

/* 1 when journald's receive queue has room for a datagram on a socket from
 * notify_route_journal_connect (poll(2) for POLLOUT, waiting at most `timeout_ms`), 0 when
 * it stayed full (journald not reading), or a negative errno. */
int notify_route_journal_writable(int fd, int timeout_ms);

/* close(2), for Swift code that imports no libc module for it. */
void notify_route_journal_close(int fd);

#endif
