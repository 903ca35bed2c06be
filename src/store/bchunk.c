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
 *   u8       encoding: 0 = a Gorilla chunk follows (chunk.h), 1 = packed
 *   packed:
 *   uvarint  n (1..65535)
 *   varint   t0 (zigzag)
 *   uvarint  t1 - t0                      (n >= 2)
 *   u8       e | mode << 4                e in 0..15; mode 0: the value
 *                                         stream holds deltas of m,
 *                                         mode 1: deltas of deltas
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
 * A regular 1 s series costs 7 bits per 32 timestamps; a constant value
 * 7 bits per 32 samples; a percentage moving by a few points 4 bits a
 * sample. The encoder falls back to Gorilla when more than 1/16 of the
 * values are exceptions. The decoder checks every length and that the
 * stream ends exactly at the end of the bytes.
 */
#include "store/store_fmt.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/varint.h"

#include <math.h>
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

int gp_st_bchunk_encode(const int64_t *t, const double *v, size_t n, struct gp_st_bchunk_scratch *sc,
                        struct gp_buf *out)
{
    if (n == 0 || n > GP_CHUNK_MAX_SAMPLES)
        return GP_EUSAGE;
    for (size_t i = 1; i < n; i++)
        if (t[i] <= t[i - 1])
            return GP_EUSAGE;
    if (sc->cap < n) {
        uint64_t *u = realloc(sc->u, n * sizeof *u);
        if (!u)
            return GP_ENOMEM;
        int64_t *m = realloc(sc->m, n * sizeof *m);
        if (!m) {
            sc->u = u;
            return GP_ENOMEM;
        }
        sc->u = u;
        sc->m = m;
        sc->cap = n;
    }
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
        return encode_gorilla(t, v, n, out);
    /* m per value; exceptions keep the previous m. */
    size_t nexc = 0;
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t m;
        if (decimal_at(v[i], e, &m)) {
            sc->m[i] = prev = m;
        } else {
            sc->m[i] = prev;
            nexc++;
        }
    }
    if (nexc > allowed)
        return encode_gorilla(t, v, n, out);
    /* Choose deltas or deltas of deltas for the values. */
    int mode = 0;
    uint64_t *u = sc->u;
    if (n >= 3) {
        for (size_t i = 1; i < n; i++)
            u[i - 1] = zz(sc->m[i] - sc->m[i - 1]);
        uint64_t d1 = packed_bits(u, n - 1);
        for (size_t i = 2; i < n; i++)
            u[i - 2] = zz((sc->m[i] - sc->m[i - 1]) - (sc->m[i - 1] - sc->m[i - 2]));
        uint64_t d2 = packed_bits(u, n - 2) + 8 * 3;
        mode = d2 < d1;
    }
    gp_buf_putc(out, 1);
    gp_buf_put_uvarint(out, n);
    gp_buf_put_uvarint(out, zz(t[0]));
    if (n >= 2)
        gp_buf_put_uvarint(out, (uint64_t)t[1] - (uint64_t)t[0]);
    gp_buf_putc(out, (char)(e | mode << 4));
    gp_buf_put_uvarint(out, zz(sc->m[0]));
    if (mode == 1)
        gp_buf_put_uvarint(out, zz(sc->m[1] - sc->m[0]));
    gp_buf_put_uvarint(out, nexc);
    size_t last = 0;
    int first = 1;
    for (size_t i = 0; i < n && nexc; i++) {
        int64_t m;
        if (decimal_at(v[i], e, &m))
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
    struct bw b = {out, 0, 0};
    if (n >= 3) {
        for (size_t i = 2; i < n; i++)
            u[i - 2] = zz((int64_t)(((uint64_t)t[i] - (uint64_t)t[i - 1]) -
                                    ((uint64_t)t[i - 1] - (uint64_t)t[i - 2])));
        pack(&b, u, n - 2);
    }
    if (mode == 0) {
        for (size_t i = 1; i < n; i++)
            u[i - 1] = zz(sc->m[i] - sc->m[i - 1]);
        pack(&b, u, n - 1);
    } else {
        for (size_t i = 2; i < n; i++)
            u[i - 2] = zz((sc->m[i] - sc->m[i - 1]) - (sc->m[i - 1] - sc->m[i - 2]));
        pack(&b, u, n - 2);
    }
    bw_finish(&b);
    return out->err;
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
    size_t len;  /* bytes */
    size_t pos;  /* bit position */
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
    if (w <= 56 && byte + 8 <= r->len) {
        uint64_t x = 0;
        for (int i = 0; i < 8; i++)
            x |= (uint64_t)r->p[byte + i] << (8 * i);
        v = (x >> off) & (((uint64_t)1 << w) - 1);
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

/* Unpacks n values: into u (when not NULL) or as raw bits into d (memcpy,
 * so the doubles' storage holds them without aliasing trouble). */
static int unpack(struct br *r, uint64_t *u, double *d, size_t n)
{
    for (size_t g = 0; g < n; g += GROUP) {
        size_t k = n - g < GROUP ? n - g : GROUP;
        uint64_t w, x;
        if (br_get(r, 7, &w) < 0 || w > 64)
            return -1;
        size_t i = 0;
        /* The hot loop of every query: the group's bits are checked once,
         * then each value is one 8-byte load while 8 bytes remain. */
        if (w && w <= 56 && k * w <= r->len * 8 - r->pos) {
            uint64_t mask = ((uint64_t)1 << w) - 1;
            size_t pos = r->pos;
            for (; i < k && (pos >> 3) + 8 <= r->len; i++, pos += w) {
                x = (gp_get_le64(r->p + (pos >> 3)) >> (pos & 7)) & mask;
                if (u)
                    u[g + i] = x;
                else
                    memcpy(&d[g + i], &x, sizeof x);
            }
            r->pos = pos;
        }
        for (; i < k; i++) {
            if (br_get(r, (unsigned)w, &x) < 0)
                return -1;
            if (u)
                u[g + i] = x;
            else
                memcpy(&d[g + i], &x, sizeof x);
        }
    }
    return 0;
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
    if (p[0] != 1 || gp_uvarint_get(&q, p + len, &u) < 0 || u == 0 || u > GP_CHUNK_MAX_SAMPLES)
        return GP_EPARSE;
    *n = (size_t)u;
    return GP_OK;
}

int gp_st_bchunk_decode(const uint8_t *p, size_t len, int64_t *t, double *v, size_t cap)
{
    size_t n;
    if (gp_st_bchunk_count(p, len, &n) != GP_OK || n > cap)
        return GP_EPARSE;
    if (p[0] == 0) {
        struct gp_chunk_iter it;
        gp_chunk_iter_init(&it, p + 1, len - 1);
        for (size_t i = 0; i < n; i++)
            if (gp_chunk_iter_next(&it, &t[i], &v[i]) != 1)
                return GP_EPARSE;
        return (int)n;
    }
    const uint8_t *q = p + 1, *end = p + len;
    uint64_t u, d1 = 0, m0, md1 = 0, nexc;
    gp_uvarint_get(&q, end, &u); /* n, checked above */
    if (gp_uvarint_get(&q, end, &u) < 0)
        return GP_EPARSE;
    t[0] = unzz(u);
    if (n >= 2 && (gp_uvarint_get(&q, end, &d1) < 0 || d1 == 0))
        return GP_EPARSE;
    if (q >= end)
        return GP_EPARSE;
    unsigned e = *q & 15, mode = *q >> 4;
    q++;
    if (mode > 1 || gp_uvarint_get(&q, end, &m0) < 0)
        return GP_EPARSE;
    if (mode == 1 && n >= 2 && gp_uvarint_get(&q, end, &md1) < 0)
        return GP_EPARSE;
    if (mode == 1 && n < 3)
        return GP_EPARSE; /* the encoder picks it for three or more only */
    if (gp_uvarint_get(&q, end, &nexc) < 0 || nexc > n)
        return GP_EPARSE;
    /* The exceptions: checked now, applied last. */
    const uint8_t *exc = q;
    for (uint64_t i = 0; i < nexc; i++) {
        if (gp_uvarint_get(&q, end, &u) < 0 || (size_t)(end - q) < 8)
            return GP_EPARSE;
        q += 8;
    }
    /* The bit stream: timestamp dods unpacked into t itself (uint64_t may
     * alias int64_t) and turned into times in place; value entries as raw
     * bits into the slots of v they belong to. */
    struct br r = {q, (size_t)(end - q), 0};
    if (n >= 2) {
        uint64_t delta = d1;
        t[1] = (int64_t)((uint64_t)t[0] + delta);
        if (t[1] <= t[0])
            return GP_EPARSE;
        if (n >= 3) {
            uint64_t *ut = (uint64_t *)(void *)(t + 2);
            if (unpack(&r, ut, NULL, n - 2) < 0)
                return GP_EPARSE;
            for (size_t i = 2; i < n; i++) {
                delta += (uint64_t)unzz(ut[i - 2]);
                t[i] = (int64_t)((uint64_t)t[i - 1] + delta);
                if (t[i] <= t[i - 1])
                    return GP_EPARSE;
            }
        }
    }
    size_t nv = mode == 0 ? n - 1 : n - 2;
    if (nv && unpack(&r, NULL, v + (n - nv), nv) < 0)
        return GP_EPARSE;
    if ((r.pos + 7) / 8 != r.len)
        return GP_EPARSE; /* bytes left over */
    /* Mantissas first, in loops without branches; scaled after, and only
     * when e says so (x / 1 is x: integer gauges skip the division). */
    int64_t m = unzz(m0), d = mode == 1 ? unzz(md1) : 0;
    v[0] = (double)m;
    if (mode == 0) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x;
            memcpy(&x, &v[i], sizeof x);
            m = (int64_t)((uint64_t)m + (uint64_t)unzz(x));
            v[i] = (double)m;
        }
    } else {
        m = (int64_t)((uint64_t)m + (uint64_t)d); /* n >= 3 here */
        v[1] = (double)m;
        for (size_t i = 2; i < n; i++) {
            uint64_t x;
            memcpy(&x, &v[i], sizeof x);
            d = (int64_t)((uint64_t)d + (uint64_t)unzz(x));
            m = (int64_t)((uint64_t)m + (uint64_t)d);
            v[i] = (double)m;
        }
    }
    if (e)
        for (size_t i = 0; i < n; i++)
            v[i] /= p10[e];
    size_t at = 0;
    q = exc;
    for (uint64_t i = 0; i < nexc; i++) {
        gp_uvarint_get(&q, end, &u);
        if (u >= n || (i > 0 && u >= n - at - 1))
            return GP_EPARSE;
        at = i == 0 ? (size_t)u : at + (size_t)u + 1;
        uint64_t bits = 0;
        for (int k = 0; k < 8; k++)
            bits |= (uint64_t)q[k] << (8 * k);
        q += 8;
        v[at] = gp_bits_f64(bits);
    }
    return (int)n;
}
