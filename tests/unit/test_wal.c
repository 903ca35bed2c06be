/*
 * test_wal.c - the write-ahead log: batches round trip through files
 * (values bit for bit, int64 timestamp edges), the record decoder rejects
 * every malformed payload without calling a handler, rotation, cut and
 * remove_before, replay from a segment, replay repairing a torn tail,
 * recovering the records after a corrupt one mid-segment, group commit under 8 syncing threads checked
 * against the fdatasyncs actually made, and a child process SIGKILLed
 * while appending, whose acknowledged batches must all replay once.
 */
#include "lib/bits.h"
#include "lib/err.h"
#include "store/segment.h"
#include "store/wal.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static const char *sub(const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/%s", gp_test_tmpdir(), name);
    return p;
}

static const char *seg_file(const char *dir, uint32_t num)
{
    static char buf[4][600];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 600, "%s/%08u.wal", dir, num);
    return p;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static uint64_t size_of(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* Sum of the sizes of the *.wal files in dir, and how many there are. */
static uint64_t dir_bytes(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    uint64_t sum = 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".wal") == 0) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            sum += size_of(path);
            n++;
        }
    }
    closedir(d);
    if (count)
        *count = n;
    return sum;
}

/* Batch i of the deterministic workload: every 5th batch declares a new
 * series; every batch has 1..4 samples of the series so far. */
struct batch {
    struct gp_wal_series series[1];
    size_t nseries;
    struct gp_wal_sample samples[4];
    size_t nsamples;
    char labels[64];
};

static void gen(int i, struct batch *b)
{
    b->nseries = 0;
    if (i % 5 == 0) {
        int len = snprintf(b->labels, sizeof b->labels, "\x08__name__\x03gpu\x04node\x02n%d",
                           i / 5 % 10);
        b->series[0] = (struct gp_wal_series){(uint32_t)(i / 5 + 1), (const uint8_t *)b->labels,
                                              (size_t)len};
        b->nseries = 1;
    }
    uint64_t s = (uint64_t)i * 0x9e3779b97f4a7c15ULL + 1;
    b->nsamples = 1 + (size_t)i % 4;
    for (size_t k = 0; k < b->nsamples; k++)
        b->samples[k] = (struct gp_wal_sample){(uint32_t)(rng_next(&s) % (uint64_t)(i / 5 + 1) + 1),
                                               1700000000000LL + i * 15000LL + (int64_t)k,
                                               rng_next(&s)};
}

static void append_gen(struct gp_wal *w, int from, int to)
{
    for (int i = from; i < to; i++) {
        struct batch b;
        struct gp_wal_pos end;
        gen(i, &b);
        CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &end), GP_OK);
        CHECK_INT(end.segment, gp_wal_segment(w));
    }
}

/* What a replay delivered. */
struct coll {
    struct gp_wal_series *series; /* labels point into lab */
    size_t nseries;
    uint8_t lab[1 << 16];
    size_t nlab;
    struct gp_wal_sample *samples;
    size_t nsamples, cap;
    int stop_at; /* nonzero: the samples callback returns 42 on that call */
    int calls;
};

static int on_series(void *ctx, const struct gp_wal_series *s)
{
    struct coll *c = ctx;
    CHECK(c->nlab + s->labels_len <= sizeof c->lab);
    c->series = realloc(c->series, (c->nseries + 1) * sizeof *c->series);
    CHECK(c->series != NULL);
    memcpy(c->lab + c->nlab, s->labels, s->labels_len);
    c->series[c->nseries++] = (struct gp_wal_series){s->id, c->lab + c->nlab, s->labels_len};
    c->nlab += s->labels_len;
    return 0;
}

static int on_samples(void *ctx, const struct gp_wal_sample *s, size_t n)
{
    struct coll *c = ctx;
    CHECK(n > 0);
    if (c->stop_at && ++c->calls == c->stop_at)
        return 42;
    if (c->nsamples + n > c->cap) {
        c->cap = (c->nsamples + n) * 2;
        c->samples = realloc(c->samples, c->cap * sizeof *c->samples);
        CHECK(c->samples != NULL);
    }
    memcpy(c->samples + c->nsamples, s, n * sizeof *s);
    c->nsamples += n;
    return 0;
}

static const struct gp_wal_handler handler = {on_series, on_samples};

static struct coll *coll_new(void)
{
    struct coll *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    return c;
}

static void coll_free(struct coll *c)
{
    free(c->series);
    free(c->samples);
    free(c);
}

/* Checks that c holds exactly batches from..to-1 of the workload. */
static void check_gen(const struct coll *c, int from, int to)
{
    size_t ns = 0, nm = 0;
    for (int i = from; i < to; i++) {
        struct batch b;
        gen(i, &b);
        for (size_t k = 0; k < b.nseries; k++, ns++) {
            CHECK(ns < c->nseries);
            CHECK_INT(c->series[ns].id, b.series[k].id);
            CHECK_INT(c->series[ns].labels_len, b.series[k].labels_len);
            CHECK(memcmp(c->series[ns].labels, b.series[k].labels, b.series[k].labels_len) == 0);
        }
        for (size_t k = 0; k < b.nsamples; k++, nm++) {
            if (nm >= c->nsamples)
                gp_test_fail(__FILE__, __LINE__, "batch %d: only %zu samples replayed", i,
                             c->nsamples);
            CHECK_INT(c->samples[nm].id, b.samples[k].id);
            CHECK_INT(c->samples[nm].t_ms, b.samples[k].t_ms);
            CHECK(c->samples[nm].v_bits == b.samples[k].v_bits);
        }
    }
    CHECK_INT(c->nseries, ns);
    CHECK_INT(c->nsamples, nm);
}

static struct gp_wal *open_wal(const char *dir, uint64_t segment_bytes)
{
    struct gp_wal *w;
    char err[256] = "";
    struct gp_wal_options o = {segment_bytes, 0};
    int rc = gp_wal_open(&w, dir, &o, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "gp_wal_open: %s", err);
    return w;
}

static int replay(const char *dir, uint32_t from, struct coll *c, struct gp_wal_replay_stats *st)
{
    char err[256] = "";
    int rc = gp_wal_replay(dir, from, &handler, c, st, err, sizeof err);
    if (rc != GP_OK && rc != 42 && rc != GP_EPARSE)
        gp_test_fail(__FILE__, __LINE__, "gp_wal_replay: %d %s", rc, err);
    return rc;
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_round_trip(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    CHECK_INT(gp_wal_segment(w), 0);
    append_gen(w, 0, 50);
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, NULL));
    gp_wal_close(w);
    gp_wal_close(NULL);

    struct coll *c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    check_gen(c, 0, 50);
    CHECK_INT(st.segments, 1);
    CHECK_INT(st.records, 50 + 10);
    CHECK_INT(st.series, 10);
    CHECK_INT(st.samples, c->nsamples);
    CHECK_INT(st.torn_bytes, 0);
    CHECK_INT(st.corrupt, 0);
    coll_free(c);

    /* Reopening starts the next segment and keeps the earlier bytes counted. */
    w = open_wal(dir, 0);
    CHECK_INT(gp_wal_segment(w), 1);
    CHECK(exists(seg_file(dir, 1)));
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, NULL));
    append_gen(w, 50, 60);
    gp_wal_close(w);
    c = coll_new();
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    check_gen(c, 0, 60);
    CHECK_INT(st.segments, 2);
    coll_free(c);
}

static void test_special_values(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    const uint64_t bits[] = {
        0x7ff0000000000002ULL, /* Prometheus's stale marker */
        0x7ff8000000000001ULL, /* a quiet NaN with a payload */
        0xfff8000000000000ULL, /* negative NaN */
        gp_f64_bits(-0.0),     gp_f64_bits(INFINITY), gp_f64_bits(-INFINITY),
        gp_f64_bits(0.0),      gp_f64_bits(4.9e-324), 0xffffffffffffffffULL,
    };
    const int64_t ts[] = {INT64_MIN, INT64_MAX, 0, -1, INT64_MIN, 1, INT64_MAX, INT64_MAX, 42};
    enum { N = sizeof bits / sizeof bits[0] };
    struct gp_wal_sample s[N];
    for (size_t i = 0; i < N; i++)
        s[i] = (struct gp_wal_sample){UINT32_MAX - (uint32_t)i, ts[i], bits[i]};
    struct gp_wal_series ser = {UINT32_MAX, (const uint8_t *)"\x01" "a\x01" "b", 4};
    struct gp_wal_pos end;
    CHECK_INT(gp_wal_append(w, &ser, 1, s, N, &end), GP_OK);
    CHECK_INT(gp_wal_sync(w, &end), GP_OK);
    gp_wal_close(w);

    struct coll *c = coll_new();
    CHECK_INT(replay(dir, 0, c, NULL), GP_OK);
    CHECK_INT(c->nseries, 1);
    CHECK_INT(c->series[0].id, UINT32_MAX);
    CHECK_INT(c->nsamples, N);
    for (size_t i = 0; i < N; i++) {
        CHECK_INT(c->samples[i].id, UINT32_MAX - i);
        CHECK_INT(c->samples[i].t_ms, ts[i]);
        if (c->samples[i].v_bits != bits[i])
            gp_test_fail(__FILE__, __LINE__, "sample %zu: %016llx != %016llx", i,
                         (unsigned long long)c->samples[i].v_bits, (unsigned long long)bits[i]);
    }
    coll_free(c);
}

static void test_many_samples_in_one_record(void)
{
    /* More than the decoder's stack batch: several callbacks, one record. */
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    enum { N = 1000 };
    static struct gp_wal_sample s[N];
    uint64_t r = 7;
    int64_t t = -5000;
    for (size_t i = 0; i < N; i++) {
        t += (int64_t)(rng_next(&r) % 100000) - 20000;
        s[i] = (struct gp_wal_sample){(uint32_t)(1 + rng_next(&r) % 100000), t, rng_next(&r)};
    }
    struct gp_wal_pos end;
    CHECK_INT(gp_wal_append(w, NULL, 0, s, N, &end), GP_OK);
    gp_wal_close(w);
    struct coll *c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    CHECK_INT(st.records, 1);
    CHECK_INT(c->nsamples, N);
    for (size_t i = 0; i < N; i++) {
        CHECK_INT(c->samples[i].id, s[i].id);
        CHECK_INT(c->samples[i].t_ms, s[i].t_ms);
        CHECK(c->samples[i].v_bits == s[i].v_bits);
    }
    coll_free(c);
}

/* ---- the decoder -------------------------------------------------------------------- */

static int calls;
static int count_series(void *ctx, const struct gp_wal_series *s)
{
    (void)ctx;
    (void)s;
    calls++;
    return 0;
}
static int count_samples(void *ctx, const struct gp_wal_sample *s, size_t n)
{
    (void)ctx;
    (void)s;
    (void)n;
    calls++;
    return 0;
}
static const struct gp_wal_handler counter = {count_series, count_samples};

static void expect_bad(uint8_t type, const char *p, size_t n, int line)
{
    calls = 0;
    int rc = gp_wal_decode_record(type, (const uint8_t *)p, n, &counter, NULL);
    if (rc != GP_EPARSE || calls != 0)
        gp_test_fail(__FILE__, line, "rc %d, %d handler calls", rc, calls);
}
#define BAD(type, lit) expect_bad(type, lit, sizeof lit - 1, __LINE__)

static void test_decode_rejects(void)
{
    const uint8_t S = GP_WAL_REC_SERIES, M = GP_WAL_REC_SAMPLES;
    BAD(0, "\x01\x01x");
    BAD(3, "\x01\x01x");
    BAD(255, "");
    /* SERIES */
    BAD(S, "");                                   /* empty record */
    BAD(S, "\x00\x01x");                          /* id 0 */
    BAD(S, "\x80\x80\x80\x80\x10\x01x");          /* id 2^32 */
    BAD(S, "\x01\x00");                           /* empty labels */
    BAD(S, "\x01\x02x");                          /* labels past the end */
    BAD(S, "\x01");                               /* no length */
    BAD(S, "\x01\x01x\x02");                      /* a second, truncated */
    BAD(S, "\x01\x01x\x02\x01y\x00\x01z");        /* a bad one after good ones */
    BAD(S, "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01x"); /* length 2^64-1 */
    BAD(S, "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02x"); /* varint overflow */
    BAD(S, "\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01x"); /* 11-byte varint */
    /* SAMPLES */
    BAD(M, "");
    BAD(M, "\x00");                                           /* count 0 */
    BAD(M, "\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00");       /* value 1 byte short */
    BAD(M, "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00");   /* id 0 */
    BAD(M, "\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00");   /* count beyond the bytes */
    BAD(M, "\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"); /* trailing byte */
    BAD(M, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");       /* count 2^64-1 */
    BAD(M, "\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00\x00\x00\x00\x00\x00\x00");
    /* Two samples, the second with id 2^32: nothing delivered at all. */
    BAD(M, "\x02\x01\x02\x00\x00\x00\x00\x00\x00\x00\x00"
           "\x80\x80\x80\x80\x10\x02\x00\x00\x00\x00\x00\x00\x00\x00");

    /* The smallest good ones, for contrast. */
    calls = 0;
    CHECK_INT(gp_wal_decode_record(S, (const uint8_t *)"\x01\x01x", 3, &counter, NULL), GP_OK);
    CHECK_INT(gp_wal_decode_record(M, (const uint8_t *)"\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00",
                                   11, &counter, NULL),
              GP_OK);
    CHECK_INT(calls, 2);
    /* NULL handlers decode and validate all the same. */
    struct gp_wal_handler none = {NULL, NULL};
    CHECK_INT(gp_wal_decode_record(S, (const uint8_t *)"\x01\x01x", 3, &none, NULL), GP_OK);
    CHECK_INT(gp_wal_decode_record(S, (const uint8_t *)"\x00\x01x", 3, NULL, NULL), GP_EPARSE);
}

/* Reads segment file path into its records; returns how many (max 8). */
static int records_of(const char *path, struct gp_seg_file *f, uint8_t *types,
                      const uint8_t **payloads, size_t *lens)
{
    char err[256];
    CHECK_INT(gp_seg_read_file(path, f, err, sizeof err), GP_OK);
    size_t pos = 0;
    int n = 0;
    while (n < 8 && gp_seg_parse(f->data, f->len, &pos, &types[n], &payloads[n], &lens[n]) == 1)
        n++;
    return n;
}

static void test_decode_prefixes_and_flips(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    append_gen(w, 0, 1); /* SERIES + SAMPLES */
    gp_wal_close(w);
    struct gp_seg_file f;
    uint8_t types[8];
    const uint8_t *p[8];
    size_t lens[8];
    CHECK_INT(records_of(seg_file(dir, 0), &f, types, p, lens), 2);
    CHECK_INT(types[0], GP_WAL_REC_SERIES);
    CHECK_INT(types[1], GP_WAL_REC_SAMPLES);
    for (int r = 0; r < 2; r++) {
        calls = 0;
        CHECK_INT(gp_wal_decode_record(types[r], p[r], lens[r], &counter, NULL), GP_OK);
        CHECK_INT(calls, 1);
        /* Every strict prefix of a one-item record is malformed. */
        for (size_t cut = 0; cut < lens[r]; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            CHECK(copy != NULL);
            memcpy(copy, p[r], cut);
            calls = 0;
            CHECK_INT(gp_wal_decode_record(types[r], copy, cut, &counter, NULL), GP_EPARSE);
            CHECK_INT(calls, 0);
            free(copy);
        }
        /* Every bit flip decodes or is refused; neither crashes. */
        uint8_t *copy = malloc(lens[r]);
        CHECK(copy != NULL);
        for (size_t i = 0; i < lens[r] * 8; i++) {
            memcpy(copy, p[r], lens[r]);
            copy[i / 8] ^= (uint8_t)(1u << (i % 8));
            int rc = gp_wal_decode_record(types[r], copy, lens[r], &counter, NULL);
            CHECK(rc == GP_OK || rc == GP_EPARSE);
        }
        free(copy);
    }
    gp_seg_file_free(&f);
}

static void test_append_rejects(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    struct gp_wal_pos end = {0, 0, 0};
    struct gp_wal_series s = {1, (const uint8_t *)"x", 1};
    struct gp_wal_sample m = {1, 0, 0};
    CHECK_INT(gp_wal_append(w, NULL, 0, NULL, 0, &end), GP_EUSAGE);
    struct gp_wal_series s0 = {0, (const uint8_t *)"x", 1};
    CHECK_INT(gp_wal_append(w, &s0, 1, &m, 1, &end), GP_EUSAGE);
    struct gp_wal_series empty = {1, (const uint8_t *)"x", 0};
    CHECK_INT(gp_wal_append(w, &empty, 1, &m, 1, &end), GP_EUSAGE);
    struct gp_wal_sample m0 = {0, 0, 0};
    CHECK_INT(gp_wal_append(w, &s, 1, &m0, 1, &end), GP_EUSAGE);
    struct gp_wal_series huge = {1, (const uint8_t *)"x", (size_t)GP_SEG_MAX_RECORD + 1};
    CHECK_INT(gp_wal_append(w, &huge, 1, &m, 1, &end), GP_ETOOBIG);
    CHECK_INT(gp_wal_append(w, &s, 1, &m, (size_t)GP_SEG_MAX_RECORD, &end), GP_ETOOBIG);
    CHECK_INT(gp_wal_bytes(w), 0);
    /* Nothing written, nothing broken. */
    CHECK_INT(gp_wal_append(w, &s, 1, &m, 1, &end), GP_OK);
    CHECK_INT(gp_wal_sync(w, &end), GP_OK);
    /* A position never written. */
    struct gp_wal_pos future = {end.segment, end.offset + 1, end.epoch};
    CHECK_INT(gp_wal_sync(w, &future), GP_EUSAGE);
    future = (struct gp_wal_pos){end.segment + 1, 1, end.epoch};
    CHECK_INT(gp_wal_sync(w, &future), GP_EUSAGE);
    CHECK_INT(gp_wal_sync(w, &end), GP_OK);
    gp_wal_close(w);
}

/* ---- segments ------------------------------------------------------------------------ */

static void test_rotation(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 512);
    append_gen(w, 0, 300);
    uint32_t last = gp_wal_segment(w);
    CHECK(last >= 5);
    int nfiles;
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, &nfiles));
    CHECK_INT(nfiles, last + 1);
    gp_wal_close(w);
    /* Each segment is whole records, starts a batch, ends one: a SERIES
     * record is always followed by its SAMPLES in the same file. */
    for (uint32_t s = 0; s <= last; s++) {
        struct gp_seg_file f;
        char err[256];
        CHECK_INT(gp_seg_read_file(seg_file(dir, s), &f, err, sizeof err), GP_OK);
        if (s < last)
            CHECK(f.len >= 512 && f.len < 512 + 200);
        size_t pos = 0, n;
        uint8_t type, prev = GP_WAL_REC_SAMPLES;
        const uint8_t *p;
        int rc;
        while ((rc = gp_seg_parse(f.data, f.len, &pos, &type, &p, &n)) == 1) {
            if (prev == GP_WAL_REC_SERIES)
                CHECK_INT(type, GP_WAL_REC_SAMPLES);
            prev = type;
        }
        CHECK_INT(rc, 0);
        CHECK_INT(prev, GP_WAL_REC_SAMPLES);
        gp_seg_file_free(&f);
    }
    struct coll *c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    check_gen(c, 0, 300);
    CHECK_INT(st.segments, last + 1);
    coll_free(c);
}

static void test_cut_and_remove_before(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    append_gen(w, 0, 20);
    uint32_t s1, s2;
    CHECK_INT(gp_wal_cut(w, &s1), GP_OK);
    CHECK_INT(s1, 1);
    CHECK_INT(gp_wal_segment(w), 1);
    append_gen(w, 20, 40);
    CHECK_INT(gp_wal_cut(w, &s2), GP_OK);
    CHECK_INT(s2, 2);
    append_gen(w, 40, 45);
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, NULL));

    struct coll *c = coll_new();
    CHECK_INT(replay(dir, s1, c, NULL), GP_OK);
    check_gen(c, 20, 45);
    coll_free(c);

    CHECK_INT(gp_wal_remove_before(w, s1), GP_OK);
    CHECK(!exists(seg_file(dir, 0)));
    CHECK(exists(seg_file(dir, 1)));
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, NULL));
    CHECK_INT(gp_wal_remove_before(w, s2 + 1), GP_EUSAGE); /* the current one stays */
    CHECK_INT(gp_wal_remove_before(w, s2), GP_OK);
    CHECK(!exists(seg_file(dir, 1)));
    CHECK(exists(seg_file(dir, 2)));
    CHECK_INT(gp_wal_bytes(w), dir_bytes(dir, NULL));
    CHECK_INT(gp_wal_remove_before(w, s2), GP_OK); /* nothing left to remove */
    /* A cut of an empty segment is fine too. */
    uint32_t s3, s4;
    CHECK_INT(gp_wal_cut(w, &s3), GP_OK);
    CHECK_INT(gp_wal_cut(w, &s4), GP_OK);
    CHECK_INT(s4, s3 + 1);
    gp_wal_close(w);

    c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    check_gen(c, 40, 45);
    CHECK_INT(st.segments, 3);
    coll_free(c);
    c = coll_new();
    CHECK_INT(replay(dir, 100, c, &st), GP_OK); /* past the end: nothing */
    CHECK_INT(st.segments, 0);
    CHECK_INT(c->nsamples, 0);
    coll_free(c);
}

static void test_empty_and_foreign(void)
{
    struct coll *c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(sub("absent"), 0, c, &st), GP_OK);
    CHECK_INT(st.segments, 0);
    const char *dir = sub("a/b/wal"); /* parents created */
    gp_test_write_file(gp_test_tmpdir(), "a/b/wal/notes.txt", "x");
    gp_test_write_file(gp_test_tmpdir(), "a/b/wal/000000007.wal", "junk");
    gp_test_write_file(gp_test_tmpdir(), "a/b/wal/7.wal", "junk");
    gp_test_write_file(gp_test_tmpdir(), "a/b/wal/00000007.wal.tmp", "junk");
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    CHECK_INT(st.segments, 0);
    struct gp_wal *w = open_wal(dir, 0);
    CHECK_INT(gp_wal_segment(w), 0);
    gp_wal_close(w);
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    CHECK_INT(st.segments, 1);
    CHECK_INT(st.records, 0);
    coll_free(c);

    char err[256];
    gp_test_write_file(gp_test_tmpdir(), "file", "x");
    CHECK_INT(gp_wal_open(&w, sub("file"), NULL, err, sizeof err), GP_EIO);
    CHECK(w == NULL);
}

/* ---- replay repairs ------------------------------------------------------------------- */

static void test_torn_tail(void)
{
    /* Batch 11 is one SAMPLES record of 4 samples, over 40 bytes: cut it
     * short by 1, 4, 7, ... bytes. */
    for (int drop = 1; drop < 40; drop += 3) {
        char name[32];
        snprintf(name, sizeof name, "wal%d", drop);
        const char *dir = sub(name);
        struct gp_wal *w = open_wal(dir, 0);
        append_gen(w, 0, 11);
        uint64_t before_last = gp_wal_bytes(w);
        append_gen(w, 11, 12);
        uint64_t whole = gp_wal_bytes(w);
        gp_wal_close(w);
        CHECK(whole - before_last > 40);
        CHECK(truncate(seg_file(dir, 0), (off_t)(whole - (uint64_t)drop)) == 0);

        struct coll *c = coll_new();
        struct gp_wal_replay_stats st;
        CHECK_INT(replay(dir, 0, c, &st), GP_OK);
        check_gen(c, 0, 11);
        CHECK_INT(st.torn_bytes, whole - (uint64_t)drop - before_last);
        CHECK_INT(st.corrupt, 0);
        CHECK_INT(size_of(seg_file(dir, 0)), before_last);
        coll_free(c);

        /* The lost batch is written again after the cut, in a new segment. */
        w = open_wal(dir, 0);
        CHECK_INT(gp_wal_segment(w), 1);
        append_gen(w, 11, 14);
        gp_wal_close(w);
        c = coll_new();
        CHECK_INT(replay(dir, 0, c, &st), GP_OK);
        check_gen(c, 0, 14);
        CHECK_INT(st.torn_bytes, 0);
        coll_free(c);
    }
}

static void test_garbage_after_tail(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    append_gen(w, 0, 10);
    uint64_t whole = gp_wal_bytes(w);
    gp_wal_close(w);
    /* Zeroed space, as a filesystem can leave after a crash. */
    int fd = open(seg_file(dir, 0), O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    static const uint8_t zeros[1000];
    CHECK(write(fd, zeros, sizeof zeros) == (ssize_t)sizeof zeros);
    close(fd);
    struct coll *c = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), GP_OK);
    check_gen(c, 0, 10);
    CHECK_INT(st.torn_bytes, 1000);
    CHECK_INT(size_of(seg_file(dir, 0)), whole);
    coll_free(c);
}

/* A flipped byte inside a record in the middle of a middle segment:
 * that record is skipped, every valid record after it (in its segment and
 * in the later ones) is replayed, and the file is left as it was. */
static void test_corrupt_middle_segment(void)
{
    const char *dir = sub("wal");
    const char *ref = sub("ref");
    /* The same workload twice; the damaged record is cut out of the
     * reference log by hand. */
    struct gp_wal *w = open_wal(dir, 256);
    append_gen(w, 0, 100);
    uint32_t last = gp_wal_segment(w);
    gp_wal_close(w);
    w = open_wal(ref, 256);
    append_gen(w, 0, 100);
    gp_wal_close(w);
    CHECK(last >= 5);

    struct gp_seg_file f;
    uint8_t types[8];
    const uint8_t *p[8];
    size_t lens[8];
    int n = records_of(seg_file(dir, 2), &f, types, p, lens);
    CHECK(n >= 4); /* valid records follow the damaged one in its segment */
    size_t rec2 = (size_t)(p[2] - f.data) - GP_SEG_HEADER, mid = (size_t)(p[2] - f.data);
    size_t end2 = mid + lens[2];
    uint64_t seg2 = f.len, total = 0;
    for (size_t pos = 0, k; gp_seg_parse(f.data, f.len, &pos, &types[0], &p[0], &k) == 1;)
        total++;
    /* The reference: segment 2 without record 2. */
    int rfd = open(seg_file(ref, 2), O_WRONLY | O_TRUNC);
    CHECK(rfd >= 0);
    CHECK(write(rfd, f.data, rec2) == (ssize_t)rec2);
    CHECK(write(rfd, f.data + end2, f.len - end2) == (ssize_t)(f.len - end2));
    close(rfd);
    gp_seg_file_free(&f);
    int fd = open(seg_file(dir, 2), O_RDWR);
    CHECK(fd >= 0);
    uint8_t b;
    CHECK(pread(fd, &b, 1, (off_t)mid) == 1);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, (off_t)mid) == 1);
    close(fd);

    for (int round = 0; round < 2; round++) {
        struct coll *want = coll_new(), *got = coll_new();
        struct gp_wal_replay_stats st;
        CHECK_INT(replay(ref, 0, want, &st), GP_OK);
        CHECK_INT(st.corrupt, 0);
        CHECK_INT(replay(dir, 0, got, &st), GP_OK);
        CHECK_INT(st.corrupt, 1);
        CHECK_INT(st.corrupt_records, 1);
        CHECK_INT(st.recovered_records, total - 3);
        CHECK_INT(st.segments, last + 1);
        CHECK_INT(st.torn_bytes, 0);
        CHECK_INT(got->nseries, want->nseries);
        CHECK_INT(got->nsamples, want->nsamples);
        CHECK(got->nsamples > 0);
        for (size_t i = 0; i < got->nsamples; i++) {
            CHECK_INT(got->samples[i].id, want->samples[i].id);
            CHECK_INT(got->samples[i].t_ms, want->samples[i].t_ms);
            CHECK(got->samples[i].v_bits == want->samples[i].v_bits);
        }
        /* Nothing cut or removed: the damage stays visible to the next replay. */
        CHECK_INT(size_of(seg_file(dir, 2)), seg2);
        for (uint32_t s = 3; s <= last; s++)
            CHECK(exists(seg_file(dir, s)));
        coll_free(want);
        coll_free(got);
    }
    w = open_wal(dir, 256);
    CHECK_INT(gp_wal_segment(w), last + 1);
    gp_wal_close(w);
}

/* Damage running to the end of an older segment (no valid record after
 * it there) loses that tail only: the later segments are replayed. */
static void test_corrupt_tail_of_older_segment(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 256);
    append_gen(w, 0, 100);
    uint32_t last = gp_wal_segment(w);
    gp_wal_close(w);
    CHECK(last >= 5);
    uint64_t len = size_of(seg_file(dir, 1));
    int fd = open(seg_file(dir, 1), O_RDWR);
    CHECK(fd >= 0);
    uint8_t b;
    CHECK(pread(fd, &b, 1, (off_t)len - 3) == 1);
    b ^= 0x01;
    CHECK(pwrite(fd, &b, 1, (off_t)len - 3) == 1);
    close(fd);
    struct coll *got = coll_new(), *all = coll_new();
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, got, &st), GP_OK);
    CHECK_INT(st.corrupt_records, 1);
    CHECK_INT(st.segments, last + 1);
    CHECK(exists(seg_file(dir, last)));
    CHECK(got->nsamples > 0);
    /* Only the last record of segment 1 is missing. */
    const char *ref = sub("ref");
    w = open_wal(ref, 256);
    append_gen(w, 0, 100);
    gp_wal_close(w);
    CHECK_INT(replay(ref, 0, all, &st), GP_OK);
    CHECK(got->nsamples < all->nsamples);
    CHECK(all->nsamples - got->nsamples <= 64);
    CHECK_INT(got->samples[got->nsamples - 1].t_ms, all->samples[all->nsamples - 1].t_ms);
    coll_free(got);
    coll_free(all);
}

static void test_hole_and_undecodable(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 256);
    append_gen(w, 0, 60);
    uint32_t last = gp_wal_segment(w);
    gp_wal_close(w);
    CHECK(last >= 3);
    char err[256] = "";
    struct coll *c = coll_new();

    /* A hole refuses the replay and touches nothing. */
    CHECK(unlink(seg_file(dir, 1)) == 0);
    uint64_t bytes = dir_bytes(dir, NULL);
    CHECK_INT(gp_wal_replay(dir, 0, &handler, c, NULL, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "missing");
    CHECK_INT(c->nsamples, 0);
    CHECK_INT(dir_bytes(dir, NULL), bytes);
    /* From after the hole it is fine. */
    CHECK_INT(replay(dir, 2, c, NULL), GP_OK);

    /* A record with a good checksum that does not decode: refused, not cut. */
    const char *odd = sub("odd");
    CHECK(mkdir(odd, 0755) == 0);
    uint8_t rec[GP_SEG_HEADER + 3];
    gp_seg_header(rec, 9, "abc", 3);
    memcpy(rec + GP_SEG_HEADER, "abc", 3);
    int fd = open(seg_file(odd, 0), O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, rec, sizeof rec) == (ssize_t)sizeof rec);
    close(fd);
    CHECK_INT(gp_wal_replay(odd, 0, &handler, c, NULL, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "type 9 at offset 0 of segment 00000000");
    CHECK_INT(size_of(seg_file(odd, 0)), sizeof rec);
    coll_free(c);
}

static void test_handler_stops_replay(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    append_gen(w, 0, 10);
    uint64_t whole = gp_wal_bytes(w);
    gp_wal_close(w);
    CHECK(truncate(seg_file(dir, 0), (off_t)whole - 3) == 0);
    struct coll *c = coll_new();
    c->stop_at = 3;
    struct gp_wal_replay_stats st;
    CHECK_INT(replay(dir, 0, c, &st), 42);
    check_gen(c, 0, 2);
    /* Stopped before the torn tail: nothing repaired. */
    CHECK_INT(size_of(seg_file(dir, 0)), whole - 3);
    coll_free(c);
}

/* ---- group commit ----------------------------------------------------------------------- */

/* The fdatasync hook: records, per inode, how far each successful
 * fdatasync reached (the size when it started). */
enum { MAXINO = 512 };
static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ino_t ino;
    uint64_t synced;
} marks[MAXINO];
static int nmarks;
static atomic_int hook_calls, hook_fail;

static int observed_fdatasync(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    atomic_fetch_add(&hook_calls, 1);
    if (atomic_load(&hook_fail)) {
        errno = EIO;
        return -1;
    }
    int r = fdatasync(fd);
    if (r != 0)
        return r;
    pthread_mutex_lock(&hook_mu);
    int i = 0;
    while (i < nmarks && marks[i].ino != st.st_ino)
        i++;
    if (i == nmarks && nmarks < MAXINO)
        marks[nmarks++].ino = st.st_ino;
    if (i < MAXINO && marks[i].synced < (uint64_t)st.st_size)
        marks[i].synced = (uint64_t)st.st_size;
    pthread_mutex_unlock(&hook_mu);
    return 0;
}

static uint64_t durable(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    uint64_t v = 0;
    pthread_mutex_lock(&hook_mu);
    for (int i = 0; i < nmarks; i++)
        if (marks[i].ino == st.st_ino)
            v = marks[i].synced;
    pthread_mutex_unlock(&hook_mu);
    return v;
}

enum { NBATCH = 3000, NSYNCERS = 8 };
static struct {
    struct gp_wal *w;
    const char *dir;
    struct gp_wal_pos pos[NBATCH];
    int published;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int next;
} gc;

static void *appender(void *arg)
{
    (void)arg;
    for (int i = 0; i < NBATCH; i++) {
        struct batch b;
        struct gp_wal_pos end;
        gen(i, &b);
        CHECK_INT(gp_wal_append(gc.w, b.series, b.nseries, b.samples, b.nsamples, &end), GP_OK);
        pthread_mutex_lock(&gc.mu);
        gc.pos[i] = end;
        gc.published = i + 1;
        pthread_cond_broadcast(&gc.cv);
        pthread_mutex_unlock(&gc.mu);
        if (i % 7 == 0)
            sched_yield();
    }
    return NULL;
}

static void *syncer(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&gc.next, 1);
        if (i >= NBATCH)
            return NULL;
        pthread_mutex_lock(&gc.mu);
        while (gc.published <= i)
            pthread_cond_wait(&gc.cv, &gc.mu);
        struct gp_wal_pos p = gc.pos[i];
        pthread_mutex_unlock(&gc.mu);
        CHECK_INT(gp_wal_sync(gc.w, &p), GP_OK);
        /* Durable: an fdatasync of that very file, started after the batch
         * was written, has returned. */
        char path[600];
        snprintf(path, sizeof path, "%s/%08u.wal", gc.dir, p.segment);
        uint64_t d = durable(path);
        if (d < p.offset)
            gp_test_fail(__FILE__, __LINE__, "batch %d at %u:%llu synced only to %llu", i,
                         p.segment, (unsigned long long)p.offset, (unsigned long long)d);
    }
}

static void test_concurrent_group_commit(void)
{
    gp_seg_sys.fdatasync = observed_fdatasync;
    gc.dir = sub("wal");
    gc.w = open_wal(gc.dir, 16384);
    pthread_mutex_init(&gc.mu, NULL);
    pthread_cond_init(&gc.cv, NULL);
    pthread_t a, s[NSYNCERS];
    CHECK(pthread_create(&a, NULL, appender, NULL) == 0);
    for (int i = 0; i < NSYNCERS; i++)
        CHECK(pthread_create(&s[i], NULL, syncer, NULL) == 0);
    CHECK(pthread_join(a, NULL) == 0);
    for (int i = 0; i < NSYNCERS; i++)
        CHECK(pthread_join(s[i], NULL) == 0);
    uint64_t syncs = gp_wal_syncs(gc.w);
    CHECK(gp_wal_segment(gc.w) >= 3); /* rotations happened meanwhile */
    CHECK(syncs > 0);
    CHECK(syncs < NBATCH); /* batched: far fewer fdatasyncs than sync calls */
    /* Every sync call whose position was already durable returned without one. */
    CHECK(atomic_load(&hook_calls) >= (int)syncs);
    gp_wal_close(gc.w);
    struct coll *c = coll_new();
    CHECK_INT(replay(gc.dir, 0, c, NULL), GP_OK);
    check_gen(c, 0, NBATCH);
    coll_free(c);
    printf("# %d sync calls, %llu fdatasyncs\n", NBATCH, (unsigned long long)syncs);
}

/* An fdatasync that waits until the test lets it go. */
static atomic_int gate_closed, in_sync;
static int gated_fdatasync(int fd)
{
    atomic_store(&in_sync, 1);
    while (atomic_load(&gate_closed)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return fdatasync(fd);
}

static struct gp_wal *gate_wal;
static struct gp_wal_pos gate_pos;
static void *gated_syncer(void *arg)
{
    (void)arg;
    CHECK_INT(gp_wal_sync(gate_wal, &gate_pos), GP_OK);
    return NULL;
}

static void test_durable_position_returns_at_once(void)
{
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    struct batch b;
    struct gp_wal_pos p0, p1, p2;
    gen(0, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p0), GP_OK);
    uint32_t seg;
    CHECK_INT(gp_wal_cut(w, &seg), GP_OK); /* syncs segment 0 */
    gen(1, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p1), GP_OK);
    CHECK_INT(gp_wal_sync(w, &p1), GP_OK);
    gen(2, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p2), GP_OK);
    uint64_t syncs = gp_wal_syncs(w);

    /* Another thread's fdatasync for p2 hangs; p0 (an earlier segment)
     * and p1 (synced) must not wait for it: a hang here times the test out. */
    atomic_store(&gate_closed, 1);
    gp_seg_sys.fdatasync = gated_fdatasync;
    gate_wal = w;
    gate_pos = p2;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, gated_syncer, NULL) == 0);
    while (!atomic_load(&in_sync))
        sched_yield();
    CHECK_INT(gp_wal_sync(w, &p0), GP_OK);
    CHECK_INT(gp_wal_sync(w, &p1), GP_OK);
    /* Appends go on while it runs. */
    struct gp_wal_pos p3;
    gen(3, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p3), GP_OK);
    atomic_store(&gate_closed, 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_INT(gp_wal_syncs(w), syncs + 1);
    CHECK_INT(gp_wal_sync(w, &p2), GP_OK);
    CHECK_INT(gp_wal_syncs(w), syncs + 1);
    CHECK_INT(gp_wal_sync(w, &p3), GP_OK);
    CHECK_INT(gp_wal_syncs(w), syncs + 2);
    gp_wal_close(w);
}

static void test_sync_failure_breaks_wal(void)
{
    gp_seg_sys.fdatasync = observed_fdatasync;
    const char *dir = sub("wal");
    struct gp_wal *w = open_wal(dir, 0);
    struct batch b;
    struct gp_wal_pos p1, p2;
    gen(0, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p1), GP_OK);
    CHECK_INT(gp_wal_sync(w, &p1), GP_OK);
    gen(1, &b);
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p2), GP_OK);
    atomic_store(&hook_fail, 1);
    CHECK_INT(gp_wal_sync(w, &p2), GP_EIO);
    atomic_store(&hook_fail, 0);
    CHECK_INT(gp_wal_sync(w, &p2), GP_EIO); /* never "succeeds" later */
    CHECK_INT(gp_wal_sync(w, &p1), GP_OK);  /* that one was durable before */
    CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p2), GP_EIO);
    uint32_t seg;
    CHECK_INT(gp_wal_cut(w, &seg), GP_EIO);
    gp_wal_close(w);
}

static void test_no_sync_option(void)
{
    gp_seg_sys.fdatasync = observed_fdatasync;
    const char *dir = sub("wal");
    struct gp_wal *w;
    char err[256];
    struct gp_wal_options o = {256, 1};
    CHECK_INT(gp_wal_open(&w, dir, &o, err, sizeof err), GP_OK);
    for (int i = 0; i < 50; i++) {
        struct batch b;
        struct gp_wal_pos p;
        gen(i, &b);
        CHECK_INT(gp_wal_append(w, b.series, b.nseries, b.samples, b.nsamples, &p), GP_OK);
        CHECK_INT(gp_wal_sync(w, &p), GP_OK);
    }
    CHECK(gp_wal_segment(w) > 0);
    CHECK_INT(gp_wal_syncs(w), 0);
    gp_wal_close(w);
    CHECK_INT(atomic_load(&hook_calls), 0);
    struct coll *c = coll_new();
    CHECK_INT(replay(dir, 0, c, NULL), GP_OK);
    check_gen(c, 0, 50);
    coll_free(c);
}

/* ---- a real crash ------------------------------------------------------------------------- */

/* Appends and syncs batches from `start` on, telling the parent each
 * acknowledged one, until killed. Batch i is sample (1, t = i, v = ~i). */
static void crash_child(const char *dir, int fd, int64_t start)
{
    struct gp_wal *w;
    char err[256];
    struct gp_wal_options o = {8192, 0};
    if (gp_wal_open(&w, dir, &o, err, sizeof err) != GP_OK)
        _exit(3);
    for (int64_t i = start;; i++) {
        struct gp_wal_series s = {1, (const uint8_t *)"\x01" "a\x01" "b", 4};
        struct gp_wal_sample m = {1, i, ~(uint64_t)i};
        struct gp_wal_pos end;
        /* A series record now and then, so batches of both shapes tear. */
        if (gp_wal_append(w, &s, i % 3 == 0, &m, 1, &end) != GP_OK ||
            gp_wal_sync(w, &end) != GP_OK)
            _exit(4);
        if (write(fd, &i, sizeof i) != (ssize_t)sizeof i)
            _exit(5);
    }
}

struct crash_coll {
    int64_t next; /* the batch expected next */
    int bad;
};

static int crash_samples(void *ctx, const struct gp_wal_sample *s, size_t n)
{
    struct crash_coll *c = ctx;
    for (size_t i = 0; i < n; i++) {
        if (s[i].id != 1 || s[i].t_ms != c->next || s[i].v_bits != ~(uint64_t)c->next)
            c->bad = 1;
        c->next++;
    }
    return 0;
}

static void test_sigkill_keeps_acknowledged(void)
{
    const char *dir = sub("wal");
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
    int64_t total = 0;
    for (int round = 0; round < 8; round++) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            crash_child(dir, fds[1], total);
        }
        close(fds[1]);
        /* Kill it at a random moment, within its first 10..300 ms. */
        struct timespec ts = {0, (long)(10 + rng_next(&seed) % 290) * 1000000L};
        nanosleep(&ts, NULL);
        CHECK(kill(pid, SIGKILL) == 0);
        int64_t acked = total - 1, v;
        ssize_t r;
        while ((r = read(fds[0], &v, sizeof v)) == (ssize_t)sizeof v) {
            CHECK_INT(v, acked + 1);
            acked = v;
        }
        CHECK(r == 0);
        close(fds[0]);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        /* Every batch acknowledged is there once, in order; at most the
         * batches written but not yet reported follow. */
        struct crash_coll c = {0, 0};
        struct gp_wal_handler h = {NULL, crash_samples};
        char err[256] = "";
        struct gp_wal_replay_stats st;
        CHECK_INT(gp_wal_replay(dir, 0, &h, &c, &st, err, sizeof err), GP_OK);
        CHECK_INT(c.bad, 0);
        CHECK_INT(st.corrupt, 0);
        if (c.next <= acked)
            gp_test_fail(__FILE__, __LINE__, "round %d: acknowledged %lld, replayed %lld", round,
                         (long long)acked + 1, (long long)c.next);
        CHECK(c.next <= acked + 2);
        printf("# round %d: %lld acknowledged, %lld replayed, %u segments\n", round,
               (long long)(acked + 1), (long long)c.next, st.segments);
        total = c.next;
    }
    CHECK(total > 8);
}

const struct gp_test gp_tests_wal[] = {
    {"round_trip", test_round_trip},
    {"special_values", test_special_values},
    {"many_samples_in_one_record", test_many_samples_in_one_record},
    {"decode_rejects", test_decode_rejects},
    {"decode_prefixes_and_flips", test_decode_prefixes_and_flips},
    {"append_rejects", test_append_rejects},
    {"rotation", test_rotation},
    {"cut_and_remove_before", test_cut_and_remove_before},
    {"empty_and_foreign", test_empty_and_foreign},
    {"torn_tail", test_torn_tail},
    {"garbage_after_tail", test_garbage_after_tail},
    {"corrupt_middle_segment", test_corrupt_middle_segment},
    {"corrupt_tail_of_older_segment", test_corrupt_tail_of_older_segment},
    {"hole_and_undecodable", test_hole_and_undecodable},
    {"handler_stops_replay", test_handler_stops_replay},
    {"concurrent_group_commit", test_concurrent_group_commit},
    {"durable_position_returns_at_once", test_durable_position_returns_at_once},
    {"sync_failure_breaks_wal", test_sync_failure_breaks_wal},
    {"no_sync_option", test_no_sync_option},
    {"sigkill_keeps_acknowledged", test_sigkill_keeps_acknowledged},
    {0},
};
