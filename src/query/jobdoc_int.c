/*
 * jobdoc_int.c - the job document's shared pieces (jobdoc_int.h): reading
 * one series, the arithmetic several figures share, label look-ups and
 * the JSON of a figure. Nothing here knows which figure it serves.
 */
#include "query/jobdoc_int.h"

#include "lib/err.h"
#include "lib/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gp_jobdoc_ser_read(const struct gp_jobdoc_src *src, const struct gp_store_series *s, int64_t t0,
                       int64_t t1, struct gp_jobdoc_ser *out)
{
    memset(out, 0, sizeof *out);
    out->s = s;
    const struct gp_jobdoc_agg *a = src->agg ? gp_jobdoc_agg_of(src->agg, s) : NULL;
    if (a) { /* a counter the cluster summed up: its first and last sample */
        if (isnan(a->low) || isnan(a->peak))
            return GP_OK;
        if (!(out->t = malloc(2 * sizeof *out->t)) || !(out->v = malloc(2 * sizeof *out->v))) {
            gp_jobdoc_ser_free(out);
            return GP_ENOMEM;
        }
        out->t[0] = a->s.first_ms, out->v[0] = a->low;
        out->t[1] = a->s.last_ms, out->v[1] = a->peak;
        out->n = 2;
        return GP_OK;
    }
    struct gp_samples smp = {0};
    int rc = gp_storage_read(src->st, s->id, t0, t1, &smp);
    if (rc && rc != GP_EPARSE) {
        gp_samples_free(&smp);
        return rc;
    }
    size_t k = 0;
    for (size_t i = 0; i < smp.n; i++)
        if (!isnan(smp.v[i])) {
            smp.t[k] = smp.t[i];
            smp.v[k++] = smp.v[i];
        }
    out->t = smp.t;
    out->v = smp.v;
    out->n = k;
    return GP_OK;
}

void gp_jobdoc_ser_free(struct gp_jobdoc_ser *x)
{
    free(x->t);
    free(x->v);
    memset(x, 0, sizeof *x);
}

double gp_jobdoc_newest(const struct gp_jobdoc_src *src, const struct gp_store_series *s)
{
    const struct gp_jobdoc_agg *a = s && src->agg ? gp_jobdoc_agg_of(src->agg, s) : NULL;
    if (a)
        return a->last;
    struct gp_jobdoc_ser x;
    if (!s || gp_jobdoc_ser_read(src, s, src->t0, src->t1, &x))
        return NAN;
    double v = x.n ? x.v[x.n - 1] : NAN;
    gp_jobdoc_ser_free(&x);
    return v;
}

int gp_jobdoc_born(const struct gp_jobdoc_src *src, const struct gp_store_series *s)
{
    return s->first_ms >= src->t0;
}

double gp_jobdoc_increase(const struct gp_jobdoc_ser *x, int born)
{
    if (!x->n)
        return 0;
    double inc = born ? x->v[0] : 0;
    for (size_t i = 1; i < x->n; i++) {
        double d = x->v[i] - x->v[i - 1];
        inc += d >= 0 ? d : x->v[i];
    }
    return inc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t gp_jobdoc_median_gap(const struct gp_jobdoc_ser *x)
{
    if (x->n < 2)
        return 0;
    int64_t *g = malloc((x->n - 1) * sizeof *g);
    if (!g)
        return x->t[1] - x->t[0];
    for (size_t i = 1; i < x->n; i++)
        g[i - 1] = x->t[i] - x->t[i - 1];
    qsort(g, x->n - 1, sizeof *g, cmp_i64);
    int64_t m = g[(x->n - 1) / 2];
    free(g);
    return m;
}

int gp_jobdoc_name_is(const struct gp_store_series *s, const char *name)
{
    struct gp_str v;
    return gp_labels_get(s->labels, s->labels_len, "__name__", &v) == 1 && v.len == strlen(name) &&
           !memcmp(v.ptr, name, v.len);
}

int gp_jobdoc_name_prefix(const struct gp_store_series *s, const char *pre)
{
    struct gp_str v;
    return gp_labels_get(s->labels, s->labels_len, "__name__", &v) == 1 && v.len >= strlen(pre) &&
           !memcmp(v.ptr, pre, strlen(pre));
}

struct gp_str gp_jobdoc_lab(const struct gp_store_series *s, const char *name)
{
    struct gp_str v;
    gp_labels_get(s->labels, s->labels_len, name, &v);
    return v;
}

struct gp_str gp_jobdoc_node(const struct gp_store_series *s)
{
    struct gp_str v = gp_jobdoc_lab(s, "Hostname");
    return v.len ? v : gp_jobdoc_lab(s, "hostname");
}

int gp_jobdoc_str_eq(struct gp_str a, struct gp_str b)
{
    return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len);
}

int gp_jobdoc_same_except(const struct gp_store_series *a, const struct gp_store_series *b,
                          const char *also)
{
    size_t al = also ? strlen(also) : 0;
    struct gp_labels_iter ia, ib;
    gp_labels_iter_init(&ia, a->labels, a->labels_len);
    gp_labels_iter_init(&ib, b->labels, b->labels_len);
    for (;;) {
        struct gp_str an, av, bn, bv;
        int ra, rb;
        do
            ra = gp_labels_next(&ia, &an, &av);
        while (ra == 1 && ((an.len == 8 && !memcmp(an.ptr, "__name__", 8)) ||
                           (al && an.len == al && !memcmp(an.ptr, also, al))));
        do
            rb = gp_labels_next(&ib, &bn, &bv);
        while (rb == 1 && ((bn.len == 8 && !memcmp(bn.ptr, "__name__", 8)) ||
                           (al && bn.len == al && !memcmp(bn.ptr, also, al))));
        if (ra != 1 || rb != 1)
            return ra == rb;
        if (!gp_jobdoc_str_eq(an, bn) || !gp_jobdoc_str_eq(av, bv))
            return 0;
    }
}

void gp_jobdoc_num(struct gp_buf *b, double v)
{
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

void gp_jobdoc_total(struct gp_buf *b, const char *name, double v)
{
    gp_buf_printf(b, ",\"%s\":", name);
    gp_jobdoc_num(b, v);
}

void gp_jobdoc_str_or_null(struct gp_buf *b, struct gp_str s)
{
    if (s.len)
        gp_json_str(b, s.ptr, s.len);
    else
        gp_buf_puts(b, "null");
}
