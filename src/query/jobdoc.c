/*
 * jobdoc.c - the job document (jobdoc.h): select the job's series, read
 * each once into memory (filtered of stale markers and NaN), reduce them
 * to totals and, on request, grids; then write the JSON.
 */
#include "query/jobdoc.h"

#include "insight/cost.h"
#include "lib/err.h"
#include "query/eval.h"
#include "query/json.h"
#include "store/labels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One series' samples in the range, stale markers and NaN left out. */
struct ser {
    const struct gp_store_series *s;
    int64_t *t;
    double *v;
    size_t n;
};

static int ser_read(struct gp_storage *st, const struct gp_store_series *s, int64_t t0, int64_t t1,
                    struct ser *out)
{
    memset(out, 0, sizeof *out);
    out->s = s;
    struct gp_samples smp = {0};
    int rc = gp_storage_read(st, s->id, t0, t1, &smp);
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

static void ser_free(struct ser *x)
{
    free(x->t);
    free(x->v);
    memset(x, 0, sizeof *x);
}

static int name_is(const struct gp_store_series *s, const char *name)
{
    struct gp_str v;
    return gp_labels_get(s->labels, s->labels_len, "__name__", &v) == 1 && v.len == strlen(name) &&
           !memcmp(v.ptr, name, v.len);
}

static int name_prefix(const struct gp_store_series *s, const char *pre)
{
    struct gp_str v;
    return gp_labels_get(s->labels, s->labels_len, "__name__", &v) == 1 && v.len >= strlen(pre) &&
           !memcmp(v.ptr, pre, strlen(pre));
}

static struct gp_str lab(const struct gp_store_series *s, const char *name)
{
    struct gp_str v;
    gp_labels_get(s->labels, s->labels_len, name, &v);
    return v;
}

static struct gp_str node_lab(const struct gp_store_series *s)
{
    struct gp_str v = lab(s, "Hostname");
    return v.len ? v : lab(s, "hostname");
}

static int str_eq(struct gp_str a, struct gp_str b)
{
    return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len);
}

/* 1 when a and b have the same labels apart from __name__. */
static int same_but_name(const struct gp_store_series *a, const struct gp_store_series *b)
{
    struct gp_labels_iter ia, ib;
    gp_labels_iter_init(&ia, a->labels, a->labels_len);
    gp_labels_iter_init(&ib, b->labels, b->labels_len);
    for (;;) {
        struct gp_str an, av, bn, bv;
        int ra, rb;
        do
            ra = gp_labels_next(&ia, &an, &av);
        while (ra == 1 && an.len == 8 && !memcmp(an.ptr, "__name__", 8));
        do
            rb = gp_labels_next(&ib, &bn, &bv);
        while (rb == 1 && bn.len == 8 && !memcmp(bn.ptr, "__name__", 8));
        if (ra != 1 || rb != 1)
            return ra == rb;
        if (!str_eq(an, bn) || !str_eq(av, bv))
            return 0;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median gap between samples (ms), or 0 with fewer than two. */
static int64_t median_gap(const struct ser *x)
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

/* Counter increase over x; born: counts from 0 before the first sample. */
static double increase(const struct ser *x, int born)
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

/* Weighted values for percentiles. */
struct wv {
    double v, w;
};
struct wvec {
    struct wv *a;
    size_t n, cap;
    int err;
};

static void wvec_add(struct wvec *x, double v, double w)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 256;
        struct wv *na = realloc(x->a, nc * sizeof *na);
        if (!na) {
            x->err = GP_ENOMEM;
            return;
        }
        x->a = na;
        x->cap = nc;
    }
    x->a[x->n++] = (struct wv){v, w};
}

static int wv_cmp(const void *pa, const void *pb)
{
    double a = ((const struct wv *)pa)->v, b = ((const struct wv *)pb)->v;
    return a < b ? -1 : a > b;
}

/* Nearest rank: the smallest value whose cumulative weight reaches p of
 * the whole. x must be sorted. NaN when empty. */
static double wpct(const struct wvec *x, double p)
{
    double total = 0;
    for (size_t i = 0; i < x->n; i++)
        total += x->a[i].w;
    if (!x->n || !(total > 0))
        return NAN;
    double want = p * total, cum = 0;
    for (size_t i = 0; i < x->n; i++) {
        cum += x->a[i].w;
        if (cum >= want * (1 - 1e-12))
            return x->a[i].v;
    }
    return x->a[x->n - 1].v;
}

/* A finite number, or null. */
static void num(struct gp_buf *b, double v)
{
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

static void str_or_null(struct gp_buf *b, struct gp_str s)
{
    if (s.len)
        gp_json_str(b, s.ptr, s.len);
    else
        gp_buf_puts(b, "null");
}

/* One GPU of the job. */
struct gpu {
    struct gp_str node, gpu, mig, uuid, model;
    const struct gp_store_series *sm, *util, *fb_used, *fb_free, *fb_res, *used, *total;
    struct ser act, mem; /* activity (0-1) and memory in bytes */
    const char *source;
    int64_t step;
    double seconds, act_sum, act_w, peak, capacity;
};

/* Step-time interval of one process. */
struct interval {
    int64_t t;
    double sec, steps;
};

struct doc {
    struct gp_storage *st;
    const struct gp_jobdoc_in *in;
    int64_t t0, t1;
    struct gp_store_selection sel;
    struct gpu *g;
    size_t ng;
    struct ser *cpu, *rss;
    size_t ncpu, nrss;
    struct interval *iv;
    size_t niv, civ;
    int64_t span_t0, span_t1; /* stepping span, ms; span_t1 0: no step */
    struct wvec act;
};

static int born(const struct doc *d, const struct gp_store_series *s)
{
    return s->first_ms >= d->t0;
}

static struct gpu *gpu_of(struct doc *d, const struct gp_store_series *s)
{
    struct gp_str node = node_lab(s), idx = lab(s, "gpu"), mig = lab(s, "GPU_I_ID");
    if (!idx.len)
        return NULL;
    for (size_t i = 0; i < d->ng; i++)
        if (str_eq(d->g[i].node, node) && str_eq(d->g[i].gpu, idx) && str_eq(d->g[i].mig, mig))
            return &d->g[i];
    struct gpu *ng = realloc(d->g, (d->ng + 1) * sizeof *ng);
    if (!ng)
        return NULL;
    d->g = ng;
    struct gpu *g = &ng[d->ng++];
    memset(g, 0, sizeof *g);
    g->node = node;
    g->gpu = idx;
    g->mig = mig;
    return g;
}

static int gpu_cmp(const void *pa, const void *pb)
{
    const struct gpu *a = pa, *b = pb;
    struct gp_str x[3] = {a->node, a->gpu, a->mig}, y[3] = {b->node, b->gpu, b->mig};
    for (int k = 0; k < 3; k++) {
        if (k && x[k].len != y[k].len)
            return x[k].len < y[k].len ? -1 : 1; /* numeric order for plain indexes */
        int c = memcmp(x[k].ptr, y[k].ptr, x[k].len < y[k].len ? x[k].len : y[k].len);
        if (c)
            return c;
        if (x[k].len != y[k].len)
            return x[k].len < y[k].len ? -1 : 1;
    }
    return 0;
}

/* The newest value of series s in the range, or NaN. */
static double newest(struct doc *d, const struct gp_store_series *s)
{
    struct ser x;
    if (!s || ser_read(d->st, s, d->t0, d->t1, &x))
        return NAN;
    double v = x.n ? x.v[x.n - 1] : NAN;
    ser_free(&x);
    return v;
}

static int do_gpu(struct doc *d, struct gpu *g)
{
    int rc;
    const struct gp_store_series *a = g->sm ? g->sm : g->util;
    if (a) {
        if ((rc = ser_read(d->st, a, d->t0, d->t1, &g->act)))
            return rc;
        if (!g->act.n && g->sm && g->util) {
            ser_free(&g->act);
            a = g->util;
            if ((rc = ser_read(d->st, a, d->t0, d->t1, &g->act)))
                return rc;
        }
        g->source = a == g->sm ? "sm_active" : "gpu_util";
        if (a == g->util)
            for (size_t i = 0; i < g->act.n; i++)
                g->act.v[i] /= 100.0;
    }
    const struct gp_store_series *m = g->used ? g->used : g->fb_used;
    if (m) {
        if ((rc = ser_read(d->st, m, d->t0, d->t1, &g->mem)))
            return rc;
        if (m == g->fb_used)
            for (size_t i = 0; i < g->mem.n; i++)
                g->mem.v[i] *= 1048576.0;
    }
    g->peak = NAN;
    for (size_t i = 0; i < g->mem.n; i++)
        if (!(g->peak >= g->mem.v[i]))
            g->peak = g->mem.v[i];
    g->capacity = newest(d, g->total);
    if (!isfinite(g->capacity) && g->fb_used && g->fb_free) {
        double r = g->fb_res ? newest(d, g->fb_res) : 0;
        g->capacity = (newest(d, g->fb_used) + newest(d, g->fb_free) + (isfinite(r) ? r : 0)) * 1048576.0;
    }
    if (!(g->capacity > 0))
        g->capacity = NAN;
    const struct ser *p = g->act.n ? &g->act : &g->mem;
    g->step = median_gap(p);
    g->seconds = g->step > 0 ? (double)p->n * (double)g->step / 1e3 : NAN;
    g->act_sum = g->act_w = 0;
    for (size_t i = 0; i < g->act.n; i++) {
        int64_t gap = i + 1 < g->act.n ? g->act.t[i + 1] - g->act.t[i] : g->step;
        if (gap > 2 * g->step)
            gap = 2 * g->step;
        double w = g->step > 0 ? (double)gap : 1.0;
        g->act_sum += g->act.v[i] * w;
        g->act_w += w;
        wvec_add(&d->act, g->act.v[i], w);
    }
    return d->act.err;
}

/* Adds the step-time intervals of one process (steps and seconds counters). */
static int add_intervals(struct doc *d, const struct ser *steps, const struct ser *secs, int from0)
{
    double ps = 0, pc = 0;
    int64_t pt = 0; /* time of the previous sample; 0: none (counting from 0) */
    int have = from0;
    size_t i = 0, k = 0;
    while (i < steps->n && k < secs->n) {
        if (steps->t[i] < secs->t[k]) {
            i++;
            continue;
        }
        if (steps->t[i] > secs->t[k]) {
            k++;
            continue;
        }
        double s = steps->v[i], c = secs->v[k];
        if (have) {
            double ds = s - ps, dc = c - pc;
            if (ds < 0 || dc < 0)
                ds = s, dc = c; /* a reset: counting again from 0 */
            if (ds > 0) {
                if (d->niv == d->civ) {
                    size_t nc = d->civ ? d->civ * 2 : 256;
                    struct interval *n = realloc(d->iv, nc * sizeof *n);
                    if (!n)
                        return GP_ENOMEM;
                    d->iv = n;
                    d->civ = nc;
                }
                d->iv[d->niv++] = (struct interval){steps->t[i], dc, ds};
                /* The stepping span: from the sample before the first step
                 * (or, for a counter born in the job, back by the step
                 * seconds of its first sample) to the last step's sample. */
                int64_t start = pt ? pt : steps->t[i] - (int64_t)(dc * 1000.0);
                if (!d->span_t1 || start < d->span_t0)
                    d->span_t0 = start;
                if (steps->t[i] > d->span_t1)
                    d->span_t1 = steps->t[i];
            }
        }
        ps = s;
        pc = c;
        pt = steps->t[i];
        have = 1;
        i++;
        k++;
    }
    return GP_OK;
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Grid of the job's range for the series: at most GP_JOBDOC_MAX_POINTS. */
static int grid(const struct doc *d, struct gp_eval_range *r)
{
    int64_t span = d->t1 - d->t0, step = (span + GP_JOBDOC_MAX_POINTS - 2) / (GP_JOBDOC_MAX_POINTS - 1);
    if (step < 1000)
        step = 1000;
    return gp_eval_range_init(r, d->t0, d->t1, step, NULL, 0);
}

/* Sum over series xs of their grid values (MEAN or MAX windows): val/has. */
static void grid_sum(const struct gp_eval_range *r, enum gp_eval_mode mode, const struct ser *xs,
                     size_t n, double *val, uint8_t *has, double *tmp, uint8_t *th)
{
    memset(has, 0, r->npoints);
    for (size_t k = 0; k < r->npoints; k++)
        val[k] = 0;
    for (size_t i = 0; i < n; i++) {
        gp_eval_raw(r, mode, xs[i].t, xs[i].v, xs[i].n, tmp, th);
        for (size_t k = 0; k < r->npoints; k++)
            if (th[k]) {
                val[k] += tmp[k];
                has[k] = 1;
            }
    }
}

static void put_array(struct gp_buf *b, const char *name, const double *v, const uint8_t *has, size_t n)
{
    gp_buf_printf(b, ",\"%s\":[", name);
    for (size_t k = 0; k < n; k++) {
        if (k)
            gp_buf_putc(b, ',');
        num(b, has && !has[k] ? NAN : v[k]);
    }
    gp_buf_putc(b, ']');
}

static int write_series(struct doc *d, struct gp_buf *b)
{
    struct gp_eval_range r;
    if (grid(d, &r))
        return GP_EUSAGE;
    size_t np = r.npoints;
    double *val = calloc(np * 3, sizeof *val);
    uint8_t *has = calloc(np * 2, 1);
    if (!val || !has) {
        free(val);
        free(has);
        return GP_ENOMEM;
    }
    double *tmp = val + np, *acc = val + 2 * np;
    uint8_t *th = has + np;
    gp_buf_puts(b, ",\"series\":{\"gpus\":[");
    for (size_t i = 0; i < d->ng; i++) {
        struct gpu *g = &d->g[i];
        gp_buf_puts(b, i ? ",{\"uuid\":" : "{\"uuid\":");
        str_or_null(b, g->uuid);
        gp_buf_puts(b, ",\"node\":");
        gp_json_str(b, g->node.ptr, g->node.len);
        gp_buf_puts(b, ",\"gpu\":");
        gp_json_str(b, g->gpu.ptr, g->gpu.len);
        for (size_t k = 0; k < np; k++)
            acc[k] = (double)((int64_t)k * r.step_ms) / 1e3;
        put_array(b, "t", acc, NULL, np);
        gp_eval_raw(&r, GP_EVAL_MEAN, g->act.t, g->act.v, g->act.n, tmp, th);
        put_array(b, "activity", tmp, th, np);
        gp_eval_raw(&r, GP_EVAL_MAX, g->mem.t, g->mem.v, g->mem.n, tmp, th);
        put_array(b, "memory_bytes", tmp, th, np);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"steps\":{");
    /* Step time per window: the intervals that end in it. */
    for (size_t k = 0; k < np; k++)
        tmp[k] = acc[k] = 0;
    for (size_t i = 0; i < d->niv; i++) {
        int64_t off = d->iv[i].t - r.start_ms;
        size_t k = off <= 0 ? 0 : (size_t)((off + r.step_ms - 1) / r.step_ms);
        if (k < np) {
            tmp[k] += d->iv[i].sec;
            acc[k] += d->iv[i].steps;
        }
    }
    for (size_t k = 0; k < np; k++) {
        has[k] = acc[k] > 0;
        tmp[k] = has[k] ? tmp[k] / acc[k] : 0;
        acc[k] = (double)((int64_t)k * r.step_ms) / 1e3;
    }
    gp_buf_puts(b, "\"t\":[");
    for (size_t k = 0; k < np; k++) {
        if (k)
            gp_buf_putc(b, ',');
        num(b, acc[k]);
    }
    gp_buf_putc(b, ']');
    put_array(b, "seconds", tmp, has, np);
    gp_buf_puts(b, "},\"host\":{\"t\":[");
    for (size_t k = 0; k < np; k++) {
        if (k)
            gp_buf_putc(b, ',');
        num(b, acc[k]);
    }
    gp_buf_putc(b, ']');
    /* CPU cores per window: counter increments that end in it / its length. */
    for (size_t k = 0; k < np; k++)
        acc[k] = 0;
    memset(has, 0, np);
    for (size_t i = 0; i < d->ncpu; i++) {
        const struct ser *x = &d->cpu[i];
        for (size_t m = 1; m < x->n; m++) {
            double dv = x->v[m] - x->v[m - 1];
            int64_t off = x->t[m] - r.start_ms;
            size_t k = off <= 0 ? 0 : (size_t)((off + r.step_ms - 1) / r.step_ms);
            if (k < np) {
                acc[k] += (dv >= 0 ? dv : x->v[m]) / ((double)r.step_ms / 1e3);
                has[k] = 1;
            }
        }
    }
    put_array(b, "cpu_cores", acc, has, np);
    grid_sum(&r, GP_EVAL_MEAN, d->rss, d->nrss, acc, has, tmp, th);
    put_array(b, "rss_bytes", acc, has, np);
    gp_buf_puts(b, "}}");
    free(val);
    free(has);
    return GP_OK;
}

/* The cost totals of the job (cost.h's arithmetic over its GPUs). */
struct cost_out {
    double price, cost, idle, unused, per_hour, target, seconds_left, projected;
};

static double price_of(const struct doc *d, const struct gpu *g)
{
    if (d->in->prices)
        return gp_prices_of(d->in->prices, g->model.ptr, g->model.len);
    return d->in->price_per_gpu_hour;
}

/* The newest time of g's samples (activity, else memory); 0 without any. */
static int64_t gpu_last(const struct gpu *g)
{
    const struct ser *p = g->act.n ? &g->act : &g->mem;
    return p->n ? p->t[p->n - 1] : 0;
}

/* Steps per second of x over its last 5 minutes of samples; NaN when
 * unknown (fewer than two samples, a reset). */
static double recent_rate(const struct ser *x)
{
    if (x->n < 2)
        return NAN;
    size_t last = x->n - 1, first = last;
    while (first > 0 && x->t[last] - x->t[first - 1] <= 300000)
        first--;
    if (first == last)
        first = last - 1;
    double dt = (double)(x->t[last] - x->t[first]) / 1e3, ds = x->v[last] - x->v[first];
    return dt > 0 && ds >= 0 ? ds / dt : NAN;
}

static int job_cost(struct doc *d, const struct gp_store_series **targets, size_t ntargets,
                    const struct gp_store_series **stepnos, size_t nstepnos, struct cost_out *co)
{
    struct gp_cost_acc acc;
    memset(&acc, 0, sizeof acc);
    double one = NAN;
    int mixed = 0;
    int64_t newest_t = 0;
    for (size_t i = 0; i < d->ng; i++)
        if (gpu_last(&d->g[i]) > newest_t)
            newest_t = gpu_last(&d->g[i]);
    co->per_hour = NAN;
    for (size_t i = 0; i < d->ng; i++) {
        const struct gpu *g = &d->g[i];
        double price = price_of(d, g);
        const struct ser *p = g->act.n ? &g->act : &g->mem;
        gp_cost_add_gpu(&acc, g->act.n ? g->act.v : NULL, p->n, g->step, price);
        if (price > 0 && p->n && g->step > 0) {
            if (isnan(one))
                one = price;
            else if (one != price)
                mixed = 1;
            /* held now: seen within two of its steps of the job's newest sample */
            if (gpu_last(g) >= newest_t - 2 * g->step - 1000)
                co->per_hour = (isfinite(co->per_hour) ? co->per_hour : 0) + price;
        }
    }
    co->cost = gp_cost_total(&acc);
    co->idle = gp_cost_idle(&acc);
    co->unused = gp_cost_unused(&acc);
    co->price = mixed ? acc.cost / (acc.priced_seconds / 3600.0) : one;
    co->target = NAN;
    for (size_t i = 0; i < ntargets; i++) {
        double t = newest(d, targets[i]);
        if (isfinite(t) && !(co->target >= t))
            co->target = t;
    }
    co->seconds_left = co->projected = NAN;
    if (isnan(co->target) || !nstepnos || d->in->end_ms != GP_JOBDOC_NONE)
        return GP_OK;
    /* The leading reporter: the highest step number. */
    const struct gp_store_series *lead = NULL;
    double step = NAN;
    for (size_t i = 0; i < nstepnos; i++) {
        double v = newest(d, stepnos[i]);
        if (isfinite(v) && !(step >= v)) {
            step = v;
            lead = stepnos[i];
        }
    }
    if (!lead)
        return GP_OK;
    struct ser x;
    int rc = ser_read(d->st, lead, d->t0, d->t1, &x);
    if (rc)
        return rc;
    double rate = recent_rate(&x);
    ser_free(&x);
    gp_cost_project(co->cost, isfinite(co->per_hour) ? co->per_hour : NAN, co->target, step, rate,
                    &co->seconds_left, &co->projected);
    return GP_OK;
}

static void put_total(struct gp_buf *b, const char *name, double v)
{
    gp_buf_printf(b, ",\"%s\":", name);
    num(b, v);
}

static int write_doc(struct doc *d, struct gp_buf *b, char *err, size_t errlen)
{
    const struct gp_jobdoc_in *in = d->in;
    int rc;
    /* Sort the series out by name. */
    const struct gp_store_series **steps = NULL, **secs = NULL, **waits = NULL, **samples = NULL,
                                 **tokens = NULL, **procs = NULL, **targets = NULL, **stepnos = NULL;
    size_t nsteps = 0, nsecs = 0, nwaits = 0, nsamples = 0, ntokens = 0, nprocs = 0, ntargets = 0,
           nstepnos = 0;
    size_t nsel = d->sel.n ? d->sel.n : 1;
    steps = calloc(nsel, sizeof *steps);
    secs = calloc(nsel, sizeof *secs);
    waits = calloc(nsel, sizeof *waits);
    samples = calloc(nsel, sizeof *samples);
    tokens = calloc(nsel, sizeof *tokens);
    procs = calloc(nsel, sizeof *procs);
    targets = calloc(nsel, sizeof *targets);
    stepnos = calloc(nsel, sizeof *stepnos);
    d->cpu = calloc(nsel, sizeof *d->cpu);
    d->rss = calloc(nsel, sizeof *d->rss);
    rc = GP_ENOMEM;
    if (!steps || !secs || !waits || !samples || !tokens || !procs || !targets || !stepnos || !d->cpu ||
        !d->rss)
        goto out;
    for (size_t i = 0; i < d->sel.n; i++) {
        const struct gp_store_series *s = &d->sel.series[i];
        if (name_prefix(s, "DCGM_FI_") || name_prefix(s, "gpulse_gpu_")) {
            struct gpu *g = gpu_of(d, s);
            if (!g) {
                if (lab(s, "gpu").len)
                    goto out;
                continue;
            }
            struct gp_str u = lab(s, "UUID"), mdl = lab(s, "modelName");
            if (u.len)
                g->uuid = u;
            if (mdl.len)
                g->model = mdl;
            const struct gp_store_series **slot =
                name_is(s, "DCGM_FI_PROF_SM_ACTIVE")             ? &g->sm
                : name_is(s, "DCGM_FI_DEV_GPU_UTIL")             ? &g->util
                : name_is(s, "DCGM_FI_DEV_FB_USED")              ? &g->fb_used
                : name_is(s, "DCGM_FI_DEV_FB_FREE")              ? &g->fb_free
                : name_is(s, "DCGM_FI_DEV_FB_RESERVED")          ? &g->fb_res
                : name_is(s, "gpulse_gpu_memory_used_bytes")     ? &g->used
                : name_is(s, "gpulse_gpu_memory_total_bytes")    ? &g->total
                                                                 : NULL;
            if (slot && (!*slot || s->last_ms > (*slot)->last_ms))
                *slot = s;
        } else if (name_is(s, "gpulse_job_cpu_seconds_total")) {
            if ((rc = ser_read(d->st, s, d->t0, d->t1, &d->cpu[d->ncpu++])))
                goto out;
        } else if (name_is(s, "gpulse_job_resident_memory_bytes")) {
            if ((rc = ser_read(d->st, s, d->t0, d->t1, &d->rss[d->nrss++])))
                goto out;
        } else if (name_is(s, "gpulse_job_steps_total")) {
            steps[nsteps++] = s;
        } else if (name_is(s, "gpulse_job_step_seconds_total")) {
            secs[nsecs++] = s;
        } else if (name_is(s, "gpulse_job_data_wait_seconds_total")) {
            waits[nwaits++] = s;
        } else if (name_is(s, "gpulse_job_samples_total")) {
            samples[nsamples++] = s;
        } else if (name_is(s, "gpulse_job_tokens_total")) {
            tokens[ntokens++] = s;
        } else if (name_is(s, "gpulse_job_processes")) {
            procs[nprocs++] = s;
        } else if (name_is(s, "gpulse_job_target_steps")) {
            targets[ntargets++] = s;
        } else if (name_is(s, "gpulse_job_step")) {
            stepnos[nstepnos++] = s;
        }
    }
    if (d->ng)
        qsort(d->g, d->ng, sizeof *d->g, gpu_cmp);
    double gpu_seconds = NAN, peak = NAN, peak_ratio = NAN;
    for (size_t i = 0; i < d->ng; i++) {
        if ((rc = do_gpu(d, &d->g[i])))
            goto out;
        struct gpu *g = &d->g[i];
        if (isfinite(g->seconds))
            gpu_seconds = (isfinite(gpu_seconds) ? gpu_seconds : 0) + g->seconds;
        if (isfinite(g->peak) && !(peak >= g->peak))
            peak = g->peak;
        double ratio = g->peak / g->capacity;
        if (isfinite(ratio) && !(peak_ratio >= ratio))
            peak_ratio = ratio;
    }
    if (d->act.n)
        qsort(d->act.a, d->act.n, sizeof *d->act.a, wv_cmp);
    double act_sum = 0, act_w = 0;
    for (size_t i = 0; i < d->act.n; i++)
        act_sum += d->act.a[i].v * d->act.a[i].w, act_w += d->act.a[i].w;

    /* Counters. */
    double sums[5] = {NAN, NAN, NAN, NAN, NAN}; /* steps, secs, waits, samples, tokens */
    const struct gp_store_series **lists[5] = {steps, secs, waits, samples, tokens};
    size_t counts[5] = {nsteps, nsecs, nwaits, nsamples, ntokens};
    struct ser x;
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < counts[k]; i++) {
            if ((rc = ser_read(d->st, lists[k][i], d->t0, d->t1, &x)))
                goto out;
            if (x.n)
                sums[k] = (isfinite(sums[k]) ? sums[k] : 0) + increase(&x, born(d, lists[k][i]));
            if (k == 0)
                for (size_t m = 0; m < nsecs; m++)
                    if (same_but_name(steps[i], secs[m])) {
                        struct ser y;
                        if ((rc = ser_read(d->st, secs[m], d->t0, d->t1, &y))) {
                            ser_free(&x);
                            goto out;
                        }
                        rc = add_intervals(d, &x, &y, born(d, steps[i]) && born(d, secs[m]));
                        ser_free(&y);
                        if (rc) {
                            ser_free(&x);
                            goto out;
                        }
                        break;
                    }
            ser_free(&x);
        }
    double cpu = NAN;
    for (size_t i = 0; i < d->ncpu; i++)
        if (d->cpu[i].n)
            cpu = (isfinite(cpu) ? cpu : 0) + increase(&d->cpu[i], born(d, d->cpu[i].s));
    double rss_peak = NAN;
    if (d->nrss) {
        int64_t step = 0;
        for (size_t i = 0; i < d->nrss && !step; i++)
            step = median_gap(&d->rss[i]);
        if (step <= 0)
            step = 1000;
        int64_t span = d->t1 - d->t0;
        if (span / step > 10000)
            step = span / 10000 + 1;
        struct gp_eval_range r;
        if (!gp_eval_range_init(&r, d->t0, d->t1, step, NULL, 0)) {
            double *v = malloc(r.npoints * 2 * sizeof *v);
            uint8_t *h = malloc(r.npoints * 2);
            if (!v || !h) {
                free(v);
                free(h);
                rc = GP_ENOMEM;
                goto out;
            }
            grid_sum(&r, GP_EVAL_MAX, d->rss, d->nrss, v, h, v + r.npoints, h + r.npoints);
            for (size_t k = 0; k < r.npoints; k++)
                if (h[k] && !(rss_peak >= v[k]))
                    rss_peak = v[k];
            free(v);
            free(h);
        }
    }
    double wall = (double)(d->t1 - d->t0) / 1e3;

    /* The document. */
    gp_buf_puts(b, "{\"id\":");
    gp_json_str(b, in->id, strlen(in->id));
    gp_buf_puts(b, ",\"scheme\":");
    str_or_null(b, (struct gp_str){in->scheme, strlen(in->scheme)});
    gp_buf_printf(b, ",\"command\":null,\"state\":\"%s\",\"exit_status\":", in->state);
    if (in->exit_status == GP_JOBDOC_NONE)
        gp_buf_puts(b, "null,\"signal\":null");
    else if (in->exit_status >= 128)
        gp_buf_printf(b, "%lld,\"signal\":%lld", (long long)in->exit_status,
                      (long long)(in->exit_status - 128));
    else
        gp_buf_printf(b, "%lld,\"signal\":null", (long long)in->exit_status);
    gp_buf_puts(b, ",\"start\":");
    gp_json_time(b, d->t0);
    gp_buf_puts(b, ",\"end\":");
    if (in->end_ms == GP_JOBDOC_NONE)
        gp_buf_puts(b, "null");
    else
        gp_json_time(b, in->end_ms);
    put_total(b, "wall_seconds", wall);
    gp_buf_puts(b, ",\"nodes\":[");
    for (size_t i = 0, w = 0; i < in->nranks; i++) {
        size_t k = 0;
        while (k < i && strcmp(in->ranks[k].node, in->ranks[i].node))
            k++;
        if (k < i)
            continue;
        if (w++)
            gp_buf_putc(b, ',');
        gp_json_str(b, in->ranks[i].node, strlen(in->ranks[i].node));
    }
    gp_buf_puts(b, "],\"ranks\":[");
    for (size_t i = 0; i < in->nranks; i++) {
        const struct gp_jobdoc_rank *r = &in->ranks[i];
        gp_buf_puts(b, i ? ",{\"rank\":" : "{\"rank\":");
        if (r->rank == GP_JOBDOC_NONE)
            gp_buf_puts(b, "null");
        else
            gp_buf_printf(b, "%lld", (long long)r->rank);
        gp_buf_puts(b, ",\"node\":");
        gp_json_str(b, r->node, strlen(r->node));
        gp_buf_puts(b, ",\"local_rank\":");
        if (r->local_rank == GP_JOBDOC_NONE)
            gp_buf_puts(b, "null");
        else
            gp_buf_printf(b, "%lld", (long long)r->local_rank);
        double pr = NAN;
        for (size_t k = 0; k < nprocs; k++) {
            struct gp_str n = node_lab(procs[k]), rk = lab(procs[k], "rank");
            char want[32] = "";
            if (r->rank != GP_JOBDOC_NONE)
                snprintf(want, sizeof want, "%lld", (long long)r->rank);
            if (str_eq(n, (struct gp_str){r->node, strlen(r->node)}) &&
                str_eq(rk, (struct gp_str){want, strlen(want)})) {
                pr = newest(d, procs[k]);
                break;
            }
        }
        put_total(b, "processes", pr);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"gpus\":[");
    for (size_t i = 0; i < d->ng; i++) {
        const struct gpu *g = &d->g[i];
        gp_buf_puts(b, i ? ",{\"node\":" : "{\"node\":");
        gp_json_str(b, g->node.ptr, g->node.len);
        gp_buf_puts(b, ",\"gpu\":");
        gp_json_str(b, g->gpu.ptr, g->gpu.len);
        gp_buf_puts(b, ",\"uuid\":");
        str_or_null(b, g->uuid);
        gp_buf_puts(b, ",\"model\":");
        str_or_null(b, g->model);
        put_total(b, "memory_total_bytes", g->capacity);
        put_total(b, "peak_memory_bytes", g->peak);
        put_total(b, "peak_memory_ratio", g->peak / g->capacity);
        put_total(b, "activity_avg", g->act_w > 0 ? g->act_sum / g->act_w : NAN);
        gp_buf_puts(b, ",\"activity_source\":");
        if (g->act.n)
            gp_buf_printf(b, "\"%s\"", g->source);
        else
            gp_buf_puts(b, "null");
        put_total(b, "gpu_seconds", g->seconds);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"totals\":{\"gpu_seconds\":");
    num(b, gpu_seconds);
    put_total(b, "gpu_hours", gpu_seconds / 3600.0);
    put_total(b, "activity_avg", act_w > 0 ? act_sum / act_w : NAN);
    put_total(b, "activity_p50", wpct(&d->act, 0.50));
    put_total(b, "activity_p90", wpct(&d->act, 0.90));
    put_total(b, "activity_p99", wpct(&d->act, 0.99));
    put_total(b, "peak_gpu_memory_bytes", peak);
    put_total(b, "peak_gpu_memory_ratio", peak_ratio);
    put_total(b, "host_cpu_seconds", cpu);
    put_total(b, "host_cpu_avg_cores", wall > 0 ? cpu / wall : NAN);
    put_total(b, "host_rss_peak_bytes", rss_peak);
    put_total(b, "steps", sums[0]);
    put_total(b, "samples", sums[3]);
    put_total(b, "tokens", sums[4]);
    /* Throughput over the stepping span, as gpulse run reports it: start-up
     * and the tail after the last step do not dilute it. */
    double span = d->span_t1 > d->span_t0 ? (double)(d->span_t1 - d->span_t0) / 1000.0 : NAN;
    put_total(b, "stepping_seconds", span);
    put_total(b, "samples_per_second", sums[3] / span);
    put_total(b, "tokens_per_second", sums[4] / span);
    put_total(b, "steps_per_second", sums[0] / span);
    gp_buf_puts(b, ",\"step_seconds\":");
    if (d->niv) {
        double *m = malloc(d->niv * sizeof *m), ts = 0, tn = 0;
        if (!m) {
            rc = GP_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < d->niv; i++) {
            m[i] = d->iv[i].sec / d->iv[i].steps;
            ts += d->iv[i].sec;
            tn += d->iv[i].steps;
        }
        qsort(m, d->niv, sizeof *m, dbl_cmp);
        size_t n = d->niv;
#define PCT_(p) m[(size_t)ceil((p) * (double)n - 1e-9) > 0 ? (size_t)ceil((p) * (double)n - 1e-9) - 1 : 0]
        gp_buf_puts(b, "{\"mean\":");
        num(b, ts / tn);
        put_total(b, "p50", PCT_(0.50));
        put_total(b, "p90", PCT_(0.90));
        put_total(b, "p99", PCT_(0.99));
        put_total(b, "max", m[n - 1]);
#undef PCT_
        gp_buf_putc(b, '}');
        free(m);
    } else {
        gp_buf_puts(b, "null");
    }
    put_total(b, "data_wait_ratio", sums[1] > 0 ? sums[2] / sums[1] : NAN);
    struct cost_out co;
    if ((rc = job_cost(d, targets, ntargets, stepnos, nstepnos, &co)))
        goto out;
    put_total(b, "price_per_gpu_hour", co.price);
    put_total(b, "cost", co.cost);
    put_total(b, "cost_idle", co.idle);
    put_total(b, "cost_unused_compute", co.unused);
    put_total(b, "cost_per_hour", co.per_hour);
    put_total(b, "target_steps", co.target);
    put_total(b, "projected_seconds_left", co.seconds_left);
    put_total(b, "projected_cost_total", co.projected);
    put_total(b, "budget", in->budget > 0 ? in->budget : NAN);
    put_total(b, "budget_ratio", in->budget > 0 ? co.cost / in->budget : NAN);
    gp_buf_puts(b, isfinite(co.cost) ? ",\"currency\":\"USD\"}" : ",\"currency\":null}");
    if (in->series && (rc = write_series(d, b)))
        goto out;
    gp_buf_puts(b, ",\"advice\":[]}");
    rc = GP_OK;
out:
    free(targets);
    free(stepnos);
    free(steps);
    free(secs);
    free(waits);
    free(samples);
    free(tokens);
    free(procs);
    if (rc == GP_ENOMEM)
        gp_seterr(err, errlen, rc, "out of memory building the job document");
    else if (rc)
        gp_seterr(err, errlen, rc, "reading the job's series: %s", gp_strerror(rc));
    return rc;
}

int gp_jobdoc_write(struct gp_storage *st, const struct gp_jobdoc_in *in, struct gp_buf *out,
                    char *err, size_t errlen)
{
    struct doc d;
    memset(&d, 0, sizeof d);
    d.st = st;
    d.in = in;
    d.t0 = in->start_ms;
    d.t1 = in->range_end_ms > in->start_ms ? in->range_end_ms : in->start_ms;
    size_t mark = out->len;
    int mark_err = out->err;
    struct gp_matcher m;
    int rc = gp_matcher_init(&m, GP_MATCH_EQ, "job", in->id, err, errlen);
    if (rc)
        return rc;
    rc = gp_storage_select(st, &m, 1, d.t0, d.t1, &d.sel);
    gp_matcher_free(&m);
    if (rc)
        return gp_seterr(err, errlen, rc, "selecting the job's series: %s", gp_strerror(rc));
    rc = write_doc(&d, out, err, errlen);
    if (!rc && out->err)
        rc = gp_seterr(err, errlen, out->err,
                       out->err == GP_ETOOBIG ? "the job document is larger than %zu bytes"
                                              : "writing the job document (%zu bytes max)",
                       out->max);
    for (size_t i = 0; i < d.ng; i++) {
        ser_free(&d.g[i].act);
        ser_free(&d.g[i].mem);
    }
    free(d.g);
    for (size_t i = 0; i < d.ncpu; i++)
        ser_free(&d.cpu[i]);
    for (size_t i = 0; i < d.nrss; i++)
        ser_free(&d.rss[i]);
    free(d.cpu);
    free(d.rss);
    free(d.iv);
    free(d.act.a);
    gp_storage_selection_free(&d.sel);
    if (rc) {
        out->len = mark;
        out->err = mark_err;
        if (out->data)
            out->data[out->len] = '\0';
    }
    return rc;
}
