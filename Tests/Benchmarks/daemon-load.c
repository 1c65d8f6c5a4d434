// Load for `notify-route serve`: N clients, each on its own connection and thread, send
// events as `send` requests of the daemon's protocol, keeping up to WINDOW requests in
// flight (answers come back in order on a connection), and time each event from its
// request written to its answer read. Prints one RESULT line: events/s and latency.
//
//   daemon-load SOCKET CLIENTS EVENTS_PER_CLIENT WINDOW SINK [identical] [refill=read]
//
// Without `identical` every event has its own title (no dedup); with it, all are the same.
// A client refills its window after each answer, one write() an answer (`refill=answer`,
// the default: a chatty client, with kernel time an event of its own); with `refill=read`,
// once it has taken every answer one read() brought, as a pipelining client does.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *socket_path, *sink;
static long per_client, window_size;
static int identical, refill_per_read;
static double *latencies;  // per event, microseconds
static long failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void write_all(int fd, const char *buffer, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, buffer, length);
        if (n < 0) { if (errno == EINTR) continue; perror("write"); exit(1); }
        buffer += n; length -= (size_t)n;
    }
}

struct reader { int fd; char buffer[1 << 16]; size_t start, end; };

// Reads one answer line; returns 1 when it says exit 0.
static int read_answer(struct reader *r) {
    for (;;) {
        char *newline = memchr(r->buffer + r->start, '\n', r->end - r->start);
        if (newline) {
            *newline = 0;
            int ok = strstr(r->buffer + r->start, "\"exit\":0") != NULL;
            r->start = (size_t)(newline - r->buffer) + 1;
            return ok;
        }
        if (r->start > 0) {
            memmove(r->buffer, r->buffer + r->start, r->end - r->start);
            r->end -= r->start; r->start = 0;
        }
        if (r->end == sizeof r->buffer) { fprintf(stderr, "answer line too long\n"); exit(1); }
        ssize_t n = read(r->fd, r->buffer + r->end, sizeof r->buffer - r->end);
        if (n <= 0) { fprintf(stderr, "daemon closed the connection\n"); exit(1); }
        r->end += (size_t)n;
    }
}

static void *client(void *argument) {
    long index = (long)argument;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    strncpy(address.sun_path, socket_path, sizeof address.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) { perror("connect"); exit(1); }
    struct reader *r = calloc(1, sizeof *r);
    r->fd = fd;
    const char *hello = "{\"hello\":\"notify-route\",\"version\":1}\n";
    write_all(fd, hello, strlen(hello));
    read_answer(r);
    double *sent = calloc((size_t)per_client, sizeof *sent);
    double *mine = latencies + index * per_client;
    long written = 0, answered = 0, failed = 0;
    char line[512];
    while (answered < per_client) {
        // Fill the window in one write.
        char batch[1 << 15];
        size_t used = 0;
        while (written < per_client && written - answered < window_size && used + sizeof line < sizeof batch) {
            int length = identical
                ? snprintf(line, sizeof line, "{\"request\":\"send\",\"sinks\":[\"%s\"],\"event\":{\"title\":\"Database down\",\"source\":\"db\",\"level\":\"error\"}}\n", sink)
                : snprintf(line, sizeof line, "{\"request\":\"send\",\"sinks\":[\"%s\"],\"event\":{\"title\":\"event %ld-%ld\",\"source\":\"load\"}}\n", sink, index, written);
            memcpy(batch + used, line, (size_t)length);
            used += (size_t)length;
            sent[written++] = now_us();
        }
        if (used) write_all(fd, batch, used);
        do {
            if (!read_answer(r)) failed++;
            mine[answered] = now_us() - sent[answered];
            answered++;
        } while (refill_per_read && answered < written && memchr(r->buffer + r->start, '\n', r->end - r->start));
    }
    close(fd);
    pthread_mutex_lock(&failures_lock);
    failures += failed;
    pthread_mutex_unlock(&failures_lock);
    return NULL;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: daemon-load SOCKET CLIENTS EVENTS_PER_CLIENT WINDOW SINK [identical] [refill=read]\n"); return 64; }
    socket_path = argv[1];
    long clients = atol(argv[2]);
    per_client = atol(argv[3]);
    window_size = atol(argv[4]);
    sink = argv[5];
    for (int i = 6; i < argc; i++) {
        if (strcmp(argv[i], "identical") == 0) identical = 1;
        else if (strcmp(argv[i], "refill=read") == 0) refill_per_read = 1;
        else if (strcmp(argv[i], "refill=answer") != 0) { fprintf(stderr, "daemon-load: unknown option %s\n", argv[i]); return 64; }
    }
    latencies = calloc((size_t)(clients * per_client), sizeof *latencies);
    pthread_t threads[256];
    double started = now_us();
    for (long i = 0; i < clients; i++) pthread_create(&threads[i], NULL, client, (void *)i);
    for (long i = 0; i < clients; i++) pthread_join(threads[i], NULL);
    double seconds = (now_us() - started) / 1e6;
    long total = clients * per_client;
    qsort(latencies, (size_t)total, sizeof *latencies, compare);
    printf("RESULT daemon-throughput refill=%s clients=%ld events=%ld window=%ld events_per_s=%.0f p50_us=%.0f p99_us=%.0f failed=%ld seconds=%.2f\n",
           refill_per_read ? "read" : "answer", clients, total, window_size, total / seconds, latencies[total / 2], latencies[(long)(total * 0.99)], failures, seconds);
    return failures ? 1 : 0;
}
