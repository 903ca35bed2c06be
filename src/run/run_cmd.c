/*
 * run_cmd.c - `gpulse run [flags] -- CMD [ARG...]`: CMD as a tracked job.
 *
 * The order of things is what makes the numbers trustworthy:
 *   1. CMD is forked and held at a gate (child.h) with GPULSE_RUN_ID and
 *      GPULSE_STEPS_SOCKET in its environment;
 *   2. an agent starts in this process (no HTTP) with its own private
 *      step socket, following CMD's pid and its descendants; its first
 *      sample is taken before CMD runs;
 *   3. the gate opens: CMD execs (or its exec error is reported, 127/126);
 *   4. every tick feeds the history (history.h) and the status line; every
 *      step record the training code sends feeds the history too;
 *   5. CMD ends: its rusage (exact CPU and peak RSS) closes the history,
 *      an `end` record tells the agents its exit status, the report is
 *      printed (and written as HTML / JSON), and gpulse run exits as CMD
 *      did: the same code, or the same signal re-raised.
 *
 * Reporting elsewhere: when a node agent listens on the agent's steps
 * socket, CMD's step clients send to both sockets (GPULSE_STEPS_SOCKET
 * lists two paths) and the node agent, which attributes CMD's processes
 * by GPULSE_RUN_ID, reports the job to its server; gpulse run then pushes
 * nothing itself (the same series twice would conflict). With no node
 * agent and --server set, gpulse run pushes its own samples there.
 *
 * Signals: gpulse run waits for them with sigtimedwait, all blocked; CMD
 * starts with the mask gpulse had. A terminal's Ctrl-C or Ctrl-\ reaches
 * CMD from the terminal itself, so gpulse run only waits for CMD to react;
 * a signal sent to gpulse run by a process (kill, Slurm, Kubernetes) is
 * passed on to CMD.
 */
#include "run/attempts.h"
#include "run/child.h"
#include "run/history.h"
#include "run/run.h"
#include "run/run_config.h"

#include "agent/agent.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/token.h"
#include "report/report.h"
#include "sources/steps_proto.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct run {
    struct gp_run_config rc;
    struct gp_agent_config ac;
    double price;
    char job[GP_JOB_ID_LEN];
    char command[1024];
    char sockdir[256];
    char sock[300];
    bool agent_live;          /* a node agent listens on ac.steps_socket */
    bool pushing;
    struct gp_history *hist;
    bool tty;
    int64_t next_status_ms;
    uint64_t ticks;           /* ticks seen by the hook (atomic) */
    uint32_t child_pid;
    char attempts_path[GP_PATH_LEN + 160]; /* "": this job keeps no attempts */
    struct gp_attempts attempts;           /* the job's earlier ones */
};

static double wall_s(void) { return (double)gp_wall_ms() / 1000.0; }

/* The sampling thread's hook: history, then the status line. */
static void on_tick(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    (void)st;
    struct run *r = arg;
    gp_history_frame(r->hist, f);
    __atomic_add_fetch(&r->ticks, 1, __ATOMIC_RELEASE);
    if (r->rc.quiet)
        return;
    int64_t now = gp_wall_ms();
    if (!r->tty && now < r->next_status_ms)
        return;
    r->next_status_ms = now + r->rc.status_interval_ms;
    struct gp_buf b;
    gp_buf_init(&b, 4096);
    gp_buf_puts(&b, r->tty ? "\r" : "");
    gp_history_status(r->hist, &b, (double)now / 1000.0);
    struct winsize ws;
    /* a line longer than the terminal would wrap, and \r redraw only the
     * last row of it */
    if (r->tty && !ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 1 && b.len > ws.ws_col)
        b.len = ws.ws_col; /* the status line is ASCII apart from the job id */
    gp_buf_puts(&b, r->tty ? "\x1b[K" : "\n");
    if (!b.err) {
        ssize_t w = write(STDERR_FILENO, b.data, b.len);
        (void)w;
    }
    gp_buf_free(&b);
}

/* The step socket's receiver thread: every good record of CMD's clients. */
static void on_step(void *ctx, uint32_t pid, const struct gp_steps_record *rec)
{
    struct run *r = ctx;
    if (rec->kind == GP_STEPS_MODEL) {
        double fpt = gp_steps_flops_per_token(rec);
        gp_history_model(r->hist, isfinite(fpt) ? fpt : 0,
                         rec->has & GP_SK_FLOPS_SAMPLE ? rec->flops_sample : 0, (int)rec->precision);
        return;
    }
    if (rec->kind == GP_STEPS_PHASE) { /* the parser requires name and dur */
        gp_history_phase(r->hist, pid, rec->name, rec->has & GP_SK_T ? rec->t : wall_s(), rec->dur);
        return;
    }
    if (rec->kind != GP_STEPS_STEP)
        return;
    struct gp_history_step s = {
        .t_end = rec->has & GP_SK_T ? rec->t : wall_s(),
        .seconds = rec->dur,
        .has_samples = rec->has & GP_SK_SAMPLES,
        .samples = rec->samples,
        .has_tokens = rec->has & GP_SK_TOKENS,
        .tokens = rec->tokens,
        .has_wait = rec->has & GP_SK_WAIT,
        .wait_seconds = rec->wait,
        .has_loss = rec->has & GP_SK_LOSS,
        .loss = rec->loss,
        .pid = pid,
        .n = rec->has & GP_SK_N ? (double)rec->n : -1,
    };
    gp_history_step(r->hist, &s); /* the parser requires dur on a step */
}

/* True when something is bound at path and takes datagrams (a live
 * agent); a leftover socket file answers ECONNREFUSED. */
static bool socket_live(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!path[0] || strlen(path) >= sizeof sa.sun_path)
        return false;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

/* One datagram to path, never blocking; lost silently (the agents count). */
static void send_record(const char *path, const char *text)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    ssize_t w = sendto(fd, text, strlen(text), MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof sa);
    (void)w;
    close(fd);
}

/* Writes data to path through a temporary file and a rename, so a reader
 * never sees half a report. GP_OK or GP_EIO with detail. */
static int write_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[GP_PATH_LEN + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    if (!fp)
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, fp) == len;
    ok &= fclose(fp) == 0;
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    return GP_OK;
}

static void default_job(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%dT%H%M%S", &tm);
    snprintf(out, len, "run-%s-%ld", ts, (long)getpid());
}

static void join_command(char *out, size_t len, char **argv)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; argv[i] && n + 1 < len; i++) {
        int w = snprintf(out + n, len - n, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    if (n >= len && len > 4)
        memcpy(out + len - 4, "...", 4);
}

/* Makes the private step socket's directory. GP_OK or GP_EIO. */
static int make_sockdir(struct run *r, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(r->sockdir, sizeof r->sockdir, "%s/gpulse-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->sockdir)) {
        snprintf(r->sockdir, sizeof r->sockdir, "/tmp/gpulse-run-XXXXXX");
        if (!mkdtemp(r->sockdir))
            return gp_seterr(err, errlen, GP_EIO, "cannot make a directory for the step socket: %s",
                             strerror(errno));
    }
    /* CMD may drop privileges or run as another user under sudo: it must
     * still reach the socket (the directory name is not guessable). */
    chmod(r->sockdir, 0711);
    snprintf(r->sock, sizeof r->sock, "%s/steps.sock", r->sockdir);
    return GP_OK;
}

static void remove_sockdir(struct run *r)
{
    if (!r->sockdir[0])
        return;
    unlink(r->sock);
    rmdir(r->sockdir);
}

/* Waits for CMD to end, passing on signals sent to gpulse run. */
static void wait_child(struct gp_child *c, const sigset_t *set, int *status, struct rusage *ru)
{
    struct timespec slice = {0, 250 * 1000000};
    for (;;) {
        int got = gp_child_reap(c, status, ru);
        if (got == 1)
            return;
        if (got < 0) { /* cannot wait: someone else reaped it */
            *status = 1 << 8;
            memset(ru, 0, sizeof *ru);
            return;
        }
        siginfo_t si;
        int sig = sigtimedwait(set, &si, &slice);
        if (sig <= 0 || sig == SIGCHLD)
            continue;
        /* From a terminal (SI_KERNEL) the foreground group, CMD included,
         * got it already; from a process, CMD must be told. */
        if (si.si_code != SI_KERNEL && c->pid > 0)
            kill(c->pid, sig);
    }
}

/* Exits the way CMD did: the same status, or the same signal. */
static int exit_like(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core); /* CMD dumped its own core if it was to */
        fflush(NULL);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
    }
    return gp_child_exit_code(status);
}

/* A job named with --job may have run before: its earlier attempts make
 * this one's repeated steps lost work (run/attempts.h). A file that
 * cannot be read is reported and the job starts afresh. */
static void load_attempts(struct run *r)
{
    char err[512];
    if (!r->rc.job[0] ||
        gp_attempts_path(r->rc.attempts_dir, r->job, r->attempts_path, sizeof r->attempts_path, err,
                         sizeof err)) {
        if (r->rc.job[0])
            fprintf(stderr, "gpulse run: %s\n", err);
        r->attempts_path[0] = '\0';
        return;
    }
    FILE *fp = fopen(r->attempts_path, "r");
    if (!fp) {
        if (errno != ENOENT)
            fprintf(stderr, "gpulse run: cannot read '%s': %s\n", r->attempts_path, strerror(errno));
        return;
    }
    char text[8192];
    size_t n = fread(text, 1, sizeof text, fp);
    fclose(fp);
    struct gp_attempts a;
    if (gp_attempts_parse(text, n, r->job, &a, err, sizeof err)) {
        fprintf(stderr, "gpulse run: ignoring '%s': %s\n", r->attempts_path, err);
        return;
    }
    r->attempts = a;
    gp_history_prior(r->hist, &a.f, a.attempts, a.last_step);
}

/* Adds this attempt to the job's file, for the next one. */
static void save_attempts(struct run *r)
{
    if (!r->attempts_path[0])
        return;
    struct gp_attempts a = r->attempts;
    struct gp_goodput_figures now;
    double last;
    gp_history_goodput(r->hist, &now, &last);
    gp_goodput_add(&a.f, &now);
    a.attempts++;
    if (last > a.last_step)
        a.last_step = last;
    char dir[sizeof r->attempts_path], err[512];
    memcpy(dir, r->attempts_path, sizeof dir);
    for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) { /* mkdir -p */
        *p = '\0';
        mkdir(dir, 0700);
        *p = '/';
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_attempts_render(&b, r->job, &a);
    if (b.err || write_file(r->attempts_path, b.data, b.len, err, sizeof err))
        fprintf(stderr, "gpulse run: %s\n", b.err ? "out of memory for the attempts file" : err);
    gp_buf_free(&b);
}

/* Prints and writes the report; returns GP_OK or the first write error. */
static int report(struct run *r)
{
    json_t *doc = gp_history_document(r->hist);
    if (!doc || gp_report_advise(doc)) {
        json_decref(doc);
        fprintf(stderr, "gpulse run: out of memory for the report\n");
        return GP_ENOMEM;
    }
    char err[512];
    if (r->rc.server[0]) { /* the server's detectors judged the job: its alerts belong in the report */
        char token[512] = "";
        const char *tf = getenv("GPULSE_TOKEN_FILE"), *id = json_string_value(json_object_get(doc, "id"));
        if ((tf && *tf && gp_token_load(NULL, tf, "token", token, sizeof token, err, sizeof err)) ||
            gp_report_add_alerts(doc, r->rc.server, token, id ? id : "", err, sizeof err))
            fprintf(stderr, "gpulse run: cannot read the job's alerts from %s: %s\n", r->rc.server, err);
        memset(token, 0, sizeof token);
    }
    int rc = GP_OK;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_report_opts ro = {.color = false};
    if (r->rc.report && gp_report_text(&b, doc, &ro) == GP_OK) {
        ssize_t w = write(STDERR_FILENO, b.data, b.len);
        (void)w;
    }
    const char *paths[2] = {r->rc.json, r->rc.html};
    for (int k = 0; k < 2; k++) {
        if (!paths[k][0])
            continue;
        gp_buf_reset(&b);
        int wrc = k == 0 ? gp_report_json(&b, doc) : gp_report_html(&b, doc);
        if (wrc)
            snprintf(err, sizeof err, "cannot render '%s': %s", paths[k], gp_strerror(wrc));
        else
            wrc = write_file(paths[k], b.data, b.len, err, sizeof err);
        if (wrc) {
            fprintf(stderr, "gpulse run: %s\n", err);
            rc = rc ? rc : wrc;
        }
    }
    gp_buf_free(&b);
    json_decref(doc);
    return rc;
}

/* Starts the in-process agent that samples CMD. */
static int start_agent(struct run *r, struct gp_agent **agent, char *err, size_t errlen)
{
    struct gp_agent_config ac = r->ac;
    snprintf(ac.steps_socket, sizeof ac.steps_socket, "%s", r->sock);
    ac.push.n = 0;
    r->pushing = r->rc.server[0] && !r->agent_live;
    if (r->pushing) {
        const char *base = r->rc.server;
        size_t n = strlen(base);
        while (n && base[n - 1] == '/')
            n--;
        snprintf(ac.push.v[0], sizeof ac.push.v[0], "%.*s/api/v1/write", (int)n, base);
        ac.push.n = 1;
        snprintf(ac.push_bearer_token_file, sizeof ac.push_bearer_token_file, "%s",
                 r->rc.server_token_file);
    }
    struct gp_agent_embed e = {
        .no_http = 1,
        .tick_hook = on_tick,
        .tick_ctx = r,
        .follow = &r->child_pid,
        .nfollow = 1,
        .step_observer = on_step,
        .step_observer_ctx = r,
        .steps_per_job = true,
        .run_job = r->job,
        .run_command = r->command,
    };
    return gp_agent_start_embedded(agent, &ac, &e, err, errlen);
}

/* Lets the agents see the end: the in-process one renders the exit
 * status on its next tick (pushed when pushing), a node agent keeps it. */
static void announce_end(struct run *r, int status)
{
    char rec[256];
    snprintf(rec, sizeof rec, "end seq=1 status=%d t=%.6f job=%s\n", gp_child_exit_code(status),
             wall_s(), r->job);
    send_record(r->sock, rec);
    if (r->agent_live)
        send_record(r->ac.steps_socket, rec);
    if (!r->pushing)
        return;
    /* Two ticks: the end record lands in one, and is pushed by the next. */
    uint64_t t0 = __atomic_load_n(&r->ticks, __ATOMIC_ACQUIRE);
    int64_t deadline = gp_mono_ms() + 3 * r->ac.interval_ms + 1000;
    while (__atomic_load_n(&r->ticks, __ATOMIC_ACQUIRE) < t0 + 2 && gp_mono_ms() < deadline)
        usleep(20000);
}

int gp_run_main(int argc, char **argv)
{
    int dash = -1;
    for (int i = 0; i < argc && dash < 0; i++)
        if (!strcmp(argv[i], "--"))
            dash = i;
    struct run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "gpulse run: out of memory\n");
        return 1;
    }
    gp_run_config_defaults(&r->rc, &r->ac);
    struct gp_cfg_section sec[2] = {gp_run_cfg_section(&r->rc), gp_agent_cfg_section(&r->ac)};
    char err[768];
    bool help = false;
    int nflags = dash < 0 ? argc : dash;
    int rc = gp_cfg_from_args(sec, 2, "run", nflags, argv, r->rc.config_file,
                              sizeof r->rc.config_file, &help, err, sizeof err);
    if (!rc && help) {
        gp_run_config_usage(stdout);
        free(r);
        return 0;
    }
    if (!rc && (dash < 0 || dash + 1 >= argc))
        rc = gp_seterr(err, sizeof err, GP_EUSAGE,
                       "no command: gpulse run [flags] -- CMD [ARG...] (see gpulse run --help)");
    if (!rc)
        rc = gp_run_config_validate(&r->rc, &r->ac, &r->price, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse run: %s%s\n", err,
                dash < 0 && strstr(err, "unexpected argument")
                    ? " (the command goes after '--': gpulse run [flags] -- CMD [ARG...])"
                    : "");
        free(r);
        return 2;
    }
    gp_log_parse_level(r->ac.log_level, &gp_log_min);
    char **cmd = argv + dash + 1;
    if (r->rc.job[0])
        snprintf(r->job, sizeof r->job, "%s", r->rc.job);
    else
        default_job(r->job, sizeof r->job);
    join_command(r->command, sizeof r->command, cmd);
    r->tty = isatty(STDERR_FILENO);
    r->agent_live = socket_live(r->ac.steps_socket);

    struct gp_history_options ho = {r->job, r->command, (double)r->ac.interval_ms / 1000.0, r->price, 0};
    r->hist = gp_history_new(&ho);
    if (!r->hist || make_sockdir(r, err, sizeof err)) {
        fprintf(stderr, "gpulse run: %s\n", r->hist ? err : "out of memory");
        gp_history_free(r->hist);
        free(r);
        return 1;
    }
    gp_attempts_init(&r->attempts);
    load_attempts(r);

    /* Block before any thread exists, so every thread inherits the mask. */
    sigset_t set, old;
    sigemptyset(&set);
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);

    char env_run[GP_JOB_ID_LEN + 32], env_sock[1200];
    snprintf(env_run, sizeof env_run, "GPULSE_RUN_ID=%s", r->job);
    snprintf(env_sock, sizeof env_sock, "GPULSE_STEPS_SOCKET=%s%s%s", r->sock,
             r->agent_live ? ":" : "", r->agent_live ? r->ac.steps_socket : "");
    char *env_add[] = {env_run, env_sock, NULL};
    struct gp_child child;
    struct gp_agent *agent = NULL;
    rc = gp_child_spawn(&child, cmd, env_add, &old, err, sizeof err);
    if (!rc) {
        r->child_pid = (uint32_t)child.pid;
        if (!r->rc.quiet && !r->tty)
            fprintf(stderr, "[gpulse] job %s: %s\n", r->job, r->command);
        r->next_status_ms = gp_wall_ms() + r->rc.status_interval_ms;
        rc = start_agent(r, &agent, err, sizeof err);
        if (rc)
            gp_child_abort(&child);
    }
    if (rc) {
        fprintf(stderr, "gpulse run: %s\n", err);
        remove_sockdir(r);
        gp_history_free(r->hist);
        free(r);
        return 1;
    }
    int exec_errno;
    rc = gp_child_release(&child, &exec_errno);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (rc) {
        fprintf(stderr, "gpulse run: cannot run '%s': %s\n", cmd[0], strerror(exec_errno));
        status = (rc == GP_ENOTFOUND ? 127 : 126) << 8;
        gp_agent_stop(agent);
        remove_sockdir(r);
        gp_history_free(r->hist);
        free(r);
        return gp_child_exit_code(status);
    }
    wait_child(&child, &set, &status, &ru);
    gp_history_finish(r->hist, wall_s(), status, &ru);
    save_attempts(r);
    announce_end(r, status);
    gp_agent_stop(agent);
    if (r->tty && !r->rc.quiet)
        fputs("\r\x1b[K", stderr);
    report(r);
    remove_sockdir(r);
    gp_history_free(r->hist);
    free(r);
    return exit_like(status);
}
