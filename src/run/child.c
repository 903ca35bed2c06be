/* child.c - see child.h. */
#include "child.h"

#include "lib/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* environ with the names of env_add replaced. The caller frees the array
 * (not the strings, which belong to environ and env_add). NULL: no memory. */
static char **child_env(char *const env_add[])
{
    size_t n = 0, k = 0;
    while (environ && environ[n])
        n++;
    while (env_add[k])
        k++;
    char **envp = calloc(n + k + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < k && !replaced; j++)
            replaced = !strncmp(environ[i], env_add[j], len);
        if (!replaced)
            envp[m++] = environ[i];
    }
    for (size_t j = 0; j < k; j++)
        envp[m++] = env_add[j];
    envp[m] = NULL;
    return envp;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void run_child(int gate, int errw, char *const argv[], char **envp, const sigset_t *mask)
{
    char c;
    ssize_t r;
    do
        r = read(gate, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 0) /* the parent died or wrote: it gave up on us */
        _exit(127);
    close(gate);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvpe(argv[0], argv, envp);
    int e = errno;
    ssize_t w = write(errw, &e, sizeof e);
    (void)w;
    _exit(e == ENOENT ? 127 : 126);
}

int gp_child_spawn(struct gp_child *c, char *const argv[], char *const env_add[],
                   const sigset_t *child_mask, char *err, size_t errlen)
{
    c->pid = -1;
    c->gate_fd = c->err_fd = -1;
    int gate[2], errp[2];
    if (pipe2(gate, O_CLOEXEC))
        return gp_seterr(err, errlen, GP_EIO, "pipe: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC)) {
        close(gate[0]);
        close(gate[1]);
        return gp_seterr(err, errlen, GP_EIO, "pipe: %s", strerror(errno));
    }
    char **envp = child_env(env_add);
    pid_t pid = envp ? fork() : -1;
    int fork_errno = errno;
    if (pid == 0) {
        close(gate[1]);
        close(errp[0]);
        run_child(gate[0], errp[1], argv, envp, child_mask);
    }
    free(envp);
    close(gate[0]);
    close(errp[1]);
    if (pid < 0) {
        close(gate[1]);
        close(errp[0]);
        return gp_seterr(err, errlen, envp ? GP_EIO : GP_ENOMEM, "cannot start '%s': %s", argv[0],
                         envp ? strerror(fork_errno) : "out of memory");
    }
    c->pid = pid;
    c->gate_fd = gate[1];
    c->err_fd = errp[0];
    return GP_OK;
}

int gp_child_release(struct gp_child *c, int *exec_errno)
{
    *exec_errno = 0;
    close(c->gate_fd);
    c->gate_fd = -1;
    int e = 0;
    ssize_t r;
    do
        r = read(c->err_fd, &e, sizeof e);
    while (r < 0 && errno == EINTR);
    close(c->err_fd);
    c->err_fd = -1;
    if (r != (ssize_t)sizeof e)
        return GP_OK; /* EOF: exec closed the pipe, the command runs */
    *exec_errno = e;
    int status;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->pid = -1;
    return e == ENOENT ? GP_ENOTFOUND : GP_EIO;
}

int gp_child_reap(struct gp_child *c, int *status, struct rusage *ru)
{
    if (c->pid <= 0)
        return GP_EINTERNAL;
    pid_t r = wait4(c->pid, status, WNOHANG, ru);
    if (r == 0)
        return 0;
    if (r < 0)
        return errno == EINTR ? 0 : GP_EIO;
    c->pid = -1;
    return 1;
}

void gp_child_abort(struct gp_child *c)
{
    if (c->gate_fd >= 0) {
        ssize_t w = write(c->gate_fd, "x", 1); /* the child exits at the gate */
        (void)w;
        close(c->gate_fd);
        c->gate_fd = -1;
    }
    if (c->err_fd >= 0) {
        close(c->err_fd);
        c->err_fd = -1;
    }
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        int status;
        while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
            ;
        c->pid = -1;
    }
}

int gp_child_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}
