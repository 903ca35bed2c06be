/*
 * test_store_crash.c - SIGKILL at random moments, then restart: every
 * acknowledged sample is there, exactly once and in order.
 *
 * A child process opens the store with its background thread checkpointing
 * every few milliseconds and compacting one-minute windows (sample times
 * run ahead of the clock, five seconds a batch, so a window fills in twelve
 * batches and compaction follows right behind), appends batches through
 * gp_store_append and writes each acknowledged batch number into a pipe.
 * The parent kills it after a random delay, so kills land in appends,
 * checkpoints, compactions and recoveries alike; it reopens the store to
 * check, and the next child resends from the first unacknowledged batch
 * (what it resends may already be stored: those come back as duplicates).
 * Appender threads in the child move in lockstep so none falls a window
 * behind.
 */
#include "store_testlib.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSER 24 /* series, split between the threads */
#define PER 5   /* samples per series per batch */
#define MAXT 3

struct crash {
    const char *dir;
    int64_t t0;
    int nthreads;
    int no_sync;
    int wfd;
    uint32_t next[MAXT]; /* per thread: the first batch to send */
    pthread_barrier_t barrier;
};

struct appender {
    struct crash *c;
    struct gp_store *s;
    int i;
};

static void *append_loop(void *arg)
{
    struct appender *a = arg;
    struct crash *c = a->c;
    uint32_t per_thread = NSER / (uint32_t)c->nthreads;
    for (uint32_t b = c->next[a->i];; b++) {
        if (c->nthreads > 1)
            pthread_barrier_wait(&c->barrier);
        struct treq r;
        treq_build(&r, (uint32_t)a->i * per_thread, per_thread, PER, c->t0 + (int64_t)b * PER * 1000,
                   1000, NULL);
        struct gp_append_result res;
        char err[256];
        tclock_advance(c->t0 + ((int64_t)b * PER + PER - 1) * 1000);
        if (gp_store_append(a->s, &r.req, &res, err, sizeof err) != GP_OK) {
            fprintf(stderr, "child: append: %s\n", err);
            _exit(3);
        }
        if (res.accepted + res.duplicate != per_thread * PER) {
            fprintf(stderr, "child: batch %u: accepted %llu dup %llu ooo %llu old %llu\n", b,
                    (unsigned long long)res.accepted, (unsigned long long)res.duplicate,
                    (unsigned long long)res.out_of_order, (unsigned long long)res.too_old);
            _exit(4);
        }
        uint32_t msg = (uint32_t)a->i << 24 | b;
        if (write(c->wfd, &msg, sizeof msg) != sizeof msg)
            _exit(5);
        treq_free(&r);
    }
    return NULL;
}

static void child(struct crash *c)
{
    struct gp_store_options o = {
        .dir = c->dir,
        .block_ms = 60000,
        .checkpoint_interval_ms = 10,
        .wal_segment_bytes = 64 * 1024,
        .no_sync = c->no_sync,
        .max_future_ms = -1,
        .clock_ms = tclock, /* follows the data, so windows are compacted as it is written */
    };
    struct gp_store *s;
    char err[512];
    if (gp_store_open(&s, &o, err, sizeof err) != GP_OK) {
        fprintf(stderr, "child: open: %s\n", err);
        _exit(2);
    }
    pthread_t th[MAXT];
    struct appender a[MAXT];
    if (c->nthreads > 1)
        pthread_barrier_init(&c->barrier, NULL, (unsigned)c->nthreads);
    for (int i = 0; i < c->nthreads; i++) {
        a[i] = (struct appender){c, s, i};
        if (pthread_create(&th[i], NULL, append_loop, &a[i]) != 0)
            _exit(6);
    }
    for (int i = 0; i < c->nthreads; i++)
        pthread_join(th[i], NULL);
    _exit(0);
}

/* Every series holds exactly the grid from t0, at least through the
 * acknowledged batches, with the right values. */
static void verify(struct crash *c, int have_ack[MAXT], uint32_t acked[MAXT], uint64_t *compactions)
{
    struct gp_store_options o = {.block_ms = 60000, .no_background = 1};
    struct gp_store *s = topen(c->dir, &o);
    uint32_t per_thread = NSER / (uint32_t)c->nthreads;
    for (uint32_t k = 0; k < NSER; k++) {
        int th = (int)(k / per_thread);
        size_t need = have_ack[th] ? ((size_t)acked[th] + 1) * PER : 0;
        uint32_t id = tid(s, k);
        if (need && !id)
            gp_test_fail(__FILE__, __LINE__, "series %u lost", k);
        if (!id)
            continue;
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
        if (x.n < need)
            gp_test_fail(__FILE__, __LINE__, "series %u: %zu samples, %zu acknowledged", k, x.n,
                         need);
        for (size_t j = 0; j < x.n; j++) {
            int64_t t = c->t0 + (int64_t)j * 1000;
            if (x.t[j] != t || x.v[j] != tvalue(k, t))
                gp_test_fail(__FILE__, __LINE__, "series %u sample %zu: t %lld v %g, expected %lld",
                             k, j, (long long)x.t[j], x.v[j], (long long)t);
        }
        gp_samples_free(&x);
    }
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    *compactions = st.blocks;
    gp_store_close(s);
}

static void run_crash(int nthreads, int rounds, int no_sync, unsigned seed)
{
    struct crash c = {
        .dir = gp_test_tmpdir(),
        .t0 = (tnow_ms() / 60000) * 60000 + 3600 * 1000,
        .nthreads = nthreads,
        .no_sync = no_sync,
    };
    int have_ack[MAXT] = {0};
    uint32_t acked[MAXT] = {0};
    uint64_t blocks = 0;
    srand(seed);
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < nthreads; i++)
            c.next[i] = have_ack[i] ? acked[i] + 1 : 0;
        int fds[2];
        CHECK_INT(pipe(fds), 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            c.wfd = fds[1];
            child(&c);
        }
        close(fds[1]);
        usleep((useconds_t)(20000 + rand() % 400000));
        kill(pid, SIGKILL);
        uint32_t msg;
        ssize_t k;
        while ((k = read(fds[0], &msg, sizeof msg)) == sizeof msg || (k < 0 && errno == EINTR)) {
            if (k < 0)
                continue;
            int th = (int)(msg >> 24);
            uint32_t b = msg & 0xffffff;
            CHECK(th < nthreads);
            if (!have_ack[th] || b > acked[th]) {
                acked[th] = b;
                have_ack[th] = 1;
            }
        }
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        if (!WIFSIGNALED(status))
            gp_test_fail(__FILE__, __LINE__, "round %d: the child exited by itself (%d)", round,
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        verify(&c, have_ack, acked, &blocks);
    }
    printf("crash: %d rounds, %d threads, last batches %u/%u, %llu blocks\n", rounds, nthreads,
           acked[0], nthreads > 1 ? acked[1] : 0, (unsigned long long)blocks);
    CHECK(have_ack[0]);
    CHECK(blocks > 0); /* compaction ran, and was killed in too */
}

static void test_sigkill_one_appender(void) { run_crash(1, 8, 0, 1); }
static void test_sigkill_three_appenders(void) { run_crash(3, 8, 0, 2); }
static void test_sigkill_no_sync(void) { run_crash(2, 6, 1, 3); }

const struct gp_test gp_tests_store_crash[] = {
    {"sigkill_one_appender", test_sigkill_one_appender},
    {"sigkill_three_appenders", test_sigkill_three_appenders},
    {"sigkill_no_sync", test_sigkill_no_sync},
    {0},
};
