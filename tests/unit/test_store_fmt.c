/*
 * test_store_fmt.c - the store's file formats without a store: block and
 * rollup containers (round trip, every truncation, flipped bits, lying
 * indexes), rollup payloads, chunk records and head snapshots.
 */
#include "lib/bits.h"
#include "lib/buf.h"
#include "lib/crc32c.h"
#include "lib/err.h"
#include "lib/varint.h"
#include "store/segment.h"
#include "store/store_fmt.h"
#include "test.h"
#include "test_rng.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a whole file; caller frees. */
static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    uint8_t *p = malloc((size_t)st.st_size + 1);
    CHECK(p);
    CHECK(read(fd, p, (size_t)st.st_size) == st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

/* A block of 3 series (series 2 with two chunks) written and read back,
 * in the given container version (0: the writer's choice). */
static uint8_t *make_block_v(size_t *len, uint32_t version)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/b.blk", gp_test_tmpdir());
    struct gp_st_bwriter w;
    if (version)
        CHECK_INT(gp_st_bwriter_open_version(&w, path, GP_ST_BF_BLOCK, 0, 599999, version), GP_OK);
    else
        CHECK_INT(gp_st_bwriter_open(&w, path, GP_ST_BF_BLOCK, 0, 599999), GP_OK);
    for (uint32_t id = 1; id <= 3; id++) {
        for (int part = 0; part < (id == 2 ? 2 : 1); part++) {
            struct gp_chunk c;
            gp_chunk_init(&c, 4096, 200);
            int64_t base = part * 300000;
            for (int i = 0; i < 100; i++)
                CHECK_INT(gp_chunk_append(&c, base + i * 1000, id * 10.0 + i % 7), GP_OK);
            size_t l;
            const uint8_t *b = gp_chunk_bytes(&c, &l);
            CHECK_INT(gp_st_bwriter_add(&w, id, c.count, c.t_first, c.t_last, b, l), GP_OK);
            /* Out of order is refused. */
            CHECK_INT(gp_st_bwriter_add(&w, id, c.count, c.t_first, c.t_last, b, l), GP_EUSAGE);
            gp_chunk_free(&c);
        }
    }
    uint64_t size;
    CHECK_INT(gp_st_bwriter_finish(&w, &size), GP_OK);
    uint8_t *p = slurp(path, len);
    CHECK_INT(*len, size);
    return p;
}

static void block_round_trip(uint32_t version)
{
    size_t len;
    uint8_t *p = make_block_v(&len, version);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(p, len, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, version ? version : GP_ST_BLOCK_VERSION);
    CHECK_INT(bf.esize, bf.version >= 3 ? GP_ST_BF_ENTRY3 : GP_ST_BF_ENTRY);
    CHECK_INT(len, gp_get_le64(p + len - GP_ST_BF_FOOTER) + 4 * bf.esize + GP_ST_BF_FOOTER);
    CHECK_INT(bf.n, 4);
    CHECK_INT(bf.kind, GP_ST_BF_BLOCK);
    CHECK_INT(bf.maxt, 599999);
    CHECK_INT(gp_st_bfile_lower(&bf, 2), 1);
    CHECK_INT(gp_st_bfile_lower(&bf, 3), 3);
    CHECK_INT(gp_st_bfile_lower(&bf, 9), 4);
    struct gp_st_bentry e;
    gp_st_bfile_entry(&bf, 2, &e);
    CHECK_INT(e.id, 2);
    CHECK_INT(e.t_first, 300000);
    CHECK_INT(e.count, 100);
    const uint8_t *pl;
    CHECK_INT(gp_st_bfile_payload(&bf, &e, &pl), GP_OK);
    struct gp_chunk_iter it;
    CHECK_INT(gp_chunk_iter_init(&it, pl, e.len), GP_OK);
    int64_t t;
    double v;
    CHECK_INT(gp_chunk_iter_next(&it, &t, &v), 1);
    CHECK_INT(t, 300000);
    CHECK_DBL(v, 20, 0);
    /* Every entry as written: payloads back to back. */
    uint64_t off = GP_ST_BF_HEADER;
    for (uint32_t i = 0; i < 4; i++) {
        gp_st_bfile_entry(&bf, i, &e);
        CHECK_INT(e.id, i < 2 ? i + 1 : i);
        CHECK_INT(e.t_first, i == 2 ? 300000 : 0);
        CHECK_INT(e.t_last, e.t_first + 99000);
        CHECK_INT(e.count, 100);
        CHECK_INT(e.off, off);
        CHECK_INT(gp_st_bfile_payload(&bf, &e, &pl), GP_OK);
        off += e.len;
    }
    CHECK_INT(off, gp_get_le64(p + len - GP_ST_BF_FOOTER));
    /* A flipped payload byte is caught by the entry's CRC. */
    gp_st_bfile_entry(&bf, 2, &e);
    p[e.off + 3] ^= 1;
    CHECK_INT(gp_st_bfile_payload(&bf, &e, &pl), GP_EPARSE);
    free(p);
}

/* Version 3 (28-byte index entries) as written now, and version 2 (40
 * bytes) as older gpulse wrote, read alike. */
static void test_block_round_trip(void)
{
    block_round_trip(0);
    block_round_trip(3);
    block_round_trip(2);
}

static void block_damage_rejected(uint32_t version)
{
    size_t len;
    uint8_t *p = make_block_v(&len, version);
    struct gp_st_bfile bf;
    char err[200];
    /* Every truncation. */
    for (size_t n = 0; n < len; n++)
        CHECK_INT(gp_st_bfile_parse(p, n, &bf, err, sizeof err), GP_EPARSE);
    /* Every flipped bit outside the payloads (header, index, footer). */
    size_t ioff = len - GP_ST_BF_FOOTER - 4 * (version >= 3 ? GP_ST_BF_ENTRY3 : GP_ST_BF_ENTRY);
    for (size_t i = 0; i < len; i++) {
        if (i >= GP_ST_BF_HEADER && i < ioff)
            continue;
        for (int bit = 0; bit < 8; bit++) {
            p[i] ^= (uint8_t)(1u << bit);
            CHECK_INT(gp_st_bfile_parse(p, len, &bf, err, sizeof err), GP_EPARSE);
            p[i] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK_INT(gp_st_bfile_parse(p, len, &bf, err, sizeof err), GP_OK);
    free(p);
    CHECK_INT(gp_st_bfile_parse((const uint8_t *)"", 0, &bf, err, sizeof err), GP_EPARSE);
}

static void test_block_damage_rejected(void)
{
    block_damage_rejected(3);
    block_damage_rejected(2);
}

/* What version 3's entries can and cannot hold: times as u32 offsets
 * from mint (a window of 2^32 ms or more is written as version 2), at
 * most 65535 samples a chunk, nothing outside the window. */
static void test_block_v3_limits(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/l.blk", gp_test_tmpdir());
    struct gp_st_bwriter w;
    const uint8_t pl[3] = {1, 2, 3};
    int64_t mint = -5000, maxt = mint + (int64_t)UINT32_MAX;
    CHECK_INT(gp_st_bwriter_open_version(&w, path, GP_ST_BF_BLOCK, mint, maxt + 1, 3), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_open_version(&w, path, GP_ST_BF_BLOCK, mint, maxt, 4), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_open(&w, path, GP_ST_BF_BLOCK, mint, maxt), GP_OK);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 1, mint - 1, mint, pl, 3), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 1, maxt, maxt + 1, pl, 3), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 65536, mint, maxt, pl, 3), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 0, mint, maxt, pl, 3), GP_EUSAGE);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 65535, mint, mint, pl, 3), GP_OK);
    CHECK_INT(gp_st_bwriter_add(&w, 2, 7, -1, maxt, pl, 3), GP_OK);
    uint64_t size;
    CHECK_INT(gp_st_bwriter_finish(&w, &size), GP_OK);
    size_t len;
    uint8_t *p = slurp(path, &len);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_st_bfile_parse(p, len, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, 3);
    struct gp_st_bentry e;
    gp_st_bfile_entry(&bf, 0, &e);
    CHECK_INT(e.count, 65535);
    CHECK_INT(e.t_first, mint);
    CHECK_INT(e.t_last, mint);
    gp_st_bfile_entry(&bf, 1, &e);
    CHECK_INT(e.count, 7);
    CHECK_INT(e.t_first, -1);
    CHECK_INT(e.t_last, maxt);
    free(p);
    /* A wider window: version 2, the same entries. */
    CHECK_INT(gp_st_bwriter_open(&w, path, GP_ST_BF_BLOCK, INT64_MIN, INT64_MAX), GP_OK);
    CHECK_INT(gp_st_bwriter_add(&w, 1, 70000, INT64_MIN, INT64_MAX, pl, 3), GP_OK);
    CHECK_INT(gp_st_bwriter_finish(&w, &size), GP_OK);
    p = slurp(path, &len);
    CHECK_INT(gp_st_bfile_parse(p, len, &bf, err, sizeof err), GP_OK);
    CHECK_INT(bf.version, 2);
    gp_st_bfile_entry(&bf, 0, &e);
    CHECK_INT(e.count, 70000);
    CHECK_INT(e.t_first, INT64_MIN);
    CHECK_INT(e.t_last, INT64_MAX);
    free(p);
}

static void test_rollup_payload_round_trip(void)
{
    struct gp_st_rollup_enc e;
    gp_st_rollup_enc_init(&e);
    struct gp_rollup in[50];
    for (int i = 0; i < 50; i++) {
        in[i] = (struct gp_rollup){
            .t = 1700000040000LL + (i + i / 10) * 60000LL, /* a gap every ten minutes */
            .min = i * 0.5,
            .max = i == 7 ? INFINITY : 100 - i,
            .sum = i == 9 ? gp_bits_f64(GP_STALE_NAN_BITS) : i * 37.25,
            .count = (uint64_t)(i % 3 == 0 ? 60 : 1 + i * 1000),
        };
        CHECK_INT(gp_st_rollup_enc_add(&e, &in[i]), GP_OK);
    }
    struct gp_buf out;
    gp_buf_init(&out, 0);
    CHECK_INT(gp_st_rollup_enc_finish(&e, 0, 2, &out), GP_OK);
    printf("rollups: %zu bytes for 50 minutes\n", out.len);
    struct gp_rollups r = {0};
    CHECK_INT(gp_st_rollup_decode(NULL, (const uint8_t *)out.data, out.len, INT64_MIN, INT64_MAX, &r),
              GP_OK);
    CHECK_INT(r.n, 50);
    for (int i = 0; i < 50; i++) {
        CHECK_INT(r.r[i].t, in[i].t);
        CHECK_INT(gp_f64_bits(r.r[i].min), gp_f64_bits(in[i].min));
        CHECK_INT(gp_f64_bits(r.r[i].max), gp_f64_bits(in[i].max));
        CHECK_INT(gp_f64_bits(r.r[i].sum), gp_f64_bits(in[i].sum));
        CHECK_INT(r.r[i].count, in[i].count);
    }
    /* A range picks overlapping minutes only. */
    r.n = 0;
    CHECK_INT(gp_st_rollup_decode(NULL, (const uint8_t *)out.data, out.len, in[3].t + 59999, in[5].t, &r),
              GP_OK);
    CHECK_INT(r.n, 3);
    CHECK_INT(r.r[0].t, in[3].t);
    /* Every truncation and some garbage are refused. */
    for (size_t n = 0; n < out.len; n++) {
        r.n = 0;
        CHECK_INT(gp_st_rollup_decode(NULL, (const uint8_t *)out.data, n, INT64_MIN, INT64_MAX, &r),
                  GP_EPARSE);
    }
    uint8_t junk[64];
    memset(junk, 0xff, sizeof junk);
    CHECK_INT(gp_st_rollup_decode(NULL, junk, sizeof junk, INT64_MIN, INT64_MAX, &r), GP_EPARSE);
    gp_rollups_free(&r);
    gp_buf_free(&out);
    gp_st_rollup_enc_free(&e);
}

/* In a rollup file of version 3 the minutes are a time record of the
 * file that the payload's four chunks name (as block chunks do), and a
 * constant column (the count, mostly) holds no stream: the same minutes
 * back, inside the file and nowhere else; every cut refused. */
static void test_rollup_payload_shared_times(void)
{
    struct gp_st_rollup_enc e;
    gp_st_rollup_enc_init(&e);
    enum { MINUTES = 120 };
    struct gp_rollup in[MINUTES];
    for (int i = 0; i < MINUTES; i++) {
        in[i] = (struct gp_rollup){
            .t = 1700000040000LL + (i + i / 50) * 60000LL, /* two gaps */
            .min = 300 + i % 7 * 0.125,
            .max = i == 9 ? NAN : 400 + i % 5,
            .sum = 21000 + i * 0.5,
            .count = 60,
        };
        CHECK_INT(gp_st_rollup_enc_add(&e, &in[i]), GP_OK);
    }
    int64_t t[MINUTES];
    for (int i = 0; i < MINUTES; i++)
        t[i] = in[i].t;
    struct gp_buf f, alone;
    gp_buf_init(&f, 0);
    gp_buf_init(&alone, 0);
    uint8_t hdr[GP_ST_BF_HEADER] = {0};
    gp_buf_append(&f, hdr, sizeof hdr);
    CHECK_INT(gp_st_btimes_encode(t, MINUTES, &e.sc, &f), GP_OK);
    size_t at = f.len;
    CHECK_INT(gp_st_rollup_enc_finish(&e, GP_ST_BF_HEADER, 3, &f), GP_OK);
    CHECK_INT(gp_st_rollup_enc_finish(&e, 0, 2, &alone), GP_OK);
    printf("rollups: %zu bytes for %d minutes (time record %zu), %zu with the times in each column\n",
           f.len - at, MINUTES, at - GP_ST_BF_HEADER, alone.len);
    CHECK(f.len - at + 40 < alone.len);
    struct gp_st_bfile bf = {.data = (const uint8_t *)f.data, .len = f.len};
    const uint8_t *p = bf.data + at;
    size_t len = f.len - at;
    struct gp_rollups got = {0};
    CHECK_INT(gp_st_rollup_decode(&bf, p, len, INT64_MIN, INT64_MAX, &got), GP_OK);
    CHECK_INT(got.n, MINUTES);
    for (int i = 0; i < MINUTES; i++) {
        CHECK_INT(got.r[i].t, in[i].t);
        CHECK_INT(gp_f64_bits(got.r[i].min), gp_f64_bits(in[i].min));
        CHECK_INT(gp_f64_bits(got.r[i].max), gp_f64_bits(in[i].max));
        CHECK_INT(gp_f64_bits(got.r[i].sum), gp_f64_bits(in[i].sum));
        CHECK_INT(got.r[i].count, 60);
    }
    /* the count column: encoding 2, no stream */
    const uint8_t *q = p, *end = p + len;
    uint64_t u, cl;
    CHECK(gp_uvarint_get(&q, end, &u) == 0 && u == MINUTES);
    for (int c = 0; c < 4; c++) {
        CHECK(gp_uvarint_get(&q, end, &cl) == 0 && cl <= (uint64_t)(end - q));
        struct gp_st_bchunk_info ci;
        CHECK_INT(gp_st_bchunk_info(q, (size_t)cl, &ci), GP_OK);
        CHECK_INT(ci.enc, 2);
        if (c == 3)
            CHECK_INT(ci.mode, 2);
        q += cl;
    }
    /* a window, as the reader asks */
    got.n = 0;
    CHECK_INT(gp_st_rollup_decode(&bf, p, len, in[10].t, in[12].t + 1, &got), GP_OK);
    CHECK_INT(got.n, 3);
    /* nowhere else: without its file, with its record damaged, cut short */
    got.n = 0;
    CHECK_INT(gp_st_rollup_decode(NULL, p, len, INT64_MIN, INT64_MAX, &got), GP_EPARSE);
    for (size_t n = 0; n < len; n++) {
        got.n = 0;
        CHECK_INT(gp_st_rollup_decode(&bf, p, n, INT64_MIN, INT64_MAX, &got), GP_EPARSE);
    }
    f.data[GP_ST_BF_HEADER + 5] ^= 8;
    got.n = 0;
    CHECK_INT(gp_st_rollup_decode(&bf, p, len, INT64_MIN, INT64_MAX, &got), GP_EPARSE);
    gp_rollups_free(&got);
    gp_buf_free(&f);
    gp_buf_free(&alone);
    gp_st_rollup_enc_free(&e);
}

/* What the payload's four chunks (min, max, sum, count) hold. */
static void rollup_columns(const struct gp_buf *out, struct gp_st_bchunk_info in[4])
{
    const uint8_t *p = (const uint8_t *)out->data, *end = p + out->len;
    uint64_t n, len;
    CHECK(gp_uvarint_get(&p, end, &n) == 0);
    for (int i = 0; i < 4; i++) {
        CHECK(gp_uvarint_get(&p, end, &len) == 0 && len <= (uint64_t)(end - p));
        CHECK_INT(gp_st_bchunk_info(p, (size_t)len, &in[i]), GP_OK);
        p += len;
    }
    CHECK(p == end);
}

/* A minute's sum of 1 s power readings in mW as W (312.457): the float
 * sum lands a few ulps off the decimal it stands for, which packed as no
 * decimal (the sum column fell back to Gorilla). Written, it is the
 * exact decimal sum, bit for bit what the integers in mW give, and the
 * column packs. */
static void test_rollup_sum_decimal(void)
{
    struct gp_test_rng rng = {19};
    struct gp_st_rollup_enc e;
    gp_st_rollup_enc_init(&e);
    enum { MINUTES = 120 };
    double exact[MINUTES];
    int off = 0;
    for (int i = 0; i < MINUTES; i++) {
        struct gp_rollup r = {.t = 1700000040000LL + i * 60000LL};
        int64_t mw = 0;
        for (int k = 0; k < 60; k++) {
            int64_t x = gp_test_rnd_in(&rng, 250000, 700000);
            gp_st_rollup_fold(&r, (double)x / 1000);
            mw += x;
        }
        exact[i] = (double)mw / 1000;
        off += gp_f64_bits(r.sum) != gp_f64_bits(exact[i]);
        CHECK_INT(gp_st_rollup_enc_add(&e, &r), GP_OK);
    }
    CHECK(off > MINUTES / 4); /* the float sums are off: what this test is about */
    struct gp_buf out;
    gp_buf_init(&out, 0);
    CHECK_INT(gp_st_rollup_enc_finish(&e, 0, 2, &out), GP_OK);
    struct gp_st_bchunk_info col[4];
    rollup_columns(&out, col);
    CHECK_INT(col[2].enc, 1);
    CHECK_INT(col[2].e, 3);
    CHECK_INT(col[2].nexc, 0);
    printf("rollups: %zu bytes for %d minutes of mW readings, sum %zu bytes\n", out.len, MINUTES,
           (size_t)(col[2].head_bytes + (col[2].time_bits + col[2].value_bits + 7) / 8));
    struct gp_rollups got = {0};
    CHECK_INT(gp_st_rollup_decode(NULL, (const uint8_t *)out.data, out.len, INT64_MIN, INT64_MAX, &got),
              GP_OK);
    CHECK_INT(got.n, MINUTES);
    for (int i = 0; i < MINUTES; i++)
        CHECK_INT(gp_f64_bits(got.r[i].sum), gp_f64_bits(exact[i]));
    gp_rollups_free(&got);
    gp_buf_free(&out);
    gp_st_rollup_enc_free(&e);
}

/* What the snap moves and what it leaves: never more than max_ulps. */
static void test_decimal_snap(void)
{
    double naive = 0.1 + 0.2;
    CHECK(naive != 0.3);
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(naive, 2)), gp_f64_bits(0.3));
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(-naive, 2)), gp_f64_bits(-0.3));
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(naive, 0)), gp_f64_bits(naive));
    /* decimals stay as they are, the coarsest digits first */
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(18747.123, 60)), gp_f64_bits(18747.123));
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(5e20, 60)), gp_f64_bits(5e20));
    /* no decimal of 15 digits near: unchanged */
    double third = 1.0 / 3 * 1e-3;
    CHECK_INT(gp_f64_bits(gp_st_decimal_snap(third, 4)), gp_f64_bits(third));
    double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, gp_bits_f64(GP_STALE_NAN_BITS),
                         4.9e-324, 1e300};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        CHECK_INT(gp_f64_bits(gp_st_decimal_snap(specials[i], 64)), gp_f64_bits(specials[i]));
    /* random doubles: moved by at most max_ulps, to a value of the same sign */
    struct gp_test_rng rng = {7};
    for (int i = 0; i < 100000; i++) {
        double v = ldexp((double)(gp_test_rnd(&rng) >> 11), (int)gp_test_rnd_in(&rng, -80, 20));
        if (i & 1)
            v = -v;
        unsigned k = (unsigned)gp_test_rnd_in(&rng, 0, 64);
        double s = gp_st_decimal_snap(v, k);
        int64_t d = (int64_t)gp_f64_bits(s) - (int64_t)gp_f64_bits(v);
        CHECK(d >= -(int64_t)k && d <= (int64_t)k);
        CHECK((s < 0) == (v < 0));
    }
}

static void test_rollup_fold(void)
{
    /* Stale markers are not samples; min/max skip NaN; sum and count
     * match the raw window mean (3 + -1) / 2. */
    struct gp_rollup r = {.count = 0};
    gp_st_rollup_fold(&r, gp_bits_f64(GP_STALE_NAN_BITS));
    CHECK_INT(r.count, 0);
    gp_st_rollup_fold(&r, 3);
    gp_st_rollup_fold(&r, -1);
    gp_st_rollup_fold(&r, gp_bits_f64(GP_STALE_NAN_BITS));
    CHECK_INT(r.count, 2);
    CHECK_DBL(r.min, -1, 0);
    CHECK_DBL(r.max, 3, 0);
    CHECK_DBL(r.sum, 2, 0);
    /* A NaN sample makes the mean NaN, but not min or max. */
    gp_st_rollup_fold(&r, NAN);
    CHECK_INT(r.count, 3);
    CHECK(r.sum != r.sum);
    CHECK_DBL(r.min, -1, 0);
    CHECK_DBL(r.max, 3, 0);
    struct gp_rollup n = {.count = 0};
    gp_st_rollup_fold(&n, NAN);
    gp_st_rollup_fold(&n, 5);
    CHECK_DBL(n.min, 5, 0);
    CHECK_DBL(n.max, 5, 0);
}

static void test_chunk_record(void)
{
    uint8_t buf[64] = {0};
    gp_st_chunkrec_header(buf, 5, 100, 200);
    buf[GP_ST_CHUNKREC_HDR + 1] = 1; /* count 1 */
    uint32_t id;
    int64_t a, b;
    const uint8_t *c;
    size_t l;
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_CHUNK, buf, GP_ST_CHUNKREC_HDR + 10, &id, &a, &b, &c, &l), GP_OK);
    CHECK_INT(id, 5);
    CHECK_INT(a, 100);
    CHECK_INT(b, 200);
    CHECK_INT(l, 10);
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_CHUNK, buf, GP_ST_CHUNKREC_HDR + 1, &id, &a, &b, &c, &l), GP_EPARSE);
    gp_st_chunkrec_header(buf, 5, 300, 200);
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_CHUNK, buf, GP_ST_CHUNKREC_HDR + 10, &id, &a, &b, &c, &l), GP_EPARSE);
    gp_st_chunkrec_header(buf, 0, 100, 200);
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_CHUNK, buf, GP_ST_CHUNKREC_HDR + 10, &id, &a, &b, &c, &l), GP_EPARSE);
    /* an unknown record type is refused */
    gp_st_chunkrec_header(buf, 5, 100, 200);
    CHECK_INT(gp_st_chunkrec_parse(3, buf, GP_ST_CHUNKREC_HDR + 10, &id, &a, &b, &c, &l), GP_EPARSE);
}

/* A block-encoded chunk record (GP_ST_REC_PCHUNK): its count comes from
 * the block chunk, and a payload that is no block chunk is refused. */
static void test_chunk_record_packed(void)
{
    int64_t t[3] = {1000, 2000, 3000};
    double v[3] = {1.5, 2.5, 3.5};
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    uint8_t hdr[GP_ST_CHUNKREC_HDR];
    gp_st_chunkrec_header(hdr, 7, 1000, 3000);
    gp_buf_append(&b, hdr, sizeof hdr);
    CHECK_INT(gp_st_bchunk_encode(t, v, 3, &sc, &b), GP_OK);
    uint32_t id;
    int64_t a, z;
    const uint8_t *c;
    size_t l;
    const uint8_t *p = (const uint8_t *)b.data;
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_PCHUNK, p, b.len, &id, &a, &z, &c, &l), GP_OK);
    CHECK_INT(id, 7);
    CHECK_INT(l, b.len - GP_ST_CHUNKREC_HDR);
    int64_t ot[3];
    double ov[3];
    CHECK_INT(gp_st_bchunk_decode(c, l, ot, ov, 3), 3);
    CHECK_INT(ot[2], 3000);
    CHECK_DBL(ov[1], 2.5, 0);
    /* encoding byte 9 is no block chunk */
    uint8_t bad[GP_ST_CHUNKREC_HDR + 4] = {0};
    memcpy(bad, hdr, sizeof hdr);
    bad[GP_ST_CHUNKREC_HDR] = 9;
    bad[GP_ST_CHUNKREC_HDR + 1] = 3;
    CHECK_INT(gp_st_chunkrec_parse(GP_ST_REC_PCHUNK, bad, sizeof bad, &id, &a, &z, &c, &l), GP_EPARSE);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
}

/* Appends one framed record to b. */
static void rec(struct gp_buf *b, uint8_t type, const uint8_t *p, size_t n)
{
    uint8_t h[GP_SEG_HEADER];
    gp_seg_header(h, type, p, n);
    gp_buf_append(b, h, sizeof h);
    gp_buf_append(b, p, n);
}

static int count_series(void *arg, const struct gp_st_snap_series *s)
{
    (*(int *)arg)++;
    return s->id == 99 ? GP_EINTERNAL : 0;
}

static void test_snapshot_parse(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_st_snap_header h = {GP_ST_FORMAT_VERSION, 7, 3, 10, 1000, 5000};
    uint8_t hb[GP_ST_SNAP_HEADER_LEN], sb[GP_ST_SNAP_SERIES_HDR + 16];
    gp_st_snap_header_encode(hb, &h);
    rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
    gp_st_snap_series_encode(sb, 4, 100, 200, 42);
    rec(&b, GP_ST_SNAP_SERIES, sb, GP_ST_SNAP_SERIES_HDR);
    struct gp_chunk c;
    gp_chunk_init(&c, 1024, 120);
    gp_chunk_append(&c, 150, 1.0);
    size_t cl;
    const uint8_t *cb = gp_chunk_bytes(&c, &cl);
    CHECK(cl <= 16);
    gp_st_snap_series_encode(sb, 5, 150, 150, gp_f64_bits(1.0));
    memcpy(sb + GP_ST_SNAP_SERIES_HDR, cb, cl);
    rec(&b, GP_ST_SNAP_SERIES, sb, GP_ST_SNAP_SERIES_HDR + cl);
    gp_chunk_free(&c);
    uint8_t eb[8] = {2};
    rec(&b, GP_ST_SNAP_END, eb, 8);
    const uint8_t *p = (const uint8_t *)b.data;
    struct gp_st_snap_header got;
    char err[200];
    int n = 0;
    CHECK_INT(gp_st_snap_parse(p, b.len, &got, count_series, &n, err, sizeof err), GP_OK);
    CHECK_INT(n, 2);
    CHECK_INT(got.wal_segment, 7);
    CHECK_INT(got.chunk_file, 3);
    CHECK_INT(got.max_t, 5000);
    for (size_t k = 0; k < b.len; k++)
        CHECK_INT(gp_st_snap_parse(p, k, &got, NULL, NULL, err, sizeof err), GP_EPARSE);
    /* A wrong end count, a series id beyond max_id. */
    eb[0] = 3;
    gp_buf_reset(&b);
    rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
    rec(&b, GP_ST_SNAP_END, eb, 8);
    CHECK_INT(gp_st_snap_parse((const uint8_t *)b.data, b.len, &got, NULL, NULL, err, sizeof err),
              GP_EPARSE);
    gp_buf_reset(&b);
    rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
    gp_st_snap_series_encode(sb, 11, 1, 2, 0);
    rec(&b, GP_ST_SNAP_SERIES, sb, GP_ST_SNAP_SERIES_HDR);
    CHECK_INT(gp_st_snap_parse((const uint8_t *)b.data, b.len, &got, NULL, NULL, err, sizeof err),
              GP_EPARSE);
    gp_buf_free(&b);
}

struct snap_seen {
    int n;
    struct gp_st_snap_series s[8];
};

static int keep_series(void *arg, const struct gp_st_snap_series *s)
{
    struct snap_seen *x = arg;
    if (x->n < 8)
        x->s[x->n] = *s;
    x->n++;
    return 0;
}

/* Version 2: series with empty heads in packed records, times relative
 * to the header's max_t (either side of it, any distance), ids rising
 * within a record; the malformed ones refused. */
static void test_snapshot_packed(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_st_snap_header h = {GP_ST_SNAP_VERSION, 7, 3, 10, 1000, 5000};
    uint8_t hb[GP_ST_SNAP_HEADER_LEN], sb[GP_ST_SNAP_SERIES_HDR], pk[4 * GP_ST_SNAP_PACKED_MAX];
    gp_st_snap_header_encode(hb, &h);
    rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
    gp_st_snap_series_encode(sb, 4, 100, 200, 42);
    rec(&b, GP_ST_SNAP_SERIES, sb, GP_ST_SNAP_SERIES_HDR);
    size_t n = gp_st_snap_packed_put(pk, 0, 2, 4000, 4999, 7, 5000);
    n += gp_st_snap_packed_put(pk + n, 2, 5, INT64_MIN, 9000, gp_f64_bits(-1.5), 5000);
    n += gp_st_snap_packed_put(pk + n, 5, 10, INT64_MAX, INT64_MAX, UINT64_MAX, 5000);
    CHECK(n <= 3 * GP_ST_SNAP_PACKED_MAX);
    CHECK_INT(gp_st_snap_packed_put(pk + n, 0, 1, 4000, 4999, 7, 5000), 1 + 1 + 2 + 8);
    rec(&b, GP_ST_SNAP_PACKED, pk, n);
    uint8_t eb[8] = {4};
    rec(&b, GP_ST_SNAP_END, eb, 8);
    struct gp_st_snap_header got;
    struct snap_seen seen = {0};
    char err[200];
    CHECK_INT(gp_st_snap_parse((const uint8_t *)b.data, b.len, &got, keep_series, &seen, err,
                               sizeof err),
              GP_OK);
    CHECK_INT(seen.n, 4);
    CHECK(seen.s[1].id == 2 && seen.s[1].first == 4000 && seen.s[1].newest == 4999 &&
          seen.s[1].newest_bits == 7 && !seen.s[1].chunk);
    CHECK(seen.s[2].id == 5 && seen.s[2].first == INT64_MIN && seen.s[2].newest == 9000 &&
          seen.s[2].newest_bits == gp_f64_bits(-1.5));
    CHECK(seen.s[3].id == 10 && seen.s[3].first == INT64_MAX && seen.s[3].newest == INT64_MAX &&
          seen.s[3].newest_bits == UINT64_MAX);
    for (size_t k = 0; k < b.len; k++)
        CHECK_INT(gp_st_snap_parse((const uint8_t *)b.data, k, &got, NULL, NULL, err, sizeof err),
                  GP_EPARSE);
    /* Refused: packed records in a version 1 file; an id past max_id; the
     * same id twice (a delta of 0); first after newest; an entry cut
     * short; an empty record. */
    static const struct {
        uint32_t version;
        const char *payload;
        size_t n;
    } bad[] = {
        {1, "\x02\x00\x00\x07\0\0\0\0\0\0\0", 11},
        {2, "\x0b\x00\x00\x07\0\0\0\0\0\0\0", 11},
        {2, "\x02\x00\x00\x07\0\0\0\0\0\0\0\x00\x00\x00\x07\0\0\0\0\0\0\0", 22},
        /* newest - (2^64 - 1) wraps past INT64_MIN: first after newest */
        {2, "\x02\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\0\0\0\0\0\0\0\0", 20},
        {2, "\x02\x00\x00\x07\0\0\0", 7},
        {2, "", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_st_snap_header hv = h;
        hv.version = bad[i].version;
        gp_st_snap_header_encode(hb, &hv);
        gp_buf_reset(&b);
        rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
        rec(&b, GP_ST_SNAP_PACKED, (const uint8_t *)bad[i].payload, bad[i].n);
        eb[0] = 1;
        rec(&b, GP_ST_SNAP_END, eb, 8);
        if (gp_st_snap_parse((const uint8_t *)b.data, b.len, &got, NULL, NULL, err, sizeof err) !=
            GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "bad packed record %zu accepted", i);
    }
    /* A version from the future. */
    h.version = GP_ST_SNAP_VERSION + 1;
    gp_st_snap_header_encode(hb, &h);
    gp_buf_reset(&b);
    rec(&b, GP_ST_SNAP_HEADER, hb, sizeof hb);
    eb[0] = 0;
    rec(&b, GP_ST_SNAP_END, eb, 8);
    CHECK_INT(gp_st_snap_parse((const uint8_t *)b.data, b.len, &got, NULL, NULL, err, sizeof err),
              GP_EPARSE);
    CHECK_CONTAINS(err, "format version 3");
    gp_buf_free(&b);
}

/* Decodes [mint, maxt] of a chunk of the n samples t, v with the window
 * decoder and checks it against a scan of the samples. */
static void check_window(const uint8_t *p, size_t len, const int64_t *t, const double *v, size_t n,
                         int64_t mint, int64_t maxt)
{
    int64_t *tt = malloc(n * sizeof *tt);
    double *vv = malloc(n * sizeof *vv);
    size_t first = 99, lo = 0, hi = 0;
    while (hi < n && t[hi] <= maxt)
        hi++;
    while (lo < hi && t[lo] < mint)
        lo++;
    CHECK_INT(gp_st_bchunk_decode_window(p, len, mint, maxt, tt, vv, n, &first), (int)hi);
    CHECK_INT(first, lo);
    for (size_t i = lo; i < hi; i++)
        if (tt[i] != t[i] || gp_f64_bits(vv[i]) != gp_f64_bits(v[i]))
            gp_test_fail(__FILE__, __LINE__, "window [%lld, %lld] sample %zu: %lld/%016llx", (long long)mint,
                         (long long)maxt, i, (long long)tt[i], (unsigned long long)gp_f64_bits(vv[i]));
    free(tt);
    free(vv);
}

/* The shared-times form of n samples, as a block file holds it: a
 * header's room, the time record, then the chunk naming it (the offset
 * of the chunk in *at). Caller frees b. */
static void shared_encode_v(const int64_t *t, const double *v, size_t n, uint32_t version,
                            struct gp_buf *b, size_t *at)
{
    struct gp_st_bchunk_scratch sc = {0};
    gp_buf_init(b, 0);
    uint8_t hdr[GP_ST_BF_HEADER] = {0};
    gp_buf_append(b, hdr, sizeof hdr);
    CHECK_INT(gp_st_btimes_encode(t, n, &sc, b), GP_OK);
    *at = b->len;
    CHECK_INT(gp_st_bchunk_encode_block(t, v, n, GP_ST_BF_HEADER, version, &sc, b), GP_OK);
    gp_st_bchunk_scratch_free(&sc);
}

static void shared_encode(const int64_t *t, const double *v, size_t n, struct gp_buf *b, size_t *at)
{
    shared_encode_v(t, v, n, 2, b, at);
}

/* The shared-times form decodes to the same samples, whole and by
 * windows, inside its file and nowhere else; every cut of the chunk or
 * of the time record is refused. */
static void shared_round_trip_v(const int64_t *t, const double *v, size_t n, uint32_t version)
{
    struct gp_buf b;
    size_t at;
    shared_encode_v(t, v, n, version, &b, &at);
    uint8_t *f = (uint8_t *)b.data;
    struct gp_st_bfile bf = {.data = f, .len = b.len};
    const uint8_t *p = f + at;
    size_t len = b.len - at, first;
    int64_t *tt = malloc(n * sizeof *tt);
    double *vv = malloc(n * sizeof *vv);
    CHECK_INT(gp_st_bchunk_decode_in(&bf, p, len, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first), (int)n);
    for (size_t i = 0; i < n; i++)
        if (tt[i] != t[i] || gp_f64_bits(vv[i]) != gp_f64_bits(v[i]))
            gp_test_fail(__FILE__, __LINE__, "shared times: sample %zu differs", i);
    CHECK_INT(gp_st_bchunk_check_in(&bf, p, len), GP_OK);
    size_t cnt;
    CHECK_INT(gp_st_bchunk_count(p, len, &cnt), GP_OK);
    CHECK_INT(cnt, n);
    if (p[0] == 2) {
        CHECK_INT(gp_st_bchunk_decode(p, len, tt, vv, n), GP_EPARSE); /* no file, no times */
        size_t a = n / 3, z = n / 2;
        int hi = gp_st_bchunk_decode_in(&bf, p, len, t[a], t[z], 0, tt, vv, n, &first);
        CHECK_INT(hi, (int)z + 1);
        CHECK_INT(first, a);
        for (size_t i = a; i <= z; i++)
            CHECK(tt[i] == t[i] && gp_f64_bits(vv[i]) == gp_f64_bits(v[i]));
        size_t step = len > 3000 ? len / 300 : 1;
        for (size_t k = 0; k < len; k += step)
            CHECK_INT(gp_st_bchunk_decode_in(&bf, p, k, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first),
                      GP_EPARSE);
        /* A damaged time record: its CRC. */
        f[GP_ST_BF_HEADER + 6] ^= 4;
        CHECK_INT(gp_st_bchunk_decode_in(&bf, p, len, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first),
                  GP_EPARSE);
        CHECK_INT(gp_st_bchunk_check_in(&bf, p, len), GP_EPARSE);
        f[GP_ST_BF_HEADER + 6] ^= 4;
        /* The record cut short: the file ends before it does. */
        struct gp_st_bfile cut = {.data = f, .len = GP_ST_BF_HEADER + 6};
        CHECK_INT(gp_st_bchunk_decode_in(&cut, p, len, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first),
                  GP_EPARSE);
    }
    free(tt);
    free(vv);
    gp_buf_free(&b);
}

static void shared_round_trip(const int64_t *t, const double *v, size_t n)
{
    shared_round_trip_v(t, v, n, 2);
    shared_round_trip_v(t, v, n, 3);
}

/* The value mode of the chunk at b + at. */
static unsigned chunk_mode(const struct gp_buf *b, size_t at)
{
    struct gp_st_bchunk_info in;
    CHECK_INT(gp_st_bchunk_info((const uint8_t *)b->data + at, b->len - at, &in), GP_OK);
    return in.mode;
}

/* A series that holds still for a whole chunk (memory used, clocks, XID
 * and error counters): in a version 3 block no value stream at all
 * (mode 2), exceptions kept; version 2 blocks and self-contained chunks
 * (head chunk files) keep the stream, and refuse mode 2. */
static void test_bchunk_constant(void)
{
    enum { N = 900 };
    int64_t t[N];
    double v[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = 1700000000000LL + (int64_t)i * 1000 + (int64_t)(i * 7 % 5);
        v[i] = 81559.25;
    }
    struct gp_buf b2, b3;
    size_t at2, at3;
    shared_encode_v(t, v, N, 2, &b2, &at2);
    shared_encode_v(t, v, N, 3, &b3, &at3);
    CHECK_INT(chunk_mode(&b2, at2), 0);
    CHECK_INT(chunk_mode(&b3, at3), 2);
    printf("bchunk: constant, %d samples: %zu bytes in version 2, %zu in 3\n", N, b2.len - at2,
           b3.len - at3);
    CHECK(b3.len - at3 <= 10); /* encoding, n, offset, e | mode, m0, no exceptions */
    CHECK(b2.len - at2 >= b3.len - at3 + 20);
    gp_buf_free(&b2);
    gp_buf_free(&b3);
    for (size_t n = 1; n <= 3; n++)
        shared_round_trip(t, v, n);
    shared_round_trip(t, v, N);
    /* exceptions repeat the constant's m and are kept */
    v[0] = NAN;
    v[17] = gp_bits_f64(GP_STALE_NAN_BITS);
    v[N - 1] = -0.0;
    shared_round_trip(t, v, N);
    shared_encode_v(t, v, N, 3, &b3, &at3);
    CHECK_INT(chunk_mode(&b3, at3), 2);
    gp_buf_free(&b3);
    /* one value off: a stream again */
    v[0] = v[17] = v[N - 1] = 81559.25;
    v[400] = 81559.5;
    shared_encode_v(t, v, N, 3, &b3, &at3);
    CHECK(chunk_mode(&b3, at3) != 2);
    gp_buf_free(&b3);
    shared_round_trip(t, v, N);
    /* A self-contained chunk never takes mode 2, and a forged one is
     * refused: encoding 1, then n, t0, t1 - t0, then e | mode << 4. */
    v[400] = 81559.25;
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf c;
    gp_buf_init(&c, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, N, &sc, &c), GP_OK);
    CHECK_INT((uint8_t)c.data[0], 1);
    CHECK_INT(chunk_mode(&c, 0), 0);
    const uint8_t *q = (const uint8_t *)c.data + 1, *end = (const uint8_t *)c.data + c.len;
    uint64_t u;
    for (int k = 0; k < 3; k++)
        CHECK(gp_uvarint_get(&q, end, &u) == 0);
    uint8_t *mb = (uint8_t *)c.data + (q - (const uint8_t *)c.data);
    CHECK_INT(*mb >> 4, 0);
    *mb = (uint8_t)(*mb | 2 << 4);
    int64_t tt[N];
    double vv[N];
    CHECK_INT(gp_st_bchunk_decode((const uint8_t *)c.data, c.len, tt, vv, N), GP_EPARSE);
    gp_buf_free(&c);
    gp_st_bchunk_scratch_free(&sc);
}

/* Encodes n samples, checks the size bound when given, decodes them back
 * bit for bit (whole and by windows), and checks every truncation is
 * refused. */
static size_t bchunk_round_trip(const int64_t *t, const double *v, size_t n, int want_enc)
{
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, n, &sc, &b), GP_OK);
    const uint8_t *p = (const uint8_t *)b.data;
    if (want_enc >= 0)
        CHECK_INT(p[0], want_enc);
    int64_t *tt = malloc(n * sizeof *tt);
    double *vv = malloc(n * sizeof *vv);
    CHECK_INT(gp_st_bchunk_decode(p, b.len, tt, vv, n), (int)n);
    for (size_t i = 0; i < n; i++) {
        if (tt[i] != t[i] || gp_f64_bits(vv[i]) != gp_f64_bits(v[i]))
            gp_test_fail(__FILE__, __LINE__, "sample %zu: %lld/%016llx != %lld/%016llx", i,
                         (long long)tt[i], (unsigned long long)gp_f64_bits(vv[i]),
                         (long long)t[i], (unsigned long long)gp_f64_bits(v[i]));
    }
    /* Windows: inside, across group borders, on exact sample times, empty
     * ones before, between and after the samples. */
    check_window(p, b.len, t, v, n, INT64_MIN, INT64_MAX);
    check_window(p, b.len, t, v, n, t[n / 3], t[n / 2]);
    check_window(p, b.len, t, v, n, t[n / 2], t[n - 1]);
    check_window(p, b.len, t, v, n, INT64_MIN, t[0]);
    check_window(p, b.len, t, v, n, t[n - 1], INT64_MAX);
    for (size_t k = 1; k < n && k < 70; k += 3)
        check_window(p, b.len, t, v, n, t[k - 1], t[k]);
    if (t[0] > INT64_MIN)
        check_window(p, b.len, t, v, n, INT64_MIN, t[0] - 1);
    if (t[n - 1] < INT64_MAX)
        check_window(p, b.len, t, v, n, t[n - 1] + 1, INT64_MAX);
    if (n > 1 && t[1] - t[0] > 1)
        check_window(p, b.len, t, v, n, t[0] + 1, t[1] - 1);
    if (n > 1)
        CHECK_INT(gp_st_bchunk_decode(p, b.len, tt, vv, n - 1), GP_EPARSE); /* no room */
    size_t step = b.len > 3000 ? b.len / 300 : 1;
    for (size_t k = 0; k < b.len; k += step)
        CHECK_INT(gp_st_bchunk_decode(p, k, tt, vv, n), GP_EPARSE);
    size_t len = b.len;
    free(tt);
    free(vv);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
    shared_round_trip(t, v, n);
    return len;
}

/* A chunk of encoding 2 reads only the time record it names: one with
 * other times, at another offset, or past the chunk is refused; two
 * chunks share one record. */
static void test_bchunk_shared_times(void)
{
    enum { N = 900 };
    int64_t t[N];
    double v[N], w[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = 1700000000000 + (int64_t)i * 1000 + (int64_t)(i * 7 % 3);
        v[i] = 300 + (double)(i * 37 % 1000) / 1000;
        w[i] = (double)(i % 5);
    }
    struct gp_buf b;
    size_t at;
    shared_encode(t, v, N, &b, &at);
    /* A second series with the same times names the same record. */
    struct gp_st_bchunk_scratch sc = {0};
    size_t at2 = b.len;
    CHECK_INT(gp_st_bchunk_encode_block(t, w, N, GP_ST_BF_HEADER, 2, &sc, &b), GP_OK);
    const uint8_t *f = (const uint8_t *)b.data;
    CHECK_INT(f[at], 2);
    CHECK_INT(f[at2], 2);
    /* Its chunk is far smaller than a self-contained one. */
    struct gp_buf self;
    gp_buf_init(&self, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, N, &sc, &self), GP_OK);
    CHECK(b.len - at2 + 200 < self.len);
    printf("bchunk: self-contained %zu bytes, shared times %zu + record %zu\n", self.len,
           at2 - at, at - GP_ST_BF_HEADER);
    struct gp_st_bfile bf = {.data = f, .len = b.len};
    int64_t tt[N];
    double vv[N];
    size_t first;
    CHECK_INT(gp_st_bchunk_decode_in(&bf, f + at2, b.len - at2, INT64_MIN, INT64_MAX, 1, tt, vv, N, &first),
              N);
    for (size_t i = 0; i < N; i++)
        CHECK(tt[i] == t[i] && vv[i] == w[i]);
    /* Offsets that name no record: into the header, the chunk itself,
     * one byte off. Each decodes to nothing, never to other times. */
    static const uint64_t bad[] = {0, 8, GP_ST_BF_HEADER + 1, 0 /* at */};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct gp_buf c;
        gp_buf_init(&c, 0);
        gp_buf_append(&c, f, at); /* header room and the record */
        size_t cat = c.len;
        CHECK_INT(gp_st_bchunk_encode_block(t, w, N, k == 3 ? at : bad[k], 2, &sc, &c), GP_OK);
        struct gp_st_bfile cf = {.data = (const uint8_t *)c.data, .len = c.len};
        CHECK_INT(gp_st_bchunk_decode_in(&cf, cf.data + cat, c.len - cat, INT64_MIN, INT64_MAX, 1, tt, vv, N,
                                         &first),
                  GP_EPARSE);
        CHECK_INT(gp_st_bchunk_check_in(&cf, cf.data + cat, c.len - cat), GP_EPARSE);
        gp_buf_free(&c);
    }
    /* A record of another count of samples. */
    struct gp_buf c;
    gp_buf_init(&c, 0);
    uint8_t hdr[GP_ST_BF_HEADER] = {0};
    gp_buf_append(&c, hdr, sizeof hdr);
    CHECK_INT(gp_st_btimes_encode(t, N - 1, &sc, &c), GP_OK);
    size_t cat = c.len;
    CHECK_INT(gp_st_bchunk_encode_block(t, w, N, GP_ST_BF_HEADER, 2, &sc, &c), GP_OK);
    struct gp_st_bfile cf = {.data = (const uint8_t *)c.data, .len = c.len};
    CHECK_INT(gp_st_bchunk_decode_in(&cf, cf.data + cat, c.len - cat, INT64_MIN, INT64_MAX, 1, tt, vv, N, &first),
              GP_EPARSE);
    /* Times out of order are refused as by the self-contained encoder. */
    int64_t tb[2] = {5, 5};
    CHECK_INT(gp_st_btimes_encode(tb, 2, &sc, &c), GP_EUSAGE);
    CHECK_INT(gp_st_bchunk_encode_block(tb, w, 2, GP_ST_BF_HEADER, 2, &sc, &c), GP_EUSAGE);
    gp_buf_free(&c);
    gp_buf_free(&self);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
}

/* Block files of version 1 (before shared times) still parse; one of a
 * version this gpulse does not know is refused with its number. */
/* Each version's header over its layout: version 1 and 2 files share
 * theirs, 3 has its own; another number is refused by name. */
static void block_versions(uint32_t written)
{
    size_t len;
    uint8_t *p = make_block_v(&len, written);
    struct gp_st_bfile bf;
    char err[200];
    CHECK_INT(gp_get_le32(p + 8), written);
    for (uint32_t ver = 0; ver <= GP_ST_BLOCK_VERSION + 1; ver++) {
        gp_put_le32(p + 8, ver);
        /* the footer's CRC covers the header */
        uint64_t ioff = gp_get_le64(p + len - GP_ST_BF_FOOTER);
        uint32_t crc = gp_crc32c(0, p, GP_ST_BF_HEADER);
        crc = gp_crc32c(crc, p + ioff, len - GP_ST_BF_FOOTER - ioff);
        gp_put_le32(p + len - GP_ST_BF_FOOTER + 12, crc);
        int rc = gp_st_bfile_parse(p, len, &bf, err, sizeof err);
        if (ver >= 1 && ver <= GP_ST_BLOCK_VERSION) {
            CHECK_INT(rc, (ver >= 3) == (written >= 3) ? GP_OK : GP_EPARSE);
        } else {
            CHECK_INT(rc, GP_EPARSE);
            CHECK_CONTAINS(err, "format version");
        }
    }
    free(p);
}

static void test_block_versions(void)
{
    block_versions(2);
    block_versions(3);
}

static void test_bchunk_round_trips(void)
{
    enum { N = 7200 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    uint64_t seed = 12345;
    /* GPU-like decimals at 1 s with a few ms of jitter: packed, small. */
    for (size_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        t[i] = 1700000000000LL + (int64_t)i * 1000 + (int64_t)(seed >> 61);
        v[i] = (double)(250000 + (int64_t)(seed >> 50) % 20000) / 1000; /* W, 3 decimals */
    }
    size_t len = bchunk_round_trip(t, v, N, 1);
    printf("bchunk: power W: %.3f bytes/sample\n", (double)len / N);
    CHECK(len < N * 3); /* random in a 20 W band: 16 bits a value, 4 a time */
    for (size_t i = 0; i < N; i++)
        v[i] = (double)(i / 100 % 101); /* slow integer steps */
    len = bchunk_round_trip(t, v, N, 1);
    printf("bchunk: stepped integer: %.3f bytes/sample\n", (double)len / N);
    CHECK(len < N); /* jitter costs 5 bits a time; the values almost nothing */
    /* Regular times (width-0 groups of timestamps). */
    for (size_t i = 0; i < N; i++)
        t[i] = 1700000000000LL + (int64_t)i * 1000;
    bchunk_round_trip(t, v, N, 1);
    for (size_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        t[i] = 1700000000000LL + (int64_t)i * 1000 + (int64_t)(seed >> 61);
    }
    /* Exceptions: NaN, the stale marker, infinities, -0.0, 0.1 + 0.2. */
    v[0] = NAN;
    v[17] = gp_bits_f64(GP_STALE_NAN_BITS);
    v[18] = INFINITY;
    v[500] = -INFINITY;
    v[501] = -0.0;
    v[N - 1] = 0.1 + 0.2;
    bchunk_round_trip(t, v, N, 1);
    /* Counters (deltas of deltas win) and huge integers (Gorilla). */
    for (size_t i = 0; i < N; i++)
        v[i] = 1e12 + (double)i * 250123;
    bchunk_round_trip(t, v, N, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = 1e300 / (double)(i + 1);
    bchunk_round_trip(t, v, N, 0);
    /* Random bits: Gorilla. */
    for (size_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = gp_bits_f64(seed);
    }
    bchunk_round_trip(t, v, 300, 0);
    /* Tiny chunks and extreme times. */
    for (size_t n = 1; n <= 4; n++) {
        int64_t te[4] = {INT64_MIN, -1, 0, INT64_MAX};
        double ve[4] = {1.5, -2.25, 1e15, 0};
        bchunk_round_trip(te + 4 - n, ve, n, -1);
        bchunk_round_trip(te, ve, n, -1);
    }
    /* Bad input to the encoder. */
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int64_t tb[2] = {5, 5};
    CHECK_INT(gp_st_bchunk_encode(tb, v, 2, &sc, &b), GP_EUSAGE);
    CHECK_INT(gp_st_bchunk_encode(tb, v, 0, &sc, &b), GP_EUSAGE);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
    /* Garbage. */
    uint8_t junk[40];
    memset(junk, 0xff, sizeof junk);
    CHECK_INT(gp_st_bchunk_decode(junk, sizeof junk, t, v, N), GP_EPARSE);
    junk[0] = 7;
    CHECK_INT(gp_st_bchunk_decode(junk, sizeof junk, t, v, N), GP_EPARSE);
    free(t);
    free(v);
}

/* Block chunks as this encoder wrote them on 2026-11-26 (one chunk per
 * series per 2-hour window then): a faster decoder must still read them.
 * The samples are the formulas below; the bytes are frozen. */
static const uint8_t gold_gauge[] = {
    0x01, 0x46, 0x80, 0xa0, 0xab, 0xfe, 0xf9, 0x62, 0xe8, 0x07, 0x02, 0xcf,
    0x0f, 0x02, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x7f, 0x14,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x7f, 0x06, 0x40, 0x9b, 0x35,
    0x00, 0x00, 0x00, 0x6d, 0xd6, 0x00, 0x00, 0x00, 0xb4, 0x59, 0x03, 0x00,
    0x00, 0xd0, 0x66, 0x0d, 0x00, 0x00, 0x40, 0x9b, 0x35, 0x03, 0x00, 0x00,
    0x80, 0x36, 0x6b, 0x00, 0x00, 0x00, 0xda, 0xac, 0x01, 0x00, 0x00, 0x68,
    0xb3, 0x06, 0x00, 0x00, 0xa0, 0xcd, 0x1a, 0x00, 0x00, 0x80, 0x41, 0x9b,
    0x35, 0x80, 0xa1, 0x73, 0x3a, 0xf7, 0xc7, 0x3a, 0xa7, 0x73, 0x7f, 0xac,
    0x73, 0x3a, 0xf7, 0xc7, 0x3a, 0xf7, 0xc7, 0x3a, 0xa7, 0x73, 0x7f, 0xac,
    0x73, 0x3a, 0xf7, 0xc7, 0x3a, 0xa7, 0x73, 0x00, 0x50, 0x54, 0x7f, 0xac,
    0x73, 0x3a, 0xf7, 0xc7, 0x3a, 0xa7, 0x73, 0x7f, 0xac, 0x73, 0x3a, 0xf7,
    0xc7, 0x3a, 0xc7, 0xf8, 0x63, 0x9d, 0xd3, 0xb9, 0x3f, 0xd6, 0x39, 0x9d,
    0xfb, 0x63, 0x9d, 0x03, 0x80, 0xa2, 0xd2, 0xb9, 0x3f, 0xd6, 0x39, 0x9d,
    0xfb, 0x63, 0x9d, 0xd3, 0xb9, 0x3f, 0xd6, 0xb9, 0x3f, 0xd6, 0x39, 0x9d,
    0xfb, 0x63, 0x9d, 0xd3, 0xb9, 0x3f, 0xd6, 0x39, 0x9d, 0xfb, 0x63, 0x9d,
    0xfb, 0x63, 0x9d, 0x63, 0xe8, 0xdc, 0x1f, 0xeb, 0x9c, 0xce, 0xfd, 0x31,
};
static const uint8_t gold_counter[] = {
    0x01, 0x28, 0x80, 0xa0, 0xab, 0xfe, 0xf9, 0x62, 0x98, 0x75, 0x10, 0x00,
    0xd2, 0x0f, 0x00, 0x00, 0xc0, 0x20, 0x61, 0xc2, 0x84, 0x09, 0x13, 0x26,
    0x4c, 0x98, 0x30, 0x61, 0xc2, 0x64, 0xc0, 0x84, 0x09,
};

static void gold_gauge_samples(int64_t *t, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        t[i] = 1700000000000 + (int64_t)i * 1000 + (i % 7 == 3 ? 13 : 0);
        v[i] = (double)((int64_t)(i * 37 % 101) * 25 - 1000) / 100.0; /* two decimals */
    }
    v[20] = NAN;
    v[41] = gp_bits_f64(GP_STALE_NAN_BITS);
}

static void gold_counter_samples(int64_t *t, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        t[i] = 1700000000000 + (int64_t)i * 15000;
        v[i] = (double)(i * 1000 + i * i % 3);
    }
}

static void test_bchunk_frozen_layout(void)
{
    int64_t t[70], tt[70];
    double v[70], vv[70];
    gold_gauge_samples(t, v, 70);
    CHECK_INT(gold_gauge[10], 0x02); /* e 2, deltas */
    CHECK_INT(gp_st_bchunk_decode(gold_gauge, sizeof gold_gauge, tt, vv, 70), 70);
    for (size_t i = 0; i < 70; i++) {
        CHECK_INT(tt[i], t[i]);
        CHECK_INT(gp_f64_bits(vv[i]), gp_f64_bits(v[i]));
    }
    check_window(gold_gauge, sizeof gold_gauge, t, v, 70, t[10], t[45]);
    check_window(gold_gauge, sizeof gold_gauge, t, v, 70, t[33], t[69]);
    gold_counter_samples(t, v, 40);
    CHECK_INT(gold_counter[10], 0x10); /* e 0, deltas of deltas */
    CHECK_INT(gp_st_bchunk_decode(gold_counter, sizeof gold_counter, tt, vv, 40), 40);
    for (size_t i = 0; i < 40; i++) {
        CHECK_INT(tt[i], t[i]);
        CHECK_INT(gp_f64_bits(vv[i]), gp_f64_bits(v[i]));
    }
    check_window(gold_counter, sizeof gold_counter, t, v, 40, t[1], t[2]);
    check_window(gold_counter, sizeof gold_counter, t, v, 40, t[5], t[39] - 1);
}

static void test_floor(void)
{
    CHECK_INT(gp_st_floor(125, 60), 120);
    CHECK_INT(gp_st_floor(-1, 60), -60);
    CHECK_INT(gp_st_floor(-60, 60), -60);
    CHECK_INT(gp_st_floor(0, 60), 0);
    CHECK_INT(gp_st_floor(INT64_MIN, 60000), INT64_MIN);
}

const struct gp_test gp_tests_store_fmt[] = {
    {"block_round_trip", test_block_round_trip},
    {"block_damage_rejected", test_block_damage_rejected},
    {"block_v3_limits", test_block_v3_limits},
    {"rollup_payload_round_trip", test_rollup_payload_round_trip},
    {"rollup_fold", test_rollup_fold},
    {"rollup_sum_decimal", test_rollup_sum_decimal},
    {"rollup_payload_shared_times", test_rollup_payload_shared_times},
    {"decimal_snap", test_decimal_snap},
    {"chunk_record", test_chunk_record},
    {"chunk_record_packed", test_chunk_record_packed},
    {"snapshot_parse", test_snapshot_parse},
    {"snapshot_packed", test_snapshot_packed},
    {"bchunk_round_trips", test_bchunk_round_trips},
    {"bchunk_frozen_layout", test_bchunk_frozen_layout},
    {"bchunk_shared_times", test_bchunk_shared_times},
    {"bchunk_constant", test_bchunk_constant},
    {"block_versions", test_block_versions},
    {"floor", test_floor},
    {0},
};
