/*
 * test_store.c - the embedded store through its public API: round trips
 * (NaN payloads, the stale marker, infinities), the ordering rules and
 * their counters, the series limit, close/reopen, WAL-only recovery,
 * compaction (identical samples, 15-minute pieces, rollups against brute
 * force), retention, select/label queries, damaged files, the format
 * version check, and concurrent appenders and readers.
 */
#include "lib/bits.h"
#include "lib/crc32c.h"
#include "store/labels.h"
#include "store/segment.h"
#include "store/store_fmt.h"
#include "store/store_int.h"
#include "store_testlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Reads all of series id and checks it equals (ts, vs) bit for bit. */
static void check_series(struct gp_store *s, uint32_t id, const int64_t *ts, const double *vs,
                         size_t n)
{
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
    if (x.n != n)
        gp_test_fail(__FILE__, __LINE__, "series %u: %zu samples, expected %zu", id, x.n, n);
    for (size_t i = 0; i < n; i++) {
        if (x.t[i] != ts[i] || gp_f64_bits(x.v[i]) != gp_f64_bits(vs[i]))
            gp_test_fail(__FILE__, __LINE__, "series %u sample %zu: %lld/%016llx != %lld/%016llx",
                         id, i, (long long)x.t[i], (unsigned long long)gp_f64_bits(x.v[i]),
                         (long long)ts[i], (unsigned long long)gp_f64_bits(vs[i]));
    }
    gp_samples_free(&x);
}

/* Checks series k holds exactly the samples tfill() wrote in [from, to]. */
static void check_fill(struct gp_store *s, uint32_t k, int64_t t0, size_t n)
{
    uint32_t id = tid(s, k);
    CHECK(id != 0);
    int64_t *ts = malloc(n * sizeof *ts);
    double *vs = malloc(n * sizeof *vs);
    for (size_t j = 0; j < n; j++) {
        ts[j] = t0 + (int64_t)j * 1000;
        vs[j] = tvalue(k, ts[j]);
    }
    check_series(s, id, ts, vs, n);
    free(ts);
    free(vs);
}

static void test_special_values_round_trip(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    double vals[8] = {
        gp_bits_f64(GP_STALE_NAN_BITS),
        gp_bits_f64(UINT64_C(0x7ff8000000000001)), /* a NaN with a payload */
        INFINITY,
        -INFINITY,
        -0.0,
        4.9e-324,
        1.5,
        -1e300,
    };
    int64_t t0 = tnow_ms() - 60000, ts[8];
    for (int i = 0; i < 8; i++)
        ts[i] = t0 + i * 15000;
    struct treq r;
    treq_build(&r, 7, 1, 8, t0, 15000, vals);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, 8);
    CHECK_INT(res.series_created, 1);
    uint32_t id = tid(s, 7);
    CHECK(id != 0);
    check_series(s, id, ts, vals, 8);
    /* Partial ranges. */
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, ts[2], ts[4], &x), GP_OK);
    CHECK_INT(x.n, 3);
    CHECK_INT(x.t[0], ts[2]);
    gp_samples_free(&x);
    CHECK_INT(gp_store_read(s, id, ts[7] + 1, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 0);
    CHECK_INT(gp_store_read(s, 9999, INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 0);
    gp_store_close(s);
    s = topen(dir, NULL);
    check_series(s, tid(s, 7), ts, vals, 8);
    gp_store_close(s);
    treq_free(&r);
}

/* The newest value kept at ingest answers as a decode of the samples
 * would: only for the newest time and a number; a stale marker or NaN
 * last, an earlier time, and a reopened store read the samples. */
static void test_newest_value_kept(void)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/data", gp_test_tmpdir());
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = tnow_ms() - 600000;
    double stale = gp_bits_f64(GP_STALE_NAN_BITS);
    /* series 0: numbers; 1: a stale marker last; 2: NaN last */
    const double val[] = {1, 2, 3, 4, 5, 1, 2, 3, 4, stale, 1, 2, 3, 4, NAN};
    struct treq r;
    treq_build(&r, 0, 3, 5, t0, 1000, val);
    tappend(s, &r);
    treq_free(&r);
    struct gp_samples x = {0};
    int64_t last = t0 + 4000;
    for (int round = 0; round < 2; round++) {
        CHECK(gp_store_newest_value(s, tid(s, 0), last, 60000, &x) == 5);
        CHECK(gp_store_newest_value(s, tid(s, 0), last - 1000, 60000, &x) == 4);
        CHECK(gp_store_newest_value(s, tid(s, 1), last, 60000, &x) == 4);
        CHECK(gp_store_newest_value(s, tid(s, 2), last, 60000, &x) == 4);
        CHECK(isnan(gp_store_newest_value(s, tid(s, 0), last + 70000, 60000, &x)));
        gp_store_close(s);
        s = topen(dir, &o); /* newest from the snapshot or the chunk files */
    }
    /* A newer sample after the reopen is what is kept. */
    const double six[] = {6};
    treq_build(&r, 0, 1, 1, last + 1000, 1000, six);
    tappend(s, &r);
    treq_free(&r);
    CHECK(gp_store_newest_value(s, tid(s, 0), last + 1000, 60000, &x) == 6);
    CHECK(gp_store_newest_value(s, tid(s, 0), last, 60000, &x) == 5);
    gp_samples_free(&x);
    gp_store_close(s);
}

static void test_ordering_rules_counted(void)
{
    struct gp_store *s = topen(gp_test_tmpdir(), NULL);
    int64_t t0 = tnow_ms() - 600000;
    double v1[3] = {1, 2, 3};
    struct treq r;
    treq_build(&r, 1, 1, 3, t0, 1000, v1);
    tappend(s, &r);
    treq_free(&r);
    /* Same newest time and value: duplicate; other value: conflict;
     * older: out of order; newer: accepted. Within one request too. */
    double v2[5] = {3, 4, 1, 5, 5};
    treq_build(&r, 1, 1, 5, t0 + 2000, 0, v2);
    r.samples[1].timestamp_ms = t0 + 2000; /* conflict */
    r.samples[2].timestamp_ms = t0 + 1000; /* out of order */
    r.samples[3].timestamp_ms = t0 + 3000; /* accepted */
    r.samples[4].timestamp_ms = t0 + 3000; /* duplicate of the one just accepted */
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, 1);
    CHECK_INT(res.duplicate, 2);
    CHECK_INT(res.conflict, 1);
    CHECK_INT(res.out_of_order, 1);
    CHECK_INT(res.series_created, 0);
    treq_free(&r);
    /* Too old (before the raw retention) and absurd times. */
    double v3[2] = {1, 2};
    treq_build(&r, 2, 1, 2, t0 - 16LL * 24 * 3600 * 1000, 1000, v3);
    res = tappend(s, &r);
    CHECK_INT(res.too_old, 2);
    CHECK_INT(res.series_created, 0); /* no series for samples that all fail */
    treq_free(&r);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.samples_appended, 4);
    CHECK_INT(st.duplicates, 2);
    CHECK_INT(st.rejected_conflict, 1);
    CHECK_INT(st.rejected_out_of_order, 1);
    CHECK_INT(st.rejected_too_old, 2);
    CHECK_INT(st.series, 1);
    int64_t ts[4] = {t0, t0 + 1000, t0 + 2000, t0 + 3000};
    double vs[4] = {1, 2, 3, 5};
    check_series(s, tid(s, 1), ts, vs, 4);
    gp_store_close(s);
}

static void test_retried_request_is_duplicate(void)
{
    struct gp_store *s = topen(gp_test_tmpdir(), NULL);
    int64_t t0 = gp_st_floor(tnow_ms() - 3600 * 1000, 3600 * 1000) + 1000; /* one block window */
    struct treq r;
    /* Two closed chunks of H samples, then 60 in the head. */
    enum { H = GP_ST_HEAD_SAMPLES, N = 2 * H + 60 };
    treq_build(&r, 0, 5, N, t0, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, 5 * N);
    treq_free(&r);
    /* A retry of the last 100 (spanning the cut at 2H): all duplicates. */
    treq_build(&r, 0, 5, 100, t0 + (N - 100) * 1000, 1000, NULL);
    res = tappend(s, &r);
    CHECK_INT(res.duplicate, 500);
    CHECK_INT(res.out_of_order, 0);
    CHECK_INT(res.accepted, 0);
    treq_free(&r);
    /* Older than the newest two chunks: out of order, as Prometheus says. */
    treq_build(&r, 0, 5, 1, t0 + 10 * 1000, 1000, NULL);
    res = tappend(s, &r);
    CHECK_INT(res.out_of_order, 5);
    treq_free(&r);
    /* The same time with another value inside the chunks: out of order too. */
    double v[1] = {1234.5};
    treq_build(&r, 0, 1, 1, t0 + (2 * H + 10) * 1000, 1000, v);
    res = tappend(s, &r);
    CHECK_INT(res.out_of_order, 1);
    treq_free(&r);
    for (uint32_t k = 0; k < 5; k++)
        check_fill(s, k, t0, N);
    gp_store_close(s);
}

static void test_max_series(void)
{
    struct gp_store_options o = {.max_series = 5, .no_background = 1};
    struct gp_store *s = topen(gp_test_tmpdir(), &o);
    struct treq r;
    treq_build(&r, 0, 8, 2, tnow_ms() - 10000, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.series_created, 5);
    CHECK_INT(res.accepted, 10);
    CHECK_INT(res.series_limit, 6);
    treq_free(&r);
    /* Known series still take samples. */
    treq_build(&r, 0, 8, 1, tnow_ms() - 5000, 1000, NULL);
    res = tappend(s, &r);
    CHECK_INT(res.accepted, 5);
    CHECK_INT(res.series_limit, 3);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.series, 5);
    CHECK_INT(st.rejected_series_limit, 9);
    treq_free(&r);
    gp_store_close(s);
}

static void test_close_reopen_keeps_everything(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    int64_t t0 = gp_st_floor(tnow_ms() - 1800 * 1000, 60000);
    tfill(s, 20, 1000, t0, 37); /* several chunks per series: chunk files + heads */
    gp_store_close(s);
    s = topen(dir, NULL);
    for (uint32_t k = 0; k < 20; k++)
        check_fill(s, k, t0, 1000);
    /* Appends continue after reopening, and again survive. */
    tfill(s, 20, 1, t0 + 1000 * 1000, 1);
    gp_store_close(s);
    s = topen(dir, NULL);
    for (uint32_t k = 0; k < 20; k += 7)
        check_fill(s, k, t0, 1001);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.series, 20);
    CHECK_INT(st.newest_ms, t0 + 1000 * 1000);
    CHECK_INT(st.oldest_ms, t0);
    gp_store_close(s);
}

/* A child appends and exits without closing: recovery from the WAL only
 * (and from whatever checkpoints the child's thread took, when bg). */
static void test_reopen_from_wal_only(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t t0 = gp_st_floor(tnow_ms() - 1800 * 1000, 60000);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct gp_store *s = topen(dir, NULL);
        tfill(s, 10, 500, t0, 50);
        _exit(0); /* no close, no checkpoint */
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct gp_store *s = topen(dir, NULL);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.replayed_samples, 10 * 500);
    for (uint32_t k = 0; k < 10; k++)
        check_fill(s, k, t0, 500);
    /* Then a checkpoint (close takes one), more appends, another crash. */
    gp_store_close(s);
    pid = fork();
    if (pid == 0) {
        struct gp_store *c = topen(dir, NULL);
        tfill(c, 10, 300, t0 + 500 * 1000, 30);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    s = topen(dir, NULL);
    gp_store_stats(s, &st);
    CHECK_INT(st.replayed_samples, 10 * 300);
    for (uint32_t k = 0; k < 10; k++)
        check_fill(s, k, t0, 800);
    gp_store_close(s);
}

static void test_compaction_keeps_samples(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 120000, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 1200 * 1000, 120000) + 7000;
    tfill(s, 12, 1100, t0, 100);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK(st.blocks >= 8);
    CHECK(st.compactions >= 8);
    for (uint32_t k = 0; k < 12; k++)
        check_fill(s, k, t0, 1100);
    /* Samples in a compacted window are too old now. */
    struct treq r;
    treq_build(&r, 0, 1, 1, t0 + 500 * 1000 + 500, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.too_old, 1);
    treq_free(&r);
    /* The consumed chunk files are gone: those of the last window are left. */
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks", dir);
    DIR *d = opendir(path);
    CHECK(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += de->d_name[0] != '.';
    closedir(d);
    CHECK(files >= 1 && files <= 3);
    gp_store_close(s);
    s = topen(dir, &o);
    for (uint32_t k = 0; k < 12; k++)
        check_fill(s, k, t0, 1100);
    /* A range read across a block boundary. */
    struct gp_samples x = {0};
    uint32_t id = tid(s, 3);
    int64_t a = gp_st_floor(t0, 120000) + 120000 - 5000;
    CHECK_INT(gp_store_read(s, id, a, a + 9999, &x), GP_OK);
    CHECK_INT(x.n, 10);
    for (size_t i = 0; i < x.n; i++) {
        CHECK_INT(x.t[i], a + (int64_t)i * 1000);
        CHECK_DBL(x.v[i], tvalue(3, x.t[i]), 0);
    }
    gp_samples_free(&x);
    gp_store_close(s);
}

/* Compaction cuts each series' samples into block chunks of one aligned
 * 15-minute piece each (a short read decodes its piece, not the window):
 * every entry of the block stays inside one piece, the pieces follow each
 * other without a gap, and reads across and on their borders are exact. */
static void test_compaction_cuts_pieces(void)
{
    enum { PIECE = 15 * 60 * 1000, N = 3000 };
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 3600000, .no_background = 1, .no_sync = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t w = gp_st_floor(tnow_ms(), 3600000) - 3 * 3600000, t0 = w + 7000;
    tfill(s, 2, N, t0, 500);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    gp_store_close(s);
    char path[1024];
    snprintf(path, sizeof path, "%s/blocks/%lld_%lld.blk", dir, (long long)w, (long long)(w + 3599999));
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    uint8_t *data = malloc((size_t)st.st_size);
    CHECK(data && read(fd, data, (size_t)st.st_size) == st.st_size);
    close(fd);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(data, (size_t)st.st_size, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.n, 2 * 4); /* 7 s to 50 min 7 s: four pieces a series */
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        gp_st_bfile_entry(&bf, i, &e);
        int64_t start = i % 4 == 0 ? t0 : w + (int64_t)(i % 4) * PIECE;
        CHECK_INT(e.t_first, start);
        CHECK_INT(gp_st_floor(e.t_last, PIECE), gp_st_floor(e.t_first, PIECE));
        CHECK_INT(e.t_last, i % 4 == 3 ? t0 + (N - 1) * 1000 : w + (int64_t)(i % 4 + 1) * PIECE - 1000);
        CHECK_INT(e.count, (uint32_t)((e.t_last - e.t_first) / 1000 + 1));
    }
    free(data);
    s = topen(dir, &o);
    check_fill(s, 0, t0, N);
    check_fill(s, 1, t0, N);
    /* Across a piece border, from one, up to one, and a lone border sample. */
    int64_t from[] = {w + PIECE - 3000, w + 2 * PIECE, w + 2 * PIECE - 5000, w + 3 * PIECE};
    int64_t to[] = {w + PIECE + 2999, w + 2 * PIECE + 4999, w + 2 * PIECE, w + 3 * PIECE};
    for (size_t c = 0; c < sizeof from / sizeof from[0]; c++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, 1), from[c], to[c], &x), GP_OK);
        CHECK_INT(x.n, (size_t)((to[c] - from[c]) / 1000 + 1));
        for (size_t i = 0; i < x.n; i++) {
            CHECK_INT(x.t[i], from[c] + (int64_t)i * 1000);
            CHECK_DBL(x.v[i], tvalue(1, x.t[i]), 0);
        }
        gp_samples_free(&x);
    }
    gp_store_close(s);
}

/* Two blocks that overlap (a damaged or hand-copied data directory): a
 * read keeps increasing times only, the older block's samples first, and
 * the newer block's chunk from its first newer sample on. */
static void test_overlapping_blocks_read_in_order(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 3600000, .no_background = 1, .no_sync = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t w = gp_st_floor(tnow_ms(), 3600000) - 3 * 3600000, t0 = w + 1000;
    tfill(s, 1, 600, t0, 300);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    uint32_t id = tid(s, 0);
    gp_store_close(s);
    /* A second block, one ms younger, with t0 + 300 s .. t0 + 900 s. */
    enum { M = 601 };
    int64_t t[M];
    double v[M];
    for (size_t i = 0; i < M; i++) {
        t[i] = t0 + (int64_t)(300 + i) * 1000;
        v[i] = -1.5;
    }
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, M, &sc, &b), GP_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/blocks/%lld_%lld.blk", dir, (long long)(w + 1), (long long)(w + 3599999));
    struct gp_st_bwriter bw;
    CHECK_INT(gp_st_bwriter_open(&bw, path, GP_ST_BF_BLOCK, w + 1, w + 3599999), GP_OK);
    CHECK_INT(gp_st_bwriter_add(&bw, id, M, t[0], t[M - 1], b.data, b.len), GP_OK);
    uint64_t size;
    CHECK_INT(gp_st_bwriter_finish(&bw, &size), GP_OK);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
    s = topen(dir, &o);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 901); /* 600 of the first block, 301 newer of the second */
    for (size_t i = 0; i < x.n; i++) {
        CHECK_INT(x.t[i], t0 + (int64_t)i * 1000);
        CHECK_DBL(x.v[i], i < 600 ? tvalue(0, x.t[i]) : -1.5, 0);
    }
    gp_samples_free(&x);
    gp_store_close(s);
}

/* Three series of 1,500 samples at 1 s compacted into one block of a
 * 1-hour window three hours ago (*t0: the first sample); closed. */
static void three_series_compacted(const char *dir, struct gp_store_options *o, int64_t *t0)
{
    struct gp_store *s = topen(dir, o);
    *t0 = gp_st_floor(tnow_ms(), 3600000) - 3 * 3600000 + 1000;
    tfill(s, 3, 1500, *t0, 300);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    gp_store_close(s);
}

/* That store, its block rewritten, reads every sample back, undamaged. */
static void three_series_read_back(struct gp_store *s, int64_t t0)
{
    for (uint32_t k = 0; k < 3; k++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x), GP_OK);
        CHECK_INT(x.n, 1500);
        CHECK_INT(x.damaged, 0);
        for (size_t i = 0; i < x.n; i++) {
            CHECK_INT(x.t[i], t0 + (int64_t)i * 1000);
            CHECK_DBL(x.v[i], tvalue(k, x.t[i]), 0);
        }
        gp_samples_free(&x);
    }
    uint64_t chunks, damaged;
    gp_store_check_blocks(s, &chunks, &damaged);
    CHECK_INT(chunks, 6);
    CHECK_INT(damaged, 0);
}

/* A store whose block was written before shared times (format version
 * 1: every chunk of encoding 1, with its own times) reads the same:
 * the block is rewritten so, from the one this store compacted. */
static void test_version_1_block_reads(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 3600000, .no_background = 1, .no_sync = 1};
    int64_t t0;
    three_series_compacted(dir, &o, &t0);
    char path[1024], tmp[1100];
    size_t fsize;
    uint8_t *f = tblock_read(dir, path, sizeof path, &fsize);
    snprintf(tmp, sizeof tmp, "%s.v1", path);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(f, fsize, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.n, 6); /* 3 series x 2 pieces of 15 minutes */
    struct gp_st_bwriter bw;
    CHECK_INT(gp_st_bwriter_open_version(&bw, tmp, GP_ST_BF_BLOCK, bf.mint, bf.maxt, 2), GP_OK);
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int64_t *t = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *t);
    double *v = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *v);
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        const uint8_t *p;
        size_t first;
        gp_st_bfile_entry(&bf, i, &e);
        CHECK_INT(gp_st_bfile_payload(&bf, &e, &p), GP_OK);
        CHECK_INT(p[0], 2);
        int k = gp_st_bchunk_decode_in(&bf, p, e.len, INT64_MIN, INT64_MAX, 1, t, v, GP_CHUNK_MAX_SAMPLES, &first);
        CHECK_INT(k, (int)e.count);
        gp_buf_reset(&b);
        CHECK_INT(gp_st_bchunk_encode(t, v, (size_t)k, &sc, &b), GP_OK);
        CHECK_INT((uint8_t)b.data[0], 1);
        CHECK_INT(gp_st_bwriter_add(&bw, e.id, e.count, e.t_first, e.t_last, b.data, b.len), GP_OK);
    }
    free(t);
    free(v);
    free(f);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
    uint64_t size;
    CHECK_INT(gp_st_bwriter_finish(&bw, &size), GP_OK);
    /* version 1 in the header, and the footer's CRC over it again */
    int fd = open(tmp, O_RDWR);
    CHECK(fd >= 0);
    uint8_t *g = malloc(size);
    CHECK(g && pread(fd, g, size, 0) == (ssize_t)size);
    gp_put_le32(g + 8, 1);
    uint64_t ioff = gp_get_le64(g + size - GP_ST_BF_FOOTER);
    uint32_t crc = gp_crc32c(gp_crc32c(0, g, GP_ST_BF_HEADER), g + ioff, size - GP_ST_BF_FOOTER - ioff);
    gp_put_le32(g + size - GP_ST_BF_FOOTER + 12, crc);
    CHECK(pwrite(fd, g, size, 0) == (ssize_t)size);
    close(fd);
    free(g);
    CHECK(rename(tmp, path) == 0);
    struct gp_store *s = topen(dir, &o);
    three_series_read_back(s, t0);
    gp_store_close(s);
}

/* The store's rollup file (beside its one block at bpath) written again
 * as format version 2 wrote it: each payload's columns with their own
 * times, 40-byte index entries. */
static void rollups_as_version_2(const char *bpath)
{
    char path[1100], tmp[1200];
    const char *b = strstr(bpath, "/blocks/");
    CHECK(b);
    snprintf(path, sizeof path, "%.*s/rollups/%s", (int)(b - bpath), bpath, b + 8);
    memcpy(path + strlen(path) - 4, ".rlp", 4);
    snprintf(tmp, sizeof tmp, "%s.v2", path);
    int fd = open(path, O_RDONLY);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    uint8_t *f = malloc((size_t)st.st_size);
    CHECK(f && pread(fd, f, (size_t)st.st_size, 0) == st.st_size);
    close(fd);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(f, (size_t)st.st_size, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, 3);
    struct gp_st_bwriter bw;
    CHECK_INT(gp_st_bwriter_open_version(&bw, tmp, GP_ST_BF_ROLLUP, bf.mint, bf.maxt, 2), GP_OK);
    struct gp_st_rollup_enc re;
    gp_st_rollup_enc_init(&re);
    struct gp_buf out;
    gp_buf_init(&out, 0);
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        const uint8_t *p;
        gp_st_bfile_entry(&bf, i, &e);
        CHECK_INT(gp_st_bfile_payload(&bf, &e, &p), GP_OK);
        struct gp_rollups ru = {0};
        CHECK_INT(gp_st_rollup_decode(&bf, p, e.len, INT64_MIN, INT64_MAX, &ru), GP_OK);
        gp_st_rollup_enc_reset(&re);
        for (size_t k = 0; k < ru.n; k++)
            CHECK_INT(gp_st_rollup_enc_add(&re, &ru.r[k]), GP_OK);
        gp_buf_reset(&out);
        CHECK_INT(gp_st_rollup_enc_finish(&re, 0, 2, &out), GP_OK);
        CHECK_INT(gp_st_bwriter_add(&bw, e.id, e.count, e.t_first, e.t_last, out.data, out.len), GP_OK);
        gp_rollups_free(&ru);
    }
    uint64_t size;
    CHECK_INT(gp_st_bwriter_finish(&bw, &size), GP_OK);
    CHECK(rename(tmp, path) == 0);
    gp_buf_free(&out);
    gp_st_rollup_enc_free(&re);
    free(f);
}

/* A store whose block has the index entries of format version 2 (40
 * bytes, as gpulse wrote before version 3) reads the same: the block
 * this store compacted, its payloads and time records kept at their
 * offsets, its index written again in the older layout; its rollup file
 * re-encoded as version 2 wrote it. */
static void test_version_2_block_reads(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 3600000, .no_background = 1, .no_sync = 1};
    int64_t t0;
    three_series_compacted(dir, &o, &t0);
    struct gp_store *s = topen(dir, &o);
    struct gp_rollups want[3] = {{0}};
    for (uint32_t k = 0; k < 3; k++)
        CHECK_INT(gp_store_read_rollups(s, tid(s, k), INT64_MIN, INT64_MAX, &want[k]), GP_OK);
    gp_store_close(s);
    char path[1024];
    size_t fsize;
    uint8_t *f = tblock_read(dir, path, sizeof path, &fsize);
    rollups_as_version_2(path);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(f, fsize, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, 3);
    uint64_t ioff = gp_get_le64(f + fsize - GP_ST_BF_FOOTER);
    size_t size = (size_t)ioff + bf.n * GP_ST_BF_ENTRY + GP_ST_BF_FOOTER;
    uint8_t *g = malloc(size);
    CHECK(g);
    memcpy(g, f, (size_t)ioff);
    gp_put_le32(g + 8, 2);
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        gp_st_bfile_entry(&bf, i, &e);
        uint8_t *x = g + ioff + (size_t)i * GP_ST_BF_ENTRY;
        gp_put_le32(x, e.id);
        gp_put_le32(x + 4, e.crc);
        gp_put_le64(x + 8, e.off);
        gp_put_le32(x + 16, e.len);
        gp_put_le32(x + 20, e.count);
        gp_put_le64(x + 24, (uint64_t)e.t_first);
        gp_put_le64(x + 32, (uint64_t)e.t_last);
    }
    uint8_t *ft = g + size - GP_ST_BF_FOOTER;
    memcpy(ft, f + fsize - GP_ST_BF_FOOTER, GP_ST_BF_FOOTER);
    uint32_t crc = gp_crc32c(gp_crc32c(0, g, GP_ST_BF_HEADER), g + ioff, bf.n * GP_ST_BF_ENTRY);
    gp_put_le32(ft + 12, crc);
    CHECK_INT(gp_st_bfile_parse(g, size, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, 2);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, g, size) == (ssize_t)size);
    close(fd);
    free(f);
    free(g);
    s = topen(dir, &o);
    three_series_read_back(s, t0);
    for (uint32_t k = 0; k < 3; k++) {
        struct gp_rollups ru = {0};
        CHECK_INT(gp_store_read_rollups(s, tid(s, k), INT64_MIN, INT64_MAX, &ru), GP_OK);
        CHECK_INT(ru.n, want[k].n);
        CHECK(ru.n >= 25);
        CHECK(memcmp(ru.r, want[k].r, ru.n * sizeof *ru.r) == 0);
        gp_rollups_free(&ru);
        gp_rollups_free(&want[k]);
    }
    gp_store_close(s);
}

/* Rollups of [from, to] by brute force over the samples tfill() wrote. */
static void brute_rollups(uint32_t k, int64_t t0, size_t n, const double *special, int64_t from,
                          int64_t to, struct gp_rollups *out)
{
    struct gp_rollup r = {.count = 0};
    for (size_t j = 0; j < n; j++) {
        int64_t t = t0 + (int64_t)j * 1000;
        int64_t m = gp_st_floor(t, 60000);
        if (m + 59999 < from || m > to)
            continue;
        if (r.count && r.t != m) {
            r.sum = gp_st_rollup_sum(&r);
            gp_st_rollups_push(out, &r);
            r.count = 0;
        }
        r.t = m;
        gp_st_rollup_fold(&r, special ? special[j] : tvalue(k, t));
    }
    if (r.count) {
        r.sum = gp_st_rollup_sum(&r);
        gp_st_rollups_push(out, &r);
    }
}

/* Power in W from integer mW, so each minute's exact sum is known. */
static int64_t tmilliwatts(size_t j) { return 250000 + (int64_t)(j * 7919u % 450000u); }

static void check_rollups_equal(const struct gp_rollups *a, const struct gp_rollups *b)
{
    CHECK_INT(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        CHECK_INT(a->r[i].t, b->r[i].t);
        CHECK_INT(a->r[i].count, b->r[i].count);
        CHECK_INT(gp_f64_bits(a->r[i].min), gp_f64_bits(b->r[i].min));
        CHECK_INT(gp_f64_bits(a->r[i].max), gp_f64_bits(b->r[i].max));
        CHECK_INT(gp_f64_bits(a->r[i].sum), gp_f64_bits(b->r[i].sum));
    }
}

static void test_rollups_match_brute_force(void)
{
    struct gp_store_options o = {.block_ms = 300000, .no_background = 1};
    struct gp_store *s = topen(gp_test_tmpdir(), &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 1500 * 1000, 60000) + 13000;
    size_t n = 1400;
    tfill(s, 3, n, t0, 200);
    /* A series with NaNs, the stale marker and infinities. */
    double *sp = malloc(n * sizeof *sp);
    for (size_t j = 0; j < n; j++)
        sp[j] = j % 17 == 0   ? NAN
                : j % 29 == 0 ? gp_bits_f64(GP_STALE_NAN_BITS)
                : j == 400    ? INFINITY
                : j == 401    ? -INFINITY
                              : (double)(j % 50) * 0.25;
    struct treq r;
    treq_build(&r, 100, 1, n, t0, 1000, sp);
    tappend(s, &r);
    treq_free(&r);
    /* A series of decimals whose float sums are off the decimal sums. */
    double *pw = malloc(n * sizeof *pw);
    for (size_t j = 0; j < n; j++)
        pw[j] = (double)tmilliwatts(j) / 1000;
    treq_build(&r, 101, 1, n, t0, 1000, pw);
    tappend(s, &r);
    treq_free(&r);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK(st.blocks >= 3);
    int64_t ranges[][2] = {
        {INT64_MIN / 2, INT64_MAX / 2},
        {t0 + 100000, t0 + 1000000},
        {t0 + 123456, t0 + 123456},
        {t0 + 1300000, t0 + 2000000},
    };
    for (size_t q = 0; q < sizeof ranges / sizeof ranges[0]; q++) {
        for (uint32_t k = 0; k < 3; k++) {
            struct gp_rollups got = {0}, want = {0};
            CHECK_INT(gp_store_read_rollups(s, tid(s, k), ranges[q][0], ranges[q][1], &got), GP_OK);
            brute_rollups(k, t0, n, NULL, ranges[q][0], ranges[q][1], &want);
            check_rollups_equal(&got, &want);
            gp_rollups_free(&got);
            gp_rollups_free(&want);
        }
        struct gp_rollups got = {0}, want = {0};
        CHECK_INT(gp_store_read_rollups(s, tid(s, 100), ranges[q][0], ranges[q][1], &got), GP_OK);
        brute_rollups(100, t0, n, sp, ranges[q][0], ranges[q][1], &want);
        check_rollups_equal(&got, &want);
        gp_rollups_free(&got);
        gp_rollups_free(&want);
        /* From blocks and head alike, a minute's sum is the exact decimal
         * sum (gp_st_rollup_sum), not the float sum's rounding. */
        CHECK_INT(gp_store_read_rollups(s, tid(s, 101), ranges[q][0], ranges[q][1], &got), GP_OK);
        brute_rollups(101, t0, n, pw, ranges[q][0], ranges[q][1], &want);
        check_rollups_equal(&got, &want);
        for (size_t i = 0; i < got.n; i++) {
            int64_t mw = 0;
            for (size_t j = 0; j < n; j++)
                if (gp_st_floor(t0 + (int64_t)j * 1000, 60000) == got.r[i].t)
                    mw += tmilliwatts(j);
            CHECK_INT(gp_f64_bits(got.r[i].sum), gp_f64_bits((double)mw / 1000));
        }
        gp_rollups_free(&got);
        gp_rollups_free(&want);
    }
    free(sp);
    free(pw);
    gp_store_close(s);
}

static void test_retention_deletes_old_blocks(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 60000, .retention_raw_ms = 400000,
                                 .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 290 * 1000, 60000);
    tfill(s, 4, 280, t0, 40);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    uint64_t blocks = st.blocks;
    CHECK(blocks >= 3);
    gp_store_close(s);
    /* Later (a shorter retention stands in for time passing). */
    o.retention_raw_ms = 150000;
    s = topen(dir, &o);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    gp_store_stats(s, &st);
    CHECK(st.blocks < blocks);
    int64_t cut = tnow_ms() - 150000;
    struct gp_samples x = {0};
    uint32_t id = tid(s, 1);
    CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK(x.n > 0 && x.n < 280);
    CHECK(x.t[0] >= gp_st_floor(cut, 60000) - 60000);
    CHECK_INT(x.t[x.n - 1], t0 + 279 * 1000);
    /* select reports the first sample still held. */
    struct gp_store_selection sl;
    CHECK_INT(gp_store_select(s, NULL, 0, INT64_MIN, INT64_MAX, &sl), GP_OK);
    CHECK_INT(sl.n, 4);
    CHECK_INT(sl.series[0].first_ms, x.t[0]);
    gp_store_selection_free(&sl);
    gp_samples_free(&x);
    /* Rollups outlive the raw data. */
    struct gp_rollups ru = {0};
    CHECK_INT(gp_store_read_rollups(s, id, t0, t0 + 60000, &ru), GP_OK);
    CHECK_INT(ru.n, 2);
    CHECK_INT(ru.r[0].t, t0);
    CHECK_INT(ru.r[0].count, 60);
    gp_rollups_free(&ru);
    /* And samples before the retention window are refused. */
    struct treq r;
    treq_build(&r, 50, 1, 1, cut - 10000, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.too_old, 1);
    treq_free(&r);
    gp_store_close(s);
    /* Rollup retention. */
    o.retention_rollup_ms = 120000;
    s = topen(dir, &o);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    CHECK_INT(gp_store_read_rollups(s, id, t0, t0 + 60000, &ru), GP_OK);
    CHECK_INT(ru.n, 0);
    gp_rollups_free(&ru);
    gp_store_close(s);
}

struct names {
    char buf[512];
    size_t n;
};

static void collect(void *arg, const char *s, size_t len)
{
    struct names *x = arg;
    size_t l = strlen(x->buf);
    snprintf(x->buf + l, sizeof x->buf - l, "%s%.*s", l ? "," : "", (int)len, s);
    x->n++;
}

static void test_select_and_labels(void)
{
    struct gp_store *s = topen(gp_test_tmpdir(), NULL);
    int64_t t0 = tnow_ms() - 100000;
    struct treq r;
    treq_build(&r, 0, 16, 1, t0, 1000, NULL); /* nodes n0 (gpus 0-7), n1 (8-15) */
    tappend(s, &r);
    treq_free(&r);
    treq_build(&r, 16, 4, 1, t0 + 50000, 1000, NULL); /* node n2, later */
    tappend(s, &r);
    treq_free(&r);
    struct gp_matcher *m;
    size_t nm;
    char err[128];
    const char *sel = "gpu_util{node=~\"n1|n2\", gpu!=\"9\"}";
    CHECK_INT(gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err), GP_OK);
    struct gp_store_selection sl;
    CHECK_INT(gp_store_select(s, m, nm, INT64_MIN, INT64_MAX, &sl), GP_OK);
    CHECK_INT(sl.n, 11);
    for (size_t i = 1; i < sl.n; i++)
        CHECK(sl.series[i].id > sl.series[i - 1].id);
    gp_store_selection_free(&sl);
    /* Time filter: only n2 has samples after t0 + 10 s. */
    CHECK_INT(gp_store_select(s, m, nm, t0 + 10000, INT64_MAX, &sl), GP_OK);
    CHECK_INT(sl.n, 4);
    CHECK_INT(sl.series[0].first_ms, t0 + 50000);
    struct gp_str v;
    CHECK_INT(gp_labels_get(sl.series[0].labels, sl.series[0].labels_len, "node", &v), 1);
    CHECK_INT(v.len, 2);
    CHECK(memcmp(v.ptr, "n2", 2) == 0);
    gp_store_selection_free(&sl);
    CHECK_INT(gp_store_select(s, m, nm, INT64_MIN, t0 - 1, &sl), GP_OK);
    CHECK_INT(sl.n, 0);
    gp_store_selection_free(&sl);

    struct names nn = {.n = 0};
    CHECK_INT(gp_store_label_names(s, NULL, 0, collect, &nn), GP_OK);
    CHECK_STR(nn.buf, "__name__,gpu,node");
    memset(&nn, 0, sizeof nn);
    CHECK_INT(gp_store_label_values(s, "node", NULL, 0, collect, &nn), GP_OK);
    CHECK_STR(nn.buf, "n0,n1,n2");
    memset(&nn, 0, sizeof nn);
    CHECK_INT(gp_store_label_values(s, "gpu", m, nm, collect, &nn), GP_OK);
    CHECK_STR(nn.buf, "10,11,12,13,14,15,16,17,18,19,8");
    gp_matchers_free(m, nm);
    /* Matchers that select nothing give nothing, not everything. */
    sel = "gpu_util{node=\"nope\"}";
    CHECK_INT(gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err), GP_OK);
    memset(&nn, 0, sizeof nn);
    CHECK_INT(gp_store_label_names(s, m, nm, collect, &nn), GP_OK);
    CHECK_INT(nn.n, 0);
    gp_matchers_free(m, nm);
    gp_store_close(s);
}

/* Flips one byte of the only file in dir/sub with the suffix at offset
 * (from the end when negative). */
static void damage(const char *dir, const char *sub, const char *suffix, long offset)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    CHECK(d);
    struct dirent *de;
    int done = 0;
    while ((de = readdir(d)) && !done) {
        size_t l = strlen(de->d_name);
        if (l < strlen(suffix) || strcmp(de->d_name + l - strlen(suffix), suffix) != 0)
            continue;
        char f[1300];
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        int fd = open(f, O_RDWR);
        CHECK(fd >= 0);
        struct stat st;
        fstat(fd, &st);
        off_t at = offset < 0 ? st.st_size + offset : offset;
        uint8_t b;
        CHECK(pread(fd, &b, 1, at) == 1);
        b ^= 0x5a;
        CHECK(pwrite(fd, &b, 1, at) == 1);
        close(fd);
        done = 1;
    }
    closedir(d);
    CHECK(done);
}

static void test_damaged_block_is_detected(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = 600000, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms(), 600000) - 600000;
    tfill(s, 3, 400, t0, 100);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.blocks, 1);
    gp_store_close(s);
    /* A payload byte: that series' read says GP_EPARSE, the others are whole. */
    damage(dir, "blocks", ".blk", (long)tfirst_payload(dir) + 2);
    s = topen(dir, &o);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, 0), INT64_MIN, INT64_MAX, &x), GP_EPARSE);
    gp_samples_free(&x);
    check_fill(s, 1, t0, 400);
    gp_store_close(s);
    /* The index: the block is skipped at open, the store still opens. */
    damage(dir, "blocks", ".blk", -30);
    s = topen(dir, &o);
    gp_store_stats(s, &st);
    CHECK_INT(st.blocks, 0);
    CHECK_INT(gp_store_read(s, tid(s, 1), INT64_MIN, INT64_MAX, &x), GP_OK);
    gp_samples_free(&x);
    gp_store_close(s);
}

/* A damaged head.snap no longer stops the store (test_store_damage.c
 * checks what stays visible): it is set aside and reported. */
static void test_damaged_snapshot_set_aside(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    tfill(s, 2, 10, tnow_ms() - 60000, 10);
    gp_store_close(s);
    damage(dir, ".", "head.snap", 12);
    s = topen(dir, NULL);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_SNAP_DAMAGED);
    CHECK_INT(st.series, 2);
    gp_store_close(s);
    char path[1024];
    snprintf(path, sizeof path, "%s/head.snap", dir);
    CHECK(access(path, F_OK) == 0); /* a new one, from the closing checkpoint */
}

static void test_newer_format_refused(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    gp_store_close(s);
    char path[1024];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, "UPDATE meta SET value=99 WHERE key='format'", 0, 0, 0), SQLITE_OK);
    sqlite3_close(db);
    struct gp_store_options o = {.dir = dir, .no_background = 1};
    char err[512];
    CHECK_INT(gp_store_open(&s, &o, err, sizeof err), GP_EUNSUPPORTED);
    CHECK_CONTAINS(err, "format 99");
}

static void test_second_process_refused(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct gp_store *t;
        struct gp_store_options o = {.dir = dir, .no_background = 1};
        char err[256];
        int rc = gp_store_open(&t, &o, err, sizeof err);
        _exit(rc == GP_EIO && strstr(err, "in use") ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gp_store_close(s);
}

static void test_bad_options(void)
{
    struct gp_store *s;
    char err[256];
    struct gp_store_options o = {.dir = gp_test_tmpdir(), .block_ms = 90000};
    CHECK_INT(gp_store_open(&s, &o, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "minutes");
    o = (struct gp_store_options){.dir = NULL};
    CHECK_INT(gp_store_open(&s, &o, err, sizeof err), GP_EUSAGE);
}

static void test_damaged_chunk_file(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, NULL);
    int64_t t0 = t0_one_window(600 * 1000);
    tfill(s, 4, 600, t0, 600); /* a closed chunk and an open one per series */
    gp_store_close(s);
    damage(dir, "chunks", "00000000.chk", 100); /* in the first record */
    /* Logged and reported; only the damaged chunk (GP_ST_HEAD_SAMPLES
     * samples of one series) is lost: the records after it are found
     * again. */
    s = topen(dir, NULL);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_CHUNK_FILE);
    size_t total = 0, short_ones = 0;
    for (uint32_t k = 0; k < 4; k++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x), GP_OK);
        CHECK(x.n == 600 || x.n == 600 - GP_ST_HEAD_SAMPLES);
        short_ones += x.n == 600 - GP_ST_HEAD_SAMPLES;
        CHECK_INT(x.t[0], x.n == 600 ? t0 : t0 + GP_ST_HEAD_SAMPLES * 1000);
        for (size_t i = 1; i < x.n; i++)
            CHECK(x.t[i] == x.t[i - 1] + 1000);
        total += x.n;
        gp_samples_free(&x);
    }
    CHECK_INT(short_ones, 1);
    CHECK_INT(total, 4 * 600 - GP_ST_HEAD_SAMPLES);
    /* New samples still go in after the last one held. */
    struct treq r;
    treq_build(&r, 0, 4, 1, t0 + 600 * 1000, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, 4);
    treq_free(&r);
    gp_store_close(s);
}

/* fdatasync and writev that fail, for the store's files. */
static int fail_sync(int fd)
{
    (void)fd;
    errno = EIO;
    return -1;
}

static ssize_t fail_writev(int fd, const struct iovec *iov, int n)
{
    (void)fd, (void)iov, (void)n;
    errno = ENOSPC;
    return -1;
}

static void test_write_errors_refuse_appends(void)
{
    const char *dir = gp_test_tmpdir();
    /* At the start of a block window: no head is cut into a chunk file
     * (whose write would fail first) by a window edge. */
    int64_t t0 = (tnow_ms() - 600000) / 7200000 * 7200000;
    for (int kind = 0; kind < 2; kind++) {
        struct gp_store *s = topen(dir, NULL);
        tfill(s, 3, 10, t0 + kind * 100000, 10);
        if (kind == 0)
            gp_seg_sys.fdatasync = fail_sync;
        else
            gp_seg_sys.writev = fail_writev;
        struct treq r;
        treq_build(&r, 0, 3, 1, t0 + kind * 100000 + 50000, 1000, NULL);
        struct gp_append_result res;
        char err[256];
        CHECK_INT(gp_store_append(s, &r.req, &res, err, sizeof err), GP_EIO);
        CHECK_CONTAINS(err, "WAL");
        /* Writes are paused: later appends are refused too (until maintenance
         * resumes them, test_store_time.c). */
        gp_seg_sys.fdatasync = fdatasync;
        gp_seg_sys.writev = writev;
        treq_free(&r);
        treq_build(&r, 0, 3, 1, t0 + kind * 100000 + 60000, 1000, NULL);
        CHECK_INT(gp_store_append(s, &r.req, &res, err, sizeof err), GP_EIO);
        treq_free(&r);
        /* Reads go on. */
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, 1), t0 + kind * 100000, t0 + kind * 100000 + 9999, &x),
                  GP_OK);
        CHECK_INT(x.n, 10);
        gp_samples_free(&x);
        gp_store_close(s); /* resumes (the calls work again) and checkpoints */
    }
    /* After a restart everything acknowledged is there (and what failed
     * to sync may be too: it was never acknowledged either way). */
    struct gp_store *s = topen(dir, NULL);
    for (int kind = 0; kind < 2; kind++) {
        struct gp_samples x = {0};
        int64_t a = t0 + kind * 100000;
        CHECK_INT(gp_store_read(s, tid(s, 2), a, a + 9999, &x), GP_OK);
        CHECK_INT(x.n, 10);
        CHECK_INT(x.t[9], a + 9000);
        gp_samples_free(&x);
    }
    gp_store_close(s);
}

/* ---- concurrency ---- */

struct worker {
    struct gp_store *s;
    uint32_t first;
    int64_t t0;
    int reader;
    volatile int *stop;
    pthread_barrier_t *barrier;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    if (w->reader) {
        while (!*w->stop) {
            struct gp_store_selection sl;
            if (gp_store_select(w->s, NULL, 0, INT64_MIN, INT64_MAX, &sl) != GP_OK)
                abort();
            for (size_t i = 0; i < sl.n; i++) {
                struct gp_samples x = {0};
                struct gp_rollups ru = {0};
                if (gp_store_read(w->s, sl.series[i].id, INT64_MIN, INT64_MAX, &x) != GP_OK ||
                    gp_store_read_rollups(w->s, sl.series[i].id, INT64_MIN, INT64_MAX, &ru) != GP_OK)
                    abort();
                for (size_t j = 1; j < x.n; j++)
                    if (x.t[j] <= x.t[j - 1])
                        abort();
                gp_samples_free(&x);
                gp_rollups_free(&ru);
            }
            gp_store_selection_free(&sl);
        }
        return NULL;
    }
    for (int j = 0; j < 300; j++) {
        /* Lockstep: a writer far behind the others would find its window
         * compacted (too old), as a late sender would. */
        pthread_barrier_wait(w->barrier);
        struct treq r;
        treq_build(&r, w->first, 10, 2, w->t0 + j * 2000, 1000, NULL);
        tclock_advance(w->t0 + j * 2000 + 1000);
        struct gp_append_result res;
        char err[128];
        if (gp_store_append(w->s, &r.req, &res, err, sizeof err) != GP_OK || res.accepted != 20)
            abort();
        treq_free(&r);
    }
    return NULL;
}

static void test_concurrent_appends_and_reads(void)
{
    /* Times ahead of the wall clock, and a clock that follows them, so
     * windows are compacted while appends and reads go on. */
    struct gp_store_options o = {
        .block_ms = 60000, .checkpoint_interval_ms = 20, .max_future_ms = -1, .clock_ms = tclock};
    struct gp_store *s = topen(gp_test_tmpdir(), &o);
    volatile int stop = 0;
    int64_t t0 = gp_st_floor(tnow_ms(), 60000) + 3600 * 1000;
    struct worker w[6];
    pthread_t th[6];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 4);
    for (int i = 0; i < 6; i++) {
        w[i] = (struct worker){s, (uint32_t)(i % 4) * 10, t0, i >= 4, &stop, &barrier};
        CHECK_INT(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK); /* with the readers running */
    stop = 1;
    for (int i = 4; i < 6; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (uint32_t k = 0; k < 40; k += 3)
        check_fill(s, k, t0, 600);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.samples_appended, 4 * 300 * 20);
    CHECK(st.checkpoints > 0);
    CHECK(st.compactions > 0);
    gp_store_close(s);
}

const struct gp_test gp_tests_store[] = {
    {"compaction_cuts_pieces", test_compaction_cuts_pieces},
    {"overlapping_blocks_read_in_order", test_overlapping_blocks_read_in_order},
    {"version_1_block_reads", test_version_1_block_reads},
    {"version_2_block_reads", test_version_2_block_reads},
    {"special_values_round_trip", test_special_values_round_trip},
    {"ordering_rules_counted", test_ordering_rules_counted},
    {"newest_value_kept", test_newest_value_kept},
    {"retried_request_is_duplicate", test_retried_request_is_duplicate},
    {"max_series", test_max_series},
    {"close_reopen_keeps_everything", test_close_reopen_keeps_everything},
    {"reopen_from_wal_only", test_reopen_from_wal_only},
    {"compaction_keeps_samples", test_compaction_keeps_samples},
    {"rollups_match_brute_force", test_rollups_match_brute_force},
    {"retention_deletes_old_blocks", test_retention_deletes_old_blocks},
    {"select_and_labels", test_select_and_labels},
    {"damaged_block_is_detected", test_damaged_block_is_detected},
    {"damaged_snapshot_set_aside", test_damaged_snapshot_set_aside},
    {"damaged_chunk_file", test_damaged_chunk_file},
    {"write_errors_refuse_appends", test_write_errors_refuse_appends},
    {"newer_format_refused", test_newer_format_refused},
    {"second_process_refused", test_second_process_refused},
    {"bad_options", test_bad_options},
    {"concurrent_appends_and_reads", test_concurrent_appends_and_reads},
    {0},
};
