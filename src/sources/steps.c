/*
 * steps.c - the steps source: training code reports its steps over a
 * local datagram socket (docs/jobs.md "The step protocol").
 *
 * Parts:
 *   - the socket: AF_UNIX SOCK_DGRAM bound at cfg->steps_socket, mode
 *     0666 by default so any local user's training code can send (mode
 *     and group are configurable), SO_PASSCRED so the kernel tells who
 *     sent each datagram. A leftover socket file is replaced only when
 *     nobody answers on it; a live agent keeps its own.
 *   - trust: anyone may send, so a sender's records count only for a job
 *     it may speak for (docs/steps.md "Who may report for a job"): root
 *     may speak for any; others for the job of their own process tree or
 *     the one their client names, when that job's processes run as their
 *     uid (steps_trust.c reads /proc), or, for a name no process carries,
 *     when no sender of another uid named it first. The verdict is made
 *     when a sender is new and when it names a job, kept in its entry;
 *     refused records are counted by reason and logged once per sender.
 *     On gpulse run's own socket (cfg->steps_per_job) a sender counts
 *     when it is root, gpulse run's user, or in its command's tree.
 *   - a receiver thread that drains the socket as datagrams come, not at
 *     ticks: the kernel queues only net.unix.max_dgram_qlen datagrams (10
 *     by default), and a client finding the queue full drops (counted).
 *     The sender's pid is the kernel's (SCM_CREDENTIALS), never the
 *     message's.
 *   - per-pid accumulators, a sorted array searched by pid, under one
 *     mutex shared by the receiver (updates) and sample() (copies into the
 *     frame, evicts). Capped at gp_steps_max_pids senders; an idle sender
 *     whose process is gone is forgotten after 10 minutes, one that said
 *     `end` 5 minutes after it did.
 *
 * Loss: the client numbers its records (seq); a gap is lost records. A
 * client also says `lost=N` for records it could not send. When it gave
 * those records numbers, the gap that follows already holds them, so the
 * lost= count is a credit against the next gap: the same record is never
 * counted twice, and a client without seq still reports its drops.
 *
 * Steady state allocates nothing: the receive buffer and the accumulator
 * array are reused; only a new sender may grow the array.
 */
#include "source.h"
#include "steps.h"
#include "steps_proto.h"
#include "steps_trust.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

double gp_steps_idle_evict_s = 600.0;
double gp_steps_ended_keep_s = 300.0;
unsigned gp_steps_max_pids = 4096;

#define STEPS_MODULE "steps"

struct entry {
    struct gp_step_stats st;
    bool seq_known;
    uint64_t last_seq;
    uint64_t lost_credit;  /* lost= reported, not yet matched by a seq gap */
    double seen_s;         /* monotonic time of the last record */
    double ended_s;        /* monotonic time of the `end` record */
    uint32_t uid;          /* the sender's, from the kernel */
    bool judged;           /* verdict made for this uid */
    enum gp_steps_refusal verdict; /* GP_STEPS_ALLOWED, or why its records are refused */
    char job[GP_JOB_LEN];  /* the job its records count for ("": its own process group) */
    char claim[GP_JOB_LEN]; /* the job its client named (meta/end job=) */
};

struct steps {
    int fd;
    int wake[2];           /* closing: a byte on wake[1] stops the receiver */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t dev;
    ino_t ino;             /* the socket file we bound, unlinked at close if still ours */
    pthread_t thread;
    bool thread_started;

    void (*observer)(void *ctx, uint32_t pid, const struct gp_steps_record *r);
    void *observer_ctx;

    struct gp_steps_trust *trust; /* reads /proc for verdicts (receiver thread) */
    bool per_job;          /* gpulse run's socket (cfg->steps_per_job) */
    const uint32_t *follow; /* its command's pid(s) */
    size_t nfollow;
    uint32_t self_uid;
    /* the last owner lookup, reused for a second: a burst of new senders
     * naming one job reads /proc once */
    char owner_job[GP_JOB_LEN];
    bool owner_found;
    uint32_t owner_uid;
    double owner_s;
    double log_s;          /* last refusal logged; at most one a second */
    unsigned log_skipped;  /* refusals not logged since */

    pthread_mutex_t mu;    /* guards everything below */
    struct entry *e;       /* sorted by pid */
    unsigned n, cap;
    struct gp_steps_self self;
    uint64_t dropped;      /* records not kept (too many senders, devices), since last sample */

    /* receiver-thread only */
    uint32_t cur_pid, cur_uid;
    double cur_s;
    int64_t cur_ms;
    char buf[GP_STEPS_DGRAM_MAX + 1];
};

static double mono_s(void) { return (double)gp_mono_ns() / 1e9; }

static bool process_alive(uint32_t pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Index of pid, or of where it would go (*found false). Called with mu held. */
static unsigned find(const struct steps *s, uint32_t pid, bool *found)
{
    unsigned lo = 0, hi = s->n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (s->e[mid].st.pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < s->n && s->e[lo].st.pid == pid;
    return lo;
}

/* Forgets ended senders after gp_steps_ended_keep_s and idle senders whose
 * process is gone after gp_steps_idle_evict_s. Called with mu held. */
static void evict(struct steps *s, double now)
{
    unsigned w = 0;
    for (unsigned i = 0; i < s->n; i++) {
        const struct entry *e = &s->e[i];
        bool gone = (e->st.ended && now - e->ended_s >= gp_steps_ended_keep_s) ||
                    (now - e->seen_s >= gp_steps_idle_evict_s && !process_alive(e->st.pid));
        if (!gone)
            s->e[w++] = *e;
    }
    s->n = w;
}

/* The accumulator of pid, created if new. NULL when the table is full even
 * after eviction, or out of memory. Called with mu held. */
static struct entry *entry_for(struct steps *s, uint32_t pid)
{
    bool found;
    unsigned i = find(s, pid, &found);
    if (found)
        return &s->e[i];
    if (s->n >= gp_steps_max_pids) {
        evict(s, s->cur_s);
        if (s->n >= gp_steps_max_pids)
            return NULL;
        i = find(s, pid, &found);
    }
    if (s->n == s->cap) {
        unsigned nc = s->cap ? s->cap * 2 : 16;
        struct entry *p = realloc(s->e, (size_t)nc * sizeof *p);
        if (!p)
            return NULL;
        s->e = p;
        s->cap = nc;
    }
    memmove(&s->e[i + 1], &s->e[i], (size_t)(s->n - i) * sizeof *s->e);
    s->n++;
    struct entry *e = &s->e[i];
    memset(e, 0, sizeof *e);
    e->st.pid = pid;
    e->st.jid.rank = e->st.jid.local_rank = e->st.jid.world_size = -1;
    e->st.jid.scheme = GP_JOB_NONE;
    e->st.exit_status = -1;
    return e;
}

/* Names the job from a meta/end record: only a fallback, the jobs source
 * replaces it in the frame when the process has a job of its own. */
static void name_job(struct entry *e, const struct gp_steps_record *r)
{
    if (r->has & GP_SK_JOB) {
        snprintf(e->st.jid.job, sizeof e->st.jid.job, "%s", r->job);
        e->st.client_job = true;
    }
    if (r->has & GP_SK_RANK)
        e->st.jid.rank = r->rank;
    if (r->has & GP_SK_WORLD)
        e->st.jid.world_size = r->world;
}

static void count_loss(struct entry *e, const struct gp_steps_record *r)
{
    struct gp_step_stats *st = &e->st;
    if (r->has & GP_SK_LOST) {
        st->lost_total += r->lost;
        e->lost_credit += r->lost;
    }
    if (!(r->has & GP_SK_SEQ))
        return;
    if (e->seq_known && r->seq > e->last_seq) {
        uint64_t gap = r->seq - e->last_seq - 1;
        if (gap > e->lost_credit)
            st->lost_total += gap - e->lost_credit;
    }
    /* Either matched by this gap, or it named records without numbers;
     * a seq that went back is a new client in the same pid (an exec). */
    e->lost_credit = 0;
    e->seq_known = true;
    e->last_seq = r->seq;
}

static void set_alloc(struct steps *s, struct gp_step_stats *st, const struct gp_steps_record *r)
{
    struct gp_step_alloc *a = NULL;
    for (unsigned i = 0; i < st->nalloc; i++)
        if (st->alloc[i].device == r->dev)
            a = &st->alloc[i];
    if (!a) {
        if (st->nalloc == GP_STEP_DEVICES) {
            s->dropped++;
            return;
        }
        a = &st->alloc[st->nalloc++];
        memset(a, 0, sizeof *a);
        a->device = r->dev;
    }
    if (r->has & GP_SK_ALLOC)
        a->allocated = r->alloc;
    if (r->has & GP_SK_RESERVED)
        a->reserved = r->reserved;
    if (r->has & GP_SK_PEAK)
        a->peak = r->peak;
}

/* The owner of job (gp_steps_trust_owner), through the one-second cache. */
static bool job_owner(struct steps *s, const char *job, uint32_t *uid)
{
    if (s->owner_s > 0 && s->cur_s - s->owner_s < 1.0 && strcmp(s->owner_job, job) == 0) {
        *uid = s->owner_uid;
        return s->owner_found;
    }
    s->owner_found = s->trust && gp_steps_trust_owner(s->trust, job, &s->owner_uid);
    snprintf(s->owner_job, sizeof s->owner_job, "%s", job);
    s->owner_s = s->cur_s;
    *uid = s->owner_uid;
    return s->owner_found;
}

/* Whether e's job was named first by an allowed sender of another
 * (non-root) uid that is still tracked. Called with mu held. */
static bool claimed_by_other(const struct steps *s, const struct entry *e)
{
    for (unsigned i = 0; i < s->n; i++) {
        const struct entry *o = &s->e[i];
        if (o != e && o->verdict == GP_STEPS_ALLOWED && o->uid != 0 && o->uid != e->uid &&
            strcmp(o->job, e->job) == 0)
            return true;
    }
    return false;
}

/* Logs a sender's refusal, at most one line a second over all senders
 * (a process-spawning sender must not flood the log). */
static void log_refusal(struct steps *s, const struct entry *e, bool have_owner, uint32_t owner)
{
    if (s->log_s > 0 && s->cur_s - s->log_s < 1.0) {
        s->log_skipped++;
        return;
    }
    char own[16] = "none";
    if (have_owner)
        snprintf(own, sizeof own, "%u", owner);
    gp_log(GP_LOG_WARN, STEPS_MODULE, "step records refused: sender may not report for this job",
           "pid=%u uid=%u job=\"%s\" reason=%s owner_uid=%s earlier_refusals_not_logged=%u",
           e->st.pid, e->uid, e->job, gp_steps_refusal_name(e->verdict), own, s->log_skipped);
    s->log_s = s->cur_s;
    s->log_skipped = 0;
}

/* Decides whether e may speak for the job its records count for (the
 * design comment's "trust"). Called with mu held, when e is new and when
 * its client names another job. */
static void judge(struct steps *s, struct entry *e)
{
    enum gp_steps_refusal was = e->verdict;
    bool in_follow = false, have_owner = false;
    uint32_t owner = 0;
    e->verdict = GP_STEPS_ALLOWED;
    e->job[0] = '\0';
    if (s->trust)
        gp_steps_trust_tree(s->trust, e->st.pid, s->follow, s->per_job ? s->nfollow : 0, e->job,
                            &in_follow);
    if (!e->job[0]) /* no job of its own: the jobs source takes the client's name */
        memcpy(e->job, e->claim, sizeof e->job);
    if (e->uid == 0) {
        /* root may speak for anyone */
    } else if (s->per_job) {
        if (!in_follow && e->uid != s->self_uid)
            e->verdict = GP_STEPS_NOT_IN_JOB;
    } else if (e->job[0]) {
        have_owner = job_owner(s, e->job, &owner);
        if (have_owner && owner != e->uid)
            e->verdict = GP_STEPS_UID_MISMATCH;
        else if (!have_owner && claimed_by_other(s, e))
            e->verdict = GP_STEPS_JOB_CLAIMED;
    }
    if (e->verdict != GP_STEPS_ALLOWED && e->verdict != was)
        log_refusal(s, e, have_owner, owner);
}

/* Folds one good record into its sender's accumulator. Returns false
 * when the record was not kept (refused, or no room). Called with mu held. */
static bool apply(struct steps *s, const struct gp_steps_record *r)
{
    struct entry *e = entry_for(s, s->cur_pid);
    if (!e) {
        s->dropped++;
        return false;
    }
    if (!e->judged || e->uid != s->cur_uid) {
        /* new, or its pid now belongs to a process of another user */
        if (e->judged) {
            uint32_t pid = e->st.pid;
            memset(e, 0, sizeof *e);
            e->st.pid = pid;
            e->st.jid.rank = e->st.jid.local_rank = e->st.jid.world_size = -1;
            e->st.jid.scheme = GP_JOB_NONE;
            e->st.exit_status = -1;
        }
        e->uid = e->st.uid = s->cur_uid;
        e->judged = true;
        judge(s, e);
    }
    if ((r->has & GP_SK_JOB) && strcmp(r->job, e->claim) != 0) {
        snprintf(e->claim, sizeof e->claim, "%s", r->job);
        judge(s, e);
    }
    if (e->verdict != GP_STEPS_ALLOWED) {
        s->self.refused[e->verdict - 1]++;
        return false;
    }
    struct gp_step_stats *st = &e->st;
    count_loss(e, r);
    e->seen_s = s->cur_s;
    st->last_ms = s->cur_ms;
    if (r->kind != GP_STEPS_END && r->kind != GP_STEPS_OTHER)
        st->ended = false; /* the process reports again */
    switch (r->kind) {
    case GP_STEPS_STEP:
        st->steps_total++;
        if (r->has & GP_SK_N)
            st->last_step = r->n;
        st->step_seconds_total += r->dur;
        st->last_step_seconds = r->dur;
        if (r->has & GP_SK_WAIT) {
            st->data_wait_valid = true;
            st->data_wait_seconds_total += r->wait;
        }
        if (r->has & GP_SK_SAMPLES) {
            st->samples_valid = true;
            st->samples_total += r->samples;
        }
        if (r->has & GP_SK_TOKENS) {
            st->tokens_valid = true;
            st->tokens_total += r->tokens;
        }
        if (r->has & GP_SK_LOSS) {
            st->loss_valid = true;
            st->loss = r->loss;
        }
        break;
    case GP_STEPS_MEM:
        set_alloc(s, st, r);
        break;
    case GP_STEPS_META:
        if (r->has & GP_SK_TARGET)
            st->target_steps = r->target;
        name_job(e, r);
        break;
    case GP_STEPS_END:
        name_job(e, r);
        st->ended = true;
        e->ended_s = s->cur_s;
        st->exit_status_valid = (r->has & GP_SK_STATUS) != 0;
        st->exit_status = st->exit_status_valid ? r->status : -1;
        st->end_time_s = (r->has & GP_SK_T) ? r->t : (double)s->cur_ms / 1000.0;
        break;
    case GP_STEPS_MODEL: {
        double fpt = gp_steps_flops_per_token(r);
        st->model_flops_token = isfinite(fpt) ? fpt : 0;
        st->model_flops_sample = (r->has & GP_SK_FLOPS_SAMPLE) ? r->flops_sample : 0;
        st->model_precision = (int)r->precision;
        break;
    }
    case GP_STEPS_PHASE:
        st->phase_valid = true;
        st->phase_seconds_total[gp_steps_phase_of(r->name)] += r->dur;
        break;
    case GP_STEPS_OTHER:
        break;
    }
    return true;
}

/* gp_steps_parse's callback: one good record of the current datagram. */
static void on_record(void *ctx, const struct gp_steps_record *r)
{
    struct steps *s = ctx;
    pthread_mutex_lock(&s->mu);
    bool kept = apply(s, r);
    if (kept)
        s->self.records++;
    pthread_mutex_unlock(&s->mu);
    if (kept && s->observer && r->kind != GP_STEPS_OTHER)
        s->observer(s->observer_ctx, s->cur_pid, r);
}

/* Receives every queued datagram. Returns false when the socket broke. */
static bool drain(struct steps *s)
{
    for (;;) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(struct ucred))];
        } ctl;
        struct iovec iov = {s->buf, sizeof s->buf};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                           .msg_controllen = sizeof ctl.b};
        ssize_t n = recvmsg(s->fd, &m, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        uint32_t pid = 0, uid = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
                struct ucred cr;
                memcpy(&cr, CMSG_DATA(c), sizeof cr);
                pid = (uint32_t)cr.pid;
                uid = (uint32_t)cr.uid;
            }
        unsigned bad = 0;
        s->cur_pid = pid;
        s->cur_uid = uid;
        s->cur_s = mono_s();
        s->cur_ms = gp_wall_ms();
        if (pid == 0) {
            /* No credentials, or a sender the kernel cannot name in our pid
             * namespace: nobody to account it to. */
            pthread_mutex_lock(&s->mu);
            s->self.datagrams++;
            s->dropped++;
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        if (m.msg_flags & MSG_TRUNC)
            n = GP_STEPS_DGRAM_MAX + 1; /* longer than the protocol allows */
        gp_steps_parse(s->buf, (size_t)n, on_record, s, &bad);
        pthread_mutex_lock(&s->mu);
        s->self.datagrams++;
        s->self.malformed += bad;
        pthread_mutex_unlock(&s->mu);
    }
}

static void *receiver(void *arg)
{
    struct steps *s = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents && !drain(s)) {
            gp_log(GP_LOG_ERROR, STEPS_MODULE, "step socket failed, no more step records",
                   "err=\"%s\"", strerror(errno));
            break;
        }
    }
    return NULL;
}

/* mkdir -p of path's parent directory, mode 0755. */
static int make_parent(const char *path)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(dir, 0755) == 0)
                chmod(dir, 0755); /* whatever the umask: senders need to reach the socket */
            else if (errno != EEXIST)
                return -1;
            *p = c;
            if (!c)
                break;
        }
    }
    return 0;
}

/* Whether something answers on the socket file at a. */
static bool socket_alive(const struct sockaddr_un *a)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool alive = connect(fd, (const struct sockaddr *)a, sizeof *a) == 0;
    close(fd);
    return alive;
}

static void steps_close(void *state)
{
    struct steps *s = state;
    if (!s)
        return;
    if (s->thread_started) {
        char c = 1;
        while (write(s->wake[1], &c, 1) < 0 && errno == EINTR)
            ;
        pthread_join(s->thread, NULL);
    }
    if (s->fd >= 0) {
        struct stat st;
        if (s->ino && stat(s->path, &st) == 0 && st.st_ino == s->ino && st.st_dev == s->dev)
            unlink(s->path);
        close(s->fd);
    }
    for (int i = 0; i < 2; i++)
        if (s->wake[i] >= 0)
            close(s->wake[i]);
    pthread_mutex_destroy(&s->mu);
    gp_steps_trust_free(s->trust);
    free(s->e);
    free(s);
}

/* Says why the socket is not there, once per agent: the sampler probes
 * again every minute and a second warning would say nothing new. */
static int unavailable(char *err, size_t errlen, const char *path, const char *why)
{
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        gp_log(GP_LOG_WARN, STEPS_MODULE, "step socket unavailable, no step telemetry",
               "path=\"%s\" reason=\"%s\"", path, why);
    return gp_seterr(err, errlen, GP_ENODEV, "step socket '%s': %s", path, why);
}

/* The gid named by group (a group name, else a decimal gid); -1 when
 * neither. */
static long group_id(const char *group)
{
    char buf[4096];
    struct group g, *res = NULL;
    if (getgrnam_r(group, &g, buf, sizeof buf, &res) == 0 && res)
        return (long)res->gr_gid;
    char *end;
    errno = 0;
    unsigned long v = strtoul(group, &end, 10);
    if (group[0] < '0' || group[0] > '9' || *end || errno || v > 0x7fffffffUL)
        return -1;
    return (long)v;
}

/* Binds the socket at path (see the design comment). GP_OK or GP_ENODEV. */
static int bind_socket(struct steps *s, const struct gp_source_config *cfg, char *err,
                       size_t errlen)
{
    const char *path = cfg->steps_socket;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return unavailable(err, errlen, path, "path too long for a unix socket");
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    if (make_parent(path))
        return unavailable(err, errlen, path, strerror(errno));
    s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return unavailable(err, errlen, path, strerror(errno));
    int one = 1;
    if (setsockopt(s->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one))
        return unavailable(err, errlen, path, strerror(errno));
    if (bind(s->fd, (struct sockaddr *)&a, sizeof a)) {
        if (errno != EADDRINUSE)
            return unavailable(err, errlen, path, strerror(errno));
        struct stat st;
        if (lstat(path, &st) || !S_ISSOCK(st.st_mode))
            return unavailable(err, errlen, path, "a file that is not a socket is in the way");
        if (socket_alive(&a))
            return unavailable(err, errlen, path, "in use by another running agent");
        if (unlink(path) || bind(s->fd, (struct sockaddr *)&a, sizeof a))
            return unavailable(err, errlen, path, strerror(errno));
    }
    struct stat st;
    if (cfg->steps_socket_group && cfg->steps_socket_group[0]) {
        long gid = group_id(cfg->steps_socket_group);
        if (gid < 0)
            return unavailable(err, errlen, path, "steps_socket_group names no group");
        if (chown(path, (uid_t)-1, (gid_t)gid))
            return unavailable(err, errlen, path, strerror(errno));
    }
    mode_t mode = cfg->steps_socket_mode ? (mode_t)(cfg->steps_socket_mode & 0777) : 0666;
    if (chmod(path, mode) || stat(path, &st))
        return unavailable(err, errlen, path, strerror(errno));
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    return GP_OK;
}

static int steps_open(const struct gp_source_config *cfg, void **state, char *err, size_t errlen)
{
    if (!cfg->steps_socket || !cfg->steps_socket[0])
        return gp_seterr(err, errlen, GP_ENODEV, "no step socket configured");
    struct steps *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->fd = s->wake[0] = s->wake[1] = -1;
    s->observer = cfg->step_observer;
    s->observer_ctx = cfg->step_observer_ctx;
    s->per_job = cfg->steps_per_job;
    s->follow = cfg->follow;
    s->nfollow = cfg->nfollow;
    s->self_uid = (uint32_t)getuid();
    pthread_mutex_init(&s->mu, NULL);
    /* Without /proc no process names a job: a name then belongs to the
     * first uid whose client names it, and a sender's tree is unknown. */
    s->trust = gp_steps_trust_new(cfg->proc_root);
    if (!s->trust)
        gp_log(GP_LOG_WARN, STEPS_MODULE, "cannot open the procfs root, step senders' jobs cannot be checked",
               "proc_root=\"%s\" err=\"%s\"", cfg->proc_root ? cfg->proc_root : "/proc",
               strerror(errno));
    int rc = bind_socket(s, cfg, err, errlen);
    if (rc == GP_OK && pipe2(s->wake, O_CLOEXEC))
        rc = gp_seterr(err, errlen, GP_EIO, "pipe: %s", strerror(errno));
    if (rc == GP_OK) {
        if (pthread_create(&s->thread, NULL, receiver, s))
            rc = gp_seterr(err, errlen, GP_EINTERNAL, "cannot start the step receiver thread");
        else
            s->thread_started = true;
    }
    if (rc) {
        steps_close(s);
        return rc;
    }
    *state = s;
    return GP_OK;
}

static int steps_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct steps *s = state;
    int rc = GP_OK;
    pthread_mutex_lock(&s->mu);
    evict(s, mono_s());
    for (unsigned i = 0; i < s->n; i++) {
        const struct gp_step_stats *st = &s->e[i].st;
        if (s->e[i].verdict != GP_STEPS_ALLOWED)
            continue; /* nothing of it was kept */
        struct gp_step_stats *out = gp_frame_add_steps(f);
        if (!out) {
            rc = GP_ENOMEM;
            break;
        }
        *out = *st;
        if (!st->ended && process_alive(st->pid) && gp_frame_add_root(f, st->pid)) {
            rc = GP_ENOMEM;
            break;
        }
    }
    f->steps_self = s->self;
    *errors += (unsigned)s->dropped;
    s->dropped = 0;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

const struct gp_source_ops gp_source_steps = {"steps", GP_SRC_STEPS, steps_open, steps_sample,
                                              steps_close};
