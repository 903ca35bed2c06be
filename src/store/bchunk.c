/*
 * bchunk.c - the sample encoding of compacted blocks (store_fmt.h,
 * "block chunks"): decimal scaling plus bit-packed deltas, with the
 * Gorilla chunk as the fallback.
 *
 * Gorilla's XOR coding spends 20-50 bits on a value such as 312.457 W
 * whose neighbours differ in the third decimal, because the mantissas of
 * decimal fractions share few bits. The values a GPU fleet sends are
 * mostly such decimals (NVML's milliwatts as W, integer %, °C, MHz, MiB),
 * so a block chunk, written once and read many times, stores them the
 * way VictoriaMetrics does: as integers m with v == m / 10^e for one
 * exponent e per chunk, and then only the differences between neighbours.
 *
 * Layout (little-endian varints, then one LSB-first bit stream):
 *
 *   u8       encoding: 0 = a Gorilla chunk follows (chunk.h), 1 = packed,
 *            2 = packed, the times in a shared time record (below)
 *   packed:
 *   uvarint  n (1..65535)
 *   varint   t0 (zigzag)
 *   uvarint  t1 - t0                      (n >= 2)
 *   u8       e | mode << 4                e in 0..15; mode 0: the value
 *                                         stream holds deltas of m,
 *                                         mode 1: deltas of deltas,
 *                                         mode 2: every m is m0, and
 *                                         there is no value stream
 *                                         (encoding 2 in block files of
 *                                         version 3 only)
 *   varint   m0 (zigzag)
 *   varint   m1 - m0 (zigzag)             (mode 1, n >= 2)
 *   uvarint  x, then x exceptions: uvarint gap to the index of the
 *            previous exception (+1), u64 raw value bits. An exception
 *            is a value that is no such decimal (NaN, the stale marker,
 *            ±Inf, -0.0, 0.1 + 0.2): its m repeats the previous one.
 *   bits     n - 2 timestamp delta-of-deltas (zigzag), then the value
 *            stream (n - 1 deltas or n - 2 deltas of deltas), each in
 *            groups of 32: a 7-bit width w (0..64), then w bits a value.
 *            Zero bits pad the last byte.
 *
 * Encoding 2 (block files only) is encoding 1 without t0, t1 - t0 and the
 * timestamp delta-of-deltas: a uvarint after n gives the file offset of a
 * time record (store_fmt.h: u32 CRC-32C, uvarint length, then uvarint n,
 * t0, t1 - t0 and the packed delta-of-deltas as above) written earlier in
 * the same file. Every series of a node has the node's scrape times, and
 * with a scrape's jitter of a few ms those take ~4 bits a sample, nearly
 * half of a block chunk; compaction writes them once per node and piece.
 *
 * A regular 1 s series costs 7 bits per 32 timestamps; a constant value
 * 7 bits per 32 samples (none in mode 2: a third of a GPU's families,
 * memory used, clocks, XID and error counters, hold still for 15
 * minutes at a time); a percentage moving by a few points 4 bits a
 * sample. The encoder falls back to Gorilla when more than 1/16 of the
 * values are exceptions. The decoder checks every length and that the
 * stream ends exactly at the end of the bytes.
 */
#include "store/store_fmt.h"

#include "lib/bits.h"
#include "lib/crc32c.h"
#include "lib/err.h"
#include "lib/varint.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GROUP 32u
#define MAX_E 15
#define EXACT_LIMIT 9007199254740992.0 /* 2^53: every integer below is a double */

static const double p10[MAX_E + 1] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

static uint64_t zz(int64_t v) { return gp_zigzag((uint64_t)v); }
static int64_t unzz(uint64_t u) { return gp_u64_to_i64(gp_unzigzag(u)); }

/* m with m / 10^e == v bit for bit: 1, else 0. */
static int decimal_at(double v, int e, int64_t *m)
{
    double x = v * p10[e];
    if (!(x > -EXACT_LIMIT && x < EXACT_LIMIT))
        return 0; /* NaN, ±Inf, too large */
    int64_t c = llround(x);
    double back = (double)c / p10[e];
    if (gp_f64_bits(back) != gp_f64_bits(v))
        return 0; /* -0.0 also lands here: 0 / 10^e is +0.0 */
    *m = c;
    return 1;
}

/* The smallest e at which v is a decimal, or MAX_E + 1. */
static int min_e(double v)
{
    int64_t m;
    for (int e = 0; e <= MAX_E; e++)
        if (decimal_at(v, e, &m))
            return e;
    return MAX_E + 1;
}

/* A float sum of decimals (a rollup's sum of a minute's samples) carries
 * the rounding of each addition: 312.457 + ... lands a few ulps off the
 * decimal it stands for, which then packs as no decimal at all. The
 * nearest decimal of the fewest digits after the point (0..MAX_E) within
 * max_ulps of v is what the exact sum was; v itself where there is none
 * (not finite, zero, or too far from every such decimal). */
double gp_st_decimal_snap(double v, unsigned max_ulps)
{
    if (!isfinite(v) || v == 0)
        return v;
    int64_t vb = (int64_t)gp_f64_bits(v);
    for (int e = 0; e <= MAX_E; e++) {
        double x = v * p10[e];
        if (!(x > -EXACT_LIMIT && x < EXACT_LIMIT))
            return v;
        int64_t c = llround(x);
        if (c == 0)
            continue;
        double back = (double)c / p10[e];
        /* same sign (c != 0 keeps v's), so the bit patterns order as the values */
        int64_t d = (int64_t)gp_f64_bits(back) - vb;
        if (d >= -(int64_t)max_ulps && d <= (int64_t)max_ulps)
            return back;
    }
    return v;
}

/* ---- bit writer over a gp_buf ---- */

struct bw {
    struct gp_buf *out;
    uint64_t acc;
    unsigned n;
};

static void bw_put(struct bw *b, uint64_t v, unsigned w)
{
    if (w == 0)
        return;
    if (w < 64)
        v &= ((uint64_t)1 << w) - 1;
    b->acc |= v << b->n;
    if (b->n + w >= 64) {
        uint8_t bytes[8];
        for (int i = 0; i < 8; i++)
            bytes[i] = (uint8_t)(b->acc >> (8 * i));
        gp_buf_append(b->out, bytes, 8);
        unsigned used = 64 - b->n;
        b->acc = used < 64 ? v >> used : 0;
        b->n = b->n + w - 64;
    } else {
        b->n += w;
    }
}

static void bw_finish(struct bw *b)
{
    uint8_t bytes[8];
    unsigned k = (b->n + 7) / 8;
    for (unsigned i = 0; i < k; i++)
        bytes[i] = (uint8_t)(b->acc >> (8 * i));
    gp_buf_append(b->out, bytes, k);
    b->acc = 0;
    b->n = 0;
}

static unsigned width(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }

/* Bits that packing these values in groups takes. */
static uint64_t packed_bits(const uint64_t *u, size_t n)
{
    uint64_t bits = 0;
    for (size_t g = 0; g < n; g += GROUP) {
        size_t k = n - g < GROUP ? n - g : GROUP;
        uint64_t or = 0;
        for (size_t i = 0; i < k; i++)
            or |= u[g + i];
        bits += 7 + k * width(or);
    }
    return bits;
}

static void pack(struct bw *b, const uint64_t *u, size_t n)
{
    for (size_t g = 0; g < n; g += GROUP) {
        size_t k = n - g < GROUP ? n - g : GROUP;
        uint64_t or = 0;
        for (size_t i = 0; i < k; i++)
            or |= u[g + i];
        unsigned w = width(or);
        bw_put(b, w, 7);
        for (size_t i = 0; i < k; i++)
            bw_put(b, u[g + i], w);
    }
}

static int encode_gorilla(const int64_t *t, const double *v, size_t n, struct gp_buf *out)
{
    struct gp_chunk c;
    int rc = gp_chunk_init(&c, (size_t)GP_CHUNK_MAX_SAMPLES * 20u, GP_CHUNK_MAX_SAMPLES);
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        rc = gp_chunk_append(&c, t[i], v[i]);
    if (rc == GP_OK) {
        size_t len;
        const uint8_t *p = gp_chunk_bytes(&c, &len);
        gp_buf_putc(out, 0);
        gp_buf_append(out, p, len);
        rc = out->err;
    }
    gp_chunk_free(&c);
    return rc;
}

static int scratch_reserve(struct gp_st_bchunk_scratch *sc, size_t n)
{
    if (sc->cap >= n)
        return GP_OK;
    uint64_t *u = realloc(sc->u, n * sizeof *u);
    if (!u)
        return GP_ENOMEM;
    sc->u = u;
    int64_t *m = realloc(sc->m, n * sizeof *m);
    if (!m)
        return GP_ENOMEM;
    sc->m = m;
    sc->cap = n;
    return GP_OK;
}

static int check_times(const int64_t *t, size_t n)
{
    if (n == 0 || n > GP_CHUNK_MAX_SAMPLES)
        return GP_EUSAGE;
    for (size_t i = 1; i < n; i++)
        if (t[i] <= t[i - 1])
            return GP_EUSAGE;
    return GP_OK;
}

/* How the values pack: the exponent, the mode and the exceptions' count
 * (sc->m holds the mantissas), or -1 where they are not decimals enough
 * and the chunk is Gorilla's. */
struct vplan {
    int e, mode;
    size_t nexc;
};

static int plan_values(const double *v, size_t n, int constant_ok, struct gp_st_bchunk_scratch *sc,
                       struct vplan *pl)
{
    /* The exponent: the smallest one that 15/16 of the values fit. */
    size_t hist[MAX_E + 2] = {0};
    for (size_t i = 0; i < n; i++)
        hist[min_e(v[i])]++;
    size_t allowed = n / 16, cum = 0;
    int e = -1;
    for (int k = 0; k <= MAX_E; k++) {
        cum += hist[k];
        if (n - cum <= allowed) {
            e = k;
            break;
        }
    }
    if (e < 0)
        return -1;
    /* m per value; exceptions keep the previous m. same: every decimal
     * has the m of the first (the exceptions' m do not matter). */
    size_t nexc = 0;
    int64_t prev = 0, c = 0;
    int have = 0, same = constant_ok;
    for (size_t i = 0; i < n; i++) {
        int64_t m;
        if (decimal_at(v[i], e, &m)) {
            sc->m[i] = prev = m;
            same &= !have || m == c;
            c = have ? c : m;
            have = 1;
        } else {
            sc->m[i] = prev;
            nexc++;
        }
    }
    if (nexc > allowed)
        return -1;
    /* Choose no stream at all, deltas or deltas of deltas for the values. */
    int mode = 0;
    uint64_t *u = sc->u;
    if (same && have) {
        mode = 2;
        for (size_t i = 0; i < n; i++)
            sc->m[i] = c;
    } else if (n >= 3) {
        for (size_t i = 1; i < n; i++)
            u[i - 1] = zz(sc->m[i] - sc->m[i - 1]);
        uint64_t d1 = packed_bits(u, n - 1);
        for (size_t i = 2; i < n; i++)
            u[i - 2] = zz((sc->m[i] - sc->m[i - 1]) - (sc->m[i - 1] - sc->m[i - 2]));
        uint64_t d2 = packed_bits(u, n - 2) + 8 * 3;
        mode = d2 < d1;
    }
    *pl = (struct vplan){e, mode, nexc};
    return 0;
}

/* The values' header: e | mode << 4, m0, (m1 - m0), the exceptions. */
static void put_value_header(const double *v, size_t n, const struct gp_st_bchunk_scratch *sc,
                             const struct vplan *pl, struct gp_buf *out)
{
    gp_buf_putc(out, (char)(pl->e | pl->mode << 4));
    gp_buf_put_uvarint(out, zz(sc->m[0]));
    if (pl->mode == 1)
        gp_buf_put_uvarint(out, zz(sc->m[1] - sc->m[0]));
    gp_buf_put_uvarint(out, pl->nexc);
    size_t last = 0;
    int first = 1;
    for (size_t i = 0; i < n && pl->nexc; i++) {
        int64_t m;
        if (decimal_at(v[i], pl->e, &m))
            continue;
        gp_buf_put_uvarint(out, first ? i : i - last - 1);
        uint8_t raw[8];
        uint64_t bits = gp_f64_bits(v[i]);
        for (int k = 0; k < 8; k++)
            raw[k] = (uint8_t)(bits >> (8 * k));
        gp_buf_append(out, raw, 8);
        last = i;
        first = 0;
    }
}

/* The times' header: t0, t1 - t0. */
static void put_time_header(const int64_t *t, size_t n, struct gp_buf *out)
{
    gp_buf_put_uvarint(out, zz(t[0]));
    if (n >= 2)
        gp_buf_put_uvarint(out, (uint64_t)t[1] - (uint64_t)t[0]);
}

static void pack_times(struct bw *b, const int64_t *t, size_t n, uint64_t *u)
{
    if (n < 3)
        return;
    for (size_t i = 2; i < n; i++)
        u[i - 2] = zz((int64_t)(((uint64_t)t[i] - (uint64_t)t[i - 1]) -
                                ((uint64_t)t[i - 1] - (uint64_t)t[i - 2])));
    pack(b, u, n - 2);
}

static void pack_values(struct bw *b, const struct gp_st_bchunk_scratch *sc, size_t n, int mode)
{
    uint64_t *u = sc->u;
    const int64_t *m = sc->m;
    if (mode == 2)
        return;
    if (mode == 0) {
        for (size_t i = 1; i < n; i++)
            u[i - 1] = zz(m[i] - m[i - 1]);
        pack(b, u, n - 1);
    } else {
        for (size_t i = 2; i < n; i++)
            u[i - 2] = zz((m[i] - m[i - 1]) - (m[i - 1] - m[i - 2]));
        pack(b, u, n - 2);
    }
}

/* Checks the times and sizes the scratch arrays. */
static int prepare(const int64_t *t, size_t n, struct gp_st_bchunk_scratch *sc)
{
    int rc = check_times(t, n);
    return rc != GP_OK ? rc : scratch_reserve(sc, n);
}

/* A packed chunk (encoding 1, or 2 with the times at toff when shared),
 * or Gorilla's where the values are not decimals. */
static int encode(const int64_t *t, const double *v, size_t n, int shared, int constant_ok,
                  uint64_t toff, struct gp_st_bchunk_scratch *sc, struct gp_buf *out)
{
    int rc = prepare(t, n, sc);
    if (rc != GP_OK)
        return rc;
    struct vplan pl;
    if (plan_values(v, n, shared && constant_ok, sc, &pl) < 0)
        return encode_gorilla(t, v, n, out);
    gp_buf_putc(out, shared ? 2 : 1);
    gp_buf_put_uvarint(out, n);
    if (shared)
        gp_buf_put_uvarint(out, toff);
    else
        put_time_header(t, n, out);
    put_value_header(v, n, sc, &pl, out);
    struct bw b = {out, 0, 0};
    if (!shared)
        pack_times(&b, t, n, sc->u);
    pack_values(&b, sc, n, pl.mode);
    bw_finish(&b);
    return out->err;
}

int gp_st_bchunk_encode(const int64_t *t, const double *v, size_t n, struct gp_st_bchunk_scratch *sc,
                        struct gp_buf *out)
{
    return encode(t, v, n, 0, 0, 0, sc, out);
}

int gp_st_bchunk_encode_block(const int64_t *t, const double *v, size_t n, uint64_t toff,
                              uint32_t version, struct gp_st_bchunk_scratch *sc, struct gp_buf *out)
{
    return encode(t, v, n, 1, version >= 3, toff, sc, out);
}

int gp_st_btimes_encode(const int64_t *t, size_t n, struct gp_st_bchunk_scratch *sc,
                        struct gp_buf *out)
{
    int rc = prepare(t, n, sc);
    if (rc != GP_OK)
        return rc;
    size_t at = out->len;
    gp_buf_put_uvarint(out, n);
    put_time_header(t, n, out);
    struct bw b = {out, 0, 0};
    pack_times(&b, t, n, sc->u);
    bw_finish(&b);
    /* Then the prefix in front: the CRC and the body's length. */
    size_t len = out->len - at;
    uint8_t hdr[4 + 10];
    uint8_t *h = gp_uvarint_put(hdr + 4, len);
    size_t hl = (size_t)(h - hdr);
    gp_buf_append(out, hdr, hl);
    if (out->err)
        return out->err;
    uint8_t *p = (uint8_t *)out->data + at;
    memmove(p + hl, p, len);
    gp_put_le32(hdr, gp_crc32c(0, p + hl, len));
    memcpy(p, hdr, hl);
    return GP_OK;
}

void gp_st_bchunk_scratch_free(struct gp_st_bchunk_scratch *sc)
{
    free(sc->u);
    free(sc->m);
    memset(sc, 0, sizeof *sc);
}

/* ---- decoder ---- */

struct br {
    const uint8_t *p;
    size_t len;   /* bytes */
    size_t pos;   /* bit position */
    size_t avail; /* bytes from p that may be loaded (>= len): inside a
                   * block file, to its end, so that a stream's last
                   * groups take the fast path too; their bits past len
                   * are masked off */
};

static int br_get(struct br *r, unsigned w, uint64_t *out)
{
    if (w == 0) {
        *out = 0;
        return 0;
    }
    if (w > r->len * 8 - r->pos)
        return -1;
    size_t byte = r->pos >> 3;
    unsigned off = (unsigned)(r->pos & 7);
    uint64_t v;
    if (w <= 56 && byte + 8 <= r->avail) {
        v = (gp_get_le64(r->p + byte) >> off) & (((uint64_t)1 << w) - 1);
    } else {
        v = 0;
        unsigned got = 0;
        size_t pos = r->pos;
        while (got < w) {
            unsigned o = (unsigned)(pos & 7), take = 8 - o < w - got ? 8 - o : w - got;
            v |= (uint64_t)((r->p[pos >> 3] >> o) & ((1u << take) - 1)) << got;
            got += take;
            pos += take;
        }
    }
    r->pos += w;
    *out = v;
    return 0;
}

/* A group's width, after checking that its k values are all there:
 * 0..64, or -1. */
static inline __attribute__((always_inline)) int group_width(struct br *r, size_t k)
{
    uint64_t w;
    size_t byte = r->pos >> 3;
    /* br_get's fast case, inline: one per group of every stream */
    if (r->pos + 7 <= r->len * 8 && byte + 8 <= r->avail) {
        w = (gp_get_le64(r->p + byte) >> (r->pos & 7)) & 127;
        r->pos += 7;
    } else if (br_get(r, 7, &w) < 0) {
        return -1;
    }
    if (w > 64 || k * w > r->len * 8 - r->pos)
        return -1;
    return (int)w;
}

/* The k values of a group of width w (checked by group_width) into out,
 * as zigzag-decoded deltas. The hot loop of every query: while 8 bytes
 * remain past the group, each value is one load, shift and mask, with no
 * branch (a full group's count is a constant the compiler unrolls). */
static inline __attribute__((always_inline)) void group_get(struct br *r, unsigned w, size_t k,
                                                             int64_t out[GROUP])
{
    size_t pos = r->pos;
    if (w == 0) {
        memset(out, 0, k * sizeof *out);
    } else if (w <= 56 && (pos + k * w) / 8 + 8 <= r->avail) {
        const uint8_t *p = r->p;
        uint64_t mask = ((uint64_t)1 << w) - 1;
        if (k == GROUP) {
#pragma GCC unroll 8
            for (size_t i = 0; i < GROUP; i++, pos += w)
                out[i] = unzz((gp_get_le64(p + (pos >> 3)) >> (pos & 7)) & mask);
        } else {
            for (size_t i = 0; i < k; i++, pos += w)
                out[i] = unzz((gp_get_le64(p + (pos >> 3)) >> (pos & 7)) & mask);
        }
        r->pos = pos;
    } else {
        for (size_t i = 0; i < k; i++) {
            uint64_t x;
            br_get(r, w, &x); /* in bounds: group_width checked */
            out[i] = unzz(x);
        }
    }
}

/* A whole group of values, decoded and summed in one pass (the common
 * case: read_values' general loop stores the deltas first, and that
 * round trip and its variable count were a third of its time); 0 when
 * the group needs the careful path (near the end of the loadable bytes,
 * or wider than 56 bits). */
static inline __attribute__((always_inline)) int group_sum(struct br *r, unsigned w,
                                                            unsigned mode, int64_t *mp,
                                                            int64_t *dp, double *v)
{
    size_t pos = r->pos;
    if (w > 56 || (pos + GROUP * w) / 8 + 8 > r->avail)
        return 0;
    const uint8_t *p = r->p;
    uint64_t mask = w ? ((uint64_t)1 << w) - 1 : 0, m = (uint64_t)*mp, d = (uint64_t)*dp;
    if (mode == 0) {
#pragma GCC unroll 8
        for (size_t i = 0; i < GROUP; i++, pos += w) {
            m += (uint64_t)unzz((gp_get_le64(p + (pos >> 3)) >> (pos & 7)) & mask);
            v[i] = (double)(int64_t)m;
        }
    } else {
#pragma GCC unroll 8
        for (size_t i = 0; i < GROUP; i++, pos += w) {
            d += (uint64_t)unzz((gp_get_le64(p + (pos >> 3)) >> (pos & 7)) & mask);
            m += d;
            v[i] = (double)(int64_t)m;
        }
    }
    r->pos = pos;
    *mp = (int64_t)m;
    *dp = (int64_t)d;
    return 1;
}

int gp_st_bchunk_count(const uint8_t *p, size_t len, size_t *n)
{
    if (len < 1)
        return GP_EPARSE;
    if (p[0] == 0) {
        struct gp_chunk_iter it;
        if (gp_chunk_iter_init(&it, p + 1, len - 1) != GP_OK)
            return GP_EPARSE;
        *n = gp_chunk_iter_count(&it);
        return *n ? GP_OK : GP_EPARSE;
    }
    const uint8_t *q = p + 1;
    uint64_t u;
    if ((p[0] != 1 && p[0] != 2) || gp_uvarint_get(&q, p + len, &u) < 0 || u == 0 || u > GP_CHUNK_MAX_SAMPLES)
        return GP_EPARSE;
    *n = (size_t)u;
    return GP_OK;
}

/* A Gorilla fallback chunk, as far as maxt. */
static int decode_gorilla(const uint8_t *p, size_t len, int64_t maxt, int64_t *t, double *v,
                          size_t n)
{
    struct gp_chunk_iter it;
    gp_chunk_iter_init(&it, p + 1, len - 1);
    for (size_t i = 0; i < n; i++) {
        if (gp_chunk_iter_next(&it, &t[i], &v[i]) != 1)
            return GP_EPARSE;
        if (t[i] > maxt)
            return (int)i;
    }
    return (int)n;
}

/* The values' header (after the times' in a packed chunk). */
struct vhead {
    unsigned e, mode;
    uint64_t m0, md1, nexc;
    const uint8_t *exc; /* the exceptions, checked */
};

static int read_vhead(const uint8_t **q, const uint8_t *end, size_t n, struct vhead *h)
{
    if (*q >= end)
        return GP_EPARSE;
    h->e = **q & 15;
    h->mode = **q >> 4;
    (*q)++;
    h->md1 = 0;
    if (h->mode > 2 || gp_uvarint_get(q, end, &h->m0) < 0)
        return GP_EPARSE;
    /* the encoder picks mode 1 for three or more samples only */
    if (h->mode == 1 && (n < 3 || gp_uvarint_get(q, end, &h->md1) < 0))
        return GP_EPARSE;
    if (gp_uvarint_get(q, end, &h->nexc) < 0 || h->nexc > n)
        return GP_EPARSE;
    h->exc = *q;
    uint64_t u;
    for (uint64_t i = 0; i < h->nexc; i++) {
        if (gp_uvarint_get(q, end, &u) < 0 || (size_t)(end - *q) < 8)
            return GP_EPARSE;
        *q += 8;
    }
    return GP_OK;
}

/* The times' header: t[0] and the first delta. */
static int read_thead(const uint8_t **q, const uint8_t *end, size_t n, int64_t *t, uint64_t *d1)
{
    uint64_t u;
    if (gp_uvarint_get(q, end, &u) < 0)
        return GP_EPARSE;
    t[0] = unzz(u);
    *d1 = 0;
    if (n >= 2 && (gp_uvarint_get(q, end, d1) < 0 || *d1 == 0))
        return GP_EPARSE;
    return GP_OK;
}

/* Times, group by group, into t; *nt: how many are at or before maxt.
 * Once past maxt the groups are only skipped (without full), so r ends
 * where the values start. A width-0 group (a regular interval) is a
 * constant step. */
static int read_times(struct br *r, size_t n, uint64_t d1, int64_t maxt, int full, int64_t *t,
                      size_t *ntp)
{
    int64_t dd[GROUP];
    size_t nt = n;
    if (t[0] > maxt)
        nt = 0;
    if (n >= 2) {
        uint64_t delta = d1;
        t[1] = (int64_t)((uint64_t)t[0] + delta);
        if (t[1] <= t[0])
            return GP_EPARSE;
        if (nt == n && t[1] > maxt)
            nt = 1;
        for (size_t g = 2; g < n; g += GROUP) {
            size_t k = n - g < GROUP ? n - g : GROUP;
            int w = group_width(r, k);
            if (w < 0)
                return GP_EPARSE;
            if (nt < n && !full) {
                r->pos += k * (size_t)w;
                continue;
            }
            int bad = 0;
            if (w == 0) {
                /* k more steps of delta: one check, and no chain. */
                int64_t span, x, prev = t[g - 1];
                bad = (int64_t)delta <= 0 || __builtin_mul_overflow((int64_t)delta, (int64_t)k, &span) ||
                      __builtin_add_overflow(prev, span, &x);
                /* bad is checked once, outside, and a full group's
                 * count is a constant: plain stores that the compiler
                 * vectorizes */
                if (!bad && k == GROUP)
                    for (size_t i = 0; i < GROUP; i++)
                        t[g + i] = prev + (int64_t)(i + 1) * (int64_t)delta;
                else if (!bad)
                    for (size_t i = 0; i < k; i++)
                        t[g + i] = prev + (int64_t)(i + 1) * (int64_t)delta;
            } else {
                group_get(r, (unsigned)w, k, dd);
                for (size_t i = 0; i < k; i++) {
                    delta += (uint64_t)dd[i];
                    t[g + i] = (int64_t)((uint64_t)t[g + i - 1] + delta);
                    bad |= t[g + i] <= t[g + i - 1];
                }
            }
            if (bad)
                return GP_EPARSE;
            if (nt == n && t[g + k - 1] > maxt)
                for (nt = g; t[nt] <= maxt; nt++)
                    ;
        }
    }
    *ntp = nt;
    return GP_OK;
}

/* ---- the times of the last chunks decoded, per thread ----
 *
 * Every series of a node carries the node's scrape times, and the head
 * cuts a node's series at the same samples: the chunks of a node's GPUs
 * hold bit-identical time streams, and a query over many of them decoded
 * the same times again for each (on the 512-GPU avg-by head query, a
 * third of the server's CPU). A thread keeps the times of the chunks it
 * decoded last, keyed by their bytes (n, t0, the first delta and the
 * packed delta-of-deltas, compared in full, so a hit decodes exactly what
 * a decode would) in a few slots chosen by t0; a hit copies them and
 * skips the stream, as a full decode (all times, whatever maxt) would
 * leave it. Only successful decodes of every time are kept, so a hit
 * also stands for the checks a decode makes. */

/* 16 sets of 2 slots, the older one replaced (a 1-hour read of a 1 s
 * series spans 9 head chunks; with one slot a place, many were lost to
 * collisions), of up to 1,024 times: a head chunk holds 480, and a
 * block's 15-minute piece of a 1 s series 900, whose time record the
 * node's series share (kept out, they were decoded again for each: a
 * third of the blocks' avg-by query). A slot holds its times (8 bytes
 * each) and their stream's bytes (a few bits a time for scrape times,
 * 9 bytes at worst): ~270 kB for a thread that serves queries, 560 kB at
 * worst, freed when it ends. */
enum { TC_SETS = 16, TC_WAYS = 2, TC_MIN_N = 64, TC_MAX_N = 1024 };

struct tc_slot {
    size_t n, nbits;
    int64_t t0;
    uint64_t d1;
    int64_t *t;     /* n times */
    uint8_t *bits;  /* the stream's (nbits + 7) / 8 bytes, spare bits zeroed */
    size_t cap;     /* of t, in times */
    size_t bcap;    /* of bits, in bytes */
    uint64_t used;  /* the thread's clock when last used */
};

struct tc {
    uint64_t clock;
    struct tc_slot slot[TC_SETS * TC_WAYS];
};

static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static int tc_ok;

static void tc_free(void *p)
{
    struct tc *c = p;
    for (size_t i = 0; c && i < TC_SETS * TC_WAYS; i++) {
        free(c->slot[i].t);
        free(c->slot[i].bits);
    }
    free(c);
}

static void tc_init(void) { tc_ok = pthread_key_create(&tc_key, tc_free) == 0; }

/* This thread's slots, made on first use; NULL without memory. */
static struct tc *tc_get(void)
{
    pthread_once(&tc_once, tc_init);
    if (!tc_ok)
        return NULL;
    struct tc *c = pthread_getspecific(tc_key);
    if (!c && (c = calloc(1, sizeof *c)) != NULL && pthread_setspecific(tc_key, c) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

/* The last byte of a stream of nbits, its bits past the end zeroed. */
static uint8_t tc_tail(const uint8_t *p, size_t nbits)
{
    unsigned rem = (unsigned)(nbits & 7);
    return rem ? (uint8_t)(p[nbits >> 3] & ((1u << rem) - 1)) : 0;
}

/* read_times through the cache (see above); the same results. */
static int read_times_cached(struct br *r, size_t n, uint64_t d1, int64_t maxt, int full,
                             int64_t *t, size_t *ntp)
{
    struct tc *c;
    if (n < TC_MIN_N || n > TC_MAX_N || r->pos != 0 || !(c = tc_get()))
        return read_times(r, n, d1, maxt, full, t, ntp);
    /* Equal bytes as far as the kept stream went, with the same n, t0
     * and first delta: a decode would read just those bits (the widths
     * say where each group ends) and find the same times. */
    uint64_t h = ((uint64_t)t[0] * 0x9E3779B97F4A7C15u) ^ (n * 0xC2B2AE3D27D4EB4Fu) ^ d1;
    struct tc_slot *set = &c->slot[(h >> 32) % TC_SETS * TC_WAYS], *e = NULL;
    for (size_t w = 0; w < TC_WAYS && !e; w++) {
        struct tc_slot *x = &set[w];
        if (x->n == n && x->t0 == t[0] && x->d1 == d1 && x->nbits <= r->len * 8 &&
            memcmp(x->bits, r->p, x->nbits >> 3) == 0 &&
            (!(x->nbits & 7) || x->bits[x->nbits >> 3] == tc_tail(r->p, x->nbits)))
            e = x;
    }
    if (e) {
        e->used = ++c->clock;
        memcpy(t, e->t, n * sizeof *t);
        r->pos = e->nbits;
        size_t nt = 0, hi = n; /* the first past maxt: times increase */
        while (nt < hi) {
            size_t mid = nt + (hi - nt) / 2;
            if (t[mid] <= maxt)
                nt = mid + 1;
            else
                hi = mid;
        }
        *ntp = nt;
        return GP_OK;
    }
    int rc = read_times(r, n, d1, maxt, full, t, ntp);
    if (rc != GP_OK || (*ntp != n && !full))
        return rc; /* kept only when every time was decoded (full decodes all) */
    size_t nbits = r->pos, whole = nbits >> 3; /* read_times ends where the times do */
    e = &set[0];
    for (size_t w = 1; w < TC_WAYS; w++)
        if (set[w].used < e->used)
            e = &set[w];
    e->used = ++c->clock;
    e->n = 0; /* a slot that fails to grow is only empty */
    if (e->cap < n) {
        int64_t *nt = realloc(e->t, n * sizeof *nt);
        if (!nt)
            return rc;
        e->t = nt;
        e->cap = n;
    }
    if (e->bcap < whole + 1) {
        uint8_t *nb = realloc(e->bits, whole + 1);
        if (!nb)
            return rc;
        e->bits = nb;
        e->bcap = whole + 1;
    }
    memcpy(e->t, t, n * sizeof *t);
    memcpy(e->bits, r->p, whole);
    e->bits[whole] = tc_tail(r->p, nbits);
    e->n = n;
    e->t0 = t[0];
    e->d1 = d1;
    e->nbits = nbits;
    return rc;
}

/* Values: mantissas summed group by group as far as nt, scaled from
 * first (x / 1 is x: integer gauges skip the division), then the
 * exceptions. With full, the stream is read to its end and checked. */
static int read_values(struct br *r, const struct vhead *h, size_t n, size_t nt, size_t first,
                       int full, const uint8_t *end, double *v)
{
    int64_t dd[GROUP];
    int64_t m = unzz(h->m0), d = h->mode == 1 ? unzz(h->md1) : 0;
    if (nt >= 1)
        v[0] = (double)m;
    if (h->mode == 1 && nt >= 2) {
        m = (int64_t)((uint64_t)m + (uint64_t)d);
        v[1] = (double)m;
    }
    size_t v0 = h->mode == 0 ? 1 : h->mode == 1 ? 2 : n, g = v0;
    for (size_t i = 1; h->mode == 2 && i < nt; i++)
        v[i] = (double)m; /* constant: no stream */
    for (; g < n && (g < nt || full); g += GROUP) {
        size_t k = n - g < GROUP ? n - g : GROUP;
        int w = group_width(r, k);
        if (w < 0)
            return GP_EPARSE;
        if (k == GROUP && g + GROUP <= nt && group_sum(r, (unsigned)w, h->mode, &m, &d, v + g))
            continue;
        group_get(r, (unsigned)w, k, dd);
        if (g >= nt)
            continue; /* full: read to check the stream's end */
        size_t kk = nt - g < k ? nt - g : k;
        if (h->mode == 0) {
            for (size_t i = 0; i < kk; i++) {
                m = (int64_t)((uint64_t)m + (uint64_t)dd[i]);
                v[g + i] = (double)m;
            }
        } else {
            for (size_t i = 0; i < kk; i++) {
                d = (int64_t)((uint64_t)d + (uint64_t)dd[i]);
                m = (int64_t)((uint64_t)m + (uint64_t)d);
                v[g + i] = (double)m;
            }
        }
    }
    if (full && (r->pos + 7) / 8 != r->len)
        return GP_EPARSE; /* bytes left over */
    if (h->e)
        for (size_t i = first; i < nt; i++)
            v[i] /= p10[h->e];
    size_t at = 0;
    const uint8_t *q = h->exc;
    uint64_t u = 0;
    for (uint64_t i = 0; i < h->nexc; i++) {
        gp_uvarint_get(&q, end, &u);
        if (u >= n || (i > 0 && u >= n - at - 1))
            return GP_EPARSE;
        at = i == 0 ? (size_t)u : at + (size_t)u + 1;
        if (at < nt)
            v[at] = gp_bits_f64(gp_get_le64(q));
        q += 8;
    }
    return GP_OK;
}

/* The time record at toff of bf, which lies before the chunk at p:
 * its body (after the CRC and length) once its CRC matches. */
static int time_record(const struct gp_st_bfile *bf, const uint8_t *p, uint64_t toff,
                       const uint8_t **body, size_t *len)
{
    if (!bf || p < bf->data || p > bf->data + bf->len)
        return GP_EPARSE;
    size_t poff = (size_t)(p - bf->data);
    if (toff < GP_ST_BF_HEADER || toff + 4 >= poff)
        return GP_EPARSE;
    const uint8_t *q = bf->data + toff + 4, *end = p;
    uint64_t l;
    if (gp_uvarint_get(&q, end, &l) < 0 || l == 0 || l > (uint64_t)(end - q))
        return GP_EPARSE;
    if (gp_crc32c(0, q, (size_t)l) != gp_get_le32(bf->data + toff))
        return GP_EPARSE;
    *body = q;
    *len = (size_t)l;
    return GP_OK;
}

/* Every decoder: the samples up to maxt (all of them with full, which
 * also checks the streams' ends); *first: the first at or after mint.
 * bf: the file around p, for a chunk whose times are a shared record
 * (NULL: no such chunk is valid here). */
static int decode(const struct gp_st_bfile *bf, const uint8_t *p, size_t len, int64_t mint,
                  int64_t maxt, int full, int64_t *t, double *v, size_t cap, size_t *first)
{
    size_t n;
    *first = 0;
    if (gp_st_bchunk_count(p, len, &n) != GP_OK || n > cap)
        return GP_EPARSE;
    int hi;
    if (p[0] == 0) {
        if ((hi = decode_gorilla(p, len, maxt, t, v, n)) >= 0)
            while (*first < (size_t)hi && t[*first] < mint)
                (*first)++;
        return hi;
    }
    const uint8_t *q = p + 1, *end = p + len, *lim = end;
    uint64_t u, d1;
    struct vhead vh;
    size_t nt;
    if (bf && p >= bf->data && len <= bf->len && (size_t)(p - bf->data) <= bf->len - len)
        lim = bf->data + bf->len; /* loads may go on past the chunk */
    gp_uvarint_get(&q, end, &u); /* n, checked above */
    if (p[0] == 1) {
        /* mode 2 only in block files, whose chunks are of encoding 2 */
        if (read_thead(&q, end, n, t, &d1) != GP_OK || read_vhead(&q, end, n, &vh) != GP_OK ||
            vh.mode == 2)
            return GP_EPARSE;
        struct br r = {q, (size_t)(end - q), 0, (size_t)(lim - q)};
        if (read_times_cached(&r, n, d1, maxt, full, t, &nt) != GP_OK)
            return GP_EPARSE;
        while (*first < nt && t[*first] < mint)
            (*first)++;
        return read_values(&r, &vh, n, nt, *first, full, end, v) == GP_OK ? (int)nt : GP_EPARSE;
    }
    /* 2: the times are a record of the file, shared with other chunks. */
    const uint8_t *tb;
    size_t tlen;
    if (gp_uvarint_get(&q, end, &u) < 0 || time_record(bf, p, u, &tb, &tlen) != GP_OK ||
        read_vhead(&q, end, n, &vh) != GP_OK)
        return GP_EPARSE;
    const uint8_t *tq = tb, *tend = tb + tlen;
    if (gp_uvarint_get(&tq, tend, &u) < 0 || u != n || read_thead(&tq, tend, n, t, &d1) != GP_OK)
        return GP_EPARSE;
    struct br rt = {tq, (size_t)(tend - tq), 0, (size_t)(lim - tq)};
    if (read_times_cached(&rt, n, d1, maxt, full, t, &nt) != GP_OK ||
        (full && (rt.pos + 7) / 8 != rt.len))
        return GP_EPARSE;
    while (*first < nt && t[*first] < mint)
        (*first)++;
    struct br r = {q, (size_t)(end - q), 0, (size_t)(lim - q)};
    return read_values(&r, &vh, n, nt, *first, full, end, v) == GP_OK ? (int)nt : GP_EPARSE;
}

int gp_st_bchunk_decode(const uint8_t *p, size_t len, int64_t *t, double *v, size_t cap)
{
    size_t first;
    return decode(NULL, p, len, INT64_MIN, INT64_MAX, 1, t, v, cap, &first);
}

int gp_st_bchunk_decode_window(const uint8_t *p, size_t len, int64_t mint, int64_t maxt, int64_t *t,
                               double *v, size_t cap, size_t *first)
{
    return decode(NULL, p, len, mint, maxt, 0, t, v, cap, first);
}

int gp_st_bchunk_decode_in(const struct gp_st_bfile *bf, const uint8_t *p, size_t len, int64_t mint,
                           int64_t maxt, int full, int64_t *t, double *v, size_t cap, size_t *first)
{
    return decode(bf, p, len, mint, maxt, full, t, v, cap, first);
}

int gp_st_bchunk_info(const uint8_t *p, size_t len, struct gp_st_bchunk_info *in)
{
    memset(in, 0, sizeof *in);
    if (gp_st_bchunk_count(p, len, &in->n) != GP_OK)
        return GP_EPARSE;
    in->enc = p[0];
    if (p[0] == 0) {
        in->value_bits = 8 * (uint64_t)len;
        return GP_OK;
    }
    const uint8_t *q = p + 1, *end = p + len;
    uint64_t u, d1;
    int64_t t[2];
    struct vhead vh;
    gp_uvarint_get(&q, end, &u);
    if (p[0] == 1 ? read_thead(&q, end, in->n, t, &d1) != GP_OK : gp_uvarint_get(&q, end, &u) < 0)
        return GP_EPARSE;
    if (read_vhead(&q, end, in->n, &vh) != GP_OK)
        return GP_EPARSE;
    in->e = vh.e;
    in->mode = vh.mode;
    in->nexc = (size_t)vh.nexc;
    in->head_bytes = (size_t)(q - p);
    struct br r = {q, (size_t)(end - q), 0, (size_t)(end - q)};
    for (size_t g = 2; p[0] == 1 && g < in->n; g += GROUP) {
        size_t k = in->n - g < GROUP ? in->n - g : GROUP;
        int w = group_width(&r, k);
        if (w < 0)
            return GP_EPARSE;
        r.pos += k * (size_t)w;
    }
    in->time_bits = r.pos;
    in->value_bits = 8 * (uint64_t)r.len - r.pos;
    return GP_OK;
}

int gp_st_bchunk_check_in(const struct gp_st_bfile *bf, const uint8_t *p, size_t len)
{
    const uint8_t *q = p + 1, *end = p + len, *body;
    uint64_t n, toff;
    size_t tlen;
    if (len < 1 || p[0] != 2)
        return GP_OK;
    if (gp_uvarint_get(&q, end, &n) < 0 || gp_uvarint_get(&q, end, &toff) < 0)
        return GP_EPARSE;
    return time_record(bf, p, toff, &body, &tlen);
}
