#define _GNU_SOURCE
#include "CTetheredSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child, between fork and execve, only async-signal-safe calls: the parent has
 * other threads, whose locks the child inherits in whatever state they were. */
static void notify_route_child(const char *path, char *const argv[], char *const envp[], int stderr_fd,
                               int death_signal, pid_t parent, int report) {
    struct sigaction fallback = {0};
    fallback.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; signal_number++) {
        if (signal_number != SIGKILL && signal_number != SIGSTOP) sigaction(signal_number, &fallback, NULL);
    }
    if (prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0) < 0) goto failed;
    /* The parent died before the prctl: nothing would send the signal now. */
    if (getppid() != parent) _exit(128 + death_signal);
    if (stderr_fd >= 0 && stderr_fd != STDERR_FILENO && dup2(stderr_fd, STDERR_FILENO) < 0) goto failed;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
failed:;
    int code = errno;
    while (write(report, &code, sizeof code) < 0 && errno == EINTR) {}
    _exit(127);
}

int notify_route_spawn_tethered(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                                int stderr_fd, int death_signal) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) return errno;
    pid_t parent = getpid();
    /* No signal handler of ours may run in the child before its dispositions are reset. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t child = fork();
    if (child == 0) notify_route_child(path, argv, envp, stderr_fd, death_signal, parent, report[1]);
    int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(report[1]);
    if (child < 0) {
        close(report[0]);
        return fork_error;
    }
    int code = 0;
    ssize_t got;
    do got = read(report[0], &code, sizeof code); while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof code) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return code;
    }
    *pid = child;
    return 0;
}
