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
 *  - wire primitives: varint read/size/write, field skipping by wire type;
 *  - label checks shared by both directions (name charset, UTF-8, caps);
 *  - decoder: pass 1 walks the whole message validating and counting, so
 *    the arena is sized exactly once; pass 2 walks it again filling the
 *    arrays, sorts each series' labels and rejects duplicate names;
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

struct rd {
    const uint8_t *base; /* start of the whole message, for offsets in errors */
    const uint8_t *p;
    const uint8_t *end;
    char *err;
    size_t errlen;
};

static size_t rd_off(const struct rd *r) { return (size_t)(r->p - r->base); }

static int rd_varint(struct rd *r, uint64_t *v)
{
    uint64_t x = 0;
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

/* Reads a key; field numbers are 1..2^29-1. */
static int rd_key(struct rd *r, uint32_t *field, int *wt)
{
    size_t off = rd_off(r);
    uint64_t k;
    int rc = rd_varint(r, &k);
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

/* Reads a LEN payload's bounds into *sub (same base, so offsets stay global). */
static int rd_len(struct rd *r, struct rd *sub)
{
    size_t off = rd_off(r);
    uint64_t n;
    int rc = rd_varint(r, &n);
    if (rc)
        return rc;
    if (n > (uint64_t)(r->end - r->p))
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: length %llu at byte %zu runs past the end",
                         (unsigned long long)n, off);
    *sub = *r;
    sub->end = r->p + n;
    r->p += n;
    return GP_OK;
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
    struct rd sub;
    switch (wt) {
    case WT_VARINT:
        return rd_varint(r, &v);
    case WT_I64:
        return rd_fixed(r, 8, &v);
    case WT_LEN:
        return rd_len(r, &sub);
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

static bool is_name_char(char c, bool first, bool colon)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return true;
    if (colon && c == ':')
        return true;
    return !first && c >= '0' && c <= '9';
}

static bool valid_name(const char *s, size_t n, bool colon)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_name_char(s[i], i == 0, colon))
            return false;
    return true;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool valid_utf8(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
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

static bool is_metric_name_label(const struct gp_rw_str *name)
{
    return name->len == 8 && memcmp(name->ptr, "__name__", 8) == 0;
}

/* Checks one label with a non-empty value; why (static text) on failure. */
static int check_label(const struct gp_rw_label *l, const char **why)
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

static int cmp_str(const struct gp_rw_str *a, const struct gp_rw_str *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    if (c)
        return c;
    return (a->len > b->len) - (a->len < b->len);
}

static int cmp_label(const void *a, const void *b)
{
    return cmp_str(&((const struct gp_rw_label *)a)->name, &((const struct gp_rw_label *)b)->name);
}

/* ---- decoder -------------------------------------------------------------- */

struct dec {
    size_t nseries, nlabels, nsamples; /* counts (pass 1) or fill cursors (pass 2) */
    struct gp_rw_series *series;       /* NULL in pass 1 */
    struct gp_rw_label *labels;
    struct gp_rw_sample *samples;
};

/* Parses a Label; *keep is false for an empty value (dropped). */
static int dec_label(struct rd *r, struct gp_rw_label *l, bool *keep)
{
    size_t off = rd_off(r);
    memset(l, 0, sizeof *l);
    l->name.ptr = l->value.ptr = "";
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1 || f == 2) {
            if (wt != WT_LEN)
                return wt_mismatch(r, f == 1 ? "label name" : "label value", wt);
            struct rd s;
            if ((rc = rd_len(r, &s)))
                return rc;
            struct gp_rw_str *dst = f == 1 ? &l->name : &l->value;
            dst->ptr = (const char *)s.p;
            dst->len = (size_t)(s.end - s.p);
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

static int dec_sample(struct rd *r, struct gp_rw_sample *s)
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
            if ((rc = rd_fixed(r, 8, &bits)))
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
    s->timestamp_ms = (int64_t)ts;          /* int64 is two's complement on the wire */
    return GP_OK;
}

/*
 * Parses one TimeSeries. Pass 1 (d->series == NULL) validates and counts;
 * pass 2 first counts this series alone (cannot fail: pass 1 saw it), then
 * fills the arrays at the cursors, sorts and checks duplicates.
 */
static int dec_series(struct rd *r, struct dec *d)
{
    size_t off = rd_off(r);
    struct gp_rw_series *ser = NULL;
    size_t nl = 0, ns = 0;
    if (d->series) {
        struct dec one = {0};
        struct rd r1 = *r;
        int rc = dec_series(&r1, &one);
        if (rc)
            return rc;
        ser = &d->series[d->nseries];
        ser->labels = d->labels + d->nlabels;
        ser->samples = d->samples + d->nsamples;
        ser->nlabels = one.nlabels;
        ser->nsamples = one.nsamples;
    }
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        struct rd s;
        if (f == 1) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "label", wt);
            if ((rc = rd_len(r, &s)))
                return rc;
            struct gp_rw_label l;
            bool keep = false;
            if ((rc = dec_label(&s, &l, &keep)))
                return rc;
            if (!keep)
                continue;
            if (nl == GP_RW_MAX_LABELS)
                return gp_seterr(r->err, r->errlen, GP_ETOOBIG,
                                 "remote write: series at byte %zu has more than %d labels", off,
                                 GP_RW_MAX_LABELS);
            if (ser)
                ser->labels[nl] = l;
            nl++;
        } else if (f == 2) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "sample", wt);
            if ((rc = rd_len(r, &s)))
                return rc;
            struct gp_rw_sample smp;
            if ((rc = dec_sample(&s, &smp)))
                return rc;
            if (ser)
                ser->samples[ns] = smp;
            ns++;
        } else if ((rc = rd_skip(r, f, wt))) /* 3 exemplars, 4 histograms, unknown */
            return rc;
    }
    if (nl == 0)
        return gp_seterr(r->err, r->errlen, GP_EPARSE,
                         "remote write: series at byte %zu has no labels", off);
    if (ser) {
        qsort(ser->labels, nl, sizeof ser->labels[0], cmp_label);
        for (size_t i = 1; i < nl; i++)
            if (cmp_str(&ser->labels[i - 1].name, &ser->labels[i].name) == 0)
                return gp_seterr(r->err, r->errlen, GP_EPARSE,
                                 "remote write: duplicate label name %.*s in series at byte %zu",
                                 (int)(ser->labels[i].name.len > 64 ? 64 : ser->labels[i].name.len),
                                 ser->labels[i].name.ptr, off);
    }
    d->nlabels += nl;
    d->nsamples += ns;
    d->nseries++;
    return GP_OK;
}

static int dec_request(struct rd *r, struct dec *d)
{
    while (r->p < r->end) {
        uint32_t f;
        int wt, rc = rd_key(r, &f, &wt);
        if (rc)
            return rc;
        if (f == 1) {
            if (wt != WT_LEN)
                return wt_mismatch(r, "timeseries", wt);
            struct rd s;
            if ((rc = rd_len(r, &s)))
                return rc;
            if (!d->series && d->nseries == GP_RW_MAX_SERIES)
                return gp_seterr(r->err, r->errlen, GP_ETOOBIG,
                                 "remote write: more than %d series in one request",
                                 GP_RW_MAX_SERIES);
            if ((rc = dec_series(&s, d)))
                return rc;
        } else if ((rc = rd_skip(r, f, wt))) /* 3 metadata, unknown */
            return rc;
    }
    return GP_OK;
}

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* Parses buf[0..len) that sits at the start of the malloc'ed arena `buf`
 * (taken over: freed on failure, owned by out on success). */
static int dec_arena(uint8_t *buf, size_t len, struct gp_rw_request *out, char *err, size_t errlen)
{
    struct rd r = {buf, buf, buf + len, err, errlen};
    struct dec d = {0};
    int rc = dec_request(&r, &d);
    if (rc) {
        free(buf);
        return rc;
    }
    /* Counts are bounded by len (each element takes >= 2 bytes), so no overflow. */
    size_t o_series = ALIGN8(len);
    size_t o_labels = o_series + ALIGN8(d.nseries * sizeof(struct gp_rw_series));
    size_t o_samples = o_labels + ALIGN8(d.nlabels * sizeof(struct gp_rw_label));
    size_t total = o_samples + d.nsamples * sizeof(struct gp_rw_sample);
    uint8_t *a = realloc(buf, total ? total : 1);
    if (!a) {
        free(buf);
        return gp_seterr(err, errlen, GP_ENOMEM, "remote write: out of memory for %zu bytes",
                         total);
    }
    struct dec fill = {0, 0, 0, (struct gp_rw_series *)(void *)(a + o_series),
                       (struct gp_rw_label *)(void *)(a + o_labels),
                       (struct gp_rw_sample *)(void *)(a + o_samples)};
    struct rd r2 = {a, a, a + len, err, errlen};
    if ((rc = dec_request(&r2, &fill))) { /* only duplicate names fail here */
        free(a);
        return rc;
    }
    out->series = d.nseries ? fill.series : NULL;
    out->nseries = d.nseries;
    out->nlabels_total = d.nlabels;
    out->nsamples_total = d.nsamples;
    out->arena = a;
    return GP_OK;
}

int gp_rw_decode(const uint8_t *body, size_t len, size_t max_uncompressed,
                 struct gp_rw_request *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t ulen;
    if (snappy_uncompressed_length((const char *)body, len, &ulen) != SNAPPY_OK)
        return gp_seterr(err, errlen, GP_EPARSE, "remote write: body is not snappy-compressed");
    if (ulen > max_uncompressed)
        return gp_seterr(err, errlen, GP_ETOOBIG,
                         "remote write: uncompressed body of %zu bytes exceeds the cap of %zu",
                         ulen, max_uncompressed);
    uint8_t *buf = malloc(ulen ? ulen : 1);
    if (!buf)
        return gp_seterr(err, errlen, GP_ENOMEM, "remote write: out of memory for %zu bytes", ulen);
    size_t got = ulen;
    if (snappy_uncompress((const char *)body, len, (char *)buf, &got) != SNAPPY_OK || got != ulen) {
        free(buf);
        return gp_seterr(err, errlen, GP_EPARSE, "remote write: corrupt snappy body");
    }
    return dec_arena(buf, ulen, out, err, errlen);
}

int gp_rw_unmarshal(const uint8_t *pb, size_t len, struct gp_rw_request *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return gp_seterr(err, errlen, GP_ENOMEM, "remote write: out of memory for %zu bytes", len);
    if (len)
        memcpy(buf, pb, len);
    return dec_arena(buf, len, out, err, errlen);
}

void gp_rw_request_free(struct gp_rw_request *req)
{
    if (!req)
        return;
    free(req->arena);
    memset(req, 0, sizeof *req);
}

/* ---- encoder -------------------------------------------------------------- */

static size_t label_size(const struct gp_rw_label *l)
{
    return 1 + varint_size(l->name.len) + l->name.len + 1 + varint_size(l->value.len) +
           l->value.len;
}

static size_t sample_size(const struct gp_rw_sample *s)
{
    return 9 + 1 + varint_size((uint64_t)s->timestamp_ms);
}

static size_t field_size(size_t body) { return 1 + varint_size(body) + body; }

/*
 * The labels written, in name order, as indexes into ser->labels (empty
 * values skipped). Insertion sort: a few labels, usually sorted already
 * (the agent's parser sorts them), so about one comparison per label.
 */
static size_t sorted_labels(const struct gp_rw_series *ser, uint8_t idx[GP_RW_MAX_LABELS])
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
static size_t series_size(const struct gp_rw_series *ser)
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
static int series_check(const struct gp_rw_series *ser)
{
    for (size_t i = 0; i < ser->nlabels; i++) {
        const struct gp_rw_label *l = &ser->labels[i];
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

static uint8_t *put_str(uint8_t *p, uint8_t key, const struct gp_rw_str *s)
{
    *p++ = key;
    p = put_varint(p, s->len);
    if (s->len)
        memcpy(p, s->ptr, s->len);
    return p + s->len;
}

static uint8_t *put_series(uint8_t *p, const struct gp_rw_series *ser, size_t body)
{
    *p++ = 0x0a; /* WriteRequest.timeseries */
    p = put_varint(p, body);
    /* Sorted order through an index: the caller's arrays are const. */
    uint8_t idx[GP_RW_MAX_LABELS];
    size_t n = sorted_labels(ser, idx);
    for (size_t k = 0; k < n; k++) {
        const struct gp_rw_label *l = &ser->labels[idx[k]];
        *p++ = 0x0a; /* TimeSeries.labels */
        p = put_varint(p, label_size(l));
        p = put_str(p, 0x0a, &l->name);
        p = put_str(p, 0x12, &l->value);
    }
    for (size_t i = 0; i < ser->nsamples; i++) {
        const struct gp_rw_sample *s = &ser->samples[i];
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

int gp_rw_encode(const struct gp_rw_request *req, struct gp_buf *out_compressed,
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

    size_t clen = snappy_max_compressed_length(total);
    if ((rc = gp_buf_reserve(out_compressed, clen)))
        return rc;
    if (snappy_compress(scratch->data, total, out_compressed->data, &clen) != SNAPPY_OK)
        return GP_EINTERNAL;
    out_compressed->len = clen;
    out_compressed->data[clen] = '\0';
    return GP_OK;
}
