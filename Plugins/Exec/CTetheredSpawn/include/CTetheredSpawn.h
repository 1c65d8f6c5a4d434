#ifndef NOTIFY_ROUTE_CTETHEREDSPAWN_H
#define NOTIFY_ROUTE_CTETHEREDSPAWN_H

#include <sys/types.h>

/* Starts a child that cannot outlive its parent, for `notify-route run`.
 *
 * posix_spawn cannot set PR_SET_PDEATHSIG, and Swift cannot call prctl (a variadic C
 * function), hence these few lines of C. The kernel sends `death_signal` to the child
 * when the *thread* that called this ends, not the process: call it from a thread that
 * lives until the child has been waited for. The setting survives execve.
 *
 * Like posix_spawn with POSIX_SPAWN_SETSIGMASK and SETSIGDEF: in the child every signal is
 * unblocked and at its default disposition. `stderr_fd` >= 0 becomes its stderr. Returns
 * 0 and the pid in `*pid`, or an errno value (ENOENT, EACCES, ENOEXEC, ...): the child
 * reports a failed execve through a close-on-exec pipe, and has been reaped. */
int notify_route_spawn_tethered(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                                int stderr_fd, int death_signal);

#endif
