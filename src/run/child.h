/*
 * child.h - the training command of `gpulse run` as a child process.
 *
 * The child is forked first and held at a gate (a pipe it reads until
 * EOF) so the sampler can be told its pid and be running before the
 * command's first instruction: the job is tracked from its first second.
 * gp_child_release opens the gate; the child then execs and a close-on-
 * exec pipe tells the parent whether exec worked (and its errno if not),
 * so "command not found" is reported by gpulse with the shell's 127.
 *
 * The child gets the signal mask and dispositions gpulse had before it
 * blocked signals for its own sigwait loop, so the command sees SIGINT,
 * SIGTERM... as if it had been started by the shell.
 */
#ifndef GP_RUN_CHILD_H
#define GP_RUN_CHILD_H

#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct gp_child {
    pid_t pid;      /* > 0 once spawned */
    int gate_fd;    /* parent's write end of the gate; -1 once released */
    int err_fd;     /* parent's read end of the exec-error pipe; -1 once read */
};

/*
 * Forks argv (argv[0] looked up in PATH) with NAME=VALUE strings from
 * env_add set in its environment, held at the gate. child_mask is the
 * signal mask the command starts with. Returns GP_OK or an error with
 * detail; nothing is left behind on error.
 */
int gp_child_spawn(struct gp_child *c, char *const argv[], char *const env_add[],
                   const sigset_t *child_mask, char *err, size_t errlen);

/*
 * Opens the gate and waits for the exec. GP_OK when the command runs;
 * GP_ENOTFOUND (*exec_errno ENOENT) or GP_EIO (*exec_errno set) when exec
 * failed: the child has then exited with 127 or 126 and been reaped.
 */
int gp_child_release(struct gp_child *c, int *exec_errno);

/*
 * Reaps the child if it has ended: 1 with *status (waitpid's) and *ru
 * (its resources, its waited-for descendants included) filled, 0 while
 * it runs, an error code on failure.
 */
int gp_child_reap(struct gp_child *c, int *status, struct rusage *ru);

/* Kills and reaps a child that must not outlive an error of gpulse. */
void gp_child_abort(struct gp_child *c);

/* The exit code the shell would give for a waitpid status (128 + signal). */
int gp_child_exit_code(int status);

#endif
