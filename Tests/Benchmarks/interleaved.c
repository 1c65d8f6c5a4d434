// interleaved RUNS FILE: runs the commands of FILE (one a line; words split on spaces,
// 'single quotes' keep spaces) in turn, run by run: the first, the second, ..., then
// the first again, RUNS times after 5 warm-up turns, and prints each command's median
// wall time with its quartiles.
//
// hyperfine runs all of one command's runs, then all of the next's: on this VM the
// machine's speed drifts by 10-20 % over a minute, and that drift lands on one command
// and not the other. Run by run, each command sees the same drift (client-ab.sh).
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

enum { MAX_COMMANDS = 16, MAX_WORDS = 64 };

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// Splits `line` in place into at most MAX_WORDS - 1 words; returns how many.
static int split(char *line, char **words) {
    int count = 0;
    char *p = line;
    while (*p && count < MAX_WORDS - 1) {
        while (*p == ' ') p++;
        if (!*p) break;
        char end = ' ';
        if (*p == '\'') { end = '\''; p++; }
        words[count++] = p;
        while (*p && *p != end) p++;
        if (*p) *p++ = 0;
    }
    words[count] = NULL;
    return count;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: interleaved RUNS FILE\n");
        return 64;
    }
    int runs = atoi(argv[1]);
    FILE *file = fopen(argv[2], "r");
    if (!file) { perror(argv[2]); return 66; }
    char *lines[MAX_COMMANDS], *words[MAX_COMMANDS][MAX_WORDS];
    int commands = 0;
    char buffer[8192];
    while (commands < MAX_COMMANDS && fgets(buffer, sizeof buffer, file)) {
        buffer[strcspn(buffer, "\n")] = 0;
        if (!*buffer) continue;
        lines[commands] = strdup(buffer);
        char *copy = strdup(buffer);
        if (split(copy, words[commands]) > 0) commands++;
    }
    fclose(file);
    double *times[MAX_COMMANDS];
    for (int c = 0; c < commands; c++) times[c] = calloc(runs, sizeof(double));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    for (int run = -5; run < runs; run++) {
        for (int c = 0; c < commands; c++) {
            struct timespec start, end;
            pid_t pid;
            int status;
            clock_gettime(CLOCK_MONOTONIC, &start);
            if (posix_spawn(&pid, words[c][0], &actions, NULL, words[c], environ) != 0) { perror(words[c][0]); return 1; }
            waitpid(pid, &status, 0);
            clock_gettime(CLOCK_MONOTONIC, &end);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "interleaved: %s exited with %d\n", lines[c], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                return 1;
            }
            if (run >= 0) times[c][run] = (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
        }
    }
    for (int c = 0; c < commands; c++) {
        qsort(times[c], runs, sizeof(double), compare);
        printf("median_ms=%.3f p25_ms=%.3f p75_ms=%.3f command=%s\n", times[c][runs / 2], times[c][runs / 4], times[c][3 * runs / 4], lines[c]);
    }
    return 0;
}
