#include "CSystemdJournal.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- libsystemd, loaded on first use ---- */

typedef int (*notify_route_sendv_function)(const struct iovec *iov, int n);

static pthread_once_t notify_route_load_once = PTHREAD_ONCE_INIT;
/* Written once inside pthread_once, read only after it: pthread_once orders the accesses. */
static notify_route_sendv_function notify_route_sendv;
static char notify_route_load_failure[512];

static void notify_route_load_libsystemd(void) {
    /* RTLD_LOCAL: its symbols serve this lookup only; never unloaded. */
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(notify_route_load_failure, sizeof notify_route_load_failure, "%s",
                 reason != NULL ? reason : "libsystemd.so.0: cannot be loaded");
        return;
    }
    void *symbol = dlsym(library, "sd_journal_sendv");
    if (symbol == NULL) {
        const char *reason = dlerror();
        snprintf(notify_route_load_failure, sizeof notify_route_load_failure, "%s",
                 reason != NULL ? reason : "libsystemd.so.0 has no sd_journal_sendv");
        return;
    }
    notify_route_sendv = (notify_route_sendv_function)symbol;
}

int notify_route_journal_load(void) {
    pthread_once(&notify_route_load_once, notify_route_load_libsystemd);
    return notify_route_sendv != NULL ? 0 : -ELIBACC;
}

const char *notify_route_journal_load_error(void) {
    return notify_route_journal_load() == 0 ? NULL : notify_route_load_failure;
}

int notify_route_journal_sendv(const struct iovec *iov, int n) {
    if (notify_route_journal_load() < 0) return -ELIBACC;
    return notify_route_sendv(iov, n);
}

/* ---- journald's socket ---- */

int notify_route_journal_socket_present(const char *path) {
    struct stat st;
    if (stat(path, &st) < 0) return -errno;
    if (!S_ISSOCK(st.st_mode)) return -ENOTSOCK;
    return 0;
}

static int notify_route_address(const char *path, struct sockaddr_un *address) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    size_t length = strlen(path);
    if (length >= sizeof address->sun_path) return -ENAMETOOLONG;
    memcpy(address->sun_path, path, length);
    return 0;
}

int notify_route_journal_connect(const char *path) {
    struct sockaddr_un address;
    int invalid = notify_route_address(path, &address);
    if (invalid < 0) return invalid;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int code = errno;
        close(fd);
        return -code;
    }
    return fd;
}

int notify_route_journal_probe(const char *path) {
    int present = notify_route_journal_socket_present(path);
    if (present < 0) return present;
    int fd = notify_route_journal_connect(path);
    if (fd < 0) return fd;
    close(fd);
    return 0;
}

int notify_route_journal_send_nowait(int fd, const void *datagram, size_t size, int timeout_ms) {
    for (;;) {
        if (send(fd, datagram, size, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return 0;
        int code = errno;
        if (code == EINTR) continue;
        if ((code != EAGAIN && code != EWOULDBLOCK) || timeout_ms <= 0) return -code;
        /* Journald's queue (or our send buffer) is full: wait for room, at most the rest of
         * the bound, then try once more. A connected Unix datagram socket is reported
         * writable only while the peer's receive queue has room. */
        struct pollfd poller = {.fd = fd, .events = POLLOUT};
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        int ready = poll(&poller, 1, timeout_ms);
        if (ready < 0 && errno != EINTR) return -errno;
        if (ready == 0) return -EAGAIN;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        timeout_ms = spent >= timeout_ms ? 0 : timeout_ms - (int)spent;
    }
}

int notify_route_journal_writable(int fd, int timeout_ms) {
    struct pollfd poller = {.fd = fd, .events = POLLOUT};
    int ready;
    do ready = poll(&poller, 1, timeout_ms); while (ready < 0 && errno == EINTR);
    if (ready < 0) return -errno;
    return ready > 0 && (poller.revents & POLLOUT) ? 1 : 0;
}

void notify_route_journal_close(int fd) {
    close(fd);
}
