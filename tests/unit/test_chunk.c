/*
 * test_chunk.c - Gorilla chunks: round trips (regular scrapes, jitter,
 * random doubles, special values, int64 edges), rejection of late and
 * duplicate samples, full chunks, and corrupt or truncated bytes; the
 * batch decoder (gp_chunk_iter_decode) against the sample-by-sample
 * iterator on all of these and on windows of every width after every
 * kind of timestamp.
 */
#include "lib/bits.h"
#include "lib/err.h"
#include "store/chunk.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Decodes c and checks it against the n samples appended, bit for bit. */
static void check_decodes(const struct gp_chunk *c, const int64_t *ts, const double *vs, size_t n)
{
    size_t len;
    const uint8_t *p = gp_chunk_bytes(c, &len);
    CHECK_INT(len, gp_chunk_size(c));
    struct gp_chunk_iter it;
    CHECK_INT(gp_chunk_iter_init(&it, p, len), GP_OK);
    CHECK_INT(gp_chunk_iter_count(&it), n);
    int64_t t;
    double v;
    for (size_t i = 0; i < n; i++) {
        CHECK_INT(gp_chunk_iter_next(&it, &t, &v), 1);
        CHECK_INT(t, ts[i]);
        if (gp_f64_bits(v) != gp_f64_bits(vs[i]))
            gp_test_fail(__FILE__, __LINE__, "sample %zu: bits %016llx != %016llx", i,
                         (unsigned long long)gp_f64_bits(v), (unsigned long long)gp_f64_bits(vs[i]));
    }
    CHECK_INT(gp_chunk_iter_next(&it, &t, &v), 0);
    CHECK_INT(gp_chunk_iter_next(&it, &t, &v), 0);
    /* The batch decoder gives the same, in one call and in pieces. */
    int64_t *bt = malloc((n + 1) * sizeof *bt);
    double *bv = malloc((n + 1) * sizeof *bv);
    CHECK(bt && bv);
    for (size_t piece = 1; piece <= n + 1; piece = piece < 4 ? piece + 1 : piece * 5) {
        CHECK_INT(gp_chunk_iter_init(&it, p, len), GP_OK);
        size_t got = 0;
        int k;
        while ((k = gp_chunk_iter_decode(&it, bt + got, bv + got,
                                         n + 1 - got < piece ? n + 1 - got : piece)) > 0)
            got += (size_t)k;
        CHECK_INT(k, 0);
        CHECK_INT(got, n);
        for (size_t i = 0; i < n; i++) {
            CHECK_INT(bt[i], ts[i]);
            if (gp_f64_bits(bv[i]) != gp_f64_bits(vs[i]))
                gp_test_fail(__FILE__, __LINE__, "batch sample %zu (pieces of %zu): bits differ", i,
                             piece);
        }
    }
    free(bt);
    free(bv);
}

static void test_regular_scrapes_compress(void)
{
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
    int64_t ts[120];
    double vs[120];
    int64_t t0 = 1700000000000LL;
    for (int i = 0; i < 120; i++) {
        ts[i] = t0 + 15000LL * i;
        vs[i] = 81559.0; /* a constant, like FB total */
        CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
    }
    CHECK_INT(gp_chunk_count(&c), 120);
    CHECK_INT(gp_chunk_first_t(&c), ts[0]);
    CHECK_INT(gp_chunk_last_t(&c), ts[119]);
    size_t size = gp_chunk_size(&c);
    printf("regular constant: %zu bytes for 120 samples (%.3f bytes/sample)\n", size, size / 120.0);
    /* 2 header + ~14 first sample + 3 delta: then 2 bits a sample. */
    CHECK(size <= 2 * 120);
    CHECK(size <= 60);
    check_decodes(&c, ts, vs, 120);
    CHECK_INT(gp_chunk_append(&c, ts[119] + 15000, 1), GP_ETOOBIG); /* 120-sample cap */
    CHECK_INT(gp_chunk_size(&c), size);
    gp_chunk_free(&c);

    /* A slowly moving gauge (integer watts): still a few bytes a sample. */
    CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
    for (int i = 0; i < 120; i++) {
        ts[i] = t0 + 15000LL * i;
        vs[i] = 250 + (i % 7);
        CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
    }
    size = gp_chunk_size(&c);
    printf("regular gauge: %zu bytes for 120 samples (%.3f bytes/sample)\n", size, size / 120.0);
    CHECK(size <= 3 * 120);
    check_decodes(&c, ts, vs, 120);
    gp_chunk_free(&c);
}

static void test_jittered_timestamps(void)
{
    uint64_t s = 42;
    int64_t ts[120];
    double vs[120];
    /* Jitter of every size: each dod bucket and the 64-bit escape. */
    const int64_t spreads[] = {3, 100, 5000, 60000, 500000, 100000000000LL};
    for (size_t k = 0; k < sizeof spreads / sizeof spreads[0]; k++) {
        struct gp_chunk c;
        CHECK_INT(gp_chunk_init(&c, 4096, 0), GP_OK);
        int64_t t = -5000000;
        for (int i = 0; i < 120; i++) {
            t += 1000 + (int64_t)(rng_next(&s) % (uint64_t)spreads[k]);
            ts[i] = t;
            vs[i] = (double)(i * 3);
            CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
        }
        check_decodes(&c, ts, vs, 120);
        gp_chunk_free(&c);
    }
}

static void test_random_doubles(void)
{
    uint64_t s = 7;
    enum { N = 400 };
    int64_t ts[N];
    double vs[N];
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 65536, N), GP_OK);
    for (int i = 0; i < N; i++) {
        ts[i] = 1000LL * i;
        uint64_t r = rng_next(&s);
        /* Mix raw random bits, small integers and fractions. */
        vs[i] = i % 3 == 0 ? gp_bits_f64(r) : i % 3 == 1 ? (double)(r % 100) : (double)(r % 1000) / 7.0;
        CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
    }
    check_decodes(&c, ts, vs, N);
    gp_chunk_free(&c);
}

static void test_special_values(void)
{
    const uint64_t specials[] = {
        0x7ff0000000000002ULL, /* Prometheus's stale marker */
        0x7ff8000000000000ULL, /* the usual quiet NaN */
        0xfff8000000000001ULL, /* negative NaN with a payload */
        0x7ff0000000000000ULL, /* +Inf */
        0xfff0000000000000ULL, /* -Inf */
        0x8000000000000000ULL, /* -0.0 */
        0x0000000000000000ULL, /* +0.0 */
        0x0000000000000001ULL, /* smallest denormal */
        0x800fffffffffffffULL, /* largest negative denormal */
        0x7fefffffffffffffULL, /* DBL_MAX */
        0x3ff0000000000000ULL, /* 1.0 */
        0x7ff0000000000002ULL, /* stale again: window reuse paths */
        0x7ff0000000000002ULL,
        0xffffffffffffffffULL, /* all ones: 64 meaningful bits */
        0x0000000000000000ULL,
    };
    size_t n = sizeof specials / sizeof specials[0];
    int64_t ts[16];
    double vs[16];
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
    for (size_t i = 0; i < n; i++) {
        ts[i] = 15000 * (int64_t)i;
        vs[i] = gp_bits_f64(specials[i]);
        CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
    }
    check_decodes(&c, ts, vs, n);
    gp_chunk_free(&c);
}

static void test_int64_edges(void)
{
    /* The widest delta, a dod wrapping the whole range, negative times. */
    const int64_t seqs[][4] = {
        {INT64_MIN, INT64_MAX - 2, INT64_MAX - 1, INT64_MAX},
        {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX},
        {INT64_MIN, -1, 0, INT64_MAX},
        {-3, -2, -1, 0},
        {INT64_MAX - 3, INT64_MAX - 2, INT64_MAX - 1, INT64_MAX},
        /* deltas 10, 8201, 16393: dods at a bucket border and just past it */
        {0, 10, 10 + 8201, 10 + 8201 + 16393},
        /* deltas 1, 65536, 1: dods +65535 and -65535 */
        {0, 1, 1 + 65536, 1 + 65536 + 1},
    };
    for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
        struct gp_chunk c;
        CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
        double vs[4] = {1, 2, 3, 4};
        for (int i = 0; i < 4; i++)
            CHECK_INT(gp_chunk_append(&c, seqs[k][i], vs[i]), GP_OK);
        check_decodes(&c, seqs[k], vs, 4);
        gp_chunk_free(&c);
    }
    /* Each dod bucket at both of its borders. */
    const int64_t dods[] = {-8192, 8191, -8193, 8192, -65536, 65535, -65537, 65536,
                            -524288, 524287, -524289, 524288};
    for (size_t k = 0; k < sizeof dods / sizeof dods[0]; k++) {
        struct gp_chunk c;
        CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
        int64_t ts[3] = {0, 1000000, 2000000 + dods[k]};
        double vs[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
        check_decodes(&c, ts, vs, 3);
        gp_chunk_free(&c);
    }
}

static void test_rejects_late_and_duplicate(void)
{
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 0, 0), GP_OK);
    int64_t ts[3] = {1000, 2000, 3500};
    double vs[3] = {1, 2, 3};
    for (int i = 0; i < 3; i++)
        CHECK_INT(gp_chunk_append(&c, ts[i], vs[i]), GP_OK);
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&c, &len);
    uint8_t before[64];
    CHECK(len <= sizeof before);
    memcpy(before, p, len);
    CHECK_INT(gp_chunk_append(&c, 3500, 9), GP_ERANGE); /* duplicate */
    CHECK_INT(gp_chunk_append(&c, 2500, 9), GP_ERANGE); /* out of order */
    CHECK_INT(gp_chunk_append(&c, INT64_MIN, 9), GP_ERANGE);
    p = gp_chunk_bytes(&c, &len);
    CHECK_INT(len, gp_chunk_size(&c));
    CHECK(memcmp(p, before, len) == 0);
    CHECK_INT(gp_chunk_count(&c), 3);
    CHECK_INT(gp_chunk_last_t(&c), 3500);
    check_decodes(&c, ts, vs, 3);
    /* The chunk goes on after a rejection as if nothing happened. */
    CHECK_INT(gp_chunk_append(&c, 5000, 4), GP_OK);
    int64_t ts4[4] = {1000, 2000, 3500, 5000};
    double vs4[4] = {1, 2, 3, 4};
    check_decodes(&c, ts4, vs4, 4);
    gp_chunk_free(&c);
}

/* A byte cap reached mid-sample rolls back exactly; the chunk stays valid. */
static void test_full_by_bytes(void)
{
    uint64_t s = 99;
    enum { N = 200 };
    int64_t ts[N];
    double vs[N];
    uint8_t buf[100];
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init_buf(&c, buf, sizeof buf, N), GP_OK);
    size_t n = 0;
    for (;;) {
        int64_t t = 1000LL * (int64_t)n + (int64_t)(rng_next(&s) % 700);
        double v = gp_bits_f64(rng_next(&s)); /* ~10 bytes a sample */
        size_t size = gp_chunk_size(&c);
        uint8_t copy[100];
        memcpy(copy, buf, sizeof buf);
        int rc = gp_chunk_append(&c, t, v);
        if (rc == GP_ETOOBIG) {
            CHECK_INT(gp_chunk_size(&c), size);
            CHECK(memcmp(copy, buf, sizeof buf) == 0); /* not one bit changed */
            break;
        }
        CHECK_INT(rc, GP_OK);
        CHECK(n < N);
        ts[n] = t;
        vs[n] = v;
        n++;
    }
    CHECK(n >= 5);
    CHECK(gp_chunk_size(&c) <= sizeof buf);
    check_decodes(&c, ts, vs, n);
    /* Reset empties the caller's buffer for the next chunk. */
    gp_chunk_reset(&c);
    CHECK_INT(gp_chunk_count(&c), 0);
    CHECK_INT(gp_chunk_append(&c, ts[0], vs[0]), GP_OK);
    check_decodes(&c, ts, vs, 1);
    gp_chunk_free(&c);

    /* Growable chunk with a byte cap: the same, and an empty chunk never refuses. */
    CHECK_INT(gp_chunk_init(&c, GP_CHUNK_MIN_BYTES, 0), GP_OK);
    CHECK_INT(gp_chunk_append(&c, INT64_MIN, gp_bits_f64(0xffffffffffffffffULL)), GP_OK);
    int rc = GP_OK;
    int64_t t = INT64_MIN;
    for (int i = 0; i < 20 && rc == GP_OK; i++)
        rc = gp_chunk_append(&c, t += INT64_MAX / 8, gp_bits_f64(rng_next(&s)));
    CHECK_INT(rc, GP_ETOOBIG);
    CHECK(gp_chunk_size(&c) <= GP_CHUNK_MIN_BYTES);
    gp_chunk_free(&c);
    gp_chunk_free(NULL);
}

static void test_bad_caps(void)
{
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 10, 0), GP_EUSAGE);
    CHECK_INT(gp_chunk_append(&c, 1, 1), GP_ETOOBIG);
    gp_chunk_free(&c);
    CHECK_INT(gp_chunk_init(&c, 0, GP_CHUNK_MAX_SAMPLES + 1), GP_EUSAGE);
    gp_chunk_free(&c);
    uint8_t buf[8];
    CHECK_INT(gp_chunk_init_buf(&c, buf, sizeof buf, 0), GP_EUSAGE);
    gp_chunk_free(&c);
    /* The 16-bit header at its limit. */
    CHECK_INT(gp_chunk_init(&c, 1 << 20, GP_CHUNK_MAX_SAMPLES), GP_OK);
    for (unsigned i = 0; i < GP_CHUNK_MAX_SAMPLES; i++)
        CHECK_INT(gp_chunk_append(&c, (int64_t)i * 10, 5), GP_OK);
    CHECK_INT(gp_chunk_append(&c, 1LL << 40, 5), GP_ETOOBIG);
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&c, &len);
    struct gp_chunk_iter it;
    CHECK_INT(gp_chunk_iter_init(&it, p, len), GP_OK);
    CHECK_INT(gp_chunk_iter_count(&it), GP_CHUNK_MAX_SAMPLES);
    int64_t t;
    double v;
    unsigned n = 0;
    while (gp_chunk_iter_next(&it, &t, &v) == 1)
        n++;
    CHECK_INT(n, GP_CHUNK_MAX_SAMPLES);
    CHECK_INT(t, (GP_CHUNK_MAX_SAMPLES - 1) * 10);
    gp_chunk_free(&c);
}

/* Decodes arbitrary bytes to the end; returns samples seen, or -1 on GP_EPARSE. */
static int decode_all(const uint8_t *p, size_t len)
{
    struct gp_chunk_iter it;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        return -1;
    unsigned count = gp_chunk_iter_count(&it);
    int64_t t, prev = INT64_MIN;
    double v;
    int n = 0, rc;
    while ((rc = gp_chunk_iter_next(&it, &t, &v)) == 1) {
        if (n > 0 && t <= prev)
            gp_test_fail(__FILE__, __LINE__, "decoded timestamps not increasing");
        prev = t;
        n++;
    }
    if (rc != 0 && rc != GP_EPARSE)
        gp_test_fail(__FILE__, __LINE__, "unexpected rc %d", rc);
    if ((unsigned)n > count)
        gp_test_fail(__FILE__, __LINE__, "more samples than the header says");
    return rc == 0 ? n : -1;
}

static void build_sample_chunk(struct gp_chunk *c, int n)
{
    uint64_t s = 3;
    CHECK_INT(gp_chunk_init(c, 0, 0), GP_OK);
    int64_t t = -123456789;
    for (int i = 0; i < n; i++) {
        t += 15000 + (int64_t)(rng_next(&s) % 3000) * (i % 5 == 0 ? 1000 : 1);
        double v = i % 4 == 0 ? gp_bits_f64(rng_next(&s)) : (double)(i % 9);
        CHECK_INT(gp_chunk_append(c, t, v), GP_OK);
    }
}

static void test_truncated_bytes(void)
{
    struct gp_chunk c;
    build_sample_chunk(&c, 40);
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&c, &len);
    CHECK_INT(decode_all(p, len), 40);
    CHECK_INT(decode_all(NULL, 0), -1);
    for (size_t k = 0; k < len; k++) {
        /* An exact-size copy so ASan catches any read past k. */
        uint8_t *q = malloc(k ? k : 1);
        CHECK(q != NULL);
        memcpy(q, p, k);
        int n = decode_all(q, k);
        CHECK(n == -1); /* the header promises 40: a prefix cannot deliver them */
        free(q);
    }
    gp_chunk_free(&c);
}

static void test_corrupted_bytes(void)
{
    struct gp_chunk c;
    build_sample_chunk(&c, 40);
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&c, &len);
    uint8_t *q = malloc(len);
    CHECK(q != NULL);
    int parse_errors = 0;
    for (size_t bit = 0; bit < len * 8; bit++) {
        memcpy(q, p, len);
        q[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
        if (decode_all(q, len) < 0)
            parse_errors++;
    }
    printf("bit flips: %d of %zu rejected as malformed\n", parse_errors, len * 8);
    CHECK(parse_errors > 0);
    /* Garbage of every kind: all ones, all zeros, a huge count. */
    for (int fill = 0; fill < 256; fill += 85) {
        memset(q, fill, len);
        decode_all(q, len);
    }
    uint8_t ones[16];
    memset(ones, 0xff, sizeof ones);
    CHECK_INT(decode_all(ones, sizeof ones), -1); /* 11 x 0xff: varint too long */
    uint8_t empty[2] = {0, 0};
    CHECK_INT(decode_all(empty, 2), 0);
    free(q);
    gp_chunk_free(&c);
}

/* Decodes p both ways; fails unless both give the same samples, stop at
 * the same place and agree on damage. The decoded count, or -1. */
static int decode_both(const uint8_t *p, size_t len)
{
    struct gp_chunk_iter a, b;
    int ia = gp_chunk_iter_init(&a, p, len), ib = gp_chunk_iter_init(&b, p, len);
    CHECK_INT(ia, ib);
    if (ia != GP_OK)
        return -1;
    unsigned count = gp_chunk_iter_count(&a);
    int64_t *t = malloc((count + 1) * sizeof *t);
    double *v = malloc((count + 1) * sizeof *v);
    CHECK(t && v);
    int k = gp_chunk_iter_decode(&b, t, v, count + 1);
    size_t n = 0;
    int64_t ta;
    double va;
    int rc;
    while ((rc = gp_chunk_iter_next(&a, &ta, &va)) == 1) {
        if (n >= b.read || ta != t[n] || gp_f64_bits(va) != gp_f64_bits(v[n]))
            gp_test_fail(__FILE__, __LINE__, "batch decode differs at sample %zu", n);
        n++;
    }
    CHECK_INT(b.read, n);
    CHECK_INT(k, rc == 0 ? (int)n : GP_EPARSE);
    free(t);
    free(v);
    return rc == 0 ? (int)n : -1;
}

/* A chunk of every encoding: repeated values, values in the last window,
 * new windows, each dod bucket and 64-bit dods; max_bytes large enough
 * for the batch decoder's in-place part to run. */
static void build_mixed_chunk(struct gp_chunk *c, int n)
{
    uint64_t s = 7;
    CHECK_INT(gp_chunk_init(c, 65536, 4000), GP_OK);
    int64_t t = -5000;
    double v = 1;
    for (int i = 0; i < n; i++) {
        static const int64_t steps[] = {1000, 1000, 1001, 9000, 70000, 600000, (int64_t)1 << 40};
        t += steps[rng_next(&s) % 7] + (int64_t)(rng_next(&s) % 3);
        switch (rng_next(&s) % 4) {
        case 0: break;
        case 1: v += 1; break;
        case 2: v = (double)(rng_next(&s) % 100) / 4; break;
        default: v = gp_bits_f64(rng_next(&s)); break;
        }
        CHECK_INT(gp_chunk_append(c, t, v), GP_OK);
    }
}

static void test_batch_decode_matches_iterator(void)
{
    for (int n = 1; n <= 1000; n = n < 4 ? n + 1 : n * 3) {
        struct gp_chunk c;
        build_mixed_chunk(&c, n);
        size_t len;
        const uint8_t *p = gp_chunk_bytes(&c, &len);
        CHECK_INT(decode_both(p, len), n);
        gp_chunk_free(&c);
    }
    /* Every truncation and every bit flip of a chunk longer than the
     * batch decoder's padded tail, in exact-size copies for ASan. */
    struct gp_chunk c;
    build_mixed_chunk(&c, 60);
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&c, &len);
    CHECK(len > 200);
    int bad = 0;
    for (size_t k = 0; k < len; k++) {
        uint8_t *q = malloc(k ? k : 1);
        CHECK(q != NULL);
        memcpy(q, p, k);
        CHECK_INT(decode_both(q, k), -1);
        free(q);
    }
    uint8_t *q = malloc(len);
    CHECK(q != NULL);
    for (size_t bit = 0; bit < len * 8; bit++) {
        memcpy(q, p, len);
        q[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
        bad += decode_both(q, len) < 0;
    }
    CHECK(bad > 0);
    for (int fill = 0; fill < 256; fill += 17) {
        memset(q, fill, len);
        q[0] = 0;
        q[1] = 60;
        decode_both(q, len);
    }
    /* Valid first samples, then garbage where the batch loop starts: all
     * ones (a dod prefix of more than 4 ones), all zeros (repeats until
     * the bytes run out), alternating bits. */
    struct gp_chunk_iter it;
    CHECK_INT(gp_chunk_iter_init(&it, p, len), GP_OK);
    int64_t t0;
    double v0;
    CHECK_INT(gp_chunk_iter_next(&it, &t0, &v0), 1);
    CHECK_INT(gp_chunk_iter_next(&it, &t0, &v0), 1);
    static const uint8_t fills[] = {0xff, 0x00, 0xaa, 0x55};
    for (size_t f = 0; f < sizeof fills; f++) {
        memcpy(q, p, len);
        memset(q + (it.pos + 7) / 8, fills[f], len - (it.pos + 7) / 8);
        decode_both(q, len);
    }
    free(q);
    gp_chunk_free(&c);
}

/* Windows of every width (1..64 bits, new and reused) after each kind
 * of timestamp (dod 0, each bucket, 64 bits): the batch decoder reads a
 * sample from one 57-bit word when it fits and loads again when not, so
 * this crosses that edge in every combination, with and without damage. */
static void test_batch_decode_every_window_width(void)
{
    static const int64_t dods[] = {0, 5, -5, 10000, -10000, 100000, -100000, 10000000};
    enum { N = 2 + 64 * 3 };
    for (size_t d = 0; d < sizeof dods / sizeof dods[0]; d++) {
        struct gp_chunk c;
        CHECK_INT(gp_chunk_init(&c, 65536, N), GP_OK);
        int64_t ts[N], t = 1700000000000LL, delta = 1000000;
        double vs[N];
        uint64_t bits = 0x4059000000000000ULL; /* 100.0 */
        size_t n = 0;
        for (unsigned w = 0; w <= 64 && n < N; w++) {
            /* w 0: the first two samples (varints); then three a width:
             * a new window of w bits, the same window reused, a repeat. */
            for (int k = 0; k < (w ? 3 : 2); k++) {
                int64_t dd = k == 0 ? dods[d] : k == 1 ? -dods[d] : 0;
                delta += dd;
                t += delta;
                if (w && k < 2) {
                    unsigned tz = w <= 56 ? 64 - w - 8 : 0; /* leading zeros 8 (or less) */
                    uint64_t x = k == 0 ? (w == 1 ? 1ULL : 1ULL << (w - 1) | 1) << tz
                                        : 1ULL << (w - 1) << tz;
                    bits ^= x;
                }
                ts[n] = t;
                vs[n] = gp_bits_f64(bits);
                CHECK_INT(gp_chunk_append(&c, ts[n], vs[n]), GP_OK);
                n++;
            }
        }
        CHECK_INT(n, N);
        check_decodes(&c, ts, vs, n);
        size_t len;
        const uint8_t *p = gp_chunk_bytes(&c, &len);
        CHECK_INT(decode_both(p, len), (int)n);
        /* Cut short at every byte: the same damage both ways. */
        for (size_t k = 2; k < len; k += 3) {
            uint8_t *q = malloc(k);
            CHECK(q != NULL);
            memcpy(q, p, k);
            CHECK_INT(decode_both(q, k), -1);
            free(q);
        }
        gp_chunk_free(&c);
    }
}

/* Every XOR width (1..64 significant bits) at every trailing-zero count,
 * between timestamps whose delta-of-delta falls in each bucket: the bit
 * writer sees each field width starting at each bit offset of a byte. */
static void test_every_field_width(void)
{
    enum { N = 2200 };
    static const int64_t dod[] = {0, 1, -1, 63, -64, 255, -256, 2047, -2048, INT64_C(1) << 40,
                                  -(INT64_C(1) << 40), 12345, 0, 0, 7};
    int64_t *ts = malloc(N * sizeof *ts);
    double *vs = malloc(N * sizeof *vs);
    CHECK(ts && vs);
    struct gp_chunk c;
    CHECK_INT(gp_chunk_init(&c, 1u << 20, N), GP_OK);
    uint64_t s = 99, bits = 0x400921fb54442d18ULL;
    int64_t t = 0, delta = INT64_C(1) << 42;
    size_t n = 0;
    for (unsigned w = 1; w <= 64 && n < N; w++)
        for (unsigned tz = 0; w + tz <= 64 && n < N; tz += 1 + w / 16) {
            uint64_t x = w == 64 ? rng_next(&s) | (UINT64_C(1) << 63) | 1
                                 : (((rng_next(&s) & ((UINT64_C(1) << w) - 1)) | (UINT64_C(1) << (w - 1)) | 1)
                                    << tz);
            bits ^= x;
            delta += dod[n % (sizeof dod / sizeof dod[0])];
            t += delta;
            ts[n] = t;
            vs[n] = gp_bits_f64(bits);
            CHECK_INT(gp_chunk_append(&c, ts[n], vs[n]), GP_OK);
            n++;
        }
    CHECK(n > 1000);
    check_decodes(&c, ts, vs, n);
    gp_chunk_free(&c);
    free(ts);
    free(vs);
}

const struct gp_test gp_tests_chunk[] = {
    {"regular_scrapes_compress", test_regular_scrapes_compress},
    {"jittered_timestamps", test_jittered_timestamps},
    {"random_doubles", test_random_doubles},
    {"special_values", test_special_values},
    {"int64_edges", test_int64_edges},
    {"rejects_late_and_duplicate", test_rejects_late_and_duplicate},
    {"full_by_bytes", test_full_by_bytes},
    {"bad_caps", test_bad_caps},
    {"truncated_bytes", test_truncated_bytes},
    {"corrupted_bytes", test_corrupted_bytes},
    {"batch_decode_matches_iterator", test_batch_decode_matches_iterator},
    {"batch_decode_every_window_width", test_batch_decode_every_window_width},
    {"every_field_width", test_every_field_width},
    {0},
};
