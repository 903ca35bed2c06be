/*
 * symtab.c - see symtab.h.
 *
 * Parts:
 *  - the table: symbol bytes in one arena, offsets and lengths by
 *    number, and a hash of the bytes (labels.h's, stable) to numbers
 *    with linear probing, kept at most half full;
 *  - encode/decode of one label set's reference form; decode checks
 *    that what it built is a canonical blob, so a reader never hands
 *    the index labels a damaged or crafted file made up;
 *  - symbol ranges, the payload of series.log's symbol records.
 */
#include "store/symtab.h"

#include "lib/err.h"
#include "lib/varint.h"
#include "store/labels.h"

#include <stdlib.h>
#include <string.h>

void gp_st_syms_free(struct gp_st_syms *t)
{
    free(t->bytes);
    free(t->off);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The slot holding these bytes, or the empty slot where they would go. */
static uint32_t *find_slot(const struct gp_st_syms *t, const void *p, size_t n)
{
    uint32_t mask = t->nslots - 1;
    for (uint32_t i = (uint32_t)gp_labels_hash(p, n) & mask;; i = (i + 1) & mask) {
        uint32_t id = t->slots[i];
        if (!id || (t->len[id] == n && !memcmp(t->bytes + t->off[id], p, n)))
            return &t->slots[i];
    }
}

static int grow_slots(struct gp_st_syms *t)
{
    uint32_t ns = t->nslots ? t->nslots * 2 : 1024;
    if (ns < t->nslots)
        return GP_ENOMEM;
    uint32_t *old = t->slots, on = t->nslots;
    t->slots = calloc(ns, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return GP_ENOMEM;
    }
    t->nslots = ns;
    for (uint32_t i = 0; i < on; i++)
        if (old[i])
            *find_slot(t, t->bytes + t->off[old[i]], t->len[old[i]]) = old[i];
    free(old);
    return GP_OK;
}

static int grow_ids(struct gp_st_syms *t, uint32_t id)
{
    if (id < t->cap)
        return GP_OK;
    uint32_t cap = t->cap ? t->cap : 256;
    while (cap <= id)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    uint32_t *off = realloc(t->off, (size_t)cap * sizeof *off);
    if (!off)
        return GP_ENOMEM;
    t->off = off;
    uint32_t *len = realloc(t->len, (size_t)cap * sizeof *len);
    if (!len)
        return GP_ENOMEM;
    memset(len + t->cap, 0, (size_t)(cap - t->cap) * sizeof *len);
    t->len = len;
    t->cap = cap;
    return GP_OK;
}

/* Stores bytes as symbol id (its slot already found empty). */
static int put(struct gp_st_syms *t, uint32_t id, const void *p, size_t n)
{
    if (grow_ids(t, id) != GP_OK)
        return GP_ENOMEM;
    if (t->blen + n > t->bcap) {
        size_t cap = t->bcap ? t->bcap : 4096;
        while (cap < t->blen + n)
            cap *= 2;
        if (cap > UINT32_MAX)
            return GP_ENOMEM; /* offsets are 32-bit: 4 GiB of distinct strings */
        char *b = realloc(t->bytes, cap);
        if (!b)
            return GP_ENOMEM;
        t->bytes = b;
        t->bcap = cap;
    }
    if ((t->used + 1) * 2 > t->nslots && grow_slots(t) != GP_OK)
        return GP_ENOMEM;
    memcpy(t->bytes + t->blen, p, n);
    t->off[id] = (uint32_t)t->blen;
    t->len[id] = (uint32_t)n;
    t->blen += n;
    *find_slot(t, p, n) = id;
    t->used++;
    if (id > t->n)
        t->n = id;
    return GP_OK;
}

int gp_st_syms_get(const struct gp_st_syms *t, uint64_t id, const char **p, size_t *n)
{
    if (id == 0 || id > t->n || !t->len[id])
        return 0;
    *p = t->bytes + t->off[id];
    *n = t->len[id];
    return 1;
}

int gp_st_syms_define(struct gp_st_syms *t, uint32_t id, const void *p, size_t n, uint32_t limit)
{
    if (id == 0 || id > limit || n == 0 || n > GP_ST_SYM_MAX)
        return GP_EPARSE;
    const char *q;
    size_t qn;
    if (gp_st_syms_get(t, id, &q, &qn))
        return qn == n && !memcmp(q, p, n) ? GP_OK : GP_EPARSE;
    if (t->nslots && *find_slot(t, p, n))
        return GP_EPARSE; /* the bytes have another number */
    return put(t, id, p, n);
}

/* The number of these bytes, given the next one when new. */
static int intern(struct gp_st_syms *t, const char *p, size_t n, uint32_t *id)
{
    uint32_t *slot = t->nslots ? find_slot(t, p, n) : NULL;
    if (slot && *slot) {
        *id = *slot;
        return GP_OK;
    }
    if (t->n == UINT32_MAX - 1 || n > GP_ST_SYM_MAX)
        return GP_ENOMEM;
    *id = t->n + 1;
    return put(t, *id, p, n);
}

int gp_st_syms_encode(struct gp_st_syms *t, const uint8_t *blob, size_t len, struct gp_buf *out)
{
    if (gp_labels_validate(blob, len) != GP_OK)
        return GP_EPARSE;
    struct gp_labels_iter it;
    struct gp_str name, value;
    size_t count = 0;
    gp_labels_iter_init(&it, blob, len);
    while (gp_labels_next(&it, &name, &value) == 1)
        count++;
    gp_buf_put_uvarint(out, count);
    gp_labels_iter_init(&it, blob, len);
    while (gp_labels_next(&it, &name, &value) == 1) {
        uint32_t a, b;
        int rc = intern(t, name.ptr, name.len, &a);
        if (rc == GP_OK)
            rc = intern(t, value.ptr, value.len, &b);
        if (rc != GP_OK)
            return rc;
        gp_buf_put_uvarint(out, a);
        gp_buf_put_uvarint(out, b);
    }
    return out->err;
}

int gp_st_syms_decode(const struct gp_st_syms *t, const uint8_t **p, const uint8_t *end,
                      struct gp_buf *out)
{
    const uint8_t *q = *p;
    uint64_t count;
    /* Each label takes at least two bytes: a bound before any loop. */
    if (gp_uvarint_get(&q, end, &count) || count == 0 || count > (uint64_t)(end - q) / 2)
        return GP_EPARSE;
    size_t start = out->len;
    int missing = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t ref[2];
        if (gp_uvarint_get(&q, end, &ref[0]) || gp_uvarint_get(&q, end, &ref[1]))
            return GP_EPARSE;
        for (int k = 0; k < 2 && !missing; k++) {
            const char *s;
            size_t n;
            if (!gp_st_syms_get(t, ref[k], &s, &n)) {
                missing = 1;
                break;
            }
            gp_buf_put_uvarint(out, n);
            gp_buf_append(out, s, n);
        }
    }
    *p = q;
    if (out->err)
        return out->err;
    if (missing || gp_labels_validate((const uint8_t *)out->data + start, out->len - start)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
        return GP_ENOTFOUND;
    }
    return GP_OK;
}

uint32_t gp_st_syms_put_range(const struct gp_st_syms *t, uint32_t from, uint32_t to,
                              size_t max_bytes, struct gp_buf *out)
{
    /* A symbol takes its bytes and at most 5 for its length. */
    uint32_t last = from + 1;
    size_t bytes = t->len[last] + 5u;
    while (last < to && bytes + t->len[last + 1] + 5u <= max_bytes)
        bytes += t->len[++last] + 5u;
    gp_buf_put_uvarint(out, from + 1);
    gp_buf_put_uvarint(out, last - from);
    for (uint32_t id = from + 1; id <= last; id++) {
        gp_buf_put_uvarint(out, t->len[id]);
        gp_buf_append(out, t->bytes + t->off[id], t->len[id]);
    }
    return last;
}

int gp_st_syms_parse_range(struct gp_st_syms *t, const uint8_t *p, size_t n, uint32_t limit)
{
    const uint8_t *q = p, *end = p + n;
    uint64_t first, count;
    if (gp_uvarint_get(&q, end, &first) || gp_uvarint_get(&q, end, &count) || first == 0 ||
        count == 0 || first > limit || count > limit - first + 1)
        return GP_EPARSE;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t len;
        if (gp_uvarint_get(&q, end, &len) || len > (uint64_t)(end - q))
            return GP_EPARSE;
        int rc = gp_st_syms_define(t, (uint32_t)(first + i), q, (size_t)len, limit);
        if (rc != GP_OK)
            return rc;
        q += len;
    }
    return q == end ? GP_OK : GP_EPARSE;
}
