/*
 * test_steps.c - the steps source over a real socket in the test's
 * temporary directory, and the C client (include/gpulse/steps.h).
 *
 * The test process is the sender, so the pid the source reports must be
 * getpid(): the kernel's, not anything in the message. Covers totals,
 * loss from seq gaps and lost= (never counted twice), malformed counting,
 * the leftover/live socket rules, a full queue that does not block the
 * client, a burst where every record is either received or reported lost,
 * eviction of gone and ended senders, and the observer.
 */
#include "../../include/gpulse/steps.h"
#include "lib/err.h"
#include "sources/frame.h"
#include "sources/source.h"
#include "sources/steps.h"
#include "sources/steps_proto.h"
#include "test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static const char *sock_path(const char *leaf)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", gp_test_tmpdir(), leaf);
    return p;
}

static void *open_at(const char *path, const struct gp_source_config *extra)
{
    struct gp_source_config cfg = {.steps_socket = path};
    if (extra) {
        cfg.step_observer = extra->step_observer;
        cfg.step_observer_ctx = extra->step_observer_ctx;
    }
    void *st = NULL;
    char err[256];
    int rc = gp_source_steps.open(&cfg, &st, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open: %s", err);
    return st;
}

static void send_text(const char *path, const char *text)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    CHECK(fd >= 0);
    CHECK(sendto(fd, text, strlen(text), 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)strlen(text));
    close(fd);
}

static const struct gp_step_stats *find_pid(const struct gp_frame *f, uint32_t pid)
{
    for (unsigned i = 0; i < f->nsteps; i++)
        if (f->steps[i].pid == pid)
            return &f->steps[i];
    return NULL;
}

static bool has_root(const struct gp_frame *f, uint32_t pid)
{
    for (unsigned i = 0; i < f->nroots; i++)
        if (f->roots[i] == pid)
            return true;
    return false;
}

static void sample(void *st, struct gp_frame *f, unsigned *errors)
{
    gp_frame_reset(f);
    CHECK_INT(gp_source_steps.sample(st, f, errors), GP_OK);
}

/* Samples until the source has received `records` good records (5 s). */
static void sample_until_records(void *st, struct gp_frame *f, uint64_t records)
{
    unsigned errors = 0;
    for (int i = 0; i < 500; i++) {
        sample(st, f, &errors);
        if (f->steps_self.records + f->steps_self.malformed >= records)
            return;
        usleep(10000);
    }
    gp_test_fail(__FILE__, __LINE__, "only %llu records arrived, wanted %llu",
                 (unsigned long long)f->steps_self.records, (unsigned long long)records);
}

static void test_no_path_is_enodev(void)
{
    struct gp_source_config cfg = {0};
    void *st = NULL;
    char err[128];
    CHECK_INT(gp_source_steps.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    cfg.steps_socket = "";
    CHECK_INT(gp_source_steps.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK(st == NULL);
}

static void test_totals_pid_and_socket_mode(void)
{
    const char *path = sock_path("run/gpulse/steps.sock"); /* parents created */
    void *st = open_at(path, NULL);
    struct stat sb;
    CHECK_INT(stat(path, &sb), 0);
    CHECK(S_ISSOCK(sb.st_mode));
    CHECK_INT(sb.st_mode & 0777, 0666);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/run/gpulse", gp_test_tmpdir());
    CHECK_INT(stat(dir, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0755);

    send_text(path, "step seq=1 n=10 dur=0.5 samples=32 tokens=1000 loss=2.5 wait=0.1\n"
                    "step seq=2 n=11 dur=0.25 samples=32 tokens=1000 loss=2.25\n");
    send_text(path, "mem seq=3 dev=1 alloc=100 reserved=200 peak=150\n"
                    "meta seq=4 target=500 job=bert rank=3 world=8\n"
                    "mem seq=5 dev=1 alloc=110\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 5);
    CHECK_INT(f.nsteps, 1);
    const struct gp_step_stats *s = find_pid(&f, (uint32_t)getpid());
    CHECK(s != NULL);
    CHECK_INT(s->steps_total, 2);
    CHECK_INT(s->last_step, 11);
    CHECK_DBL(s->step_seconds_total, 0.75, 1e-12);
    CHECK_DBL(s->last_step_seconds, 0.25, 1e-12);
    CHECK(s->samples_valid && s->tokens_valid && s->loss_valid && s->data_wait_valid);
    CHECK_DBL(s->samples_total, 64, 0);
    CHECK_DBL(s->tokens_total, 2000, 0);
    CHECK_DBL(s->loss, 2.25, 0);
    CHECK_DBL(s->data_wait_seconds_total, 0.1, 1e-12);
    CHECK_INT(s->target_steps, 500);
    CHECK_STR(s->jid.job, "bert");
    CHECK(s->client_job);
    CHECK_INT(s->jid.rank, 3);
    CHECK_INT(s->jid.world_size, 8);
    CHECK_INT(s->nalloc, 1);
    CHECK_INT(s->alloc[0].device, 1);
    CHECK_INT(s->alloc[0].allocated, 110);
    CHECK_INT(s->alloc[0].reserved, 200);
    CHECK_INT(s->alloc[0].peak, 150);
    CHECK_INT(s->lost_total, 0);
    CHECK(!s->ended);
    CHECK(has_root(&f, (uint32_t)getpid()));
    CHECK_INT(f.steps_self.datagrams, 2);
    CHECK_INT(f.steps_self.records, 5);
    CHECK_INT(f.steps_self.malformed, 0);
    /* gp_frame_copy carries the steps and the counters. */
    struct gp_frame c;
    gp_frame_init(&c);
    CHECK_INT(gp_frame_copy(&c, &f), 0);
    CHECK_INT(c.nsteps, 1);
    CHECK_INT(c.steps_self.records, 5);
    CHECK_INT(c.steps[0].steps_total, 2);
    gp_frame_free(&c);
    gp_source_steps.close(st);
    CHECK(stat(path, &sb) != 0); /* closing removes its socket file */
    gp_frame_free(&f);
}

/* Phase records sum per phase (docs/jobs.md "The step protocol"). */
static void test_phases_summed_by_phase(void)
{
    const char *path = sock_path("phases.sock");
    void *st = open_at(path, NULL);
    send_text(path, "phase seq=1 name=checkpoint_load dur=2\n"
                    "step seq=2 n=1 dur=0.5\n"
                    "phase seq=3 name=eval dur=1.5\n"
                    "phase seq=4 name=checkpoint dur=0.25\n"
                    "phase seq=5 name=compile dur=3\n"
                    "phase seq=6 name=validation dur=0.5\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 6);
    const struct gp_step_stats *s = find_pid(&f, (uint32_t)getpid());
    CHECK(s != NULL && s->phase_valid);
    CHECK_DBL(s->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT], 2.25, 1e-12);
    CHECK_DBL(s->phase_seconds_total[GP_STEPS_PHASE_EVALUATION], 2, 1e-12);
    CHECK_DBL(s->phase_seconds_total[GP_STEPS_PHASE_OTHER], 3, 1e-12);
    CHECK_INT(s->steps_total, 1);
    CHECK_DBL(s->step_seconds_total, 0.5, 1e-12); /* phases are not step time */
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

static void test_loss_from_gaps_and_lost_never_twice(void)
{
    const char *path = sock_path("s.sock");
    void *st = open_at(path, NULL);
    /* 1, 2, then 5: records 3 and 4 are missing. */
    send_text(path, "step seq=1 dur=1\nstep seq=2 dur=1\n");
    send_text(path, "step seq=5 dur=1\n");
    /* The client says it could not send 3 records, whose numbers 6-8 the
     * gap before 9 shows again: counted once. */
    send_text(path, "meta lost=3\nstep seq=9 dur=1\n");
    /* A client without seq numbers reports its drops with lost= only. */
    send_text(path, "step dur=1 lost=4\n");
    /* A seq going back is a new client in the same pid (exec): no gap. */
    send_text(path, "step seq=1 dur=1\nstep seq=2 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 8);
    const struct gp_step_stats *s = find_pid(&f, (uint32_t)getpid());
    CHECK(s != NULL);
    CHECK_INT(s->steps_total, 7);
    CHECK_INT(s->lost_total, 2 + 3 + 4);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

static void test_malformed_counted_good_kept(void)
{
    const char *path = sock_path("s.sock");
    void *st = open_at(path, NULL);
    send_text(path, "step seq=1 dur=1\nstep seq=2 dur=nan\nbogus line here\nstep seq=3 dur=1\n");
    /* An oversized datagram: one malformed, nothing of it taken. */
    static char big[GP_STEPS_DGRAM_MAX + 100];
    memset(big, ' ', sizeof big - 1);
    memcpy(big, "step seq=4 dur=1\n", 17);
    send_text(path, big);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 5);
    CHECK_INT(f.steps_self.records, 2);
    CHECK_INT(f.steps_self.malformed, 3);
    CHECK_INT(f.steps_self.datagrams, 2);
    const struct gp_step_stats *s = find_pid(&f, (uint32_t)getpid());
    CHECK_INT(s->steps_total, 2);
    CHECK_INT(s->lost_total, 1); /* seq 2 never counted as a good record */
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

static void test_leftover_replaced_live_kept(void)
{
    const char *path = sock_path("s.sock");
    /* A leftover: bound, then its owner went away without unlinking. */
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    CHECK_INT(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
    void *st = open_at(path, NULL);
    /* A second agent on the same path: refused, the first keeps its socket. */
    struct gp_source_config cfg = {.steps_socket = path};
    void *st2 = NULL;
    char err[256];
    CHECK_INT(gp_source_steps.open(&cfg, &st2, err, sizeof err), GP_ENODEV);
    CHECK_CONTAINS(err, "in use");
    send_text(path, "step seq=1 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 1);
    CHECK_INT(f.nsteps, 1);
    gp_source_steps.close(st);
    /* A regular file in the way is never removed. */
    gp_test_write_file(gp_test_tmpdir(), "plain", "x");
    cfg.steps_socket = sock_path("plain");
    CHECK_INT(gp_source_steps.open(&cfg, &st2, err, sizeof err), GP_ENODEV);
    struct stat sb;
    CHECK_INT(stat(sock_path("plain"), &sb), 0);
    CHECK(S_ISREG(sb.st_mode));
    gp_frame_free(&f);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A socket bound at leaf that the client sends to (GPULSE_STEPS_SOCKET). */
static int client_receiver(const char *leaf)
{
    const char *path = sock_path(leaf);
    int rfd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    CHECK_INT(bind(rfd, (struct sockaddr *)&a, sizeof a), 0);
    setenv("GPULSE_STEPS_SOCKET", path, 1);
    return rfd;
}

/* Nobody reads: the client must neither block nor lose count. */
static void test_full_queue_does_not_block_the_client(void)
{
    int rfd = client_receiver("dead.sock");
    struct gpulse_steps g;
    CHECK_INT(gpulse_steps_open(&g), 0);
    CHECK_INT(g.ndest, 1);
    double t0 = now_s();
    for (unsigned i = 1; i <= 1000; i++) {
        gpulse_step(&g, i, 0.01, 8, GPULSE_UNSET, GPULSE_UNSET, GPULSE_UNSET);
        gpulse_flush(&g); /* one datagram per record: the queue fills at once */
    }
    double took = now_s() - t0;
    CHECK(took < 2.0);
    CHECK(g.sent_total >= 1 && g.sent_total < 1000);
    CHECK_INT(g.lost_total + g.sent_total, 1000);
    /* Drain, send one more: its datagram says how many were lost first. */
    char buf[GP_STEPS_DGRAM_MAX];
    while (recv(rfd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
    gpulse_step(&g, 1001, 0.01, 8, GPULSE_UNSET, GPULSE_UNSET, 0); /* wait given: not measured */
    gpulse_flush(&g);
    ssize_t n = recv(rfd, buf, sizeof buf - 1, MSG_DONTWAIT);
    CHECK(n > 0);
    buf[n] = '\0';
    char want[96];
    snprintf(want, sizeof want, "meta lost=%llu\nstep seq=1001 n=1001 dur=0.01 samples=8 wait=0 t=",
             (unsigned long long)g.lost_total);
    CHECK(strncmp(buf, want, strlen(want)) == 0);
    /* t: the step's end, epoch seconds with microseconds */
    char *t = buf + strlen(want), *end;
    double ts = strtod(t, &end);
    CHECK(end - t == 17 && !strcmp(end, "\n"));
    CHECK(fabs(ts - (double)time(NULL)) < 5);
    gpulse_close(&g);
    close(rfd);
}

/* The value of key in a record line ("dur=" -> its number); NAN if absent. */
static double field(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* Without wait the C client measures it: the gap from the previous step
 * call to this step's start (now - dur) is the wait, and dur spans it; the
 * first step has no wait; a wait given is sent as given. */
static void test_client_measures_wait(void)
{
    int rfd = client_receiver("wait.sock");
    struct gpulse_steps g;
    CHECK_INT(gpulse_steps_open(&g), 0);
    struct timespec loader = {0, 50000000}; /* 50 ms for the next batch */
    char buf[GP_STEPS_DGRAM_MAX];
    double dur[3], wait[3];
    for (int i = 0; i < 3; i++) {
        if (i)
            nanosleep(&loader, NULL);
        gpulse_step(&g, (uint64_t)i + 1, 0.01, 1, GPULSE_UNSET, GPULSE_UNSET, i == 2 ? 0.005 : GPULSE_UNSET);
        gpulse_flush(&g);
        ssize_t n = recv(rfd, buf, sizeof buf - 1, 0);
        CHECK(n > 0);
        buf[n] = '\0';
        dur[i] = field(buf, " dur=");
        wait[i] = field(buf, " wait=");
    }
    CHECK(isnan(wait[0]));         /* no previous end */
    CHECK_DBL(dur[0], 0.01, 1e-12);
    CHECK(wait[1] >= 0.05 - 0.01 - 1e-6 && wait[1] < 0.5); /* the sleep, less the 10 ms step */
    CHECK_DBL(dur[1], 0.01 + wait[1], 1e-6);
    CHECK_DBL(wait[2], 0.005, 1e-12); /* given: sent as given, dur as given */
    CHECK_DBL(dur[2], 0.01, 1e-12);
    gpulse_close(&g);
    close(rfd);
}

struct phase_got {
    unsigned n;
    struct gp_steps_record r[4];
};

static void phase_collect(void *ctx, const struct gp_steps_record *r)
{
    struct phase_got *g = ctx;
    if (g->n < 4)
        g->r[g->n++] = *r;
}

/* gpulse_phase: a record the parser takes (name, dur, t), a name the
 * protocol would refuse is not sent, and a phase between two steps is not
 * counted in the next step's data wait. */
static void test_client_phase(void)
{
    int rfd = client_receiver("phase.sock");
    struct gpulse_steps g;
    CHECK_INT(gpulse_steps_open(&g), 0);
    char buf[GP_STEPS_DGRAM_MAX];
    gpulse_step(&g, 1, 0.01, 1, GPULSE_UNSET, GPULSE_UNSET, GPULSE_UNSET);
    gpulse_flush(&g);
    CHECK(recv(rfd, buf, sizeof buf, 0) > 0);
    struct timespec ckpt = {0, 60000000}; /* a 60 ms checkpoint */
    nanosleep(&ckpt, NULL);
    gpulse_phase(&g, "checkpoint", 0.06);
    gpulse_phase(&g, "Bad-Name", 1);  /* not sent */
    gpulse_phase(&g, "eval", -1);     /* not sent */
    gpulse_step(&g, 2, 0.01, 1, GPULSE_UNSET, GPULSE_UNSET, GPULSE_UNSET);
    gpulse_flush(&g);
    /* the phase went at once (20 ms since the last send), the step after */
    struct phase_got got = {0};
    unsigned bad = 0;
    for (int i = 0; i < 2 && got.n < 2; i++) {
        ssize_t n = recv(rfd, buf, sizeof buf, 0);
        CHECK(n > 0);
        gp_steps_parse(buf, (size_t)n, phase_collect, &got, &bad);
    }
    CHECK_INT(got.n, 2);
    CHECK_INT(bad, 0);
    CHECK_INT(got.r[0].kind, GP_STEPS_PHASE);
    CHECK_STR(got.r[0].name, "checkpoint");
    CHECK_DBL(got.r[0].dur, 0.06, 1e-9);
    CHECK(got.r[0].has & GP_SK_T);
    CHECK_INT(got.r[1].kind, GP_STEPS_STEP);
    CHECK(got.r[1].wait < 0.03); /* the 60 ms are the phase's, not the loader's */
    gpulse_close(&g);
    close(rfd);
}

/* A burst through the real source: each record is received or reported
 * lost, none vanishes, none is counted twice. */
static void test_burst_everything_accounted(void)
{
    const char *path = sock_path("s.sock");
    void *st = open_at(path, NULL);
    setenv("GPULSE_STEPS_SOCKET", path, 1);
    struct gpulse_steps g;
    CHECK_INT(gpulse_steps_open(&g), 0);
    const unsigned N = 20000;
    for (unsigned i = 1; i <= N; i++) {
        gpulse_step(&g, i, 0.001, 1, 2, 0.5, GPULSE_UNSET);
        if (i % 4 == 0)
            gpulse_flush(&g);
    }
    gpulse_flush(&g);
    /* Until the drops are told: a last record, sent when the queue has room. */
    unsigned extra = 0;
    while (g.unsent[0] && extra < 100) {
        uint64_t before = g.sent_total;
        usleep(20000);
        gpulse_step(&g, N + ++extra, 0.001, 1, 2, 0.5, GPULSE_UNSET);
        gpulse_flush(&g);
        if (g.sent_total > before)
            break;
    }
    struct gp_frame f;
    gp_frame_init(&f);
    const struct gp_step_stats *s = NULL;
    for (int i = 0; i < 500; i++) {
        unsigned errors = 0;
        sample(st, &f, &errors);
        s = find_pid(&f, (uint32_t)getpid());
        if (s && s->steps_total + s->lost_total >= N + extra)
            break;
        usleep(10000);
    }
    CHECK(s != NULL);
    CHECK_INT(s->steps_total + s->lost_total, N + extra);
    CHECK_INT(s->lost_total, g.lost_total);
    CHECK_DBL(s->samples_total, (double)s->steps_total, 0);
    CHECK(s->steps_total > N / 10); /* the receiver drains as they come */
    gpulse_close(&g);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

static void test_eviction_of_gone_and_ended_senders(void)
{
    gp_steps_idle_evict_s = 0.3;
    gp_steps_ended_keep_s = 0.3;
    const char *path = sock_path("s.sock");
    void *st = open_at(path, NULL);
    pid_t child = fork();
    if (child == 0) {
        send_text(path, "step seq=1 dur=1\n");
        _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    send_text(path, "step seq=1 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 2);
    CHECK_INT(f.nsteps, 2);
    CHECK(find_pid(&f, (uint32_t)child) != NULL);
    CHECK(!has_root(&f, (uint32_t)child)); /* gone: procfs need not follow it */
    CHECK(has_root(&f, (uint32_t)getpid()));
    usleep(400000);
    unsigned errors = 0;
    sample(st, &f, &errors);
    CHECK(find_pid(&f, (uint32_t)child) == NULL); /* idle and gone */
    CHECK(find_pid(&f, (uint32_t)getpid()) != NULL); /* idle but alive: kept */
    /* An end: kept (not followed) for gp_steps_ended_keep_s, then forgotten. */
    send_text(path, "end seq=2 status=3 t=1700000000.5 job=fallback\n");
    sample_until_records(st, &f, 3);
    const struct gp_step_stats *s = find_pid(&f, (uint32_t)getpid());
    CHECK(s && s->ended && s->exit_status_valid);
    CHECK_INT(s->exit_status, 3);
    CHECK_DBL(s->end_time_s, 1700000000.5, 1e-6);
    CHECK_STR(s->jid.job, "fallback");
    CHECK(!has_root(&f, (uint32_t)getpid()));
    usleep(400000);
    sample(st, &f, &errors);
    CHECK_INT(f.nsteps, 0);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

struct observed {
    unsigned steps, metas;
    uint32_t pid;
};

static void observe(void *ctx, uint32_t pid, const struct gp_steps_record *r)
{
    struct observed *o = ctx;
    o->pid = pid;
    if (r->kind == GP_STEPS_STEP)
        __atomic_add_fetch(&o->steps, 1, __ATOMIC_RELAXED);
    else if (r->kind == GP_STEPS_META)
        __atomic_add_fetch(&o->metas, 1, __ATOMIC_RELAXED);
}

static void test_observer_sees_every_good_record(void)
{
    struct observed o = {0};
    struct gp_source_config extra = {.step_observer = observe, .step_observer_ctx = &o};
    const char *path = sock_path("s.sock");
    void *st = open_at(path, &extra);
    send_text(path, "step seq=1 dur=1\nstep seq=2 dur=x\nmeta seq=3 target=9\nfuture seq=4\n"
                    "step seq=5 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until_records(st, &f, 5);
    gp_source_steps.close(st); /* joins the receiver: o is complete */
    CHECK_INT(o.steps, 2);
    CHECK_INT(o.metas, 1);
    CHECK_INT(o.pid, getpid());
    gp_frame_free(&f);
}

const struct gp_test gp_tests_steps[] = {
    {"no_path_is_enodev", test_no_path_is_enodev},
    {"totals_pid_and_socket_mode", test_totals_pid_and_socket_mode},
    {"loss_from_gaps_and_lost_never_twice", test_loss_from_gaps_and_lost_never_twice},
    {"malformed_counted_good_kept", test_malformed_counted_good_kept},
    {"leftover_replaced_live_kept", test_leftover_replaced_live_kept},
    {"full_queue_does_not_block_the_client", test_full_queue_does_not_block_the_client},
    {"client_measures_wait", test_client_measures_wait},
    {"client_phase", test_client_phase},
    {"phases_summed_by_phase", test_phases_summed_by_phase},
    {"burst_everything_accounted", test_burst_everything_accounted},
    {"eviction_of_gone_and_ended_senders", test_eviction_of_gone_and_ended_senders},
    {"observer_sees_every_good_record", test_observer_sees_every_good_record},
    {0},
};
