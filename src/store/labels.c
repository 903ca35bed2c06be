/*
 * labels.c - see labels.h.
 *
 * Parts:
 *  - encode: checks the caller's order before writing a byte, so a
 *    rejected label set leaves the buffer as it was;
 *  - iterate/get: bounds-checked walks over a blob; get stops early
 *    because names are sorted;
 *  - validate: what a blob read from disk must satisfy before the index
 *    trusts it, including minimal varints (a padded varint would give the
 *    same labels two byte forms, and equality is memcmp);
 *  - hash: four independent multiply-rotate lanes over 8-byte
 *    little-endian words (the round of xxHash64: acc ^= w * K2, rotl 31,
 *    * K1), a length-tagged tail word, and murmur3's fmix64 to finish.
 *    Every step is invertible in the state, so no input word can erase
 *    what came before it; four lanes keep the multiplier busy on the
 *    ~150-250 byte blobs of GPU series (about 1.5 cycles per 8 bytes).
 *    Explicit little-endian loads make the value the same on every
 *    machine, so it may be persisted. Not keyed: a writer who can choose
 *    label values can make collisions, which cost probe time, never
 *    correctness (lookups compare the whole blob).
 */
#include "store/labels.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/varint.h"

#include <string.h>

/* ---- encode --------------------------------------------------------------- */

/* Byte order of two strings (shorter first on a common prefix). */
static int str_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

int gp_labels_encode(const struct gp_label *l, size_t n, struct gp_buf *out)
{
    if (n == 0)
        return GP_EUSAGE;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (l[i].name.len == 0 || l[i].value.len == 0)
            return GP_EUSAGE;
        if (i > 0 && str_cmp(l[i - 1].name.ptr, l[i - 1].name.len, l[i].name.ptr,
                             l[i].name.len) >= 0)
            return GP_EUSAGE;
        total += gp_uvarint_size(l[i].name.len) + l[i].name.len + gp_uvarint_size(l[i].value.len) +
                 l[i].value.len;
    }
    if (out->err)
        return out->err;
    if (gp_buf_reserve(out, total) != GP_OK)
        return out->err ? out->err : GP_ENOMEM;
    /* Written in place after the one reserve: this runs for every series
     * of every write request, and four gp_buf_append calls per label were
     * a tenth of the time-major ingest's CPU. */
    uint8_t *p = (uint8_t *)out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        p = gp_uvarint_put(p, l[i].name.len);
        memcpy(p, l[i].name.ptr, l[i].name.len);
        p += l[i].name.len;
        p = gp_uvarint_put(p, l[i].value.len);
        memcpy(p, l[i].value.ptr, l[i].value.len);
        p += l[i].value.len;
    }
    out->len += total;
    out->data[out->len] = '\0'; /* gp_buf's promise; reserve made room for it */
    return GP_OK;
}

/* ---- iterate -------------------------------------------------------------- */

void gp_labels_iter_init(struct gp_labels_iter *it, const uint8_t *blob, size_t len)
{
    it->p = blob;
    it->end = blob ? blob + len : blob;
}

/* One length-prefixed string; minimal says the varint had no padding. */
static int read_str(struct gp_labels_iter *it, struct gp_str *s, int *minimal)
{
    uint64_t n;
    const uint8_t *q = it->p;
    if (gp_uvarint_get(&q, it->end, &n))
        return GP_EPARSE;
    size_t k = (size_t)(q - it->p);
    if (n > (uint64_t)(it->end - q))
        return GP_EPARSE;
    if (k > 1 && it->p[k - 1] == 0)
        *minimal = 0;
    s->ptr = (const char *)it->p + k;
    s->len = (size_t)n;
    it->p += k + n;
    return GP_OK;
}

int gp_labels_next(struct gp_labels_iter *it, struct gp_str *name, struct gp_str *value)
{
    if (it->p == it->end)
        return 0;
    int minimal = 1;
    if (read_str(it, name, &minimal) != GP_OK || read_str(it, value, &minimal) != GP_OK) {
        it->p = it->end; /* stay failed: a second call does not resume mid-blob */
        return GP_EPARSE;
    }
    return 1;
}

int gp_labels_get(const uint8_t *blob, size_t len, const char *name, struct gp_str *value)
{
    size_t nlen = strlen(name);
    struct gp_labels_iter it;
    struct gp_str n, v;
    gp_labels_iter_init(&it, blob, len);
    while (gp_labels_next(&it, &n, &v) == 1) {
        int c = str_cmp(n.ptr, n.len, name, nlen);
        if (c == 0) {
            *value = v;
            return 1;
        }
        if (c > 0)
            break; /* sorted: it is not further on */
    }
    /* Absent, or a malformed blob (index blobs are validated on add). */
    value->ptr = "";
    value->len = 0;
    return 0;
}

int gp_labels_validate(const uint8_t *blob, size_t len)
{
    if (len == 0)
        return GP_EPARSE; /* a series has at least one label */
    struct gp_labels_iter it;
    struct gp_str n, v, prev = {NULL, 0};
    gp_labels_iter_init(&it, blob, len);
    for (;;) {
        if (it.p == it.end)
            return GP_OK;
        int minimal = 1;
        if (read_str(&it, &n, &minimal) != GP_OK || read_str(&it, &v, &minimal) != GP_OK)
            return GP_EPARSE;
        if (!minimal || n.len == 0 || v.len == 0)
            return GP_EPARSE;
        if (prev.ptr && str_cmp(prev.ptr, prev.len, n.ptr, n.len) >= 0)
            return GP_EPARSE;
        prev = n;
    }
}

/* ---- hash ----------------------------------------------------------------- */

#define K1 UINT64_C(0x9e3779b185ebca87)
#define K2 UINT64_C(0xc2b2ae3d27d4eb4f)
#define K3 UINT64_C(0x165667b19e3779f9)
#define K4 UINT64_C(0x27d4eb2f165667c5)

static inline uint64_t rotl64(uint64_t x, unsigned r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t w)
{
    acc ^= w * K2;
    acc = rotl64(acc, 31);
    return acc * K1;
}

uint64_t gp_labels_hash(const uint8_t *p, size_t len)
{
    /* Four lanes over 32-byte stripes: each lane's chain is ~5 cycles per
     * stripe, and the four run side by side. */
    uint64_t a = K3 ^ (uint64_t)len, b = K4, c = K1, d = K2;
    size_t left = len;
    while (left >= 32) {
        a = round64(a, rd64(p));
        b = round64(b, rd64(p + 8));
        c = round64(c, rd64(p + 16));
        d = round64(d, rd64(p + 24));
        p += 32;
        left -= 32;
    }
    /* 0..3 more words, into a, b, c in turn. */
    if (left >= 8) {
        a = round64(a, rd64(p));
        p += 8;
        left -= 8;
    }
    if (left >= 8) {
        b = round64(b, rd64(p));
        p += 8;
        left -= 8;
    }
    if (left >= 8) {
        c = round64(c, rd64(p));
        p += 8;
        left -= 8;
    }
    /* 0..7 bytes, little-endian, tagged with their count so that trailing
     * zero bytes still change the hash. */
    uint64_t t = (uint64_t)left << 56;
    for (size_t i = 0; i < left; i++)
        t |= (uint64_t)p[i] << (8 * i);
    d = round64(d, t);
    uint64_t h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18);
    return gp_mix64(h ^ ((uint64_t)len * K2));
}

int gp_labels_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0; /* memcmp wants non-NULL even for 0 bytes */
    return c ? c : (alen > blen) - (alen < blen);
}
