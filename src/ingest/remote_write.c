/*
 * remote_write.c - see remote_write.h.
 *
 * Why a hand-written protobuf codec instead of protobuf-c: the schema is
 * four messages with six scalar fields, the wire format for them is a few
 * dozen lines, and writing it by hand lets the decoder put everything in
 * one arena with zero-copy string views and lets the encoder write
 * straight into a reused buffer. protobuf-c would add a code generator to
 * the build, one malloc per message on decode, and still need our own
 * label validation on top.
 *
 * Parts:
 *  - wire primitives: varint read/size/write, field skipping by wire type.
 *    The readers are inline with a one-byte fast path (every key and
 *    almost every length in a remote-write body is one byte); longer
 *    varints and all error reporting are out of line;
 *  - label checks shared by both directions: a 256-entry class table for
 *    name characters, UTF-8 validation that skips ASCII 8 bytes at a time,
 *    caps;
 *  - decoder: ONE pass over the message (it is the server's hottest code:
 *    a body is ~500-2,000 series of ~10 labels and 1 sample). The
 *    decompressed body sits in the arena block, which never moves, so
 *    label views point into it as soon as they are parsed. The series'
 *    samples and labels go, in parse order, into a second block (the
 *    "tables", grown geometrically from an estimate based on the body
 *    length); each series collects its labels in a 64-entry stack array
 *    (the cap), checks in one linear pass whether they are already sorted
 *    (senders sort them; then there are no duplicates either), sorts by
 *    insertion only when not, and appends them after its samples. The
 *    series records are kept as offsets and become the series array at
 *    the end of the tables once the count is known. A duplicate label
 *    name is remembered and reported after the whole message parsed, as
 *    the earlier two-pass decoder did, so the same error wins;
 *  - metadata (WriteRequest field 3): each entry is checked (a metric
 *    name, UTF-8 help and unit, the caps) and kept as views into the
 *    body, in an array of its own beside the tables; the series path
 *    never sees it;
 *  - encoder: sizes every nested message bottom-up (sizes do not depend on
 *    label order), reserves the exact total once, then writes.
 * Snappy is Debian's libsnappy (block format, as the spec requires).
 */
#include "ingest/remote_write.h"

#include "lib/bits.h"
#include "lib/err.h"

#include <snappy-c.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define STR2_(x) #x
#define STR_(x) STR2_(x)

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* ---- wire primitives ---------------------------------------------------- */

/* A reader; nested messages narrow `end` and restore it afterwards. */
struct rd {
    const uint8_t *base; /* start of the whole message, for offsets in errors */
    const uint8_t *p;
    const uint8_t *end;
    char *err;
    size_t errlen;
};

static size_t rd_off(const struct rd *r) { return (size_t)(r->p - r->base); }

static int rd_varint_slow(struct rd *r, uint64_t *v)
{
    uint64_t x = 0;
    if (r->end - r->p >= 10) { /* no bounds checks; a 10th byte takes the checked loop */
        const uint8_t *p = r->p;
        for (int i = 0; i < 9; i++) {
            x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if (!(p[i] & 0x80)) {
                r->p = p + i + 1;
                *v = x;
                return GP_OK;
            }
        }
        x = 0;
    }
    size_t off = rd_off(r);
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return gp_seterr(r->err, r->errlen, GP_EPARSE,
                             "remote write: truncated varint at byte %zu", off);
        uint8_t b = *r->p++;
        if (i == 9 && (b & 0x80))
            return gp_seterr(r->err, r->errlen, GP_EPARSE,
                             "remote write: varint longer than 10 bytes at byte %zu", off);
        if (i == 9 && b > 1)
            return gp_seterr(r->err, r->errlen, GP_EPARSE,
                             "remote write: varint overflows 64 bits at byte %zu", off);
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return GP_OK;
        }
    }
    return GP_EINTERNAL; /* not reached: the 10th byte always ends the loop */
}

static inline int rd_varint(struct rd *r, uint64_t *v)
{
    if (r->p < r->end && *r->p < 0x80) {
        *v = *r->p++;
        return GP_OK;
    }
    return rd_varint_slow(r, v);
}

static int rd_key_slow(struct rd *r, uint32_t *field, int *wt)
{
    size_t off = rd_off(r);
    uint64_t k;
    int rc = rd_varint_slow(r, &k);
    if (rc)
        return rc;
    if (k >> 3 == 0 || k >> 3 > 0x1fffffff)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: invalid field number %llu at byte %zu",
                         (unsigned long long)(k >> 3), off);
    *field = (uint32_t)(k >> 3);
    *wt = (int)(k & 7);
    return GP_OK;
}

/* Reads a key; field numbers are 1..2^29-1. */
static inline int rd_key(struct rd *r, uint32_t *field, int *wt)
{
    if (r->p < r->end && *r->p < 0x80 && *r->p >= 0x08) { /* fields 1..15 */
        uint8_t k = *r->p++;
        *field = k >> 3;
        *wt = k & 7;
        return GP_OK;
    }
    return rd_key_slow(r, field, wt);
}

static int len_past_end(struct rd *r, uint64_t n, size_t off)
{
    return gp_seterr(r->err, r->errlen, GP_EPARSE,
                     "remote write: length %llu at byte %zu runs past the end",
                     (unsigned long long)n, off);
}

/* Reads a LEN prefix: on return r->p is the payload's start, *sub_end its end
 * (the caller moves r->p there, or narrows r->end to parse the payload). */
static inline int rd_len(struct rd *r, const uint8_t **sub_end)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p < 0x80) {
        if (*p > (size_t)(r->end - p - 1))
            return len_past_end(r, *p, rd_off(r));
        r->p = p + 1;
        *sub_end = r->p + *p;
        return GP_OK;
    }
    size_t off = rd_off(r);
    uint64_t n;
    int rc = rd_varint_slow(r, &n);
    if (rc)
        return rc;
    if (n > (uint64_t)(r->end - r->p))
        return len_past_end(r, n, off);
    *sub_end = r->p + n;
    return GP_OK;
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t x = 0;
    for (size_t i = 0; i < 8; i++)
        x |= (uint64_t)p[i] << (8 * i);
    return x;
}

static int rd_fixed(struct rd *r, size_t n, uint64_t *v)
{
    if ((size_t)(r->end - r->p) < n)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: truncated %zu-byte value at byte %zu", n, rd_off(r));
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    *v = x;
    return GP_OK;
}

/* Skips an unknown (or ignored) field by its wire type. */
static int rd_skip(struct rd *r, uint32_t field, int wt)
{
    uint64_t v;
    const uint8_t *end = NULL;
    int rc;
    switch (wt) {
    case WT_VARINT:
        return rd_varint(r, &v);
    case WT_I64:
        return rd_fixed(r, 8, &v);
    case WT_LEN:
        if ((rc = rd_len(r, &end)))
            return rc;
        r->p = end;
        return GP_OK;
    case WT_I32:
        return rd_fixed(r, 4, &v);
    default: /* 3/4 are deprecated groups, 6/7 do not exist */
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: unsupported wire type %d for field %u at byte %zu", wt,
                         field, rd_off(r));
    }
}

static int wt_mismatch(struct rd *r, const char *what, int wt)
{
    return gp_seterr(r->err, r->errlen, GP_EPARSE,
                     "remote write: %s has wire type %d at byte %zu", what, wt, rd_off(r));
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* ---- label checks (both directions) --------------------------------------- */

/* Character classes of names: label names [a-zA-Z_][a-zA-Z0-9_]*, metric
 * names also allow ':' anywhere. One lookup per byte instead of range
 * compares; bytes >= 0x80 are in no class. */
enum { NC_FIRST = 1, NC_REST = 2, NC_MFIRST = 4, NC_MREST = 8 };
#define NC_ALPHA (NC_FIRST | NC_REST | NC_MFIRST | NC_MREST)
static const uint8_t NAME_CLASS[256] = {
    ['a'] = NC_ALPHA, ['b'] = NC_ALPHA, ['c'] = NC_ALPHA, ['d'] = NC_ALPHA, ['e'] = NC_ALPHA,
    ['f'] = NC_ALPHA, ['g'] = NC_ALPHA, ['h'] = NC_ALPHA, ['i'] = NC_ALPHA, ['j'] = NC_ALPHA,
    ['k'] = NC_ALPHA, ['l'] = NC_ALPHA, ['m'] = NC_ALPHA, ['n'] = NC_ALPHA, ['o'] = NC_ALPHA,
    ['p'] = NC_ALPHA, ['q'] = NC_ALPHA, ['r'] = NC_ALPHA, ['s'] = NC_ALPHA, ['t'] = NC_ALPHA,
    ['u'] = NC_ALPHA, ['v'] = NC_ALPHA, ['w'] = NC_ALPHA, ['x'] = NC_ALPHA, ['y'] = NC_ALPHA,
    ['z'] = NC_ALPHA, ['A'] = NC_ALPHA, ['B'] = NC_ALPHA, ['C'] = NC_ALPHA, ['D'] = NC_ALPHA,
    ['E'] = NC_ALPHA, ['F'] = NC_ALPHA, ['G'] = NC_ALPHA, ['H'] = NC_ALPHA, ['I'] = NC_ALPHA,
    ['J'] = NC_ALPHA, ['K'] = NC_ALPHA, ['L'] = NC_ALPHA, ['M'] = NC_ALPHA, ['N'] = NC_ALPHA,
    ['O'] = NC_ALPHA, ['P'] = NC_ALPHA, ['Q'] = NC_ALPHA, ['R'] = NC_ALPHA, ['S'] = NC_ALPHA,
    ['T'] = NC_ALPHA, ['U'] = NC_ALPHA, ['V'] = NC_ALPHA, ['W'] = NC_ALPHA, ['X'] = NC_ALPHA,
    ['Y'] = NC_ALPHA, ['Z'] = NC_ALPHA, ['_'] = NC_ALPHA,
    ['0'] = NC_REST | NC_MREST, ['1'] = NC_REST | NC_MREST, ['2'] = NC_REST | NC_MREST,
    ['3'] = NC_REST | NC_MREST, ['4'] = NC_REST | NC_MREST, ['5'] = NC_REST | NC_MREST,
    ['6'] = NC_REST | NC_MREST, ['7'] = NC_REST | NC_MREST, ['8'] = NC_REST | NC_MREST,
    ['9'] = NC_REST | NC_MREST, [':'] = NC_MFIRST | NC_MREST,
};

/* A label name (metric == false) or a metric name (metric == true). */
static bool valid_name(const char *str, size_t n, bool metric)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned first = metric ? NC_MFIRST : NC_FIRST, rest = metric ? NC_MREST : NC_REST;
    if (n == 0 || !(NAME_CLASS[s[0]] & first))
        return false;
    unsigned all = rest;
    for (size_t i = 1; i < n; i++)
        all &= NAME_CLASS[s[i]]; /* no early exit: names are short, the loop stays branch-free */
    return (all & rest) != 0;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF.
 * ASCII runs are skipped a 64-bit word at a time. */
static bool valid_utf8(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & UINT64_C(0x8080808080808080))) {
                i += 8;
                continue;
            }
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return false;
        if (n - i < len)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return false;
        i += len;
    }
    return true;
}

bool gp_rw_label_valid(const char *name, size_t nlen, const char *value, size_t vlen)
{
    return nlen <= GP_RW_MAX_LABEL_LEN && vlen <= GP_RW_MAX_LABEL_LEN && valid_name(name, nlen, false) &&
           valid_utf8(value, vlen);
}

static bool is_metric_name_label(const struct gp_str *name)
{
    return name->len == 8 && memcmp(name->ptr, "__name__", 8) == 0; /* one 64-bit compare */
}

/* Checks one label with a non-empty value; why (static text) on failure. */
static int check_label(const struct gp_label *l, const char **why)
{
    if (l->name.len == 0) {
        *why = "empty label name";
        return GP_EPARSE;
    }
    if (l->name.len > GP_RW_MAX_LABEL_LEN || l->value.len > GP_RW_MAX_LABEL_LEN) {
        *why = "label name or value longer than " STR_(GP_RW_MAX_LABEL_LEN) " bytes";
        return GP_ETOOBIG;
    }
    if (!valid_name(l->name.ptr, l->name.len, false)) {
        *why = "invalid label name";
        return GP_EPARSE;
    }
    if (is_metric_name_label(&l->name)) {
        if (!valid_name(l->value.ptr, l->value.len, true)) {
            *why = "invalid metric name";
            return GP_EPARSE;
        }
    } else if (!valid_utf8(l->value.ptr, l->value.len)) {
        *why = "label value is not valid UTF-8";
        return GP_EPARSE;
    }
    return GP_OK;
}

/* Byte order; names differ in their first byte most of the time. */
static inline int cmp_str(const struct gp_str *a, const struct gp_str *b)
{
    if (a->len && b->len && a->ptr[0] != b->ptr[0])
        return (unsigned char)a->ptr[0] < (unsigned char)b->ptr[0] ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    if (c)
        return c;
    return (a->len > b->len) - (a->len < b->len);
}

/* ---- decoder -------------------------------------------------------------- */

/* A series while decoding: offsets into the tables (which may move). */
struct ser_rec {
    size_t samples_off, nsamples, labels_off, nlabels;
};

struct dec {
    uint8_t *tab; /* the tables: per series, its samples then its labels */
    size_t tab_len, tab_cap;
    struct ser_rec *ser;
    size_t nseries, ser_cap;
    size_t nlabels, nsamples;
    /* The first duplicate label name, reported once the whole message
     * parsed (any other error in the message wins, as it always has). */
    bool has_dup;
    struct gp_str dup;
    size_t dup_off;
    struct gp_family_meta *meta; /* field 3, in order */
    size_t nmeta, meta_cap;
};

static int dec_nomem(struct rd *r, size_t bytes)
{
    return gp_seterr(r->err, r->errlen, GP_ENOMEM, "remote write: out of memory for %zu bytes",
                     bytes);
}

/* Makes room for `need` more bytes in the tables. */
static int tab_reserve(struct rd *r, struct dec *d, size_t need)
{
    if (d->tab_cap - d->tab_len >= need)
        return GP_OK;
    size_t cap = d->tab_cap * 2;
    if (cap < d->tab_len + need)
        cap = d->tab_len + need;
    uint8_t *t = realloc(d->tab, cap);
    if (!t)
        return dec_nomem(r, cap);
    d->tab = t;
    d->tab_cap = cap;
    return GP_OK;
}

/* Parses a Label whose body is r->p..r->end; off is its start for errors.
 * *keep is false for an empty value (dropped). */
static inline int dec_label(struct rd *r, struct gp_label *l, bool *keep)
{
    size_t off = rd_off(r);
    l->name.ptr = l->value.ptr = "";
    l->name.len = l->value.len = 0;
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1 || f == 2) {
            if (wt != WT_LEN)
                return wt_mismatch(r, f == 1 ? "label name" : "label value", wt);
            const uint8_t *end = NULL;
            if ((rc = rd_len(r, &end)))
                return rc;
            struct gp_str *dst = f == 1 ? &l->name : &l->value;
            dst->ptr = (const char *)r->p;
            dst->len = (size_t)(end - r->p);
            r->p = end;
        } else if ((rc = rd_skip(r, f, wt)))
            return rc;
    }
    *keep = l->value.len > 0;
    if (l->name.len == 0)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: empty label name at byte %zu", off);
    if (!*keep)
        return GP_OK;
    const char *why = NULL;
    int rc = check_label(l, &why);
    if (rc)
        return gp_seterr(r->err, r->errlen, rc, "remote write: %s at byte %zu (%.*s)", why, off,
                         (int)(l->name.len > 64 ? 64 : l->name.len), l->name.ptr);
    return GP_OK;
}

/* Parses a Sample whose body is r->p..r->end. */
static inline int dec_sample(struct rd *r, struct gp_sample *s)
{
    uint64_t bits = 0, ts = 0;
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1) {
            if (wt != WT_I64)
                return wt_mismatch(r, "sample value", wt);
            if (r->end - r->p >= 8) {
                bits = load_le64(r->p);
                r->p += 8;
            } else if ((rc = rd_fixed(r, 8, &bits)))
                return rc;
        } else if (f == 2) {
            if (wt != WT_VARINT)
                return wt_mismatch(r, "sample timestamp", wt);
            if ((rc = rd_varint(r, &ts)))
                return rc;
        } else if ((rc = rd_skip(r, f, wt)))
            return rc;
    }
    s->value = gp_bits_f64(bits); /* bit-exact: NaN payloads survive */
    s->timestamp_ms = (int64_t)ts; /* int64 is two's complement on the wire */
    return GP_OK;
}

/* The Sample every sender writes (value, then a timestamp of at most 9
 * varint bytes, nothing else) in one step: 1 with *s, 0 for any other
 * form, which dec_sample then parses (and reports) in full. A
 * series-major request is mostly samples. */
static inline int dec_sample_fast(const uint8_t *p, const uint8_t *end, struct gp_sample *s)
{
    if (end - p < 11 || end - p > 19 || p[0] != 0x09 || p[9] != 0x10)
        return 0;
    uint64_t ts = 0;
    for (const uint8_t *q = p + 10; q < end; q++) {
        ts |= (uint64_t)(*q & 0x7f) << (7 * (q - p - 10));
        if (!(*q & 0x80)) {
            if (q + 1 != end)
                return 0;
            s->value = gp_bits_f64(load_le64(p + 1));
            s->timestamp_ms = (int64_t)ts;
            return 1;
        }
    }
    return 0;
}

/* Sorts a series' labels by name unless they already are (the usual case:
 * one comparison per label), and returns the first name given twice, or
 * NULL. */
static const struct gp_str *sort_labels(struct gp_label *l, size_t n)
{
    size_t i = 1;
    while (i < n && cmp_str(&l[i - 1].name, &l[i].name) < 0)
        i++;
    if (i >= n)
        return NULL; /* strictly increasing: sorted, no duplicates */
    for (; i < n; i++) { /* insertion sort: at most GP_RW_MAX_LABELS labels */
        struct gp_label x = l[i];
        size_t j = i;
        while (j > 0 && cmp_str(&l[j - 1].name, &x.name) > 0) {
            l[j] = l[j - 1];
            j--;
        }
        l[j] = x;
    }
    for (i = 1; i < n; i++)
        if (cmp_str(&l[i - 1].name, &l[i].name) == 0)
            return &l[i].name;
    return NULL;
}

/* Parses one TimeSeries (body r->p..r->end) into the tables. */
static int dec_series(struct rd *r, struct dec *d)
{
    size_t off = rd_off(r);
    struct gp_label lab[GP_RW_MAX_LABELS];
    size_t nl = 0, ns = 0, samples_off = d->tab_len;
    const uint8_t *end = r->end;
    while (r->p < end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        const uint8_t *sub = NULL;
        if (f == 1) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "label", wt);
            if ((rc = rd_len(r, &sub)))
                return rc;
            struct gp_label l;
            bool keep = false;
            r->end = sub;
            rc = dec_label(r, &l, &keep);
            r->end = end;
            if (rc)
                return rc;
            if (!keep)
                continue;
            if (nl == GP_RW_MAX_LABELS)
                return gp_seterr(r->err, r->errlen, GP_ETOOBIG,
                                 "remote write: series at byte %zu has more than %d labels", off,
                                 GP_RW_MAX_LABELS);
            lab[nl++] = l;
        } else if (f == 2) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "sample", wt);
            if ((rc = rd_len(r, &sub)))
                return rc;
            struct gp_sample smp;
            if (dec_sample_fast(r->p, sub, &smp)) {
                r->p = sub;
            } else {
                r->end = sub;
                rc = dec_sample(r, &smp);
                r->end = end;
                if (rc)
                    return rc;
            }
            if ((rc = tab_reserve(r, d, sizeof smp)))
                return rc;
            memcpy(d->tab + d->tab_len, &smp, sizeof smp);
            d->tab_len += sizeof smp;
            ns++;
        } else if ((rc = rd_skip(r, f, wt))) /* 3 exemplars, 4 histograms, unknown */
            return rc;
    }
    if (nl == 0)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: series at byte %zu has no labels", off);
    const struct gp_str *dup = sort_labels(lab, nl);
    if (dup && !d->has_dup) {
        d->dup = *dup;
        d->has_dup = true;
        d->dup_off = off;
    }
    int rc;
    if ((rc = tab_reserve(r, d, nl * sizeof lab[0])))
        return rc;
    size_t labels_off = d->tab_len;
    memcpy(d->tab + labels_off, lab, nl * sizeof lab[0]);
    d->tab_len += nl * sizeof lab[0];
    if (d->nseries == d->ser_cap) {
        size_t cap = d->ser_cap ? d->ser_cap * 2 : 64;
        struct ser_rec *s = realloc(d->ser, cap * sizeof *s);
        if (!s)
            return dec_nomem(r, cap * sizeof *s);
        d->ser = s;
        d->ser_cap = cap;
    }
    d->ser[d->nseries++] = (struct ser_rec){samples_off, ns, labels_off, nl};
    d->nlabels += nl;
    d->nsamples += ns;
    return GP_OK;
}

static int bad_meta(struct rd *r, int rc, size_t off, const char *why, const struct gp_str *name)
{
    return gp_seterr(r->err, r->errlen, rc, "remote write: metadata at byte %zu%s%.*s: %s", off,
                     name->len ? " for " : "", (int)(name->len > 64 ? 64 : name->len), name->ptr,
                     why);
}

/* Parses one MetricMetadata (body r->p..r->end) onto d->meta. A type this
 * decoder does not know (a newer sender's) reads as unknown, as proto3
 * leaves open enums; anything else wrong is an error. */
static int dec_metadata(struct rd *r, struct dec *d)
{
    size_t off = rd_off(r);
    struct gp_family_meta m = {{"", 0}, {"", 0}, {"", 0}, GP_MT_UNKNOWN};
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1) {
            uint64_t t;
            if (wt != WT_VARINT)
                return wt_mismatch(r, "metadata type", wt);
            if ((rc = rd_varint(r, &t)))
                return rc;
            m.type = t < GP_MT__COUNT ? (enum gp_rw_type)t : GP_MT_UNKNOWN;
        } else if (f == 2 || f == 4 || f == 5) {
            if (wt != WT_LEN)
                return wt_mismatch(r, f == 2 ? "metadata family name" : f == 4 ? "metadata help"
                                                                               : "metadata unit", wt);
            const uint8_t *end = NULL;
            if ((rc = rd_len(r, &end)))
                return rc;
            struct gp_str *dst = f == 2 ? &m.name : f == 4 ? &m.help : &m.unit;
            *dst = (struct gp_str){(const char *)r->p, (size_t)(end - r->p)};
            r->p = end;
        } else if ((rc = rd_skip(r, f, wt)))
            return rc;
    }
    if (m.name.len == 0)
        return bad_meta(r, GP_EPARSE, off, "no metric family name", &m.name);
    if (m.name.len > GP_RW_MAX_META_LEN || m.help.len > GP_RW_MAX_META_LEN ||
        m.unit.len > GP_RW_MAX_META_LEN)
        return bad_meta(r, GP_ETOOBIG, off,
                        "name, help or unit longer than " STR_(GP_RW_MAX_META_LEN) " bytes", &m.name);
    if (!valid_name(m.name.ptr, m.name.len, true))
        return bad_meta(r, GP_EPARSE, off, "invalid metric family name",
                        &(struct gp_str){"", 0});
    if (!valid_utf8(m.help.ptr, m.help.len))
        return bad_meta(r, GP_EPARSE, off, "help is not valid UTF-8", &m.name);
    if (!valid_utf8(m.unit.ptr, m.unit.len))
        return bad_meta(r, GP_EPARSE, off, "unit is not valid UTF-8", &m.name);
    if (d->nmeta == GP_RW_MAX_METADATA)
        return gp_seterr(r->err, r->errlen, GP_ETOOBIG,
                         "remote write: more than %d metadata entries in one request",
                         GP_RW_MAX_METADATA);
    if (d->nmeta == d->meta_cap) {
        size_t cap = d->meta_cap ? d->meta_cap * 2 : 16;
        struct gp_family_meta *x = realloc(d->meta, cap * sizeof *x);
        if (!x)
            return dec_nomem(r, cap * sizeof *x);
        d->meta = x;
        d->meta_cap = cap;
    }
    d->meta[d->nmeta++] = m;
    return GP_OK;
}

static int dec_request(struct rd *r, struct dec *d)
{
    const uint8_t *end = r->end;
    while (r->p < end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "timeseries", wt);
            const uint8_t *sub = NULL;
            if ((rc = rd_len(r, &sub)))
                return rc;
            if (d->nseries == GP_RW_MAX_SERIES)
                return gp_seterr(r->err, r->errlen, GP_ETOOBIG,
                                 "remote write: more than %d series in one request",
                                 GP_RW_MAX_SERIES);
            r->end = sub;
            rc = dec_series(r, d);
            r->end = end;
            if (rc)
                return rc;
        } else if (f == 3) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "metadata", wt);
            const uint8_t *sub = NULL;
            if ((rc = rd_len(r, &sub)))
                return rc;
            r->end = sub;
            rc = dec_metadata(r, d);
            r->end = end;
            if (rc)
                return rc;
        } else if ((rc = rd_skip(r, f, wt))) /* unknown */
            return rc;
    }
    if (d->has_dup)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: duplicate label name %.*s in series at byte %zu",
                         (int)(d->dup.len > 64 ? 64 : d->dup.len), d->dup.ptr, d->dup_off);
    return GP_OK;
}

/* The arena: the decompressed body (never moved, label views point into
 * it) and the tables block with the samples, labels and series arrays. */
struct rw_arena {
    void *tables;
    struct gp_series *series; /* apart from the tables: appending it there
                                 was a realloc that copied them all */
    struct gp_family_meta *meta;
    size_t nmeta;
    uint8_t body[];
};

static struct rw_arena *arena_new(size_t len, char *err, size_t errlen)
{
    struct rw_arena *a = malloc(sizeof *a + (len ? len : 1));
    if (!a)
        gp_seterr(err, errlen, GP_ENOMEM, "remote write: out of memory for %zu bytes", len);
    else {
        a->tables = a->series = NULL;
        a->meta = NULL;
        a->nmeta = 0;
    }
    return a;
}

/* Parses a->body[0..len) (a is taken over: freed on failure, owned by out
 * on success). */
static int dec_arena(struct rw_arena *a, size_t len, struct gp_batch *out, char *err,
                     size_t errlen)
{
    struct rd r = {a->body, a->body, a->body + len, err, errlen};
    /* A dcgm-like series takes ~320 body bytes and ~370 table bytes; a
     * first guess a bit over the body length usually needs no regrowth. */
    struct dec d = {0};
    int rc = tab_reserve(&r, &d, len + len / 4 + 64);
    if (!rc)
        rc = dec_request(&r, &d);
    size_t total = d.nseries * sizeof(struct gp_series);
    struct gp_series *ser = NULL;
    if (!rc && !(ser = malloc(total ? total : 1)))
        rc = dec_nomem(&r, total);
    if (rc) {
        free(d.tab);
        free(d.ser);
        free(d.meta);
        free(a);
        return rc;
    }
    uint8_t *t = d.tab;
    for (size_t i = 0; i < d.nseries; i++) {
        const struct ser_rec *s = &d.ser[i];
        ser[i] = (struct gp_series){(struct gp_label *)(void *)(t + s->labels_off),
                                       s->nlabels,
                                       (struct gp_sample *)(void *)(t + s->samples_off),
                                       s->nsamples};
    }
    free(d.ser);
    a->tables = t;
    a->series = ser;
    a->meta = d.meta;
    a->nmeta = d.nmeta;
    out->series = d.nseries ? ser : NULL;
    out->nseries = d.nseries;
    out->nlabels_total = d.nlabels;
    out->nsamples_total = d.nsamples;
    out->arena = a;
    return GP_OK;
}

int gp_rw_decode(const uint8_t *body, size_t len, size_t max_uncompressed,
                 struct gp_batch *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t ulen;
    if (snappy_uncompressed_length((const char *)body, len, &ulen) != SNAPPY_OK)
        return gp_seterr(err, errlen, GP_EPARSE, "remote write: body is not snappy-compressed");
    if (ulen > max_uncompressed)
        return gp_seterr(err, errlen, GP_ETOOBIG,
                         "remote write: uncompressed body of %zu bytes exceeds the cap of %zu",
                         ulen, max_uncompressed);
    struct rw_arena *a = arena_new(ulen, err, errlen);
    if (!a)
        return GP_ENOMEM;
    size_t got = ulen;
    if (snappy_uncompress((const char *)body, len, (char *)a->body, &got) != SNAPPY_OK ||
        got != ulen) {
        free(a);
        return gp_seterr(err, errlen, GP_EPARSE, "remote write: corrupt snappy body");
    }
    return dec_arena(a, ulen, out, err, errlen);
}

int gp_rw_unmarshal(const uint8_t *pb, size_t len, struct gp_batch *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct rw_arena *a = arena_new(len, err, errlen);
    if (!a)
        return GP_ENOMEM;
    if (len)
        memcpy(a->body, pb, len);
    return dec_arena(a, len, out, err, errlen);
}

void gp_rw_decoded_free(struct gp_batch *req)
{
    if (!req)
        return;
    struct rw_arena *a = req->arena;
    if (a) {
        free(a->tables);
        free(a->series);
        free(a->meta);
        free(a);
    }
    memset(req, 0, sizeof *req);
}

size_t gp_rw_metadata(const struct gp_batch *req, const struct gp_family_meta **out)
{
    const struct rw_arena *a = req->arena;
    *out = a ? a->meta : NULL;
    return a ? a->nmeta : 0;
}

const char *gp_rw_metric_type_name(enum gp_rw_type t)
{
    static const char *const names[GP_MT__COUNT] = {
        "unknown", "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset"};
    return (unsigned)t < GP_MT__COUNT ? names[t] : "unknown";
}

/* ---- encoder -------------------------------------------------------------- */

static size_t label_size(const struct gp_label *l)
{
    return 1 + varint_size(l->name.len) + l->name.len + 1 + varint_size(l->value.len) +
           l->value.len;
}

static size_t sample_size(const struct gp_sample *s)
{
    return 9 + 1 + varint_size((uint64_t)s->timestamp_ms);
}

static size_t field_size(size_t body) { return 1 + varint_size(body) + body; }

/*
 * The labels written, in name order, as indexes into ser->labels (empty
 * values skipped). Insertion sort: a few labels, usually sorted already
 * (the agent's parser sorts them), so about one comparison per label.
 */
static size_t sorted_labels(const struct gp_series *ser, uint8_t idx[GP_RW_MAX_LABELS])
{
    size_t n = 0;
    for (size_t i = 0; i < ser->nlabels; i++) {
        if (ser->labels[i].value.len == 0)
            continue;
        size_t j = n++;
        while (j > 0 && cmp_str(&ser->labels[idx[j - 1]].name, &ser->labels[i].name) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = (uint8_t)i;
    }
    return n;
}

/* Size of one TimeSeries body, for a series series_check accepted. */
static size_t series_size(const struct gp_series *ser)
{
    size_t n = 0;
    for (size_t i = 0; i < ser->nlabels; i++)
        if (ser->labels[i].value.len)
            n += field_size(label_size(&ser->labels[i]));
    for (size_t i = 0; i < ser->nsamples; i++)
        n += field_size(sample_size(&ser->samples[i]));
    return n;
}

/* Validates one series as the decoder would (names, UTF-8, caps, a name
 * given twice: adjacent once sorted). The caller checked nlabels <= cap. */
static int series_check(const struct gp_series *ser)
{
    for (size_t i = 0; i < ser->nlabels; i++) {
        const struct gp_label *l = &ser->labels[i];
        if (l->value.len == 0) {
            if (l->name.len == 0)
                return GP_EUSAGE;
            continue;
        }
        const char *why;
        int rc = check_label(l, &why);
        if (rc)
            return rc == GP_ETOOBIG ? rc : GP_EUSAGE;
    }
    uint8_t idx[GP_RW_MAX_LABELS];
    size_t n = sorted_labels(ser, idx);
    if (n == 0)
        return GP_EUSAGE;
    for (size_t k = 1; k < n; k++)
        if (cmp_str(&ser->labels[idx[k - 1]].name, &ser->labels[idx[k]].name) == 0)
            return GP_EUSAGE;
    return GP_OK;
}

int gp_rw_check(const struct gp_batch *req, size_t *size, char *err, size_t errlen)
{
    *size = 0;
    if (req->nseries > GP_RW_MAX_SERIES)
        return gp_seterr(err, errlen, GP_ETOOBIG, "%zu series: at most %d in one request", req->nseries,
                         GP_RW_MAX_SERIES);
    size_t total = 0;
    for (size_t i = 0; i < req->nseries; i++) {
        const struct gp_series *ser = &req->series[i];
        if (ser->nlabels > GP_RW_MAX_LABELS)
            return gp_seterr(err, errlen, GP_ETOOBIG, "series %zu has %zu labels: at most %d", i,
                             ser->nlabels, GP_RW_MAX_LABELS);
        for (size_t j = 0; j < ser->nlabels; j++) {
            const struct gp_label *l = &ser->labels[j];
            const char *why = "empty label value";
            int rc = l->value.len ? check_label(l, &why) : GP_EPARSE;
            if (!rc && j && cmp_str(&ser->labels[j - 1].name, &l->name) >= 0)
                rc = GP_EPARSE, why = "labels not sorted by name, or a name given twice";
            if (rc)
                return gp_seterr(err, errlen, rc, "series %zu, label %zu: %s", i, j, why);
        }
        if (!ser->nlabels)
            return gp_seterr(err, errlen, GP_EPARSE, "series %zu has no labels", i);
        total += field_size(series_size(ser));
    }
    *size = total;
    return GP_OK;
}

static uint8_t *put_str(uint8_t *p, uint8_t key, const struct gp_str *s)
{
    *p++ = key;
    p = put_varint(p, s->len);
    if (s->len)
        memcpy(p, s->ptr, s->len);
    return p + s->len;
}

static uint8_t *put_series(uint8_t *p, const struct gp_series *ser, size_t body)
{
    *p++ = 0x0a; /* WriteRequest.timeseries */
    p = put_varint(p, body);
    /* Sorted order through an index: the caller's arrays are const. */
    uint8_t idx[GP_RW_MAX_LABELS];
    size_t n = sorted_labels(ser, idx);
    for (size_t k = 0; k < n; k++) {
        const struct gp_label *l = &ser->labels[idx[k]];
        *p++ = 0x0a; /* TimeSeries.labels */
        p = put_varint(p, label_size(l));
        p = put_str(p, 0x0a, &l->name);
        p = put_str(p, 0x12, &l->value);
    }
    for (size_t i = 0; i < ser->nsamples; i++) {
        const struct gp_sample *s = &ser->samples[i];
        *p++ = 0x12; /* TimeSeries.samples */
        p = put_varint(p, sample_size(s));
        uint64_t bits;
        bits = gp_f64_bits(s->value);
        *p++ = 0x09;
        for (int b = 0; b < 8; b++)
            *p++ = (uint8_t)(bits >> (8 * b));
        *p++ = 0x10;
        p = put_varint(p, (uint64_t)s->timestamp_ms);
    }
    return p;
}

size_t gp_rw_fit(const struct gp_batch *req, size_t first, size_t max_raw, size_t max_series)
{
    size_t n = 0, raw = 0;
    while (first + n < req->nseries && n < max_series) {
        size_t one = field_size(series_size(&req->series[first + n]));
        if (n && raw + one > max_raw)
            break;
        raw += one;
        n++;
    }
    return n;
}

static int compress(const struct gp_buf *scratch, struct gp_buf *out);

int gp_rw_encode(const struct gp_batch *req, struct gp_buf *out_compressed,
                 struct gp_buf *scratch)
{
    gp_buf_reset(out_compressed);
    gp_buf_reset(scratch);
    if (req->nseries > GP_RW_MAX_SERIES)
        return GP_ETOOBIG;
    /* Labels are indexed by uint8_t while sorting; an index past 255 in a
     * long array with empty values would not fit. */
    _Static_assert(GP_RW_MAX_LABELS <= 256, "label index is a uint8_t");
    size_t total = 0;
    for (size_t i = 0; i < req->nseries; i++) {
        if (req->series[i].nlabels > GP_RW_MAX_LABELS)
            return GP_ETOOBIG;
        int rc = series_check(&req->series[i]);
        if (rc)
            return rc;
        total += field_size(series_size(&req->series[i]));
    }
    int rc = gp_buf_reserve(scratch, total);
    if (rc)
        return rc;
    uint8_t *p = (uint8_t *)scratch->data;
    for (size_t i = 0; i < req->nseries; i++)
        p = put_series(p, &req->series[i], series_size(&req->series[i]));
    scratch->len = (size_t)(p - (uint8_t *)scratch->data);
    if (scratch->len != total)
        return GP_EINTERNAL;
    scratch->data[scratch->len] = '\0';
    return compress(scratch, out_compressed);
}

/* Snappy-compresses the WriteRequest in scratch into out. */
static int compress(const struct gp_buf *scratch, struct gp_buf *out)
{
    size_t clen = snappy_max_compressed_length(scratch->len);
    int rc = gp_buf_reserve(out, clen);
    if (rc)
        return rc;
    if (snappy_compress(scratch->data, scratch->len, out->data, &clen) != SNAPPY_OK)
        return GP_EINTERNAL;
    out->len = clen;
    out->data[clen] = '\0';
    return GP_OK;
}

/* A MetricMetadata's body: the fields proto3 writes (zero values left out). */
static size_t meta_size(const struct gp_family_meta *m)
{
    size_t n = m->type ? 1 + varint_size((uint64_t)m->type) : 0;
    n += m->name.len ? field_size(m->name.len) : 0;
    n += m->help.len ? field_size(m->help.len) : 0;
    return n + (m->unit.len ? field_size(m->unit.len) : 0);
}

int gp_rw_encode_metadata(const struct gp_family_meta *m, size_t n, struct gp_buf *out_compressed,
                          struct gp_buf *scratch)
{
    gp_buf_reset(out_compressed);
    gp_buf_reset(scratch);
    if (n > GP_RW_MAX_METADATA)
        return GP_ETOOBIG;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].name.len > GP_RW_MAX_META_LEN || m[i].help.len > GP_RW_MAX_META_LEN ||
            m[i].unit.len > GP_RW_MAX_META_LEN)
            return GP_ETOOBIG;
        if (!m[i].name.len || !valid_name(m[i].name.ptr, m[i].name.len, true) ||
            !valid_utf8(m[i].help.ptr, m[i].help.len) || !valid_utf8(m[i].unit.ptr, m[i].unit.len) ||
            (unsigned)m[i].type >= GP_MT__COUNT)
            return GP_EUSAGE; /* what the decoder refuses */
        total += field_size(meta_size(&m[i]));
    }
    int rc = gp_buf_reserve(scratch, total);
    if (rc)
        return rc;
    uint8_t *p = (uint8_t *)scratch->data;
    for (size_t i = 0; i < n; i++) {
        *p++ = 0x1a; /* WriteRequest.metadata */
        p = put_varint(p, meta_size(&m[i]));
        if (m[i].type) {
            *p++ = 0x08; /* MetricMetadata.type */
            p = put_varint(p, (uint64_t)m[i].type);
        }
        if (m[i].name.len)
            p = put_str(p, 0x12, &m[i].name); /* metric_family_name */
        if (m[i].help.len)
            p = put_str(p, 0x22, &m[i].help);
        if (m[i].unit.len)
            p = put_str(p, 0x2a, &m[i].unit);
    }
    scratch->len = (size_t)(p - (uint8_t *)scratch->data);
    if (scratch->len != total)
        return GP_EINTERNAL;
    if (total)
        scratch->data[total] = '\0';
    return compress(scratch, out_compressed);
}
