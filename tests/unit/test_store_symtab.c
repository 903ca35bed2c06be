/*
 * test_store_symtab.c - label sets kept by reference to symbols in
 * meta.db and series.log (src/store/symtab.c; docs/storage.md "Two
 * copies of the series registry"): the table's encode and decode,
 * series.log's symbol and reference records on malformed input, a store
 * written by the gpulse before symbols (tests/data/store-v1: read,
 * rewritten, smaller, each copy alone still names every series), and a
 * crash between series.log's sync and meta.db's commit that leaves
 * symbols in the journal only.
 */
#include "lib/bits.h"
#include "lib/varint.h"
#include "store/labels.h"
#include "store/segment.h"
#include "store/store_int.h"
#include "store/symtab.h"
#include "store_testlib.h"

#include <errno.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

/* The canonical blob of n (name, value) pairs, already sorted. */
static size_t blob_of(uint8_t *out, const char *const *kv, size_t n)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_label l[8];
    for (size_t i = 0; i < n; i++)
        l[i] = (struct gp_label){{kv[2 * i], strlen(kv[2 * i])},
                                 {kv[2 * i + 1], strlen(kv[2 * i + 1])}};
    CHECK_INT(gp_labels_encode(l, n, &b), GP_OK);
    memcpy(out, b.data, b.len);
    size_t len = b.len;
    gp_buf_free(&b);
    return len;
}

static void test_encode_decode_and_conflicts(void)
{
    struct gp_st_syms t = {0};
    uint8_t a[128], c[128];
    const char *ka[] = {"__name__", "gpu_util", "host", "n1"};
    const char *kc[] = {"__name__", "gpu_util", "host", "n2"};
    size_t al = blob_of(a, ka, 2), cl = blob_of(c, kc, 2);
    struct gp_buf r;
    gp_buf_init(&r, 0);
    CHECK_INT(gp_st_syms_encode(&t, a, al, &r), GP_OK);
    size_t first = r.len;
    CHECK_INT(gp_st_syms_encode(&t, c, cl, &r), GP_OK);
    /* Numbers in order of first use; shared strings once. */
    CHECK_INT(t.n, 5);
    CHECK_INT(first, 5);                  /* count, then 4 one-byte numbers */
    CHECK(!memcmp(r.data, "\x02\x01\x02\x03\x04", 5));
    CHECK(!memcmp(r.data + 5, "\x02\x01\x02\x03\x05", 5));
    struct gp_buf out;
    gp_buf_init(&out, 0);
    const uint8_t *p = (const uint8_t *)r.data, *end = p + r.len;
    CHECK_INT(gp_st_syms_decode(&t, &p, end, &out), GP_OK);
    CHECK(out.len == al && !memcmp(out.data, a, al));
    gp_buf_reset(&out);
    CHECK_INT(gp_st_syms_decode(&t, &p, end, &out), GP_OK);
    CHECK(out.len == cl && !memcmp(out.data, c, cl) && p == end);
    /* A number not defined, and names out of order: not labels. */
    gp_buf_reset(&out);
    p = (const uint8_t *)"\x01\x01\x09";
    CHECK_INT(gp_st_syms_decode(&t, &p, p + 3, &out), GP_ENOTFOUND);
    CHECK_INT(out.len, 0);
    p = (const uint8_t *)"\x02\x03\x04\x01\x02";
    CHECK_INT(gp_st_syms_decode(&t, &p, p + 5, &out), GP_ENOTFOUND);
    CHECK_INT(out.len, 0);
    /* Malformed: no labels, more labels than bytes, a cut number. */
    p = (const uint8_t *)"\x00";
    CHECK_INT(gp_st_syms_decode(&t, &p, p + 1, &out), GP_EPARSE);
    p = (const uint8_t *)"\x05\x01\x02";
    CHECK_INT(gp_st_syms_decode(&t, &p, p + 3, &out), GP_EPARSE);
    p = (const uint8_t *)"\x01\x01\x82";
    CHECK_INT(gp_st_syms_decode(&t, &p, p + 3, &out), GP_EPARSE);
    /* define: the same bytes again is fine; other bytes, bytes with
     * another number, 0, past the limit or empty are not. */
    CHECK_INT(gp_st_syms_define(&t, 2, "gpu_util", 8, 100), GP_OK);
    CHECK_INT(gp_st_syms_define(&t, 2, "gpu_temp", 8, 100), GP_EPARSE);
    CHECK_INT(gp_st_syms_define(&t, 6, "host", 4, 100), GP_EPARSE);
    CHECK_INT(gp_st_syms_define(&t, 0, "x", 1, 100), GP_EPARSE);
    CHECK_INT(gp_st_syms_define(&t, 101, "x", 1, 100), GP_EPARSE);
    CHECK_INT(gp_st_syms_define(&t, 6, "", 0, 100), GP_EPARSE);
    /* A bad blob is refused before anything is numbered. */
    CHECK_INT(gp_st_syms_encode(&t, (const uint8_t *)"\x01", 1, &r), GP_EPARSE);
    CHECK_INT(t.n, 5);
    /* Ranges: written and read back into another table. */
    struct gp_buf y;
    gp_buf_init(&y, 0);
    CHECK_INT(gp_st_syms_put_range(&t, 0, t.n, 1 << 20, &y), 5);
    struct gp_st_syms u = {0};
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)y.data, y.len, 1000), GP_OK);
    CHECK_INT(u.n, 5);
    /* A small record size splits them (each range at least one). */
    gp_buf_reset(&y);
    CHECK_INT(gp_st_syms_put_range(&t, 0, t.n, 12, &y), 1);
    CHECK_INT(gp_st_syms_put_range(&t, 1, t.n, 12, &y), 2);
    /* Malformed ranges: first 0, a count past the limit, a cut symbol,
     * bytes left over, a number taken by other bytes. */
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)"\x00\x01\x01x", 4, 1000), GP_EPARSE);
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)"\x06\x7f\x01x", 4, 100), GP_EPARSE);
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)"\x06\x01\x05x", 4, 1000), GP_EPARSE);
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)"\x06\x01\x01xy", 5, 1000), GP_EPARSE);
    CHECK_INT(gp_st_syms_parse_range(&u, (const uint8_t *)"\x01\x01\x01x", 4, 1000), GP_EPARSE);
    gp_buf_free(&y);
    gp_buf_free(&r);
    gp_buf_free(&out);
    gp_st_syms_free(&u);
    gp_st_syms_free(&t);
}

/* Appends one record (type, payload) to an image at b; its size. */
static size_t rec(uint8_t *b, uint8_t type, const void *p, size_t n)
{
    gp_seg_header(b, type, p, n);
    memcpy(b + GP_SEG_HEADER, p, n);
    return GP_SEG_HEADER + n;
}

static int count_series(void *ctx, const struct gp_wal_series *ws)
{
    CHECK_INT(gp_labels_validate(ws->labels, ws->labels_len), GP_OK);
    (*(int *)ctx)++;
    return 0;
}

/* series.log's new records on malformed input: what can be read is, the
 * rest is counted as damage, nothing is made up. */
static void test_series_log_symbol_records_malformed(void)
{
    uint8_t b[1024];
    size_t n = 0, second;
    /* symbols 1..4: __name__ up job a */
    n += rec(b + n, GP_ST_SLOG_SYMBOLS, "\x01\x04\x08__name__\x02up\x03job\x01" "a", 20);
    /* series 1 {__name__="up", job="a"}, series 2 naming symbol 9 */
    second = n;
    n += rec(b + n, GP_ST_SLOG_REFS, "\x01\x02\x01\x02\x03\x04" "\x02\x01\x01\x09", 10);
    /* symbol 2 again, the same: fine; then as other bytes: damage */
    n += rec(b + n, GP_ST_SLOG_SYMBOLS, "\x02\x01\x02up", 5);
    n += rec(b + n, GP_ST_SLOG_SYMBOLS, "\x02\x01\x02uq", 5);
    /* a range from 0; an empty reference record; id 0; a cut entry */
    n += rec(b + n, GP_ST_SLOG_SYMBOLS, "\x00\x01\x01x", 4);
    n += rec(b + n, GP_ST_SLOG_REFS, "", 0);
    n += rec(b + n, GP_ST_SLOG_REFS, "\x00\x01\x01\x02", 4);
    n += rec(b + n, GP_ST_SLOG_REFS, "\x05\x02\x01\x02", 4);
    /* symbol 5 = b, then series 3 {__name__="up", job="b"}: valid */
    n += rec(b + n, GP_ST_SLOG_SYMBOLS, "\x05\x01\x01" "b", 4);
    n += rec(b + n, GP_ST_SLOG_REFS, "\x03\x02\x01\x02\x03\x05", 6);
    struct gp_st_syms t = {0};
    struct gp_st_slog_stats st;
    int got = 0;
    CHECK_INT(gp_st_slog_parse(b, n, &t, count_series, &got, &st), GP_OK);
    CHECK_INT(got, 2);
    CHECK_INT(st.records, 2);
    CHECK_INT(st.bad_records, 6); /* symbol 9, symbol 2 redefined, range from 0, empty, id 0, cut */
    CHECK_INT(st.old_records, 0);
    CHECK_INT(st.max_id, 3);
    CHECK_INT(t.n, 5);
    gp_st_syms_free(&t);
    /* The symbols record damaged, the series after it valid: each of
     * them is damage (their labels are not guessed). */
    b[GP_SEG_HEADER + 4] ^= 0x20;
    got = 0;
    CHECK_INT(gp_st_slog_parse(b, second + GP_SEG_HEADER + 10, &t, count_series, &got, &st), GP_OK);
    CHECK_INT(got, 0);
    CHECK_INT(st.bad_records, 1 + 2);
    gp_st_syms_free(&t);
}

/* ---- a store of the gpulse before symbols ---- */

struct labels_by_id {
    uint8_t *blob[200];
    size_t len[200];
    int n;
};

static int keep_labels(void *ctx, const struct gp_wal_series *ws)
{
    struct labels_by_id *x = ctx;
    CHECK(ws->id < 200 && !x->blob[ws->id]);
    x->blob[ws->id] = malloc(ws->labels_len);
    memcpy(x->blob[ws->id], ws->labels, ws->labels_len);
    x->len[ws->id] = ws->labels_len;
    x->n++;
    return 0;
}

/* Reads dir's series.log: its stats and, when want is given, that every
 * series it names has those labels. */
static void slog_check(const char *dir, struct gp_st_slog_stats *st, struct labels_by_id *got)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/series.log", dir);
    struct gp_seg_file f = {0};
    char err[256];
    CHECK_INT(gp_seg_read_file(p, &f, err, sizeof err), GP_OK);
    struct gp_st_syms t = {0};
    CHECK_INT(gp_st_slog_parse(f.data, f.len, &t, keep_labels, got, st), GP_OK);
    gp_st_syms_free(&t);
    gp_seg_file_free(&f);
}

static void labels_free(struct labels_by_id *x)
{
    for (int i = 0; i < 200; i++)
        free(x->blob[i]);
    memset(x, 0, sizeof *x);
}

static off_t file_size(const char *dir, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static int64_t meta_value(const char *dir, const char *sql)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/meta.db", dir);
    sqlite3 *db;
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_open(p, &db), SQLITE_OK);
    CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Opens dir (the fixture's data kept whatever the date), checks that
 * every series of want has its labels and that the one read has its 120
 * samples; the damage flags must be `damage`. */
static void open_and_check(const char *dir, const struct labels_by_id *want, unsigned damage)
{
    struct gp_store_options o = {.no_sync = 1, .no_background = 1,
                                 .retention_raw_ms = INT64_C(100) * 365 * 86400000,
                                 .retention_rollup_ms = INT64_C(100) * 365 * 86400000};
    struct gp_store *s = topen(dir, &o);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, damage);
    CHECK_INT(st.series, 160);
    CHECK_INT(st.series_lost, 0);
    for (uint32_t id = 1; id < 200; id++) {
        if (!want->blob[id])
            continue;
        size_t l;
        const uint8_t *b = gp_sindex_labels(s->idx, id, &l);
        if (!b || l != want->len[id] || memcmp(b, want->blob[id], l))
            gp_test_fail(__FILE__, __LINE__, "series %u: labels differ", id);
    }
    uint32_t id = tid_of(s, "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\"}");
    CHECK(id != 0);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, 1795737600000, 1795744799999, &x), GP_OK);
    CHECK_INT(x.n, 120);
    gp_samples_free(&x);
    gp_store_close(s);
}

/* A copy of tests/data/store-v1 in the test's directory. */
static const char *fixture_copy(void)
{
    const char *dir = gp_test_tmpdir();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'/", gp_test_data("store-v1"), dir);
    CHECK_INT(system(cmd), 0);
    return dir;
}

static void test_format1_store_read_and_rewritten(void)
{
    const char *dir = fixture_copy();
    off_t meta_before = file_size(dir, "meta.db"), log_before = file_size(dir, "series.log");
    CHECK_INT(meta_value(dir, "SELECT value FROM meta WHERE key='format'"), 1);
    struct labels_by_id want = {0};
    struct gp_st_slog_stats st;
    slog_check(dir, &st, &want);
    CHECK_INT(want.n, 160);
    CHECK_INT(st.old_records, 160);

    open_and_check(dir, &want, 0);
    /* Both copies rewritten with symbols: format 2, smaller. */
    CHECK_INT(meta_value(dir, "SELECT value FROM meta WHERE key='format'"), 2);
    CHECK(meta_value(dir, "SELECT count(*) FROM symbols") > 20);
    struct labels_by_id now = {0};
    slog_check(dir, &st, &now);
    CHECK_INT(st.old_records, 0);
    CHECK_INT(st.records, 160);
    CHECK_INT(st.bad_records, 0);
    for (int id = 1; id < 200; id++)
        CHECK(now.len[id] == want.len[id] &&
              (!want.blob[id] || !memcmp(now.blob[id], want.blob[id], want.len[id])));
    labels_free(&now);
    off_t meta_after = file_size(dir, "meta.db"), log_after = file_size(dir, "series.log");
    CHECK(meta_after > 0 && meta_after * 2 < meta_before);
    CHECK(log_after > 0 && log_after * 4 < log_before);

    /* Again: nothing to do, no damage. */
    open_and_check(dir, &want, 0);
    CHECK_INT(file_size(dir, "series.log"), log_after);
    /* Each copy alone names every series. */
    char p[1024];
    snprintf(p, sizeof p, "%s/meta.db", dir);
    CHECK_INT(unlink(p), 0);
    open_and_check(dir, &want, GP_STORE_DMG_META_DAMAGED);
    snprintf(p, sizeof p, "%s/series.log", dir);
    CHECK_INT(unlink(p), 0);
    open_and_check(dir, &want, GP_STORE_DMG_SERIES_LOG);
    open_and_check(dir, &want, 0);
    labels_free(&want);
}

/* series.log.tmp's sync fails (EIO). */
static int fail_tmp_sync(int fd)
{
    char link[64], target[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
        target[n] = 0;
        if (strstr(target, "/series.log.tmp")) {
            errno = EIO;
            return -1;
        }
    }
    return fdatasync(fd);
}

static void meta_exec(const char *dir, const char *sql)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/meta.db", dir);
    sqlite3 *db;
    CHECK_INT(sqlite3_open(p, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Neither copy can be rewritten at the first start (meta.db's
 * transaction fails, series.log.tmp cannot be synced): the store runs on
 * both in their old form, adds series to each (labels whole in meta.db,
 * symbols appended after series.log's old records), and the next start
 * rewrites both; no series loses its labels on the way. */
static void test_format1_kept_when_it_cannot_be_rewritten(void)
{
    const char *dir = fixture_copy();
    struct labels_by_id want = {0};
    struct gp_st_slog_stats st;
    slog_check(dir, &st, &want);
    meta_exec(dir, "CREATE TRIGGER no_delete BEFORE DELETE ON series "
                   "BEGIN SELECT RAISE(ABORT, 'injected'); END");
    struct gp_store_options o = {.no_background = 1,
                                 .retention_raw_ms = INT64_C(100) * 365 * 86400000,
                                 .retention_rollup_ms = INT64_C(100) * 365 * 86400000};
    gp_seg_sys.fdatasync = fail_tmp_sync;
    struct gp_store *s = topen(dir, &o);
    gp_seg_sys.fdatasync = fdatasync;
    struct gp_store_stats ss;
    gp_store_stats(s, &ss);
    CHECK_INT(ss.damage, 0);
    CHECK_INT(ss.series, 160);
    struct treq r;
    treq_build(&r, 0, 10, 2, tnow_ms() - 60000, 1000, NULL);
    CHECK_INT(tappend(s, &r).accepted, 20);
    treq_free(&r);
    gp_store_close(s);
    CHECK_INT(meta_value(dir, "SELECT value FROM meta WHERE key='format'"), 1);
    CHECK_INT(meta_value(dir, "SELECT count(*) FROM series"), 170);
    struct labels_by_id now = {0};
    slog_check(dir, &st, &now);
    CHECK_INT(st.old_records, 160);
    CHECK_INT(st.records, 170);
    CHECK_INT(st.bad_records, 0);
    labels_free(&now);

    meta_exec(dir, "DROP TRIGGER no_delete");
    for (int round = 0; round < 2; round++) {
        s = topen(dir, &o);
        gp_store_stats(s, &ss);
        CHECK_INT(ss.damage, round ? GP_STORE_DMG_META_DAMAGED : 0);
        CHECK_INT(ss.series, 170);
        CHECK_INT(ss.series_lost, 0);
        for (uint32_t id = 1; id <= 160; id++) {
            size_t l;
            const uint8_t *b = gp_sindex_labels(s->idx, id, &l);
            CHECK(b && l == want.len[id] && !memcmp(b, want.blob[id], l));
        }
        for (uint32_t k = 0; k < 10; k++)
            CHECK_INT(tid(s, k), 161 + k);
        gp_store_close(s);
        CHECK_INT(meta_value(dir, "SELECT value FROM meta WHERE key='format'"), 2);
        slog_check(dir, &st, &now);
        CHECK_INT(st.old_records, 0);
        CHECK_INT(st.records, 170);
        labels_free(&now);
        /* then meta.db gone: the rewritten series.log alone */
        char p[1024];
        snprintf(p, sizeof p, "%s/meta.db", dir);
        CHECK_INT(unlink(p), 0);
    }
    labels_free(&want);
}

/* ---- a crash between series.log's sync and meta.db's commit ---- */

/* The checkpoint that registered series k+1.. and their symbols reached
 * series.log only: the next start takes the journal's numbers for those
 * symbols, registers the series, and the two copies go on agreeing (each
 * alone still names every series after more are added). */
static void test_journal_symbols_adopted(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = tnow_ms() - 600 * 1000;
    tfill(s, 24, 5, t0, 5); /* nodes n0..n2 */
    gp_store_close(s);
    int64_t syms = meta_value(dir, "SELECT max(id) FROM symbols");
    /* Undo the last commit's share: series 17.. and the symbols only
     * they use (node n2's, and gpu numbers 16..23). */
    char p[1024], *msg = NULL;
    snprintf(p, sizeof p, "%s/meta.db", dir);
    sqlite3 *db;
    CHECK_INT(sqlite3_open(p, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db,
                           "DELETE FROM series WHERE id > 16;"
                           "DELETE FROM symbols WHERE id > (SELECT max(id) - 9 FROM symbols)",
                           NULL, NULL, &msg),
              SQLITE_OK);
    sqlite3_close(db);
    off_t log_size = file_size(dir, "series.log");

    s = topen(dir, &o);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK_INT(st.damage, 0);
    CHECK_INT(st.series, 24);
    for (uint32_t k = 0; k < 24; k++)
        CHECK_INT(tid(s, k), k + 1);
    /* More series (new nodes, new strings) after the adopted symbols. */
    struct treq r;
    treq_build(&r, 0, 40, 1, t0 + 10000, 1000, NULL);
    CHECK_INT(tappend(s, &r).accepted, 40);
    treq_free(&r);
    gp_store_close(s);
    CHECK(file_size(dir, "series.log") > log_size); /* appended to, not rewritten */
    CHECK_INT(meta_value(dir, "SELECT max(id) FROM symbols") > syms, 1);
    /* meta.db gone: series.log alone; then series.log gone: meta.db alone. */
    CHECK_INT(unlink(p), 0);
    for (int round = 0; round < 2; round++) {
        s = topen(dir, &o);
        gp_store_stats(s, &st);
        CHECK_INT(st.damage, round ? GP_STORE_DMG_SERIES_LOG : GP_STORE_DMG_META_DAMAGED);
        CHECK_INT(st.series, 40);
        CHECK_INT(st.series_lost, 0);
        for (uint32_t k = 0; k < 40; k++)
            CHECK_INT(tid(s, k), k + 1);
        gp_store_close(s);
        snprintf(p, sizeof p, "%s/series.log", dir);
        CHECK_INT(unlink(p), 0);
    }
}

const struct gp_test gp_tests_store_symtab[] = {
    {"encode_decode_and_conflicts", test_encode_decode_and_conflicts},
    {"series_log_symbol_records_malformed", test_series_log_symbol_records_malformed},
    {"format1_store_read_and_rewritten", test_format1_store_read_and_rewritten},
    {"format1_kept_when_it_cannot_be_rewritten", test_format1_kept_when_it_cannot_be_rewritten},
    {"journal_symbols_adopted", test_journal_symbols_adopted},
    {0},
};
