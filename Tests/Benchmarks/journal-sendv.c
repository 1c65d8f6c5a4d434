/* The peer of the journal sink's throughput benchmark: a plain C loop of
 * sd_journal_sendv with the fields notify-route writes for a simple event.
 * Built by run.sh at bench time: cc -O2 journal-sendv.c -lsystemd */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    struct timespec a, b;
    long failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        char message[64];
        snprintf(message, sizeof message, "MESSAGE=bench record %ld", i);
        struct iovec iov[4] = {
            {message, strlen(message)},
            {"PRIORITY=6", 10},
            {"SYSLOG_IDENTIFIER=journal-sendv", 31},
            {"NOTIFY_ROUTE_LEVEL=info", 23},
        };
        if (sd_journal_sendv(iov, 4) < 0) failed++;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    /* CPU time per record (user + system), as notify-route-bench prints it: steadier than
     * records/s on a shared machine. */
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu_us = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    printf("RESULT journal-c records=%ld records_per_s=%ld failed=%ld cpu_us_per_record=%.2f\n", n, (long)(n / s), failed,
           n > 0 ? cpu_us / n : 0.0);
    return 0;
}
