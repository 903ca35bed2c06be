/*
 * chunk.c - see chunk.h for the format.
 *
 * Parts: a bit writer that checks the byte cap before every field (and
 * grows an owned buffer by doubling), a bit reader that checks the length
 * before every field, the appender, and the iterator. An append that does
 * not fit is rolled back bit-exactly, so the caller can cut a new chunk
 * and retry without the old one changing.
 */
#include "chunk.h"

#include "lib/bits.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

#define HDR_BITS 16u

/* Signed bucket bounds for the delta-of-delta: two's complement widths. */
static const struct {
    unsigned prefix_bits; /* the '10', '110', '1110' prefixes */
    uint64_t prefix;
    unsigned width;
} dod_buckets[] = {
    {2, 0x2, 14},
    {3, 0x6, 17},
    {4, 0xe, 20},
};

/* Does the signed value x fit in a two's complement field of w bits? */
static int fits_signed(int64_t x, unsigned w)
{
    int64_t lo = -((int64_t)1 << (w - 1)), hi = ((int64_t)1 << (w - 1)) - 1;
    return x >= lo && x <= hi;
}

/* ---- bit writer ---- */

/* Makes room for n more bits: GP_OK, GP_ETOOBIG past the cap, GP_ENOMEM. */
static int w_room(struct gp_chunk *c, unsigned n)
{
    size_t need = (c->nbits + n + 7) / 8;
    if (need > c->max_bytes)
        return GP_ETOOBIG;
    if (need <= c->alloc)
        return GP_OK;
    if (!c->owned)
        return GP_ETOOBIG; /* the caller's buffer is max_bytes long: unreachable */
    size_t cap = c->alloc ? c->alloc : 64;
    while (cap < need)
        cap *= 2;
    if (cap > c->max_bytes)
        cap = c->max_bytes;
    uint8_t *p = realloc(c->data, cap);
    if (!p)
        return GP_ENOMEM;
    memset(p + c->alloc, 0, cap - c->alloc); /* writes OR into zeroed bytes */
    c->data = p;
    c->alloc = cap;
    return GP_OK;
}

/* Writes the low n bits of v (n <= 64), most significant first. */
static int w_bits(struct gp_chunk *c, uint64_t v, unsigned n)
{
    int rc = w_room(c, n);
    if (rc != GP_OK)
        return rc;
    if (n == 0)
        return GP_OK;
    if (n < 64)
        v &= ((uint64_t)1 << n) - 1;
    /* The rest of the current byte, then whole bytes: every append runs
     * this a few times, and a byte at a time through one general step
     * cost the time-major ingest ~8% of its CPU. Bytes past nbits are
     * zero, so the later ones are stored, not ORed. */
    uint8_t *p = c->data + (c->nbits >> 3);
    unsigned room = 8 - (unsigned)(c->nbits & 7);
    c->nbits += n;
    if (n <= room) {
        *p |= (uint8_t)(v << (room - n));
        return GP_OK;
    }
    n -= room;
    *p++ |= (uint8_t)(v >> n);
    while (n >= 8) {
        n -= 8;
        *p++ = (uint8_t)(v >> n);
    }
    if (n)
        *p = (uint8_t)(v << (8 - n));
    return GP_OK;
}

/* Unsigned LEB128 varint, each byte as 8 bits of the stream. */
static int w_uvarint(struct gp_chunk *c, uint64_t u)
{
    int rc;
    while (u >= 0x80) {
        if ((rc = w_bits(c, (u & 0x7f) | 0x80, 8)) != GP_OK)
            return rc;
        u >>= 7;
    }
    return w_bits(c, u, 8);
}

/* Undoes writes back to bit position nbits: clears the bits after it. */
static void w_truncate(struct gp_chunk *c, size_t nbits)
{
    size_t end = (c->nbits + 7) / 8;
    size_t byte = nbits >> 3;
    unsigned used = (unsigned)(nbits & 7);
    if (used) {
        c->data[byte] &= (uint8_t)(0xff00u >> used);
        byte++;
    }
    if (end > byte)
        memset(c->data + byte, 0, end - byte);
    c->nbits = nbits;
}

static void w_header(struct gp_chunk *c)
{
    c->data[0] = (uint8_t)(c->count >> 8);
    c->data[1] = (uint8_t)c->count;
}

/* ---- appender ---- */

static int check_caps(size_t max_bytes, unsigned max_samples)
{
    if (max_bytes < GP_CHUNK_MIN_BYTES || max_samples > GP_CHUNK_MAX_SAMPLES)
        return GP_EUSAGE;
    return GP_OK;
}

static void clear_state(struct gp_chunk *c)
{
    c->nbits = HDR_BITS;
    c->count = 0;
    c->t_first = c->t_last = 0;
    c->delta = 0;
    c->v_last = 0;
    c->leading = 0xff;
    c->trailing = 0;
}

int gp_chunk_init(struct gp_chunk *c, size_t max_bytes, unsigned max_samples)
{
    memset(c, 0, sizeof *c);
    c->owned = 1;
    c->max_bytes = max_bytes ? max_bytes : GP_CHUNK_DEFAULT_BYTES;
    c->max_samples = max_samples ? max_samples : GP_CHUNK_DEFAULT_SAMPLES;
    clear_state(c);
    int rc = check_caps(c->max_bytes, c->max_samples);
    if (rc != GP_OK)
        c->max_samples = 0; /* unusable: every append answers GP_ETOOBIG */
    return rc;
}

int gp_chunk_init_buf(struct gp_chunk *c, uint8_t *buf, size_t len, unsigned max_samples)
{
    memset(c, 0, sizeof *c);
    c->max_samples = max_samples ? max_samples : GP_CHUNK_DEFAULT_SAMPLES;
    clear_state(c);
    int rc = check_caps(len, c->max_samples);
    if (rc != GP_OK || !buf) {
        c->max_samples = 0;
        return GP_EUSAGE;
    }
    memset(buf, 0, len);
    c->data = buf;
    c->alloc = c->max_bytes = len;
    return GP_OK;
}

void gp_chunk_reset(struct gp_chunk *c)
{
    if (c->data)
        memset(c->data, 0, (c->nbits + 7) / 8);
    clear_state(c);
}

void gp_chunk_free(struct gp_chunk *c)
{
    if (!c)
        return;
    if (c->owned)
        free(c->data);
    c->data = NULL;
    c->alloc = 0;
    clear_state(c);
}

/* Encodes the XOR of the new value's bits with the last one's. */
static int put_value(struct gp_chunk *c, uint64_t bits)
{
    uint64_t x = bits ^ c->v_last;
    if (x == 0)
        return w_bits(c, 0, 1);
    unsigned lz = (unsigned)__builtin_clzll(x), tz = (unsigned)__builtin_ctzll(x);
    if (lz > 31)
        lz = 31; /* 5-bit field */
    if (c->leading != 0xff && lz >= c->leading && tz >= c->trailing) {
        int rc = w_bits(c, 0x2, 2);
        if (rc == GP_OK)
            rc = w_bits(c, x >> c->trailing, 64u - c->leading - c->trailing);
        return rc;
    }
    unsigned sig = 64 - lz - tz;
    int rc = w_bits(c, 0x3, 2);
    if (rc == GP_OK)
        rc = w_bits(c, lz, 5);
    if (rc == GP_OK)
        rc = w_bits(c, sig & 63u, 6); /* 64 is written as 0 */
    if (rc == GP_OK)
        rc = w_bits(c, x >> tz, sig);
    if (rc == GP_OK) {
        c->leading = (uint8_t)lz;
        c->trailing = (uint8_t)tz;
    }
    return rc;
}

static int put_dod(struct gp_chunk *c, uint64_t dod_u)
{
    if (dod_u == 0)
        return w_bits(c, 0, 1);
    int64_t dod = (int64_t)dod_u; /* modular: gcc and clang wrap */
    for (size_t i = 0; i < sizeof dod_buckets / sizeof dod_buckets[0]; i++) {
        if (fits_signed(dod, dod_buckets[i].width)) {
            int rc = w_bits(c, dod_buckets[i].prefix, dod_buckets[i].prefix_bits);
            return rc == GP_OK ? w_bits(c, dod_u, dod_buckets[i].width) : rc;
        }
    }
    int rc = w_bits(c, 0xf, 4);
    return rc == GP_OK ? w_bits(c, dod_u, 64) : rc;
}

int gp_chunk_append(struct gp_chunk *c, int64_t t_ms, double v)
{
    if (c->count > 0 && t_ms <= c->t_last)
        return GP_ERANGE;
    if (c->count >= c->max_samples)
        return GP_ETOOBIG;
    /* nbits starts past the header, so this allocates its two bytes. */
    int rc = w_room(c, 0);
    if (rc != GP_OK)
        return rc;

    struct gp_chunk saved = *c;
    uint64_t bits = gp_f64_bits(v);
    uint64_t delta = (uint64_t)t_ms - (uint64_t)c->t_last;
    if (c->count == 0) {
        uint64_t zz = ((uint64_t)t_ms << 1) ^ (uint64_t)(t_ms >> 63);
        rc = w_uvarint(c, zz);
        if (rc == GP_OK)
            rc = w_bits(c, bits, 64);
    } else if (c->count == 1) {
        rc = w_uvarint(c, delta);
        if (rc == GP_OK)
            rc = put_value(c, bits);
    } else {
        rc = put_dod(c, delta - c->delta);
        if (rc == GP_OK)
            rc = put_value(c, bits);
    }
    if (rc != GP_OK) {
        size_t alloc = c->alloc;
        uint8_t *data = c->data;
        w_truncate(c, saved.nbits);
        *c = saved;
        c->data = data; /* the buffer may have grown meanwhile */
        c->alloc = alloc;
        return rc;
    }
    if (c->count == 0)
        c->t_first = t_ms;
    else
        c->delta = delta;
    c->t_last = t_ms;
    c->v_last = bits;
    c->count++;
    w_header(c);
    return GP_OK;
}

const uint8_t *gp_chunk_bytes(const struct gp_chunk *c, size_t *len)
{
    *len = gp_chunk_size(c);
    return *len ? c->data : NULL;
}

unsigned gp_chunk_count(const struct gp_chunk *c) { return c->count; }
/* 0 until a growable chunk allocates; the header's 2 bytes from then on. */
size_t gp_chunk_size(const struct gp_chunk *c) { return c->data ? (c->nbits + 7) / 8 : 0; }
int64_t gp_chunk_first_t(const struct gp_chunk *c) { return c->t_first; }
int64_t gp_chunk_last_t(const struct gp_chunk *c) { return c->t_last; }

/* ---- bit reader and iterator ---- */

/* The 8 bytes at data[byte..] as a big-endian word, zero past len: one
 * load serves every read inside it, which is what makes decoding cheap. */
static inline uint64_t load_be64(const uint8_t *data, size_t len, size_t byte)
{
    uint64_t w = 0;
    if (byte + 8 <= len) {
        memcpy(&w, data + byte, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        return w;
    }
    for (size_t i = 0; i < 8; i++)
        w = w << 8 | (byte + i < len ? data[byte + i] : 0);
    return w;
}

/* Reads n bits (n <= 64) into *out; -1 when fewer remain. */
static inline __attribute__((always_inline)) int r_bits(struct gp_chunk_iter *it, unsigned n,
                                                        uint64_t *out)
{
    size_t avail = it->len * 8 - it->pos; /* len <= SIZE_MAX / 8, see init */
    if (n > avail)
        return -1;
    if (n == 0) {
        *out = 0;
        return 0;
    }
    unsigned off = (unsigned)(it->pos & 7);
    uint64_t w = load_be64(it->data, it->len, it->pos >> 3);
    if (n <= 64 - off) {
        *out = (w << off) >> (64 - n);
        it->pos += n;
        return 0;
    }
    /* The field straddles the word: its head ends the word, its tail
     * (fewer than 8 bits) starts the next byte-aligned one. */
    unsigned head = 64 - off, tail = n - head;
    uint64_t hi = (w << off) >> off;
    it->pos += head;
    uint64_t lo = load_be64(it->data, it->len, it->pos >> 3) >> (64 - tail);
    it->pos += tail;
    *out = hi << tail | lo;
    return 0;
}

static int r_uvarint(struct gp_chunk_iter *it, uint64_t *out)
{
    uint64_t u = 0, b;
    for (unsigned i = 0; i < 10; i++) {
        if (r_bits(it, 8, &b) < 0)
            return -1;
        if (i == 9 && b > 1)
            return -1; /* more than 64 bits */
        u |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = u;
            return 0;
        }
    }
    return -1;
}

int gp_chunk_iter_init(struct gp_chunk_iter *it, const uint8_t *data, size_t len)
{
    memset(it, 0, sizeof *it);
    it->leading = 0xff;
    if (!data || len < 2 || len > SIZE_MAX / 8) {
        it->err = GP_EPARSE;
        return GP_EPARSE;
    }
    it->data = data;
    it->len = len;
    it->count = (unsigned)data[0] << 8 | data[1];
    it->pos = HDR_BITS;
    return GP_OK;
}

unsigned gp_chunk_iter_count(const struct gp_chunk_iter *it) { return it->err ? 0 : it->count; }

static int get_value(struct gp_chunk_iter *it)
{
    uint64_t b, x;
    if (r_bits(it, 1, &b) < 0)
        return -1;
    if (b == 0)
        return 0; /* same value */
    if (r_bits(it, 1, &b) < 0)
        return -1;
    if (b == 0) {
        if (it->leading == 0xff)
            return -1; /* reuse of a window that was never set */
        if (r_bits(it, 64u - it->leading - it->trailing, &x) < 0)
            return -1;
        it->v ^= x << it->trailing;
        return 0;
    }
    uint64_t lz, sig;
    if (r_bits(it, 5, &lz) < 0 || r_bits(it, 6, &sig) < 0)
        return -1;
    if (sig == 0)
        sig = 64;
    if (lz + sig > 64)
        return -1;
    if (r_bits(it, (unsigned)sig, &x) < 0)
        return -1;
    it->leading = (uint8_t)lz;
    it->trailing = (uint8_t)(64 - lz - sig);
    it->v ^= x << it->trailing;
    return 0;
}

static int get_dod(struct gp_chunk_iter *it, uint64_t *dod)
{
    uint64_t b;
    unsigned ones = 0;
    /* Count the prefix's ones: 0 -> dod 0, 1..3 -> a bucket, 4 -> 64 bits. */
    while (ones < 4) {
        if (r_bits(it, 1, &b) < 0)
            return -1;
        if (b == 0)
            break;
        ones++;
    }
    if (ones == 0) {
        *dod = 0;
        return 0;
    }
    unsigned w = ones == 4 ? 64 : dod_buckets[ones - 1].width;
    if (r_bits(it, w, &b) < 0)
        return -1;
    if (w < 64 && (b >> (w - 1)) & 1)
        b |= ~(uint64_t)0 << w; /* sign-extend */
    *dod = b;
    return 0;
}

int gp_chunk_iter_next(struct gp_chunk_iter *it, int64_t *t_ms, double *v)
{
    if (it->err)
        return it->err;
    if (it->read >= it->count)
        return 0;
    uint64_t u;
    int64_t t;
    if (it->read == 0) {
        if (r_uvarint(it, &u) < 0 || r_bits(it, 64, &it->v) < 0)
            goto bad;
        t = (int64_t)((u >> 1) ^ (0 - (u & 1))); /* un-zigzag */
    } else {
        if (it->read == 1) {
            if (r_uvarint(it, &u) < 0)
                goto bad;
            it->delta = u;
        } else {
            if (get_dod(it, &u) < 0)
                goto bad;
            it->delta += u;
        }
        t = (int64_t)((uint64_t)it->t + it->delta);
        if (t <= it->t)
            goto bad; /* timestamps strictly increase; wrapped or zero delta */
        if (get_value(it) < 0)
            goto bad;
    }
    it->t = t;
    it->read++;
    *t_ms = t;
    *v = gp_bits_f64(it->v);
    return 1;
bad:
    it->err = GP_EPARSE;
    return GP_EPARSE;
}

/* ---- batch decoding ----
 *
 * gp_chunk_iter_next checks the length before every field, and a sample
 * is up to seven fields: half of a head read went there. The batch
 * decoder keeps the state in registers, peeks 57 bits with one load and
 * checks the length once per sample: a sample never needs more than
 * SAMPLE_MAX_BITS, so while one starts SAFE_BYTES before the end every
 * load is inside the bytes. The last SAFE_BYTES are copied into a
 * zero-padded buffer and decoded the same way, a sample that ends past
 * the real length being the truncation gp_chunk_iter_next reports. */

#define SAMPLE_MAX_BITS (4 + 64 + 2 + 5 + 6 + 64) /* dod prefix + 64, value header + 64 */
#define SAFE_BYTES ((SAMPLE_MAX_BITS + 7) / 8 + 16 + 8) /* + a two-word load, + slack */

static inline uint64_t be64_at(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* n bits (1..64) at bit pos; the 16 bytes from pos/8 must be readable. */
static inline uint64_t get_bits(const uint8_t *d, size_t pos, unsigned n)
{
    unsigned off = (unsigned)(pos & 7);
    uint64_t w = be64_at(d + (pos >> 3)) << off;
    if (n <= 64 - off)
        return w >> (64 - n);
    unsigned tail = n - (64 - off);
    return (w >> off) << tail | be64_at(d + (pos >> 3) + 8) >> (64 - tail);
}

/* Decodes from bit *pos_io of d while samples start at or before
 * safe_bits, a sample ending past len_bits being damage. 0, or -1 on
 * damage (then it->read counts the good samples).
 *
 * One load per sample: the word at pos holds at least 57 valid bits
 * (WORD_BITS), and a regular sample (dod in a bucket, value unchanged
 * or in the last window of up to ~50 bits, as gauges and counters are)
 * fits; only the rest loads again (get_bits). */
#define WORD_BITS 57u
static int decode_run(struct gp_chunk_iter *it, const uint8_t *d, size_t *pos_io, size_t len_bits,
                      size_t safe_bits, int64_t *t, double *v, size_t cap, size_t *n_io)
{
    size_t pos = *pos_io, n = *n_io;
    size_t end = cap - n < it->count - it->read ? cap : n + (it->count - it->read);
    size_t n0 = n;
    int64_t last = it->t;
    uint64_t delta = it->delta, x = it->v;
    unsigned lead = it->leading, trail = it->trailing;
    /* the width of the last window's bits ('10' reuses it) */
    unsigned nbw = lead == 0xff ? 0 : 64u - lead - trail;
    int rc = 0;
    while (n < end && pos <= safe_bits) {
        uint64_t w = be64_at(d + (pos >> 3)) << (pos & 7), dod;
        unsigned used;
        /* timestamp: a delta-of-delta behind 0, 10, 110, 1110 or 1111 */
        if (!(w >> 63)) {
            dod = 0;
            used = 1;
        } else {
            /* the prefix's ones, at most 4 (the low bit keeps clz's argument nonzero) */
            unsigned ones = (unsigned)__builtin_clzll(~w | (uint64_t)1 << 59);
            if (ones >= 4) {
                dod = get_bits(d, pos + 4, 64);
                pos += 68;
                w = be64_at(d + (pos >> 3)) << (pos & 7);
                used = 0;
            } else {
                /* widths 14, 17, 20 (dod_buckets) without a dependent load */
                unsigned wd = 11 + 3 * ones, pre = ones + 1;
                /* an arithmetic shift sign-extends (gcc and clang): no
                 * branch on the sign, which jitter makes a coin toss */
                dod = (uint64_t)((int64_t)(w << pre) >> (64 - wd));
                used = pre + wd;
            }
        }
        delta += dod;
        int64_t ts = (int64_t)((uint64_t)last + delta);
        if (ts <= last) {
            rc = -1; /* timestamps strictly increase */
            break;
        }
        /* value: 0 same, 10 in the last window, 11 a new window */
        uint64_t vw = w << used;
        if (!(vw >> 63)) {
            used += 1;
        } else if (!((vw >> 62) & 1)) {
            if (nbw == 0) {
                rc = -1; /* reuse of a window that was never set */
                break;
            }
            if (used + 2 + nbw <= WORD_BITS)
                x ^= ((vw << 2) >> (64 - nbw)) << trail;
            else
                x ^= get_bits(d, pos + used + 2, nbw) << trail;
            used += 2 + nbw;
        } else {
            /* used <= 24 here (a bucketed dod), so the header is in vw */
            unsigned lz = (unsigned)((vw << 2) >> 59), sig = (unsigned)((vw << 7) >> 58);
            if (sig == 0)
                sig = 64;
            if (lz + sig > 64) {
                rc = -1;
                break;
            }
            lead = lz;
            trail = 64 - lz - sig;
            nbw = sig;
            if (used + 13 + sig <= WORD_BITS)
                x ^= ((vw << 13) >> (64 - sig)) << trail;
            else
                x ^= get_bits(d, pos + used + 13, sig) << trail;
            used += 13 + sig;
        }
        pos += used;
        if (pos > len_bits) {
            rc = -1; /* truncated */
            break;
        }
        last = ts;
        t[n] = ts;
        v[n] = gp_bits_f64(x);
        n++;
    }
    *pos_io = pos;
    *n_io = n;
    it->read += (unsigned)(n - n0);
    it->t = last;
    it->delta = delta;
    it->v = x;
    it->leading = (uint8_t)lead;
    it->trailing = (uint8_t)trail;
    if (rc < 0)
        it->err = GP_EPARSE;
    return rc;
}

int gp_chunk_iter_decode(struct gp_chunk_iter *it, int64_t *t, double *v, size_t cap)
{
    size_t n = 0;
    int k = 0;
    /* The first two samples are varints: the careful path. */
    while (n < cap && it->read < 2 && (k = gp_chunk_iter_next(it, &t[n], &v[n])) == 1)
        n++;
    if (k < 0)
        return k;
    if (n == cap || it->read >= it->count || it->err)
        return (int)n;
    size_t pos = it->pos;
    int bad = 0;
    if (it->len >= SAFE_BYTES)
        bad = decode_run(it, it->data, &pos, it->len * 8, (it->len - SAFE_BYTES) * 8, t, v, cap, &n);
    if (!bad && n < cap && it->read < it->count) {
        /* The tail, zero-padded: at most SAFE_BYTES are left. */
        uint8_t tail[3 * SAFE_BYTES];
        size_t b0 = pos >> 3, rem = it->len - b0, p = pos - b0 * 8;
        memset(tail, 0, sizeof tail);
        memcpy(tail, it->data + b0, rem);
        bad = decode_run(it, tail, &p, rem * 8, (sizeof tail - SAFE_BYTES) * 8, t, v, cap, &n);
        pos = b0 * 8 + p;
    }
    it->pos = pos;
    return bad ? GP_EPARSE : (int)n;
}
