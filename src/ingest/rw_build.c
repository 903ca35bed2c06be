/*
 * rw_build.c - see rw_build.h.
 */
#include "ingest/rw_build.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

/* The strings of one tick: 64 MiB (gp_buf's default) is about 4,000
 * GPUs' tick of a simulating agent; offsets are 32-bit, so 1 GiB leaves
 * room and still stops a runaway exposition. */
#define STR_MAX ((size_t)1 << 30)

/* Grows *arr to hold need elements of size sz; sets b->err on failure. */
static int grow(struct gp_rw_build *b, void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 1;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * sz);
    if (!p) {
        if (!b->err)
            b->err = GP_ENOMEM;
        return 0;
    }
    *arr = p;
    *cap = n;
    return 1;
}

void gp_rw_build_reset(struct gp_rw_build *b)
{
    if (!b->str.max)
        gp_buf_init(&b->str, STR_MAX);
    gp_buf_reset(&b->str);
    b->nlab = b->nser = 0;
    b->err = GP_OK;
}

static uint32_t put_str(struct gp_rw_build *b, const char *s, uint32_t *len)
{
    size_t off = b->str.len, n = strlen(s);
    gp_buf_append(&b->str, s, n);
    if (b->str.err && !b->err)
        b->err = b->str.err;
    if (off > UINT32_MAX - n && !b->err)
        b->err = GP_ETOOBIG;
    *len = (uint32_t)n;
    return (uint32_t)off;
}

void gp_rw_build_begin(struct gp_rw_build *b, const char *name)
{
    if (!b->str.max)
        gp_buf_init(&b->str, STR_MAX);
    if (!grow(b, (void **)&b->ser, &b->cap_ser, b->nser + 1, sizeof *b->ser))
        return;
    b->ser[b->nser] = (struct gp_rw_build_series){b->nlab, 0, 0};
    gp_rw_build_label(b, "__name__", name);
}

void gp_rw_build_label(struct gp_rw_build *b, const char *name, const char *value)
{
    if (b->nser >= b->cap_ser)
        return; /* begin failed: b->err is set */
    if (!grow(b, (void **)&b->lab, &b->cap_lab, b->nlab + 1, sizeof *b->lab))
        return;
    struct gp_rw_build_label *l = &b->lab[b->nlab++];
    l->name = put_str(b, name, &l->nlen);
    l->value = put_str(b, value, &l->vlen);
    b->ser[b->nser].n++;
}

void gp_rw_build_end(struct gp_rw_build *b, double value)
{
    if (b->nser >= b->cap_ser)
        return; /* begin failed: b->err is set */
    b->ser[b->nser++].value = value;
}

size_t gp_rw_build_bytes(const struct gp_rw_build *b)
{
    return b->str.len + b->nlab * sizeof *b->lab + b->nser * sizeof *b->ser;
}

static int cmp_name(const struct gp_str *a, const struct gp_str *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->ptr, b->ptr, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int has_label(const struct gp_label *l, size_t n, const struct gp_str *name)
{
    for (size_t i = 0; i < n; i++)
        if (l[i].name.len == name->len && !memcmp(l[i].name.ptr, name->ptr, name->len))
            return 1;
    return 0;
}

int gp_rw_build_view(struct gp_rw_build *b, int64_t time_ms, const struct gp_label *add, size_t nadd,
                     const struct gp_batch **out)
{
    if (b->err)
        return b->err;
    size_t need = b->nlab + b->nser * nadd;
    if (!grow(b, (void **)&b->vser, &b->cap_vser, b->nser, sizeof *b->vser) ||
        !grow(b, (void **)&b->vsam, &b->cap_vsam, b->nser, sizeof *b->vsam) ||
        !grow(b, (void **)&b->vlab, &b->cap_vlab, need, sizeof *b->vlab))
        return GP_ENOMEM;
    const char *s = b->str.data;
    size_t used = 0;
    for (size_t i = 0; i < b->nser; i++) {
        const struct gp_rw_build_series *bs = &b->ser[i];
        struct gp_label *l = b->vlab + used;
        size_t n = 0;
        for (size_t j = 0; j < bs->n; j++) {
            const struct gp_rw_build_label *bl = &b->lab[bs->first + j];
            if (!bl->vlen)
                continue; /* canonical form: an empty value is no label */
            l[n++] = (struct gp_label){{s + bl->name, bl->nlen}, {s + bl->value, bl->vlen}};
        }
        size_t own = n;
        for (size_t j = 0; j < nadd; j++)
            if (add[j].value.len && !has_label(l, own, &add[j].name))
                l[n++] = add[j];
        if (n > GP_RW_MAX_LABELS)
            return GP_ETOOBIG;
        /* insertion sort: a dozen labels */
        for (size_t j = 1; j < n; j++) {
            struct gp_label t = l[j];
            size_t k = j;
            while (k > 0 && cmp_name(&l[k - 1].name, &t.name) > 0) {
                l[k] = l[k - 1];
                k--;
            }
            l[k] = t;
        }
        b->vsam[i] = (struct gp_sample){bs->value, time_ms};
        b->vser[i] = (struct gp_series){l, n, &b->vsam[i], 1};
        used += n;
    }
    b->req = (struct gp_batch){b->vser, b->nser, used, b->nser, NULL};
    *out = &b->req;
    return GP_OK;
}

void gp_rw_build_swap(struct gp_rw_build *a, struct gp_rw_build *b)
{
    struct gp_rw_build t = *a;
    *a = *b;
    *b = t;
}

/* The sink: a family needs nothing; a sample is one series. */
static void sink_family(struct gp_metric_sink *s, const char *name, const char *help, const char *type)
{
    (void)s, (void)name, (void)help, (void)type;
}

static void sink_sample(struct gp_metric_sink *s, const char *name, const struct gp_metric_labels *set,
                        const struct gp_metric_label *extra, size_t nextra, double v)
{
    struct gp_rw_build *b = ((struct gp_rw_build_sink *)s)->b;
    gp_rw_build_begin(b, name);
    for (size_t i = 0; set && i < set->n; i++)
        gp_rw_build_label(b, set->l[i].name, set->l[i].value);
    for (size_t i = 0; i < nextra; i++)
        gp_rw_build_label(b, extra[i].name, extra[i].value);
    gp_rw_build_end(b, v);
    if (b->err && !s->err)
        s->err = b->err;
}

void gp_rw_build_sink_init(struct gp_rw_build_sink *k, struct gp_rw_build *b)
{
    k->base.family = sink_family;
    k->base.sample = sink_sample;
    k->base.err = GP_OK;
    k->b = b;
}

void gp_rw_build_free(struct gp_rw_build *b)
{
    if (!b)
        return;
    gp_buf_free(&b->str);
    free(b->lab);
    free(b->ser);
    free(b->vser);
    free(b->vlab);
    free(b->vsam);
    memset(b, 0, sizeof *b);
}
