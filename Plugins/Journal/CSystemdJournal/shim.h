#include <systemd/sd-journal.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Helpers for the journal sink. sd_journal_sendv() returns 0 and drops the record when
 * journald's socket is absent, so the sink looks at the socket itself before writing.
 * Written in C because S_ISSOCK is a macro and sockaddr_un is awkward from Swift. */

/* 0 when `path` exists and is a socket, otherwise a negative errno
 * (-ENOENT absent, -ENOTSOCK something else is there). One stat(2): cheap enough
 * to run before every write. */
static inline int notify_route_journal_socket_present(const char *path) {
    struct stat st;
    if (stat(path, &st) < 0) return -errno;
    if (!S_ISSOCK(st.st_mode)) return -ENOTSOCK;
    return 0;
}

/* 0 when someone is bound to the datagram socket at `path`, otherwise a negative errno
 * (-ENOENT absent, -ECONNREFUSED a stale socket left by a journald that is gone).
 * connect(2) on a Unix datagram socket only records the peer: it never waits, even
 * when journald is hung, so this is safe as a probe. */
static inline int notify_route_journal_probe(const char *path) {
    int present = notify_route_journal_socket_present(path);
    if (present < 0) return present;
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    size_t length = strlen(path);
    if (length >= sizeof address.sun_path) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, length);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    int result = connect(fd, (struct sockaddr *)&address, sizeof address) < 0 ? -errno : 0;
    close(fd);
    return result;
}
