/*
 * test_flightrec.c - the pickle reader (lib/pickle.c) and PyTorch Flight
 * Recorder dumps (sources/flightrec.c): values of every supported
 * opcode, malformed and hostile pickles refused with the offset named,
 * and the dumps of tests/data/flightrec (PyTorch's documented format,
 * written by make_dumps.py with protocols 2 and 4) naming rank 3 as
 * missing from all_reduce 57 of the default group where ranks 0-2 wait.
 */
#include "lib/err.h"
#include "lib/pickle.h"
#include "sources/flightrec.h"
#include "sources/frame.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PK(lit) (const uint8_t *)(lit), sizeof(lit) - 1
#define SL(lit) lit, sizeof(lit) - 1

/* The file name of rank r's dump, as PyTorch names it, into out. */
static const char *dump_name(int r, char *out, size_t len)
{
    snprintf(out, len, "nccl_trace_rank_%d", r);
    return out;
}

/* Reads rank r's dump of tests/data/flightrec into a new buffer. */
static uint8_t *read_dump(int r, size_t *len)
{
    char rel[128], name[32];
    snprintf(rel, sizeof rel, "flightrec/%s", dump_name(r, name, sizeof name));
    FILE *f = fopen(gp_test_data(rel), "rb");
    CHECK(f);
    uint8_t *buf = malloc(1 << 20);
    CHECK(buf);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    CHECK(*len > 0);
    return buf;
}

/* {"a": [1, -2, 300, -70000, 2**40, -(2**63), 1.5, None, True, "hé", b"x"],
 *  "t": ("a", memo 2 again)} by hand, protocol 2 opcodes. */
static void test_pickle_values(void)
{
    static const char pk[] =
        "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01]q\x02(K\x01J\xfe\xff\xff\xffM\x2c\x01"
        "J\x90\xee\xfe\xff\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"
        "G\x3f\xf8\x00\x00\x00\x00\x00\x00N\x88X\x03\x00\x00\x00h\xc3\xa9" "C\x01xeX\x01\x00\x00\x00t"
        "h\x01h\x02\x86u.";
    struct gp_pickle p;
    char err[128];
    CHECK_INT(gp_pickle_parse(PK(pk), &p, err, sizeof err), GP_OK);
    uint32_t a = gp_pickle_get(&p, p.root, "a");
    CHECK(a != GP_PICKLE_NONE);
    CHECK_INT(p.v[a].type, GP_PK_LIST);
    CHECK_INT(p.v[a].n, 11);
    static const int64_t want[] = {1, -2, 300, -70000, 1LL << 40, INT64_MIN};
    for (uint32_t i = 0; i < 6; i++) {
        int64_t x;
        CHECK(gp_pickle_int(&p, gp_pickle_item(&p, a, i), &x));
        CHECK_INT(x, want[i]);
    }
    CHECK_DBL(p.v[gp_pickle_item(&p, a, 6)].f, 1.5, 0);
    CHECK_INT(p.v[gp_pickle_item(&p, a, 7)].type, GP_PK_NONE);
    int64_t t;
    CHECK(gp_pickle_int(&p, gp_pickle_item(&p, a, 8), &t) && t == 1);
    const char *s;
    size_t n;
    CHECK(gp_pickle_str(&p, gp_pickle_item(&p, a, 9), &s, &n));
    CHECK_INT(n, 3);
    CHECK(!memcmp(s, "h\xc3\xa9", 3));
    CHECK_INT(p.v[gp_pickle_item(&p, a, 10)].type, GP_PK_BYTES);
    uint32_t tup = gp_pickle_get(&p, p.root, "t");
    CHECK_INT(p.v[tup].type, GP_PK_TUPLE);
    CHECK(gp_pickle_str(&p, gp_pickle_item(&p, tup, 0), &s, &n) && n == 1 && *s == 'a');
    CHECK_INT(gp_pickle_item(&p, tup, 1), a); /* the memo shares, never copies */
    CHECK_INT(gp_pickle_get(&p, p.root, "missing"), GP_PICKLE_NONE);
    CHECK_INT(gp_pickle_item(&p, a, 11), GP_PICKLE_NONE);
    CHECK_INT(gp_pickle_get(&p, a, "a"), GP_PICKLE_NONE);
    gp_pickle_free(&p);
}

/* Malformed and hostile input: refused, the detail naming what and where. */
static void test_pickle_malformed(void)
{
    static const struct {
        const char *in;
        size_t len;
        const char *want;
    } bad[] = {
        {SL(""), "truncated (no STOP) at offset 0"},
        {SL("\x80\x02}"), "truncated (no STOP) at offset 3"},
        {SL("\x80\x09}."), "unsupported protocol"},
        {SL("\x80\x02X\xff\xff\xff\x7f"), "truncated string at offset 7"},
        {SL("\x80\x02J\x01\x02"), "truncated at offset 3"},
        {SL("\x80\x02" "cos\nsystem\n"), "unsupported opcode 0x63 at offset 2"},
        {SL("\x80\x02R."), "unsupported opcode 0x52 at offset 2"},
        {SL("\x80\x02}K\x01."), "STOP with other than one value"},
        {SL("\x80\x02}K\x01s."), "stack underflow"},
        {SL("\x80\x02]K\x01K\x02s."), "items set on a non-dict"},
        {SL("\x80\x02}K\x01" "a."), "items appended to a non-list"},
        {SL("\x80\x02}(K\x01u."), "a key without a value"},
        {SL("\x80\x02}u."), "no mark"},
        {SL("\x80\x02h\x05."), "memo index not set"},
        {SL("\x80\x02q\x00."), "memo of an empty stack"},
        {SL("\x80\x02}r\xff\xff\xff\x7f."), "memo index too large"},
        {SL("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."), "integer wider than 64 bits"},
        {SL("\x80\x02(."), "STOP with other than one value"},
        {SL("\x80\x02}K\x01(K\x02s" "l."), "stack underflow"}, /* SETITEM took the mark's base */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_pickle p;
        char err[128] = "";
        int rc = gp_pickle_parse((const uint8_t *)bad[i].in, bad[i].len, &p, err, sizeof err);
        if (rc != GP_EPARSE && rc != GP_ETOOBIG)
            gp_test_fail(__FILE__, __LINE__, "case %zu: rc %d", i, rc);
        CHECK_CONTAINS(err, bad[i].want);
        gp_pickle_free(&p);
    }
}

/* A list that keeps growing while others grow keeps its slots in order,
 * and a pickle of many values stops at the bound with GP_ETOOBIG. */
static void test_pickle_growth_and_bounds(void)
{
    /* [[1], 2, [3], 4] built as: ] ( ] K1 a K2 ] K3 a K4 e . */
    static const char pk[] = "\x80\x02](]K\x01" "aK\x02]K\x03" "aK\x04" "e.";
    struct gp_pickle p;
    char err[128];
    CHECK_INT(gp_pickle_parse(PK(pk), &p, err, sizeof err), GP_OK);
    CHECK_INT(p.v[p.root].n, 4);
    int64_t x;
    CHECK(gp_pickle_int(&p, gp_pickle_item(&p, p.root, 1), &x) && x == 2);
    CHECK(gp_pickle_int(&p, gp_pickle_item(&p, gp_pickle_item(&p, p.root, 2), 0), &x) && x == 3);
    gp_pickle_free(&p);
    /* ( N N N ... with more values than the bound */
    size_t n = GP_PICKLE_MAX_VALUES + 10;
    uint8_t *big = malloc(n + 4);
    CHECK(big);
    memcpy(big, "\x80\x02(", 3);
    memset(big + 3, 'N', n);
    big[n + 3] = 'l';
    CHECK_INT(gp_pickle_parse(big, n + 4, &p, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "too many values");
    gp_pickle_free(&p);
    free(big);
}

/* The four dumps: rank 3 never entered all_reduce 57 of group "0". */
static void test_dumps_name_missing_rank(void)
{
    struct gp_fr_dump d[4];
    char err[160];
    for (int r = 0; r < 4; r++) {
        char name[32];
        size_t len;
        uint8_t *buf = read_dump(r, &len);
        /* rank 2's own "rank" key wins over a wrong name */
        int32_t from_name = r == 2 ? 7 : gp_fr_rank_of_name(dump_name(r, name, sizeof name));
        CHECK_INT(gp_fr_parse(buf, len, from_name, &d[r], err, sizeof err), GP_OK);
        free(buf);
        CHECK_INT(d[r].rank, r);
        CHECK_INT(d[r].npg, 2);
        CHECK_STR(d[r].pg[0].name, "0");
        CHECK_INT(d[r].pg[0].last_entered, r == 3 ? 56 : 57);
        CHECK_INT(d[r].pg[0].last_completed, 56);
        CHECK_INT(d[r].pg[0].waiting, r == 3 ? -1 : 57);
        CHECK_STR(d[r].pg[1].name, "1");
        CHECK_INT(d[r].pg[1].waiting, -1);
    }
    CHECK_STR(d[0].pg[0].op, "nccl:all_reduce");
    struct gp_fr_verdict v[4];
    gp_fr_analyze(d, 4, v);
    for (int r = 0; r < 3; r++) {
        CHECK_INT(v[r].missing, -1);
        CHECK_INT(v[r].waiting, 57);
    }
    CHECK_INT(v[3].rank, 3);
    CHECK_INT(v[3].missing, 57);
    CHECK_INT(v[3].waiting, -1);
    CHECK_STR(v[3].pg, "0");
    CHECK_STR(v[3].op, "nccl:all_reduce");
    /* without the waiters' dumps nothing is missing */
    gp_fr_analyze(d + 3, 1, v);
    CHECK_INT(v[0].missing, -1);
}

/* Dumps of the wrong shape are refused naming what is wrong. */
static void test_dump_malformed(void)
{
    static const struct {
        const char *in;
        size_t len;
        int32_t rank;
        const char *want;
    } bad[] = {
        {SL("\x80\x02]."), 0, "the dump is not a dict"},
        {SL("\x80\x02}."), -1, "no rank in the dump or its name"},
        {SL("\x80\x02}."), 0, "no 'entries' list"},
        {SL("\x80\x02}X\x07\x00\x00\x00" "entriesK\x01s."), 0, "no 'entries' list"},
        {SL("\x80\x02}X\x07\x00\x00\x00" "entries]K\x01" "as."), 0, "entry 0 is not a dict"},
        {SL("\x80\x02}X\x07\x00\x00\x00" "entries]}as."), 0, "entry 0: no collective_seq_id"},
        {SL("\x80\x02}X\x07\x00\x00\x00" "entries]}X\x11\x00\x00\x00"
            "collective_seq_idK\x01sas."),
         0, "entry 0: no process_group"},
        {SL("\x80\x02}X\x07\x00\x00\x00" "entries]}(X\x11\x00\x00\x00" "collective_seq_idK\x01"
         "X\x05\x00\x00\x00pg_idK\x00uas."), 0, "entry 0: no state"},
        {SL("\x80\x02" "c"), 0, "unsupported opcode 0x63"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_fr_dump d;
        char err[160] = "";
        int rc = gp_fr_parse((const uint8_t *)bad[i].in, bad[i].len, bad[i].rank, &d, err, sizeof err);
        if (rc != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu: rc %d (%s)", i, rc, err);
        CHECK_CONTAINS(err, bad[i].want);
    }
}

static void test_rank_of_name(void)
{
    CHECK_INT(gp_fr_rank_of_name("nccl_trace_rank_12"), 12);
    CHECK_INT(gp_fr_rank_of_name("0"), 0);
    CHECK_INT(gp_fr_rank_of_name("trace"), -1);
    CHECK_INT(gp_fr_rank_of_name("rank_1234567890"), -1);
}

/* Copies the four dumps of tests/data/flightrec into dir. */
static void copy_dumps(const char *dir)
{
    char path[512], name[32];
    for (int r = 0; r < 4; r++) {
        size_t len;
        uint8_t *buf = read_dump(r, &len);
        snprintf(path, sizeof path, "%s/%s", dir, dump_name(r, name, sizeof name));
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(buf, 1, len, f) == len);
        fclose(f);
        free(buf);
    }
}

/* The scan reads the directory's dumps, counts and names a bad one,
 * and skips what is not a regular file or is older than an hour. */
static void test_scan(void)
{
    const char *dir = gp_test_tmpdir();
    copy_dumps(dir);
    gp_test_write_file(dir, "nccl_trace_rank_9", "not a pickle");
    gp_test_write_file(dir, "sub/nccl_trace_rank_5", "x");
    gp_test_write_file(dir, "nccl_trace_rank_8", "\x80\x02}.");
    struct gp_fr_dump *d;
    unsigned n, bad;
    char err[256] = "";
    double now = (double)time(NULL);
    CHECK_INT(gp_fr_scan(dir, now, &d, &n, &bad, err, sizeof err), GP_OK);
    CHECK_INT(n, 4);
    CHECK_INT(bad, 2);
    CHECK_CONTAINS(err, "nccl_trace_rank_");
    free(d);
    /* an hour later every file is a past job's */
    CHECK_INT(gp_fr_scan(dir, now + 2 * GP_FR_MAX_AGE_S, &d, &n, &bad, err, sizeof err), GP_OK);
    CHECK_INT(n, 0);
    free(d);
    CHECK_INT(gp_fr_scan("/nonexistent/fr", now, &d, &n, &bad, err, sizeof err), GP_OK);
    CHECK_INT(n, 0);
    CHECK(!d);
}

/* The agent's watch marks the step reporters of each rank (not one that
 * ended, not a rank without a dump) and rescans only when due. */
static void test_watch_marks_ranks(void)
{
    const char *dir = gp_test_tmpdir();
    copy_dumps(dir);
    struct gp_fr_watch *w = gp_fr_watch_new(dir);
    CHECK(w);
    struct gp_step_stats st[6];
    memset(st, 0, sizeof st);
    for (int i = 0; i < 6; i++)
        st[i].jid.rank = i < 5 ? i : 3;
    st[5].ended = true;
    double now = (double)time(NULL);
    gp_fr_watch_apply(w, 100.0, now, st, 6);
    for (int r = 0; r < 3; r++) {
        CHECK(!st[r].fr_missing_valid);
        CHECK(st[r].fr_waiting_valid);
        CHECK_INT(st[r].fr_waiting, 57);
    }
    CHECK(st[3].fr_missing_valid);
    CHECK_INT(st[3].fr_missing, 57);
    CHECK(!st[3].fr_waiting_valid);
    CHECK(!st[4].fr_missing_valid && !st[4].fr_waiting_valid);
    CHECK(!st[5].fr_missing_valid);
    /* a fresh frame: marked from the kept verdicts, no rescan before 5 s */
    char path[512];
    snprintf(path, sizeof path, "%s/nccl_trace_rank_3", dir);
    CHECK_INT(unlink(path), 0);
    memset(st, 0, sizeof st);
    st[0].jid.rank = 3;
    gp_fr_watch_apply(w, 100.0 + GP_FR_RESCAN_S / 2, now, st, 1);
    CHECK(st[0].fr_missing_valid);
    memset(st, 0, sizeof st);
    st[0].jid.rank = 3;
    gp_fr_watch_apply(w, 100.0 + GP_FR_RESCAN_S, now, st, 1);
    CHECK(!st[0].fr_missing_valid);
    gp_fr_watch_free(w);
    gp_fr_watch_free(NULL);
}

const struct gp_test gp_tests_flightrec[] = {
    {"pickle_values", test_pickle_values},
    {"pickle_malformed", test_pickle_malformed},
    {"pickle_growth_and_bounds", test_pickle_growth_and_bounds},
    {"dumps_name_missing_rank", test_dumps_name_missing_rank},
    {"dump_malformed", test_dump_malformed},
    {"rank_of_name", test_rank_of_name},
    {"scan", test_scan},
    {"watch_marks_ranks", test_watch_marks_ranks},
    {0},
};
