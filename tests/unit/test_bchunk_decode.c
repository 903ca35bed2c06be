/*
 * test_bchunk_decode.c - the block-chunk decoder proved bit for bit
 * against what was encoded, for every length 0..600 and series shaped
 * like a GPU fleet's and like an adversary's.
 *
 * The decoder has two ways through a group of 32 values: the one-pass
 * path (group_sum, and the constant-step store of times), taken while 8
 * bytes can be loaded past the group, and the careful path (group_get
 * then a sum, or bit by bit for widths over 56), taken near the end of
 * the loadable bytes, for a group cut by a window's end, and for short
 * groups. The same chunk is decoded both ways: alone (the stream ends at
 * the buffer's end, so its last groups go the careful way) and inside a
 * file with slack after it (every full group goes the one-pass way, and
 * the slack's bits must be masked off), whole and by windows that end
 * on, just before and just after a group's border.
 */
#include "lib/bits.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "store/batch.h"
#include "store/store_fmt.h"
#include "test.h"
#include "test_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 600
#define SLACK 64
#define T1 1700000000000LL

static struct gp_test_rng rng;

static uint64_t rnd(void) { return gp_test_rnd(&rng); }

static int64_t rnd_in(int64_t lo, int64_t hi) { return gp_test_rnd_in(&rng, lo, hi); }

enum {
    TS_REGULAR,  /* exactly 1 s: width-0 time groups */
    TS_JITTER,   /* 1 s and a scrape's few ms */
    TS_UNEVEN,   /* bursts of 1 ms, gaps of minutes, negative times */
    TS_WIDE,     /* jumps of 2^56 ms: delta-of-delta groups over 56 bits */
    TS_KINDS
};

static void make_times(int kind, size_t n, int64_t *t)
{
    int64_t x = kind == TS_UNEVEN ? -5000 : kind == TS_WIDE ? INT64_MIN / 2 : T1;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case TS_REGULAR: x += 1000; break;
        case TS_JITTER: x += 1000 + rnd_in(-4, 4); break;
        case TS_UNEVEN: x += i % 45 == 44 ? 7 * 60000 + rnd_in(0, 999) : i % 9 == 4 ? 1 : rnd_in(1, 20000); break;
        default: x += i % 20 == 7 ? (int64_t)1 << 56 : rnd_in(1, 1000000); break;
        }
        t[i] = x;
    }
}

enum {
    V_UTIL,      /* integer %, a random walk in 0..100 */
    V_CONST,     /* one value: width-0 value groups */
    V_ENERGY,    /* a counter of mJ near 10^12: deltas of deltas */
    V_RATIO,     /* 6 decimals in 0..1 */
    V_POWER,     /* mW as W: 3 decimals */
    V_NEGATIVE,  /* decimals around 0, both signs */
    V_SPARSE_NAN,/* NaN, the stale marker, ±Inf, -0.0, 0.1 + 0.2 at 1/20: exceptions */
    V_DENSE_NAN, /* the same at 1/4: a Gorilla chunk */
    V_JUMPS,     /* a ramp with spikes near ±2^53: value groups of 55-56 bits,
                  * the widest a decimal's mantissa (under 2^53) gives */
    V_RAMP,      /* an exact line: width-0 groups of deltas of deltas */
    V_KINDS
};

static double odd_value(size_t i)
{
    static const uint64_t bits[] = {
        UINT64_C(0x7ff8000000000000), /* NaN */
        GP_STALE_NAN_BITS,
        UINT64_C(0x7ff0000000000000), /* +Inf */
        UINT64_C(0xfff0000000000000), /* -Inf */
        UINT64_C(0x8000000000000000), /* -0.0 */
        UINT64_C(0x7ff8dead0000beef), /* NaN with a payload */
    };
    if (i % 7 == 6)
        return 0.1 + 0.2;
    return gp_bits_f64(bits[i % (sizeof bits / sizeof bits[0])]);
}

static void make_values(int kind, size_t n, double *v)
{
    int64_t m = rnd_in(0, 100), e = (int64_t)1 << 40;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case V_UTIL:
            m += rnd_in(-7, 7);
            m = m < 0 ? 0 : m > 100 ? 100 : m;
            v[i] = (double)m;
            break;
        case V_CONST: v[i] = 312.457; break;
        case V_ENERGY:
            e += 250000 + rnd_in(-3000, 3000);
            v[i] = (double)e;
            break;
        case V_RATIO: v[i] = (double)rnd_in(0, 1000000) / 1e6; break;
        case V_POWER: v[i] = (double)rnd_in(60000, 700000) / 1e3; break;
        case V_NEGATIVE: v[i] = (double)rnd_in(-50000, 50000) / 100; break;
        case V_SPARSE_NAN: v[i] = i % 20 == 13 ? odd_value(i / 20) : (double)rnd_in(0, 99); break;
        case V_DENSE_NAN: v[i] = i % 4 == 1 ? odd_value(i / 4) : (double)rnd_in(0, 99); break;
        case V_JUMPS:
            v[i] = (double)(int64_t)(3 * i) + (i % 97 == 50 ? 9.0e15 : i % 97 == 80 ? -9.0e15 : 0);
            break;
        default: v[i] = 17.0 + 3.0 * (double)i; break;
        }
    }
}

struct seen {
    size_t packed[2], gorilla, exceptions; /* packed by mode */
};

/* Checks samples [lo, hi) of a decode against the input. */
static void same(const char *how, size_t n, int tk, int vk, const int64_t *t, const double *v,
                 const int64_t *tt, const double *vv, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        if (tt[i] != t[i] || gp_f64_bits(vv[i]) != gp_f64_bits(v[i]))
            gp_test_fail(__FILE__, __LINE__,
                         "%s: n=%zu times %d values %d sample %zu: %lld/%016llx, want %lld/%016llx", how, n,
                         tk, vk, i, (long long)tt[i], (unsigned long long)gp_f64_bits(vv[i]),
                         (long long)t[i], (unsigned long long)gp_f64_bits(v[i]));
}

/* Decodes [t[a], t[z]] both ways (the chunk alone, and inside the
 * file f with slack) and checks the count, the first index and the
 * samples. */
static void window(const uint8_t *p, size_t len, const struct gp_st_bfile *bf, const uint8_t *pf,
                   size_t n, int tk, int vk, const int64_t *t, const double *v, size_t a, size_t z,
                   int64_t *tt, double *vv)
{
    size_t first = 999;
    CHECK_INT(gp_st_bchunk_decode_window(p, len, t[a], t[z], tt, vv, n, &first), (int)z + 1);
    CHECK_INT(first, a);
    same("window", n, tk, vk, t, v, tt, vv, a, z + 1);
    first = 999;
    CHECK_INT(gp_st_bchunk_decode_in(bf, pf, len, t[a], t[z], 0, tt, vv, n, &first), (int)z + 1);
    CHECK_INT(first, a);
    same("window in a file", n, tk, vk, t, v, tt, vv, a, z + 1);
}

static void round_trip(size_t n, int tk, int vk, struct gp_st_bchunk_scratch *sc, struct seen *s)
{
    int64_t t[MAXN], tt[MAXN];
    double v[MAXN], vv[MAXN];
    make_times(tk, n, t);
    make_values(vk, n, v);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, n, sc, &b), GP_OK);
    const uint8_t *p = (const uint8_t *)b.data;
    size_t len = b.len;
    struct gp_st_bchunk_info in;
    CHECK_INT(gp_st_bchunk_info(p, len, &in), GP_OK);
    if (in.enc == 0) {
        s->gorilla++;
    } else {
        s->packed[in.mode]++;
        s->exceptions += in.nexc;
    }
    /* The chunk alone: its last groups end at the buffer's end. */
    memset(tt, 0x5a, sizeof tt);
    memset(vv, 0x5a, sizeof vv);
    CHECK_INT(gp_st_bchunk_decode(p, len, tt, vv, n), (int)n);
    same("alone", n, tk, vk, t, v, tt, vv, 0, n);
    /* Inside a file: slack of set bits after it, which must not leak in. */
    uint8_t *f = malloc(len + SLACK);
    CHECK(f);
    memcpy(f, p, len);
    memset(f + len, 0xff, SLACK);
    struct gp_st_bfile bf = {.data = f, .len = len + SLACK};
    size_t first = 999;
    memset(tt, 0x5a, sizeof tt);
    memset(vv, 0x5a, sizeof vv);
    CHECK_INT(gp_st_bchunk_decode_in(&bf, f, len, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first), (int)n);
    CHECK_INT(first, 0);
    same("in a file", n, tk, vk, t, v, tt, vv, 0, n);
    /* Windows ending on, before and after each group's border (the value
     * groups start at 1 or 2), and from a random first sample. */
    for (size_t g = 1; g < n + 33; g += 32) {
        if (g > 100 && g + 100 < n)
            continue; /* the middle groups are as the first ones */
        for (size_t d = 0; d < 4; d++) {
            size_t z = g + d >= 2 ? g + d - 2 : 0;
            if (z >= n)
                continue;
            window(p, len, &bf, f, n, tk, vk, t, v, 0, z, tt, vv);
            size_t a = (size_t)rnd() % (z + 1);
            window(p, len, &bf, f, n, tk, vk, t, v, a, z, tt, vv);
        }
    }
    /* Every truncation of a short chunk is refused, alone and in the file. */
    if (n <= 70)
        for (size_t k = 0; k < len; k++) {
            CHECK_INT(gp_st_bchunk_decode(p, k, tt, vv, n), GP_EPARSE);
            CHECK_INT(gp_st_bchunk_decode_in(&bf, f, k, INT64_MIN, INT64_MAX, 1, tt, vv, n, &first),
                      GP_EPARSE);
        }
    free(f);
    gp_buf_free(&b);
}

/* Every length 0..600 (0 is refused), every kind of times against every
 * kind of values; and the test reached what it means to: both value
 * modes, exceptions and the Gorilla fallback. */
static void test_every_length(void)
{
    rng.state = 16;
    struct gp_st_bchunk_scratch sc = {0};
    struct seen s = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int64_t t0 = T1;
    double v0 = 1;
    CHECK_INT(gp_st_bchunk_encode(&t0, &v0, 0, &sc, &b), GP_EUSAGE);
    gp_buf_free(&b);
    for (size_t n = 1; n <= MAXN; n++)
        for (int vk = 0; vk < V_KINDS; vk++)
            round_trip(n, (int)((n + (size_t)vk) % TS_KINDS), vk, &sc, &s);
    /* The lengths around a group's end, with every kind of times. */
    static const size_t edge[] = {2, 3, 33, 34, 35, 65, 66, 67, 481, 482, 483};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int tk = 0; tk < TS_KINDS; tk++)
            for (int vk = 0; vk < V_KINDS; vk++)
                round_trip(edge[i], tk, vk, &sc, &s);
    printf("bchunk decode: %zu chunks of mode 0, %zu of mode 1, %zu Gorilla, %zu exceptions\n",
           s.packed[0], s.packed[1], s.gorilla, s.exceptions);
    CHECK(s.packed[0] > 1000 && s.packed[1] > 1000 && s.gorilla > 100 && s.exceptions > 1000);
    gp_st_bchunk_scratch_free(&sc);
}

/* A time group wider than 56 bits is read bit by bit, both ways; the
 * wide times must give such groups, or the test above proves less than
 * it says. */
static void test_wide_groups_reached(void)
{
    rng.state = 7;
    struct gp_st_bchunk_scratch sc = {0};
    int64_t t[200];
    double v[200];
    make_times(TS_WIDE, 200, t);
    make_values(V_UTIL, 200, v);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_st_bchunk_encode(t, v, 200, &sc, &b), GP_OK);
    struct gp_st_bchunk_info in;
    CHECK_INT(gp_st_bchunk_info((const uint8_t *)b.data, b.len, &in), GP_OK);
    CHECK_INT(in.enc, 1);
    /* 198 delta-of-deltas in 7 groups, each with a jump of 2^56 (58 bits) */
    CHECK(in.time_bits >= 6 * 32 * 57);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
}

/* Encodes n samples into b (reset first). */
static void encode(const int64_t *t, const double *v, size_t n, struct gp_st_bchunk_scratch *sc,
                   struct gp_buf *b)
{
    gp_buf_reset(b);
    CHECK_INT(gp_st_bchunk_encode(t, v, n, sc, b), GP_OK);
    CHECK_INT(((const uint8_t *)b->data)[0], 1);
}

/* The decoder keeps the times of the chunks a thread decoded last and
 * copies them for a chunk whose time stream has the same bytes (a node's
 * GPUs share its scrape times). Chunks alike in everything but a few
 * times, in a few bits at the stream's end, or in their values, decoded
 * in turn, each give their own samples; a cut copy of a kept chunk is
 * refused; a window after a whole decode counts its own samples. */
static void time_cache(size_t N)
{
    rng.state = 19;
    enum { ROWS = 1024, KINDS = 6 };
    CHECK(N <= ROWS);
    struct gp_st_bchunk_scratch sc = {0};
    static int64_t t[KINDS][ROWS], tt[ROWS];
    static double v[KINDS][ROWS], vv[ROWS];
    struct gp_buf b[KINDS];
    make_times(TS_JITTER, N, t[0]);
    for (int k = 0; k < KINDS; k++) {
        if (k)
            memcpy(t[k], t[0], sizeof t[0]);
        make_values(k % 2 ? V_POWER : V_UTIL, N, v[k]);
    }
    t[1][N - 1] += 2;        /* the last time: the stream's last bits */
    t[2][200] += 1;          /* a time in the middle: two delta-of-deltas */
    t[3][2] -= 1;            /* the first delta-of-delta */
    for (size_t i = 300; i < N; i++)
        t[4][i] += 1;        /* one step longer from sample 300 on */
    /* 5: the times of 0, other values (the hit) */
    for (int k = 0; k < KINDS; k++) {
        gp_buf_init(&b[k], 0);
        encode(t[k], v[k], N, &sc, &b[k]);
    }
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < KINDS; k++) {
            int j = round == 1 ? KINDS - 1 - k : k;
            memset(tt, 0x5a, sizeof tt);
            CHECK_INT(gp_st_bchunk_decode((const uint8_t *)b[j].data, b[j].len, tt, vv, N), N);
            same("cached times", N, j, round, t[j], v[j], tt, vv, 0, N);
            size_t first = 999;
            int64_t to = t[j][N / 2];
            CHECK_INT(gp_st_bchunk_decode_window((const uint8_t *)b[j].data, b[j].len, t[j][10], to,
                                                 tt, vv, N, &first),
                      N / 2 + 1);
            CHECK_INT(first, 10);
            same("cached times, a window", N, j, round, t[j], v[j], tt, vv, 10, N / 2 + 1);
        }
    /* A chunk decoded first by a window that ends halfway (its later
     * times not decoded), then whole. */
    for (size_t i = 0; i < N; i++)
        t[1][i] = t[0][i] + 3600000;
    encode(t[1], v[1], N, &sc, &b[1]);
    size_t first1;
    CHECK_INT(gp_st_bchunk_decode_window((const uint8_t *)b[1].data, b[1].len, INT64_MIN,
                                         t[1][N / 2], tt, vv, N, &first1),
              N / 2 + 1);
    memset(tt, 0x5a, sizeof tt);
    CHECK_INT(gp_st_bchunk_decode((const uint8_t *)b[1].data, b[1].len, tt, vv, N), N);
    same("whole after a window", N, 1, 0, t[1], v[1], tt, vv, 0, N);
    /* Cut copies of a kept chunk, through its times and into its values,
     * whole and by a window (which does not check the stream's end). */
    const uint8_t *p = (const uint8_t *)b[0].data;
    CHECK_INT(gp_st_bchunk_decode(p, b[0].len, tt, vv, N), N);
    for (size_t len = 1; len < b[0].len; len += len < 40 ? 1 : 7) {
        size_t first;
        CHECK_INT(gp_st_bchunk_decode(p, len, tt, vv, N), GP_EPARSE);
        CHECK_INT(gp_st_bchunk_decode_window(p, len, INT64_MIN, INT64_MAX, tt, vv, N, &first),
                  GP_EPARSE);
    }
    CHECK_INT(gp_st_bchunk_decode(p, b[0].len, tt, vv, N), N);
    same("cached times after cut copies", N, 0, 0, t[0], v[0], tt, vv, 0, N);
    /* Two chunks whose bytes differ only in the time stream's last,
     * partial byte (the bits past the stream there are the values'). */
    struct gp_st_bchunk_info in0;
    CHECK_INT(gp_st_bchunk_info(p, b[0].len, &in0), GP_OK);
    int found = 0;
    /* a power of two moves the last delta-of-delta's top bits, the
     * stream's last ones */
    for (int j = 0; j < 40 && !found && (in0.time_bits & 7); j++) {
        memcpy(t[1], t[0], sizeof t[0]);
        t[1][N - 1] += (j % 2 ? -1 : 1) * ((int64_t)1 << (j / 2));
        encode(t[1], v[0], N, &sc, &b[1]);
        const uint8_t *q = (const uint8_t *)b[1].data;
        size_t last = in0.head_bytes + (size_t)(in0.time_bits >> 3), diff = 0, at = 0;
        for (size_t i = 0; b[1].len == b[0].len && i < b[0].len; i++)
            if (p[i] != q[i])
                diff++, at = i;
        if (b[1].len != b[0].len || diff != 1 || at != last)
            continue;
        found = 1;
        for (int round = 0; round < 2; round++)
            for (int k = 0; k < 2; k++) {
                CHECK_INT(gp_st_bchunk_decode((const uint8_t *)b[k].data, b[k].len, tt, vv, N), N);
                same("times apart in the last byte", N, k, round, t[k], v[0], tt, vv, 0, N);
            }
    }
    CHECK(found);
    for (int k = 0; k < KINDS; k++)
        gp_buf_free(&b[k]);
    gp_st_bchunk_scratch_free(&sc);
}

/* At a head chunk's size, then at a block's 15-minute piece of a 1 s
 * series (900: the kept slots grow). */
static void test_time_cache(void)
{
    time_cache(480);
    time_cache(900);
}

const struct gp_test gp_tests_bchunk_decode[] = {
    {"every_length", test_every_length},
    {"wide_groups_reached", test_wide_groups_reached},
    {"time_cache", test_time_cache},
    {0},
};
