/*
 * test_store_time.c - the store's clock and its write-error recovery
 * (issue 15, findings 1, 6 and 10):
 *   - a sample too far ahead of the clock is refused and counted, and
 *     names itself (series index, time, clock) for the sender's message;
 *   - samples already held far in the future (written by a version
 *     without the bound) move neither the too-old floor nor compaction,
 *     before and after a restart;
 *   - a write error (ENOSPC, a failed fsync) pauses writes, and the store
 *     resumes them by itself once writes work again, losing and
 *     duplicating nothing;
 *   - a failed meta.db commit is reported with SQLite's real reason.
 */
#include "lib/log.h"
#include "store/segment.h"
#include "store/store_int.h"
#include "store_testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

#define HOUR_MS (3600 * 1000LL)

/* A request of one sample per series: gpu_util{gpu="<first+i>"} at t[i]. */
static void treq_times(struct treq *r, uint32_t first, size_t n, const int64_t *t)
{
    treq_build(r, first, n, 1, 0, 0, NULL);
    for (size_t i = 0; i < n; i++)
        r->samples[i] = (struct gp_sample){tvalue(first + (uint32_t)i, t[i]), t[i]};
}

/* Appends one sample a second for `secs` seconds from t0 to series
 * 0..n-1 and checks every one is accepted. */
static void push_current(struct gp_store *s, size_t n, int64_t t0, int secs)
{
    for (int j = 0; j < secs; j++) {
        struct treq r;
        treq_build(&r, 0, n, 1, t0 + j * 1000LL, 1000, NULL);
        struct gp_append_result res = tappend(s, &r);
        if (res.accepted != n)
            gp_test_fail(__FILE__, __LINE__,
                         "second %d: accepted %llu of %zu (too_old %llu, future %llu, ooo %llu)", j,
                         (unsigned long long)res.accepted, n, (unsigned long long)res.too_old,
                         (unsigned long long)res.too_far_in_future,
                         (unsigned long long)res.out_of_order);
        treq_free(&r);
    }
}

static void test_future_sample_refused_and_named(void)
{
    struct gp_store *s = topen_tmp(); /* the default bound: 10 minutes */
    int64_t now = tnow_ms();
    int64_t t[4] = {now, now + 3 * HOUR_MS, now + 5 * 60 * 1000, now + 3 * HOUR_MS + 1000};
    struct treq r;
    treq_times(&r, 0, 4, t);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, 2); /* now, and 5 minutes ahead: inside the bound */
    CHECK_INT(res.too_far_in_future, 2);
    CHECK_INT(res.too_old, 0);
    CHECK_INT(res.future_series, 1); /* the first one refused */
    CHECK_INT(res.future_t_ms, t[1]);
    CHECK(res.now_ms >= now && res.now_ms < now + 60000);
    CHECK_INT(res.series_created, 2); /* no series for samples all refused */
    CHECK_INT(tid(s, 1), 0);
    treq_free(&r);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.rejected_too_far_in_future, 2);
    CHECK_INT(st.rejected_too_old, 0);
    gp_store_close(s);

    /* The bound is the option; < 0 lifts it (backfill of synthetic data). */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/open", gp_test_tmpdir());
    struct gp_store_options o = {.no_background = 1, .max_future_ms = 60 * 1000};
    s = topen(dir, &o);
    int64_t t2[2] = {now + 2 * 60 * 1000, now + 30 * 1000};
    treq_times(&r, 0, 2, t2);
    res = tappend(s, &r);
    CHECK_INT(res.too_far_in_future, 1);
    CHECK_INT(res.accepted, 1);
    treq_free(&r);
    gp_store_close(s);
    o.max_future_ms = -1;
    s = topen(dir, &o);
    treq_times(&r, 0, 2, t2);
    res = tappend(s, &r);
    CHECK_INT(res.too_far_in_future, 0);
    CHECK_INT(res.accepted, 1); /* series 1's; series 0's is a duplicate now */
    CHECK_INT(res.duplicate, 1);
    treq_free(&r);
    gp_store_close(s);
}

/* The case: one series 3 hours ahead (and another 16 days), the
 * others current. Before, compaction took the newest sample for "now",
 * compacted the current window, and every current sample was too old. */
static void test_future_samples_held_do_not_move_now(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t now = tnow_ms();
    /* Written as by a version without the bound. */
    struct gp_store_options o = {.no_background = 1, .max_future_ms = -1, .block_ms = 120000};
    struct gp_store *s = topen(dir, &o);
    push_current(s, 8, now - 20000, 10);
    int64_t far[2] = {now + 3 * HOUR_MS, now + 16 * 24 * HOUR_MS};
    struct treq r;
    treq_times(&r, 100, 2, far);
    CHECK_INT(tappend(s, &r).accepted, 2);
    treq_free(&r);
    CHECK_INT(gp_store_maintain(s, 0), GP_OK); /* compaction and a checkpoint */
    push_current(s, 8, now - 10000, 10);
    CHECK_INT(gp_store_maintain(s, 0), GP_OK);
    push_current(s, 8, now, 5);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.rejected_too_old, 0);
    CHECK_INT(st.newest_ms, far[1]); /* the data says so; the clock does not follow */
    gp_store_close(s);

    /* Reopened with the bound (the snapshot's newest time is 16 days
     * ahead): current samples go on, the future ones are still held. */
    o.max_future_ms = 0;
    s = topen(dir, &o);
    push_current(s, 8, now + 5000, 10);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK); /* forced: windows before the current one */
    push_current(s, 8, now + 15000, 5);
    gp_store_stats(s, &st);
    CHECK_INT(st.rejected_too_old, 0);
    for (uint32_t k = 100; k < 102; k++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x), GP_OK);
        CHECK_INT(x.n, 1);
        CHECK_INT(x.t[0], far[k - 100]);
        gp_samples_free(&x);
    }
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, 3), INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 40); /* 10 + 10 + 5 + 10 + 5, the overlaps are duplicates */
    gp_samples_free(&x);
    gp_store_close(s);
}

/* Injected failures of the store's file writes. */
static int fail_mode; /* 0 none, 1 writev ENOSPC, 2 fdatasync EIO */

static ssize_t inj_writev(int fd, const struct iovec *iov, int n)
{
    if (fail_mode == 1) {
        errno = ENOSPC;
        return -1;
    }
    return writev(fd, iov, n);
}

static int inj_fdatasync(int fd)
{
    if (fail_mode == 2) {
        errno = EIO;
        return -1;
    }
    return fdatasync(fd);
}

/* Every series 0..n-1 holds exactly one sample a second over [t0, t0+secs). */
static void check_grid(struct gp_store *s, size_t n, int64_t t0, int secs)
{
    for (uint32_t k = 0; k < n; k++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x), GP_OK);
        if (x.n != (size_t)secs)
            gp_test_fail(__FILE__, __LINE__, "series %u: %zu samples, expected %d", k, x.n, secs);
        for (size_t j = 0; j < x.n; j++)
            CHECK_INT(x.t[j], t0 + (int64_t)j * 1000);
        gp_samples_free(&x);
    }
}

static void test_writes_resume_after_write_error(void)
{
    gp_seg_sys.writev = inj_writev;
    gp_seg_sys.fdatasync = inj_fdatasync;
    const char *dir = gp_test_tmpdir();
    /* At the start of a block window, so no window edge cuts a head into
     * a chunk file (whose write would fail first, another message). */
    int64_t t0 = (tnow_ms() - 600000) / (2 * HOUR_MS) * (2 * HOUR_MS);
    int secs = 0;
    for (int mode = 1; mode <= 2; mode++) {
        struct gp_store_options o = {.no_background = 1};
        struct gp_store *s = topen(dir, &o);
        push_current(s, 4, t0 + secs * 1000LL, 10);
        secs += 10;
        fail_mode = mode;
        struct treq r;
        treq_build(&r, 0, 4, 1, t0 + secs * 1000LL, 1000, NULL);
        struct gp_append_result res;
        char err[256] = "";
        CHECK_INT(gp_store_append(s, &r.req, &res, err, sizeof err), GP_EIO);
        CHECK_CONTAINS(err, mode == 1 ? "no space left on device" : "input/output error");
        char why[200] = "";
        CHECK_INT(gp_store_write_paused(s, why, sizeof why), 1);
        CHECK_CONTAINS(why, mode == 1 ? "cannot append to the WAL: no space left on device"
                                      : "cannot sync the WAL: input/output error");
        /* Still failing: no resume, appends refused with the reason. */
        CHECK_INT(gp_store_maintain(s, 1), GP_EIO);
        CHECK_INT(gp_store_write_paused(s, NULL, 0), 1);
        CHECK_INT(gp_store_append(s, &r.req, &res, err, sizeof err), GP_EIO);
        CHECK_CONTAINS(err, "writes paused");
        /* Room again: the next maintenance resumes (not within the same
         * second unless forced). */
        fail_mode = 0;
        CHECK_INT(gp_store_maintain(s, 0), GP_EIO);
        usleep(1100 * 1000);
        CHECK_INT(gp_store_maintain(s, 0), GP_OK);
        CHECK_INT(gp_store_write_paused(s, NULL, 0), 0);
        /* The retry of the failed batch: held once (it reached the head,
         * and the resume's checkpoint made it durable). */
        res = tappend(s, &r);
        CHECK_INT(res.accepted + res.duplicate, 4);
        treq_free(&r);
        secs += 1;
        push_current(s, 4, t0 + secs * 1000LL, 5);
        secs += 5;
        struct gp_store_stats st;
        gp_store_stats(s, &st);
        CHECK_INT(st.write_errors, 1);
        CHECK_INT(st.write_resumes, 1);
        CHECK_INT(st.writes_paused, 0);
        check_grid(s, 4, t0, secs);
        gp_store_close(s);
    }
    gp_seg_sys.writev = writev;
    gp_seg_sys.fdatasync = fdatasync;
    struct gp_store *s = topen(dir, NULL);
    check_grid(s, 4, t0, secs);
    gp_store_close(s);
}

/* A compaction that cannot write its block (a full disk) leaves the
 * window open: before, the window was marked compacted although no block
 * was written, so its samples were refused as too old and its chunks
 * were swept into the next window's block. */
static void test_failed_compaction_keeps_window_open(void)
{
    gp_seg_sys.writev = inj_writev;
    gp_seg_sys.fdatasync = inj_fdatasync;
    struct gp_store_options o = {.no_background = 1, .block_ms = 120000};
    struct gp_store *s = topen(gp_test_tmpdir(), &o);
    int64_t t0 = (tnow_ms() / 120000 - 4) * 120000; /* four whole windows ago */
    push_current(s, 4, t0, 360); /* three windows; their head chunks cut at the edges */
    fail_mode = 1;
    CHECK(gp_store_maintain(s, 1) != GP_OK);
    fail_mode = 0;
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.blocks, 0);
    /* A new series' sample in the first window is still taken. */
    int64_t t[1] = {t0 + 5000};
    struct treq r;
    treq_times(&r, 50, 1, t);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.too_old, 0);
    CHECK_INT(res.accepted, 1);
    treq_free(&r);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK); /* room again: compacted now */
    gp_store_stats(s, &st);
    CHECK_INT(st.blocks, 3);
    check_grid(s, 4, t0, 360);
    gp_store_close(s);
    s = topen(gp_test_tmpdir(), &o);
    check_grid(s, 4, t0, 360);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, 50), INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 1);
    gp_samples_free(&x);
    gp_store_close(s);
    gp_seg_sys.writev = writev;
    gp_seg_sys.fdatasync = fdatasync;
}

/* A batch appended before a WAL failure is never reported durable after
 * the log is reopened (its bytes may have been lost with the failure),
 * while batches after the reopen are. */
static void test_wal_reopen_keeps_old_positions_undurable(void)
{
    gp_seg_sys.writev = inj_writev;
    gp_seg_sys.fdatasync = inj_fdatasync;
    char dir[600], err[256];
    snprintf(dir, sizeof dir, "%s/wal", gp_test_tmpdir());
    struct gp_wal *w;
    CHECK_INT(gp_wal_open(&w, dir, NULL, err, sizeof err), GP_OK);
    struct gp_wal_series ser = {1, (const uint8_t *)"\x01" "a\x01" "b", 4};
    struct gp_wal_sample smp = {1, 1000, 0};
    struct gp_wal_pos a, b, c;
    CHECK_INT(gp_wal_append(w, &ser, 1, &smp, 1, &a), GP_OK);
    fail_mode = 2;
    smp.t_ms = 2000;
    CHECK_INT(gp_wal_append(w, NULL, 0, &smp, 1, &b), GP_OK);
    CHECK_INT(gp_wal_sync(w, &b), GP_EIO);
    CHECK_INT(gp_wal_errno(w), EIO);
    fail_mode = 0;
    CHECK_INT(gp_wal_reopen(w, err, sizeof err), GP_OK);
    CHECK_INT(gp_wal_errno(w), 0);
    CHECK_INT(gp_wal_sync(w, &a), GP_EIO);
    CHECK_INT(gp_wal_sync(w, &b), GP_EIO);
    smp.t_ms = 3000;
    CHECK_INT(gp_wal_append(w, NULL, 0, &smp, 1, &c), GP_OK);
    CHECK_INT(gp_wal_sync(w, &c), GP_OK);
    CHECK_INT(c.segment, a.segment + 1);
    gp_wal_close(w);
    gp_seg_sys.writev = writev;
    gp_seg_sys.fdatasync = fdatasync;
}

/* An fdatasync that waits for the test's word, to hold a batch between
 * its append and its sync. */
static atomic_int sync_gate = 0; /* 1: syncs wait; 2: one is waiting */

static int gated_fdatasync(int fd)
{
    if (atomic_load(&sync_gate)) {
        atomic_store(&sync_gate, 2);
        while (atomic_load(&sync_gate) == 2)
            usleep(1000);
    }
    return fdatasync(fd);
}

struct appender {
    struct gp_store *s;
    struct treq *r;
    struct gp_append_result res;
    atomic_int done;
};

static void *append_thread(void *arg)
{
    struct appender *a = arg;
    char err[256];
    if (gp_store_append(a->s, &a->r->req, &a->res, err, sizeof err) != GP_OK)
        abort();
    atomic_store(&a->done, 1);
    return NULL;
}

/* A retry whose samples are all duplicates of a batch still being synced
 * is not answered before that batch is durable: before, it returned at
 * once (nothing new to log), acknowledging samples a crash could lose. */
static void test_duplicates_wait_for_the_sync(void)
{
    gp_seg_sys.fdatasync = gated_fdatasync;
    struct gp_store_options o = {.no_background = 1};
    struct gp_store *s = topen(gp_test_tmpdir(), &o);
    struct treq r;
    treq_build(&r, 0, 2, 3, tnow_ms() - 10000, 1000, NULL);
    atomic_store(&sync_gate, 1);
    struct appender first = {s, &r, {0}, 0}, retry = {s, &r, {0}, 0};
    pthread_t t1, t2;
    CHECK_INT(pthread_create(&t1, NULL, append_thread, &first), 0);
    while (atomic_load(&sync_gate) != 2)
        usleep(1000); /* the first batch is in the WAL, its sync held */
    CHECK_INT(pthread_create(&t2, NULL, append_thread, &retry), 0);
    usleep(200 * 1000);
    int early = atomic_load(&retry.done);
    atomic_store(&sync_gate, 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(!early);
    CHECK_INT(first.res.accepted, 6);
    CHECK_INT(retry.res.duplicate, 6);
    treq_free(&r);
    gp_store_close(s);
    gp_seg_sys.fdatasync = fdatasync;
}

/* A close while the disk is still full says what failed, and a later
 * open finds every acknowledged sample. */
static void test_close_while_paused(void)
{
    gp_seg_sys.writev = inj_writev;
    gp_seg_sys.fdatasync = inj_fdatasync;
    const char *dir = gp_test_tmpdir();
    int64_t t0 = tnow_ms() - 600000;
    struct gp_store *s = topen(dir, NULL);
    push_current(s, 3, t0, 10);
    fail_mode = 1;
    struct treq r;
    treq_build(&r, 0, 3, 1, t0 + 10000, 1000, NULL);
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_store_append(s, &r.req, &res, err, sizeof err), GP_EIO);
    treq_free(&r);
    gp_store_close(s); /* the resume at close fails: logged, nothing lost */
    fail_mode = 0;
    gp_seg_sys.writev = writev;
    gp_seg_sys.fdatasync = fdatasync;
    s = topen(dir, NULL);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, 1), INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 10); /* the failed batch was never acknowledged and is not in the WAL */
    gp_samples_free(&x);
    push_current(s, 3, t0 + 10000, 5);
    gp_store_close(s);
}

/* Runs fn(arg) with stderr (where gp_log writes) captured into out. */
static void capture_log(void (*fn)(void *), void *arg, char *out, size_t cap)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.txt", gp_test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    CHECK(fd >= 0 && saved >= 0);
    enum gp_log_level min = gp_log_min;
    gp_log_min = GP_LOG_INFO;
    dup2(fd, 2);
    fn(arg);
    dup2(saved, 2);
    gp_log_min = min;
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
}

struct maint_call {
    struct gp_store *s;
    int rc;
};

static void maintain_forced(void *arg)
{
    struct maint_call *m = arg;
    m->rc = gp_store_maintain(m->s, 1);
}

/* meta.db's commit fails (the disk is full at a checkpoint, e.g. at
 * shutdown): the log names that, not the ROLLBACK SQLite refuses after
 * rolling back by itself ("cannot rollback - no transaction is active"). */
static void test_meta_commit_failure_named(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    int64_t t0 = tnow_ms() - 60000;
    push_current(s, 3000, t0, 2);
    /* A page limit below the database's size makes the new rows fail
     * with SQLITE_FULL, as a full disk does. */
    sqlite3_exec(s->db, "PRAGMA max_page_count=1", NULL, NULL, NULL);
    char logged[8192];
    struct maint_call m = {s, 0};
    capture_log(maintain_forced, &m, logged, sizeof logged);
    CHECK_INT(m.rc, GP_EIO);
    CHECK_CONTAINS(logged, "database or disk is full");
    CHECK_CONTAINS(logged, "register new series in meta.db");
    CHECK(!strstr(logged, "no transaction is active"));
    sqlite3_exec(s->db, "PRAGMA max_page_count=1073741823", NULL, NULL, NULL);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK); /* the next checkpoint goes through */
    gp_store_close(s);
    s = topen(dir, NULL);
    check_grid(s, 3000, t0, 2);
    gp_store_close(s);
}

const struct gp_test gp_tests_store_time[] = {
    {"future_sample_refused_and_named", test_future_sample_refused_and_named},
    {"future_samples_held_do_not_move_now", test_future_samples_held_do_not_move_now},
    {"writes_resume_after_write_error", test_writes_resume_after_write_error},
    {"failed_compaction_keeps_window_open", test_failed_compaction_keeps_window_open},
    {"wal_reopen_keeps_old_positions_undurable", test_wal_reopen_keeps_old_positions_undurable},
    {"duplicates_wait_for_the_sync", test_duplicates_wait_for_the_sync},
    {"close_while_paused", test_close_while_paused},
    {"meta_commit_failure_named", test_meta_commit_failure_named},
    {0},
};
