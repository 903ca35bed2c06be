/*
 * test_store_damage.c - the store with files missing or damaged
 * (docs/storage.md "Damage and repair"): head.snap deleted, flipped or
 * cut short; meta.db deleted or with a page SQLite cannot read (every
 * series keeps its labels through series.log); series.log deleted,
 * damaged or torn, and a crash between its sync and meta.db's commit; a
 * flipped byte in a block's chunk (the read and the query answer say
 * so); a flipped byte in the middle of the WAL (the records after it are
 * replayed). Each case opens the store, checks what is visible sample by
 * sample (nothing lost beyond what only the damaged file held, nothing
 * twice), and opens it again.
 */
#include "query/promql.h"
#include "query/query.h"
#include "store/segment.h"
#include "store/store_fmt.h"
#include "store/store_int.h"
#include "store_testlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSER 12
#define BLOCK_MS 120000

/* Checks that series id holds exactly the samples of series k at
 * t0 + i * 1000 for i in [0, n) except [skip_from, skip_to), once each. */
static void check_span(struct gp_store *s, uint32_t k, int64_t t0, size_t n, size_t skip_from,
                       size_t skip_to)
{
    uint32_t id = tid(s, k);
    if (!id)
        gp_test_fail(__FILE__, __LINE__, "series %u is not found", k);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, t0, t0 + ((int64_t)n - 1) * 1000, &x), GP_OK);
    size_t want = n - (skip_to - skip_from), got = 0;
    for (size_t i = 0; i < n; i++) {
        if (i >= skip_from && i < skip_to)
            continue;
        int64_t t = t0 + (int64_t)i * 1000;
        if (got >= x.n || x.t[got] != t || x.v[got] != tvalue(k, t))
            gp_test_fail(__FILE__, __LINE__, "series %u: sample %zu (t=%lld) missing or wrong; %zu read",
                         k, i, (long long)t, x.n);
        got++;
    }
    if (x.n != want)
        gp_test_fail(__FILE__, __LINE__, "series %u: %zu samples, expected %zu", k, x.n, want);
    gp_samples_free(&x);
}

static void path_of(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* 1 when dir holds a file whose name starts with prefix. */
static int has_file(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    CHECK(d);
    struct dirent *de;
    int found = 0;
    while ((de = readdir(d)))
        found |= strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return found;
}

static void flip(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    if (at < 0)
        at += st.st_size;
    uint8_t b;
    CHECK(pread(fd, &b, 1, at) == 1);
    b ^= 0x5a;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    close(fd);
}

/* The file in dir/sub whose name ends with suffix (one is expected). */
static void find_file(char *out, size_t len, const char *dir, const char *sub, const char *suffix)
{
    char d[512];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    DIR *dd = opendir(d);
    CHECK(dd);
    struct dirent *de;
    out[0] = 0;
    while ((de = readdir(dd))) {
        size_t l = strlen(de->d_name), k = strlen(suffix);
        if (l > k && !strcmp(de->d_name + l - k, suffix) && !out[0])
            snprintf(out, len, "%s/%s", d, de->d_name);
    }
    closedir(dd);
    CHECK(out[0]);
}

/*
 * The store every head.snap case starts from: NSER series with 1100
 * samples (one a second) in complete, compacted windows, then RECENT
 * more (one every 25 ms) in the current window: a head chunk's worth
 * (GP_ST_HEAD_SAMPLES) in a chunk file, 80 in the open head chunk, whose
 * only durable copy after the closing checkpoint is head.snap.
 */
#define RECENT (GP_ST_HEAD_SAMPLES + 80)
#define RECENT_STEP 25
static int64_t build_blocks_and_chunks(const char *dir, int64_t *t1)
{
    struct gp_store_options o = {.block_ms = BLOCK_MS, .no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t now = tnow_ms();
    int64_t t0 = gp_st_floor(now - 1800 * 1000, BLOCK_MS) + 7000;
    tfill(s, NSER, 1100, t0, 100);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK(st.blocks >= 8);
    CHECK_INT(st.head_chunks, 0);
    /* The current window (14 s of it, up to 14 s ahead at a window's start). */
    *t1 = gp_st_floor(now, BLOCK_MS) > now - 30000 ? gp_st_floor(now, BLOCK_MS) : now - 30000;
    struct treq r;
    treq_build(&r, 0, NSER, RECENT, *t1, RECENT_STEP, NULL);
    CHECK_INT(tappend(s, &r).accepted, NSER * RECENT);
    treq_free(&r);
    gp_store_close(s);
    return t0;
}

static struct gp_store *reopen(const char *dir)
{
    struct gp_store_options o = {.block_ms = BLOCK_MS, .no_sync = 1, .no_background = 1};
    return topen(dir, &o);
}

/* Every block and chunk-file sample is visible once; of the RECENT
 * samples, those of the chunk file are, the head's 80 are lost (their
 * WAL segments were removed by the checkpoint that wrote head.snap). */
static void check_rebuilt(struct gp_store *s, int64_t t0, int64_t t1, unsigned damage)
{
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, damage);
    CHECK_INT(st.series, NSER);
    for (uint32_t k = 0; k < NSER; k++) {
        check_span(s, k, t0, 1100, 0, 0);
        uint32_t id = tid(s, k);
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, id, t1, INT64_MAX, &x), GP_OK);
        CHECK_INT(x.n, GP_ST_HEAD_SAMPLES);
        for (size_t i = 0; i < x.n; i++)
            CHECK_INT(x.t[i], t1 + (int64_t)i * RECENT_STEP);
        gp_samples_free(&x);
    }
    /* New samples go in after the newest held. */
    struct treq r;
    treq_build(&r, 0, NSER, 1, t1 + 25 * 1000, 1000, NULL);
    struct gp_append_result res = tappend(s, &r);
    CHECK_INT(res.accepted, NSER);
    treq_free(&r);
}

static void test_snap_missing_keeps_blocks(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t t1, t0 = build_blocks_and_chunks(dir, &t1);
    char p[1024];
    path_of(p, sizeof p, dir, "head.snap");
    CHECK(unlink(p) == 0);
    struct gp_store *s = reopen(dir);
    check_rebuilt(s, t0, t1, GP_STORE_DMG_SNAP_MISSING);
    gp_store_close(s);
    /* Once and twice more: the closing checkpoint wrote a new head.snap. */
    for (int round = 0; round < 2; round++) {
        s = reopen(dir);
        struct gp_store_stats st;
        gp_store_stats(s, &st);
        CHECK_INT(st.damage, 0);
        for (uint32_t k = 0; k < NSER; k++)
            check_span(s, k, t0, 1100, 0, 0);
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, 3), t1, INT64_MAX, &x), GP_OK);
        CHECK_INT(x.n, GP_ST_HEAD_SAMPLES + 1);
        gp_samples_free(&x);
        gp_store_close(s);
    }
    /* Deleted again, with nothing else changed: the same data. */
    CHECK(unlink(p) == 0);
    s = reopen(dir);
    for (uint32_t k = 0; k < NSER; k++)
        check_span(s, k, t0, 1100, 0, 0);
    gp_store_close(s);
}

static void test_snap_damaged_is_set_aside(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t t1, t0 = build_blocks_and_chunks(dir, &t1);
    char p[1024];
    path_of(p, sizeof p, dir, "head.snap");
    flip(p, 12); /* in the header record */
    struct gp_store *s = reopen(dir);
    check_rebuilt(s, t0, t1, GP_STORE_DMG_SNAP_DAMAGED);
    CHECK(has_file(dir, "head.snap.damaged-"));
    gp_store_close(s);
    s = reopen(dir);
    for (uint32_t k = 0; k < NSER; k++)
        check_span(s, k, t0, 1100, 0, 0);
    gp_store_close(s);
}

static void test_snap_cut_short_is_set_aside(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t t1, t0 = build_blocks_and_chunks(dir, &t1);
    char p[1024];
    path_of(p, sizeof p, dir, "head.snap");
    struct stat st;
    CHECK(stat(p, &st) == 0);
    CHECK(truncate(p, st.st_size / 2) == 0);
    struct gp_store *s = reopen(dir);
    check_rebuilt(s, t0, t1, GP_STORE_DMG_SNAP_DAMAGED);
    gp_store_close(s);
}

/* A store that never took a checkpoint has no head.snap: no damage. */
static void test_fresh_store_reports_no_damage(void)
{
    const char *dir = gp_test_tmpdir();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct gp_store *c = reopen(dir);
        tfill(c, 3, 300, tnow_ms() - 600 * 1000, 50);
        _exit(0); /* no close: no checkpoint */
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, 0);
    CHECK_INT(st.replayed_samples, 3 * 300);
    gp_store_close(s);
}

/* ---- meta.db ---- */

/* NSER old series (in blocks, their WAL gone), then 4 new ones whose
 * series records are only in the WAL: the caller exits without closing. */
static void build_two_generations(const char *dir)
{
    int64_t t1;
    build_blocks_and_chunks(dir, &t1);
    struct gp_store *s = reopen(dir);
    struct treq r;
    treq_build(&r, 100, 4, 10, t1 + 25 * 1000, 100, NULL);
    CHECK_INT(tappend(s, &r).accepted, 40);
    treq_free(&r);
}

static void test_meta_deleted_rebuilt_from_wal(void)
{
    const char *dir = gp_test_tmpdir();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        build_two_generations(dir);
        _exit(0); /* the store is left open: a crash */
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    CHECK(unlink(p) == 0);
    unlink(strcat(p, "-wal"));
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_META_DAMAGED);
    /* The new series are named by the WAL; the old ones by series.log:
     * none is lost (before series.log: 4 series, NSER lost). */
    CHECK_INT(st.series, NSER + 4);
    CHECK_INT(st.series_lost, 0);
    for (uint32_t k = 0; k < NSER; k++)
        CHECK_INT(tid(s, k), k + 1);
    for (uint32_t k = 100; k < 104; k++) {
        uint32_t id = tid(s, k);
        CHECK(id > NSER);
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
        CHECK_INT(x.n, 10);
        gp_samples_free(&x);
    }
    /* A new series never takes a lost id (it would inherit its samples). */
    struct treq r;
    treq_build(&r, 200, 1, 1, tnow_ms() - 1000, 1000, NULL);
    CHECK_INT(tappend(s, &r).accepted, 1);
    treq_free(&r);
    uint32_t id = tid(s, 200);
    CHECK(id > NSER + 4);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT(x.n, 1);
    gp_samples_free(&x);
    gp_store_close(s);
    /* The rebuilt registry is durable: the next open finds no damage. */
    s = reopen(dir);
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, 0);
    CHECK_INT(st.series, NSER + 5);
    CHECK(tid(s, 0) != 0 && tid(s, 101) != 0 && tid(s, 200) == id);
    gp_store_close(s);
}

/* Not a database at all (its header overwritten): set aside, and the
 * registry rebuilt from the WAL's series records. */
static void test_meta_not_a_database(void)
{
    const char *dir = gp_test_tmpdir();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        build_two_generations(dir);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    for (off_t i = 0; i < 16; i++)
        flip(p, i);
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_META_DAMAGED);
    CHECK(has_file(dir, "meta.db.damaged-"));
    CHECK_INT(st.series, NSER + 4);
    CHECK_INT(st.series_lost, 0);
    CHECK(tid(s, 102) != 0 && tid(s, NSER - 1) != 0);
    gp_store_close(s);
}

static void test_meta_damaged_page_salvaged(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.block_ms = BLOCK_MS, .no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    enum { N = 3000 };
    int64_t t0 = gp_st_floor(tnow_ms() - 1800 * 1000, BLOCK_MS) + 7000;
    tfill(s, N, 10, t0, 10);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    gp_store_close(s);
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    struct stat st0;
    CHECK(stat(p, &st0) == 0);
    long pages = (long)(st0.st_size / 4096);
    CHECK(pages >= 8);
    /* The type byte of the last page, which holds the highest ids:
     * SQLite calls it malformed. */
    flip(p, (off_t)(pages - 1) * 4096);
    s = topen(dir, &o);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_META_DAMAGED);
    CHECK(has_file(dir, "meta.db.damaged-"));
    /* series.log names the series of the unreadable page: none lost
     * (before it: about a third of N lost, their samples unqueryable). */
    CHECK_INT(st.series, N);
    CHECK_INT(st.series_lost, 0);
    for (uint32_t k = 0; k < N; k++)
        CHECK_INT(tid(s, k), k + 1);
    for (uint32_t k = 0; k < N; k += 7)
        check_span(s, k, t0, 10, 0, 0);
    check_span(s, N - 1, t0, 10, 0, 0);
    /* Ingestion goes on for old and new series. */
    struct treq r;
    treq_build(&r, 0, N + 1, 1, tnow_ms() - 1000, 1000, NULL);
    CHECK_INT(tappend(s, &r).accepted, N + 1);
    treq_free(&r);
    gp_store_close(s);
    s = topen(dir, &o);
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, 0);
    CHECK_INT(st.series, N + 1);
    CHECK_INT(st.series_lost, 0);
    CHECK_INT(tid(s, N), N + 1);
    gp_store_close(s);
}

/* ---- series.log ---- */

/* N series with 10 samples each, checkpointed; returns t0. */
static int64_t build_registry(const char *dir, size_t n)
{
    struct gp_store *s = reopen(dir);
    int64_t t0 = tnow_ms() - 600 * 1000;
    tfill(s, n, 10, t0, 10);
    gp_store_close(s);
    return t0;
}

/* Every series 0..n-1 has its id k + 1 and its 10 samples. */
static void check_all(struct gp_store *s, size_t n, int64_t t0)
{
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.series, n);
    CHECK_INT(st.series_lost, 0);
    for (uint32_t k = 0; k < n; k++) {
        CHECK_INT(tid(s, k), k + 1);
        check_span(s, k, t0, 10, 0, 0);
    }
}

/* Deletes meta.db (and its -wal): what is left must name every series. */
/* Reopens dir and checks its damage flags and that all n series hold
 * their samples from t0. */
static void reopen_expect(const char *dir, unsigned damage, size_t n, int64_t t0)
{
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, damage);
    check_all(s, n, t0);
    gp_store_close(s);
}

static void drop_meta(const char *dir)
{
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    CHECK(unlink(p) == 0);
    unlink(strcat(p, "-wal"));
}

/* A deleted series.log is rebuilt from meta.db; the rebuilt one then
 * stands in for a deleted meta.db (with the WAL gone, it alone can). */
static void test_series_log_deleted_rebuilt(void)
{
    const char *dir = gp_test_tmpdir();
    enum { N = 40 };
    int64_t t0 = build_registry(dir, N);
    char p[1024];
    path_of(p, sizeof p, dir, "series.log");
    CHECK(unlink(p) == 0);
    reopen_expect(dir, GP_STORE_DMG_SERIES_LOG, N, t0);
    CHECK(access(p, F_OK) == 0);
    drop_meta(dir);
    reopen_expect(dir, GP_STORE_DMG_META_DAMAGED, N, t0);
    reopen_expect(dir, 0, N, t0);
}

/* A flipped byte in a record with valid ones after it (the first: the
 * symbols the series records name): set aside, rebuilt from meta.db,
 * nothing lost; a torn tail (a crash mid-append) is cut, no damage. */
static void test_series_log_damaged_rebuilt(void)
{
    const char *dir = gp_test_tmpdir();
    enum { N = 40 };
    int64_t t0 = build_registry(dir, N);
    char p[1024];
    path_of(p, sizeof p, dir, "series.log");
    flip(p, GP_SEG_HEADER + 3);
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, GP_STORE_DMG_SERIES_LOG);
    CHECK(has_file(dir, "series.log.damaged-"));
    check_all(s, N, t0);
    gp_store_close(s);
    /* A torn record at the end: cut at the next start, not damage. */
    int fd = open(p, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    CHECK(write(fd, "\x20\0\0\0\1\2\3", 7) == 7);
    close(fd);
    reopen_expect(dir, 0, N, t0);
    /* The rebuilt journal names every series: meta.db can go. */
    drop_meta(dir);
    reopen_expect(dir, GP_STORE_DMG_META_DAMAGED, N, t0);
}

/* A store of an older gpulse (meta.db, no series.log): the journal is
 * created, and that is no damage. */
static void test_series_log_created_for_old_store(void)
{
    const char *dir = gp_test_tmpdir();
    enum { N = 10 };
    int64_t t0 = build_registry(dir, N);
    char p[1024];
    path_of(p, sizeof p, dir, "series.log");
    CHECK(unlink(p) == 0);
    path_of(p, sizeof p, dir, "meta.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "DELETE FROM meta WHERE key='series_log'", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(db);
    reopen_expect(dir, 0, N, t0);
    drop_meta(dir);
    struct gp_store *s = reopen(dir);
    check_all(s, N, t0);
    gp_store_close(s);
}

/* N old series from t0 and 10 new ones from t1, 10 samples each. */
static void check_both(struct gp_store *s, size_t n, int64_t t0, int64_t t1)
{
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.series, n + 10);
    CHECK_INT(st.series_lost, 0);
    for (uint32_t k = 0; k < n + 10; k++) {
        CHECK_INT(tid(s, k), k + 1);
        check_span(s, k, k < n ? t0 : t1, 10, 0, 0);
    }
}

/* One series.log record (type, id, labels "a"=v) at out; its size. */
static size_t slog_rec(uint8_t *out, uint8_t type, uint32_t id, const char *v)
{
    uint8_t p[64];
    size_t n = 4;
    gp_put_le32(p, id);
    p[n++] = 1;
    p[n++] = 'a';
    p[n++] = (uint8_t)strlen(v);
    memcpy(p + n, v, strlen(v));
    n += strlen(v);
    gp_seg_header(out, type, p, n);
    memcpy(out + GP_SEG_HEADER, p, n);
    return GP_SEG_HEADER + n;
}

static int count_rec(void *ctx, const struct gp_wal_series *ws)
{
    (void)ws;
    (*(int *)ctx)++;
    return 0;
}

/* The journal's parser on malformed input: a torn tail is no damage, a
 * bad record with valid ones after it is (and they are kept), records of
 * another type, id 0 or invalid labels are skipped and counted. */
static void test_series_log_parse_malformed(void)
{
    uint8_t b[512];
    size_t n = 0, mid;
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 1, "x");
    mid = n;
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 2, "y");
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 3, "z");
    struct gp_st_slog_stats st;
    struct gp_st_syms syms = {0};
    int got = 0;
    CHECK_INT(gp_st_slog_parse(b, n, &syms, count_rec, &got, &st), GP_OK);
    CHECK(got == 3 && st.records == 3 && st.bad_records == 0 && st.old_records == 3);
    CHECK(st.torn_bytes == 0 && st.max_id == 3);
    /* Torn: the last record cut short. */
    got = 0;
    CHECK_INT(gp_st_slog_parse(b, n - 3, &syms, count_rec, &got, &st), GP_OK);
    CHECK(got == 2 && st.records == 2 && st.bad_records == 0);
    CHECK_INT(st.torn_bytes, (n - mid) / 2 - 3); /* the third record, less 3 bytes */
    /* A flipped byte in the middle record: damage, the third one kept. */
    b[mid + GP_SEG_HEADER + 5] ^= 0x40;
    got = 0;
    CHECK_INT(gp_st_slog_parse(b, n, &syms, count_rec, &got, &st), GP_OK);
    CHECK(got == 2 && st.bad_records == 1 && st.torn_bytes == 0 && st.max_id == 3);
    /* Another type, id 0, labels that are not labels (empty value). */
    n = 0;
    n += slog_rec(b + n, 7, 4, "x");
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 0, "x");
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 5, "");
    n += slog_rec(b + n, GP_ST_SLOG_SERIES, 6, "ok");
    got = 0;
    CHECK_INT(gp_st_slog_parse(b, n, &syms, count_rec, &got, &st), GP_OK);
    CHECK(got == 1 && st.records == 1 && st.bad_records == 3 && st.max_id == 6);
    gp_st_syms_free(&syms);
}

/* The crash: series.log synced, meta.db's commit never made. */
static int crash_after_journal_sync(int fd)
{
    int rc = fdatasync(fd);
    char link[64], target[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
        target[n] = 0;
        if (strstr(target, "/series.log") && !strstr(target, ".tmp"))
            _exit(0);
    }
    return rc;
}

/* series.log's sync fails (EIO), once. */
static int journal_fails;
static int fail_journal_sync(int fd)
{
    char link[64], target[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0 && journal_fails) {
        target[n] = 0;
        if (strstr(target, "/series.log") && !strstr(target, ".tmp")) {
            journal_fails--;
            errno = EIO;
            return -1;
        }
    }
    return fdatasync(fd);
}

/* A failed journal sync fails the checkpoint before meta.db learns of
 * the new series (the journal stays a superset); the next checkpoint
 * reopens the journal and registers them in both. */
static void test_series_log_sync_failure(void)
{
    const char *dir = gp_test_tmpdir();
    enum { N = 20 };
    int64_t t0 = build_registry(dir, N);
    int64_t t1 = tnow_ms() - 5000;
    struct gp_store_options o = {
        .block_ms = BLOCK_MS, .checkpoint_interval_ms = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    struct treq r;
    treq_build(&r, N, 10, 10, t1, 1000, NULL);
    CHECK_INT(tappend(s, &r).accepted, 100);
    treq_free(&r);
    journal_fails = 1;
    gp_seg_sys.fdatasync = fail_journal_sync;
    CHECK_INT(gp_store_maintain(s, 0), GP_EIO);
    gp_seg_sys.fdatasync = fdatasync;
    CHECK_INT(journal_fails, 0);
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *q;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM series", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    CHECK_INT(sqlite3_column_int64(q, 0), N); /* not before the journal */
    sqlite3_finalize(q);
    CHECK_INT(gp_store_maintain(s, 0), GP_OK);
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM series", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    CHECK_INT(sqlite3_column_int64(q, 0), N + 10);
    sqlite3_finalize(q);
    sqlite3_close(db);
    gp_store_close(s);
    drop_meta(dir);
    s = reopen(dir);
    check_both(s, N, t0, t1);
    gp_store_close(s);
}

static void test_crash_between_journal_and_meta(void)
{
    const char *dir = gp_test_tmpdir();
    enum { N = 20 };
    int64_t t0 = build_registry(dir, N);
    /* Too recent to be compacted before the checkpoint. */
    int64_t t1 = tnow_ms() - 5000;
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* With syncs on, so that the hook sees the journal's. */
        struct gp_store_options o = {
            .block_ms = BLOCK_MS, .checkpoint_interval_ms = 1, .no_background = 1};
        struct gp_store *s = topen(dir, &o);
        struct treq r;
        treq_build(&r, N, 10, 10, t1, 1000, NULL);
        CHECK_INT(tappend(s, &r).accepted, 100);
        treq_free(&r);
        gp_seg_sys.fdatasync = crash_after_journal_sync;
        gp_store_maintain(s, 0); /* the checkpoint dies in the hook */
        _exit(3);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* meta.db lacks the 10 new series; series.log and the WAL name them. */
    char p[1024];
    path_of(p, sizeof p, dir, "meta.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *q;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM series", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    CHECK_INT(sqlite3_column_int64(q, 0), N);
    sqlite3_finalize(q);
    sqlite3_close(db);
    struct gp_store *s = reopen(dir);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, 0);
    check_both(s, N, t0, t1);
    gp_store_close(s);
    /* Consistent: meta.db alone, then series.log alone, name them all. */
    s = reopen(dir);
    check_both(s, N, t0, t1);
    gp_store_close(s);
    drop_meta(dir);
    s = reopen(dir);
    check_both(s, N, t0, t1);
    gp_store_close(s);
}

/* A compaction wrote a block holding new series, then the process died
 * before the checkpoint that follows it: head.snap predates the block and
 * knows none of those series, and their WAL samples are skipped as
 * compacted. Their bounds must come from the block, or no query finds
 * them. */
static void test_compacted_not_checkpointed(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t now = tnow_ms();
    int64_t recent = gp_st_floor(now, BLOCK_MS); /* the current window: not compacted */
    int64_t old0 = recent - 3 * BLOCK_MS;        /* a window compaction takes */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct gp_store_options o = {.block_ms = BLOCK_MS, .no_sync = 1, .no_background = 1};
        struct gp_store *s = topen(dir, &o);
        struct treq r;
        treq_build(&r, 0, 3, 1, recent, 1000, NULL);
        CHECK_INT(tappend(s, &r).accepted, 3);
        treq_free(&r);
        CHECK_INT(gp_store_maintain(s, 1), GP_OK); /* head.snap: series 0-2 only */
        treq_build(&r, 10, 4, 60, old0, 1000, NULL);
        CHECK_INT(tappend(s, &r).accepted, 240);
        treq_free(&r);
        CHECK_INT(gp_st_compact(s, 1), GP_OK);
        _exit(0); /* before the checkpoint */
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int round = 0; round < 2; round++) {
        struct gp_store *s = reopen(dir);
        struct gp_store_stats st;
        gp_store_stats(s, &st);
        CHECK_INT(st.blocks, 1);
        for (uint32_t k = 10; k < 14; k++)
            check_span(s, k, old0, 60, 0, 0);
        gp_store_close(s);
    }
}

/* ---- damaged chunks at read time ---- */

/* A store of 3 series x 400 samples from *t0 compacted into one block
 * (its path in p); the store's directory. */
static const char *three_series_block(struct gp_store_options *o, int64_t *t0, char *p, size_t plen)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store *s = topen(dir, o);
    *t0 = gp_st_floor(tnow_ms(), 600000) - 600000;
    tfill(s, 3, 400, *t0, 100);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    gp_store_close(s);
    find_file(p, plen, dir, "blocks", ".blk");
    return dir;
}

/* The series of a node share one time record per piece of a block: its
 * damage is each one's damaged chunk (none reads wrong times), and the
 * block check counts every chunk that uses it. */
static void test_damaged_time_record_reported(void)
{
    struct gp_store_options o = {.block_ms = 600000, .no_sync = 1, .no_background = 1};
    int64_t t0;
    char p[1024];
    const char *dir = three_series_block(&o, &t0, p, sizeof p);
    CHECK(tfirst_payload(dir) > GP_ST_BF_HEADER + 6);
    flip(p, GP_ST_BF_HEADER + 6); /* inside the first time record's body */
    struct gp_store *s = topen(dir, &o);
    for (uint32_t k = 0; k < 3; k++) {
        struct gp_samples x = {0};
        CHECK_INT(gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x), GP_EPARSE);
        CHECK_INT(x.n, 0);
        CHECK_INT(x.damaged, 1);
        CHECK_INT(x.damaged_from, t0);
        gp_samples_free(&x);
    }
    uint64_t chunks, damaged;
    gp_store_check_blocks(s, &chunks, &damaged);
    CHECK_INT(chunks, 3);
    CHECK_INT(damaged, 3);
    gp_store_close(s);
}

static void test_damaged_block_chunk_reported(void)
{
    struct gp_store_options o = {.block_ms = 600000, .no_sync = 1, .no_background = 1};
    int64_t t0;
    char p[1024];
    const char *dir = three_series_block(&o, &t0, p, sizeof p);
    flip(p, (off_t)tfirst_payload(dir) + 2); /* series 0's chunk, past its time record */
    struct gp_store *s = topen(dir, &o);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, 0), INT64_MIN, INT64_MAX, &x), GP_EPARSE);
    CHECK_INT(x.damaged, 1);
    CHECK_INT(x.damaged_from, t0);
    CHECK_INT(x.damaged_to, t0 + 399 * 1000);
    gp_samples_free(&x);
    check_span(s, 1, t0, 400, 0, 0);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damaged_chunks_read, 1);

    /* The query answer says so in Prometheus's warnings field. */
    struct gp_storage *sg;
    CHECK_INT(gp_storage_wrap(&sg, s, 1), GP_OK);
    struct gp_matcher *m;
    size_t nm;
    char err[256];
    CHECK_INT(gp_selector_parse("gpu_util", 8, &m, &nm, err, sizeof err), GP_OK);
    struct gp_range_query q = {.m = m, .nm = nm, .start_ms = t0, .end_ms = t0 + 400 * 1000,
                               .step_ms = 60000, .rollups = 0};
    struct gp_buf out;
    gp_buf_init(&out, 1 << 24);
    CHECK_INT(gp_query_range(sg, &q, &out, err, sizeof err), GP_OK);
    gp_buf_putc(&out, 0);
    /* (the form is PromQL on raw samples: the engine's warning, as query= gives it) */
    CHECK_CONTAINS((const char *)out.data, "\"warnings\":[\"store: ");
    CHECK_CONTAINS((const char *)out.data, "damaged chunk(s) skipped between ");
    gp_buf_free(&out);
    /* An intact series: no warnings at all. */
    gp_matchers_free(m, nm);
    CHECK_INT(gp_selector_parse("gpu_util{gpu=\"1\"}", 17, &m, &nm, err, sizeof err), GP_OK);
    q.m = m;
    q.nm = nm;
    q.rollups = 0;
    gp_buf_init(&out, 1 << 24);
    CHECK_INT(gp_query_range(sg, &q, &out, err, sizeof err), GP_OK);
    gp_buf_putc(&out, 0);
    CHECK(!strstr((const char *)out.data, "warnings"));
    gp_buf_free(&out);
    gp_matchers_free(m, nm);

    /* PromQL: the intact series count, the damaged chunk is a warning. */
    const char *pq = "sum(count_over_time(gpu_util[10m]))";
    struct gp_pq_node *e = NULL;
    CHECK_INT(gp_promql_parse(pq, strlen(pq), &e, err, sizeof err), GP_OK);
    struct gp_promql_result pr;
    CHECK_INT(gp_promql_instant(sg, e, t0 + 399 * 1000, NULL, &pr, err, sizeof err), GP_OK);
    CHECK_INT(pr.n, 1);
    CHECK_DBL(pr.series[0].v[0], 2 * 400, 0);
    CHECK_CONTAINS(pr.warnings, "store: 1 damaged chunk(s) skipped between ");
    /* It names the series the chunk belongs to. */
    CHECK_CONTAINS(pr.warnings, " ms, of {__name__=\"gpu_util\", gpu=\"0\", node=\"n0\"}");
    CHECK(!strstr(pr.warnings, "more series"));
    gp_buf_init(&out, 1 << 24);
    CHECK_INT(gp_promql_render(&pr, &out), GP_OK);
    CHECK_CONTAINS(out.data, ",\"warnings\":[\"store: 1 damaged chunk(s) skipped between ");
    gp_buf_free(&out);
    gp_promql_result_free(&pr);
    gp_promql_free(e);
    gp_storage_close(sg);
}

/* ---- the WAL ---- */

static void test_wal_flip_mid_segment_recovers_later_records(void)
{
    const char *dir = gp_test_tmpdir();
    int64_t t0 = gp_st_floor(tnow_ms() - 1800 * 1000, 60000);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct gp_store *c = reopen(dir);
        tfill(c, 10, 500, t0, 50); /* 10 batches: SERIES+SAMPLES, then SAMPLES */
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Flip a byte inside the fourth batch's record (batch index 3). */
    char p[1024];
    path_of(p, sizeof p, dir, "wal/00000000.wal");
    struct gp_seg_file f;
    char err[256];
    CHECK_INT(gp_seg_read_file(p, &f, err, sizeof err), GP_OK);
    size_t pos = 0, n, at = 0;
    uint8_t type;
    const uint8_t *pl;
    for (int rec = 0; rec < 5; rec++) {
        CHECK_INT(gp_seg_parse(f.data, f.len, &pos, &type, &pl, &n), 1);
        at = (size_t)(pl - f.data) + n / 2;
    }
    CHECK_INT(type, 2);
    gp_seg_file_free(&f);
    flip(p, (off_t)at);
    for (int round = 0; round < 2; round++) {
        struct gp_store *s = reopen(dir);
        struct gp_store_stats st;
        gp_store_stats(s, &st);
        if (round == 0) {
            CHECK_INT(st.damage, GP_STORE_DMG_WAL_CORRUPT);
            CHECK_INT(st.wal_corrupt_records, 1);
            CHECK_INT(st.wal_recovered_records, 6);
        }
        /* Batch 3 (samples 150..199) is lost, every later one is there. */
        for (uint32_t k = 0; k < 10; k++)
            check_span(s, k, t0, 500, 150, 200);
        gp_store_close(s);
    }
}

const struct gp_test gp_tests_store_damage[] = {
    {"snap_missing_keeps_blocks", test_snap_missing_keeps_blocks},
    {"snap_damaged_is_set_aside", test_snap_damaged_is_set_aside},
    {"snap_cut_short_is_set_aside", test_snap_cut_short_is_set_aside},
    {"fresh_store_reports_no_damage", test_fresh_store_reports_no_damage},
    {"meta_deleted_rebuilt_from_wal", test_meta_deleted_rebuilt_from_wal},
    {"meta_not_a_database", test_meta_not_a_database},
    {"meta_damaged_page_salvaged", test_meta_damaged_page_salvaged},
    {"series_log_parse_malformed", test_series_log_parse_malformed},
    {"series_log_deleted_rebuilt", test_series_log_deleted_rebuilt},
    {"series_log_damaged_rebuilt", test_series_log_damaged_rebuilt},
    {"series_log_created_for_old_store", test_series_log_created_for_old_store},
    {"crash_between_journal_and_meta", test_crash_between_journal_and_meta},
    {"series_log_sync_failure", test_series_log_sync_failure},
    {"compacted_not_checkpointed", test_compacted_not_checkpointed},
    {"damaged_block_chunk_reported", test_damaged_block_chunk_reported},
    {"damaged_time_record_reported", test_damaged_time_record_reported},
    {"wal_flip_mid_segment_recovers_later_records", test_wal_flip_mid_segment_recovers_later_records},
    {0},
};
