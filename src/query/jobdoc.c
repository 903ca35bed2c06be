/*
 * jobdoc.c - the job document (jobdoc.h) in two steps: gather selects
 * the job's series, reads each once into memory (filtered of stale
 * markers and NaN) and feeds them to the job model (jobmodel.h), which
 * computes the figures; render writes them, with the grids on request,
 * as JSON. gp_jobdoc_cost gathers without rendering (the budget
 * detector's cost).
 *
 * In storage: remote, a job reaching before the local window would move
 * every raw sample of every series of the job from the cluster: there the
 * selection takes only the families that need raw samples
 * (GP_JOBDOC_RAW_NAMES) and the GPU memory comes as the cluster's
 * aggregates (jobdoc_cluster.h), which newest() and do_gpu read in place
 * of samples. The figures are computed here either way.
 */
#include "query/jobdoc.h"

#include "query/cost.h"
#include "lib/err.h"
#include "query/eval.h"
#include "lib/json.h"
#include "query/goodput.h"
#include "query/jobdoc_cluster.h"
#include "query/jobmodel.h"
#include "sources/steps_proto.h"
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
/* Whether a and b carry the same labels, __name__ and `also` (NULL: none)
 * left out. */
static int same_except(const struct gp_store_series *a, const struct gp_store_series *b, const char *also)
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
        if (!str_eq(an, bn) || !str_eq(av, bv))
            return 0;
    }
}

static int same_but_name(const struct gp_store_series *a, const struct gp_store_series *b)
{
    return same_except(a, b, NULL);
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
    struct gp_str node, gpu, mig, uuid, model, rank;
    const struct gp_store_series *sm, *util, *fb_used, *fb_free, *fb_res, *used, *total;
    struct ser act, mem; /* activity (0-1) and memory in bytes */
    const char *source;
    int64_t step;
    double seconds, act_sum, act_w, peak, capacity, idle_s, unused_s;
};

/* Step-time interval of one process. */
struct interval {
    int64_t t;
    double sec, steps;
};

/* The cost totals of the job (cost.h's arithmetic over its GPUs). */
struct cost_out {
    double cost, per_hour, target, seconds_left, projected;
};

struct doc {
    struct gp_storage *st;
    const struct gp_jobdoc_in *in;
    int64_t t0, t1;
    int64_t tc; /* the step counters are read to here (GP_JOBDOC_TAIL_MS) */
    struct gp_store_selection sel;
    /* From the cluster (jobdoc_cluster.h): the GPU memory series as
     * aggregates, sel then holds only GP_JOBDOC_RAW_NAMES. */
    struct gp_jobdoc_aggs agg;
    struct gpu *g;
    size_t ng;
    struct ser *cpu, *rss, *loss; /* loss: gpulse_job_loss, what the clients sent */
    size_t ncpu, nrss, nloss;
    struct interval *iv;
    size_t niv, civ;
    struct gp_jobmodel_steps *steps; /* the step stream (jobmodel.h) */
    struct gp_jobmodel_gpus act;
    /* gathered: the figures the document shows */
    struct gp_jobmodel_gpu *mg;      /* per GPU, as d->g */
    struct gp_jobmodel_gpu_figures gf;
    const struct gp_store_series **procs; /* gpulse_job_processes */
    size_t nprocs;
    struct gp_jobmodel_rank *rk;     /* per rank, as in->ranks: straggler scores */
    double host_cpu, rss_peak, wall;
    struct cost_out co;
    /* goodput (goodput.h): the job's, and each reporting process's */
    struct gp_goodput_figures gp;
    unsigned gp_attempts;
    double gp_last_step;
    struct gproc *gpr;
    size_t ngpr;
};

/* A process that reported steps, for goodput: its series and span. */
struct gproc {
    const struct gp_store_series *steps, *secs, *wait, *stepno, *phase[3];
    int64_t first, last; /* its steps counter's first and last sample (ms) */
    double start, end, resume_from, last_step;
    struct gp_goodput_figures f;
};

static int born(const struct doc *d, const struct gp_store_series *s)
{
    return s->first_ms >= d->t0;
}

/* The index in in->ranks of series s's node and rank; SIZE_MAX: none. */
static size_t rank_of(const struct doc *d, const struct gp_store_series *s)
{
    struct gp_str n = node_lab(s), rk = lab(s, "rank");
    for (size_t i = 0; i < d->in->nranks; i++) {
        const struct gp_jobdoc_rank *r = &d->in->ranks[i];
        char want[32] = "";
        if (r->rank != GP_JOBDOC_NONE)
            snprintf(want, sizeof want, "%lld", (long long)r->rank);
        if (str_eq(n, (struct gp_str){r->node, strlen(r->node)}) &&
            str_eq(rk, (struct gp_str){want, strlen(want)}))
            return i;
    }
    return SIZE_MAX;
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
    const struct gp_jobdoc_agg *a = s ? gp_jobdoc_agg_of(&d->agg, s) : NULL;
    if (a)
        return a->last;
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
    const struct gp_jobdoc_agg *ma = m ? gp_jobdoc_agg_of(&d->agg, m) : NULL;
    double scale = m && m == g->fb_used ? 1048576.0 : 1.0;
    if (ma) { /* the cluster's peak, and its peaks per chart window as the samples */
        g->mem.t = malloc((ma->n ? ma->n : 1) * sizeof *g->mem.t);
        g->mem.v = malloc((ma->n ? ma->n : 1) * sizeof *g->mem.v);
        if (!g->mem.t || !g->mem.v)
            return GP_ENOMEM;
        for (size_t i = 0; i < ma->n; i++)
            if (!isnan(ma->v[i])) {
                g->mem.t[g->mem.n] = ma->t[i];
                g->mem.v[g->mem.n++] = ma->v[i] * scale;
            }
    } else if (m) {
        if ((rc = ser_read(d->st, m, d->t0, d->t1, &g->mem)))
            return rc;
        for (size_t i = 0; i < g->mem.n; i++)
            g->mem.v[i] *= scale;
    }
    g->peak = ma ? ma->peak * scale : NAN;
    for (size_t i = 0; i < g->mem.n && !ma; i++)
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
    g->idle_s = g->unused_s = NAN;
    /* each sample stands for one scrape step of the GPU's time */
    for (size_t i = 0; i < g->act.n && g->step > 0; i++)
        gp_jobmodel_busy(&g->idle_s, &g->unused_s, g->act.v[i], (double)g->step / 1e3);
    for (size_t i = 0; i < g->act.n; i++) {
        int64_t gap = i + 1 < g->act.n ? g->act.t[i + 1] - g->act.t[i] : g->step;
        if (gap > 2 * g->step)
            gap = 2 * g->step;
        double w = g->step > 0 ? (double)gap : 1.0;
        g->act_sum += g->act.v[i] * w;
        g->act_w += w;
        gp_jobmodel_activity(&d->act, g->act.v[i], w);
    }
    return GP_OK;
}

/* Adds the step-time intervals of one process (steps and seconds
 * counters), to its rank's too (rk; NULL: none). */
static int add_intervals(struct doc *d, const struct ser *steps, const struct ser *secs, int from0,
                         struct gp_jobmodel_rank *rk)
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
                gp_jobmodel_interval(d->steps, ds, dc);
                if (rk)
                    gp_jobmodel_rank_interval(rk, ds, dc);
                /* The stepping span: from the sample before the first step
                 * (or, for a counter born in the job, back by the step
                 * seconds of its first sample) to the last step's sample. */
                double start = pt ? (double)pt / 1e3 : (double)steps->t[i] / 1e3 - dc;
                double end = (double)steps->t[i] / 1e3;
                if (!(d->steps->start_s <= start))
                    d->steps->start_s = start;
                if (!(d->steps->end_s >= end))
                    d->steps->end_s = end;
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


/* The step of the series' grid over the job's range: at most
 * GP_JOBDOC_MAX_POINTS. */
static int64_t grid_step(const struct doc *d)
{
    int64_t span = d->t1 - d->t0, step = (span + GP_JOBDOC_MAX_POINTS - 2) / (GP_JOBDOC_MAX_POINTS - 1);
    return step < 1000 ? 1000 : step;
}

static int grid(const struct doc *d, struct gp_eval_range *r)
{
    return gp_eval_range_init(r, d->t0, d->t1, grid_step(d), NULL, 0);
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
    /* Loss per window: the mean over the reporters that have one there. */
    grid_sum(&r, GP_EVAL_MEAN, d->loss, d->nloss, tmp, has, acc, th);
    for (size_t k = 0; k < np; k++)
        acc[k] = 0;
    for (size_t i = 0; i < d->nloss; i++) {
        gp_eval_raw(&r, GP_EVAL_MEAN, d->loss[i].t, d->loss[i].v, d->loss[i].n, val, th);
        for (size_t k = 0; k < np; k++)
            acc[k] += th[k];
    }
    for (size_t k = 0; k < np; k++)
        tmp[k] = has[k] ? tmp[k] / acc[k] : 0;
    put_array(b, "loss", tmp, has, np);
    for (size_t k = 0; k < np; k++)
        acc[k] = (double)((int64_t)k * r.step_ms) / 1e3;
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
                    const struct gp_store_series **stepnos, size_t nstepnos, double cost,
                    struct cost_out *co)
{
    int64_t newest_t = 0;
    for (size_t i = 0; i < d->ng; i++)
        if (gpu_last(&d->g[i]) > newest_t)
            newest_t = gpu_last(&d->g[i]);
    co->per_hour = NAN;
    for (size_t i = 0; i < d->ng; i++) {
        const struct gpu *g = &d->g[i];
        double price = price_of(d, g);
        const struct ser *p = g->act.n ? &g->act : &g->mem;
        if (price > 0 && p->n && g->step > 0) {
            /* held now: seen within two of its steps of the job's newest sample */
            if (gpu_last(g) >= newest_t - 2 * g->step - 1000)
                co->per_hour = (isfinite(co->per_hour) ? co->per_hour : 0) + price;
        }
    }
    co->cost = cost; /* the job model's */
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

/* The newest value of x at or before t (ms); 0 when none: a counter not
 * yet reported counts from 0. */
static double counter_at(const struct ser *x, int64_t t)
{
    double v = 0;
    for (size_t i = 0; i < x->n && x->t[i] <= t; i++)
        v = x->v[i];
    return v;
}

/* A counter's increase from t0 to t1 (ms); a reset counts from 0. */
static double counter_delta(const struct ser *x, int64_t t0, int64_t t1)
{
    double a = counter_at(x, t0), b = counter_at(x, t1);
    return b >= a ? b - a : b;
}

/* Start order; processes that start together by their labels, so the
 * order does not hang on the backend's series ids. */
static int gproc_cmp(const void *pa, const void *pb)
{
    const struct gproc *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    const struct gp_store_series *x = a->steps, *y = b->steps;
    return gp_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

/* One reporting process's goodput: its counters' increases between
 * samples fed to goodput.h (phases first: a phase and the first steps in
 * one interval count the phase before them), up to its end. */
static int gproc_feed(struct doc *d, struct gproc *p)
{
    struct ser x[7];
    const struct gp_store_series *ss[7] = {p->steps, p->secs, p->wait, p->stepno,
                                           p->phase[0], p->phase[1], p->phase[2]};
    memset(x, 0, sizeof x);
    int rc = GP_OK;
    for (int k = 0; k < 7 && !rc; k++)
        if (ss[k])
            rc = ser_read(d->st, ss[k], d->t0, d->tc, &x[k]);
    if (!rc) {
        struct gp_goodput_rank r;
        gp_goodput_rank_init(&r, p->start, p->resume_from);
        /* a counter born in the job counts from 0 before its first sample */
        int64_t prev = born(d, p->steps) ? INT64_MIN : (x[0].n ? x[0].t[0] : 0);
        for (size_t i = 0; i < x[0].n; i++) {
            int64_t t = x[0].t[i];
            if (t <= prev)
                continue;
            double te = (double)t / 1e3 < p->end ? (double)t / 1e3 : p->end;
            for (int k = 0; k < 3; k++) {
                double dp = ss[4 + k] ? counter_delta(&x[4 + k], prev, t) : 0;
                if (dp > 0)
                    gp_goodput_phase(&r, gp_steps_phase_name((enum gp_steps_phase)k), te, dp);
            }
            double n = counter_delta(&x[0], prev, t);
            if (n > 0)
                gp_goodput_interval(&r, te, counter_delta(&x[1], prev, t),
                                    p->wait ? counter_delta(&x[2], prev, t) : NAN,
                                    p->stepno ? counter_at(&x[3], t) : -1, n);
            prev = t;
        }
        gp_goodput_figures_init(&p->f);
        gp_goodput_add_rank(&p->f, &r, p->end);
        gp_goodput_finish(&p->f);
        p->last_step = r.last_step;
        if (r.last_step > d->gp_last_step)
            d->gp_last_step = r.last_step;
    }
    for (int k = 0; k < 7; k++)
        ser_free(&x[k]);
    return rc;
}

/* Goodput (docs/jobs.md "Goodput") from the step, wait, step-number and
 * phase counters of each reporting process. A process of the same rank
 * (labels but pid) that starts after another is a restart: it starts
 * where its counters say it began and its steps numbered at or below the
 * earlier ones' last step are lost work; the earlier one ends where it
 * starts. The first process of a rank starts with the job. */
static int gather_goodput(struct doc *d, const struct gp_store_series **steps, size_t nsteps,
                          const struct gp_store_series **secs, size_t nsecs,
                          const struct gp_store_series **waits, size_t nwaits,
                          const struct gp_store_series **stepnos, size_t nstepnos,
                          const struct gp_store_series **phases, size_t nphases)
{
    gp_goodput_figures_init(&d->gp);
    d->gp_last_step = -1;
    if (!nsteps)
        return GP_OK;
    d->gpr = calloc(nsteps, sizeof *d->gpr);
    if (!d->gpr)
        return GP_ENOMEM;
    for (size_t i = 0; i < nsteps; i++) {
        struct gproc *p = &d->gpr[d->ngpr];
        p->steps = steps[i];
        p->first = steps[i]->first_ms > d->t0 ? steps[i]->first_ms : d->t0;
        p->last = steps[i]->last_ms;
        for (size_t k = 0; k < nsecs && !p->secs; k++)
            if (same_but_name(steps[i], secs[k]))
                p->secs = secs[k];
        for (size_t k = 0; k < nwaits && !p->wait; k++)
            if (same_but_name(steps[i], waits[k]))
                p->wait = waits[k];
        for (size_t k = 0; k < nstepnos && !p->stepno; k++)
            if (same_but_name(steps[i], stepnos[k]))
                p->stepno = stepnos[k];
        for (size_t k = 0; k < nphases; k++) {
            struct gp_str ph = lab(phases[k], "phase");
            for (int q = 0; q < 3; q++) {
                const char *name = gp_steps_phase_name((enum gp_steps_phase)q);
                if (ph.len == strlen(name) && !memcmp(ph.ptr, name, ph.len) &&
                    same_except(steps[i], phases[k], "phase"))
                    p->phase[q] = phases[k];
            }
        }
        if (p->secs)
            d->ngpr++;
    }
    qsort(d->gpr, d->ngpr, sizeof *d->gpr, gproc_cmp);
    /* starts and attempts, in start order */
    for (size_t i = 0; i < d->ngpr; i++) {
        struct gproc *p = &d->gpr[i];
        p->start = (double)d->t0 / 1e3;
        p->end = (double)d->t1 / 1e3;
        p->resume_from = -1;
        unsigned attempt = 1;
        for (size_t j = 0; j < i; j++)
            attempt += same_except(p->steps, d->gpr[j].steps, "pid") && d->gpr[j].last <= p->first;
        if (attempt > 1) { /* a restart: it began where its first sample's counters say */
            struct ser x;
            int rc = ser_read(d->st, p->secs, p->first, p->first, &x);
            if (rc)
                return rc;
            double done = x.n ? x.v[0] : 0;
            ser_free(&x);
            p->start = (double)p->first / 1e3 - done;
        }
        if (attempt > d->gp_attempts)
            d->gp_attempts = attempt;
    }
    /* an earlier process of a rank ends where the next one starts (the
     * agent keeps a gone sender's series for minutes) */
    for (size_t i = 0; i < d->ngpr; i++)
        for (size_t j = i + 1; j < d->ngpr; j++)
            if (same_except(d->gpr[i].steps, d->gpr[j].steps, "pid") &&
                d->gpr[j].start > d->gpr[i].start && d->gpr[j].start < d->gpr[i].end)
                d->gpr[i].end = d->gpr[j].start;
    /* fed in start order: a restart resumes after its rank's last step */
    for (size_t i = 0; i < d->ngpr; i++) {
        struct gproc *p = &d->gpr[i];
        for (size_t j = 0; j < i; j++)
            if (same_except(p->steps, d->gpr[j].steps, "pid") && d->gpr[j].end <= p->start &&
                d->gpr[j].last_step > p->resume_from)
                p->resume_from = d->gpr[j].last_step;
        int rc = gproc_feed(d, p);
        if (rc)
            return rc;
        gp_goodput_add(&d->gp, &p->f);
    }
    gp_goodput_finish(&d->gp);
    return GP_OK;
}

/* Files a GPU family's series s under its GPU (the newest of a name
 * wins). GP_OK, or GP_ENOMEM for a new GPU. */
static int add_gpu_series(struct doc *d, const struct gp_store_series *s)
{
    struct gpu *g = gpu_of(d, s);
    if (!g)
        return lab(s, "gpu").len ? GP_ENOMEM : GP_OK;
    struct gp_str u = lab(s, "UUID"), mdl = lab(s, "modelName");
    if (u.len)
        g->uuid = u;
    if (mdl.len)
        g->model = mdl;
    if (!g->rank.len)
        g->rank = lab(s, "rank");
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
    return GP_OK;
}

/* gather's answer when the cluster's aggregates cannot give a figure:
 * a GPU without activity samples counts its GPU-seconds from its memory
 * samples' gaps. doc_gather reads the job raw then. */
#define NEED_RAW 1

/* Reads the job's series and works out every figure into d (the job
 * model's, and the cost and host totals around them). GP_OK, GP_ENOMEM or
 * the store's error; d's arrays are freed by doc_free either way. */
static int gather(struct doc *d)
{
    int rc;
    /* Sort the series out by name. */
    struct gp_jobmodel_gpu *mg = NULL;
    const struct gp_store_series **steps = NULL, **secs = NULL, **waits = NULL, **samples = NULL,
                                 **tokens = NULL, **procs = NULL, **targets = NULL, **stepnos = NULL,
                                 **phases = NULL;
    size_t nsteps = 0, nsecs = 0, nwaits = 0, nsamples = 0, ntokens = 0, nprocs = 0, ntargets = 0,
           nstepnos = 0, nphases = 0;
    size_t nsel = d->sel.n ? d->sel.n : 1;
    steps = calloc(nsel, sizeof *steps);
    secs = calloc(nsel, sizeof *secs);
    waits = calloc(nsel, sizeof *waits);
    samples = calloc(nsel, sizeof *samples);
    tokens = calloc(nsel, sizeof *tokens);
    procs = calloc(nsel, sizeof *procs);
    targets = calloc(nsel, sizeof *targets);
    stepnos = calloc(nsel, sizeof *stepnos);
    phases = calloc(nsel, sizeof *phases);
    d->cpu = calloc(nsel, sizeof *d->cpu);
    d->rss = calloc(nsel, sizeof *d->rss);
    d->loss = calloc(nsel, sizeof *d->loss);
    rc = GP_ENOMEM;
    if (!steps || !secs || !waits || !samples || !tokens || !procs || !targets || !stepnos || !phases ||
        !d->cpu ||
        !d->rss || !d->loss)
        goto out;
    for (size_t i = 0; i < d->agg.n; i++)
        if (add_gpu_series(d, &d->agg.a[i].s))
            goto out;
    for (size_t i = 0; i < d->sel.n; i++) {
        const struct gp_store_series *s = &d->sel.series[i];
        if (name_prefix(s, "DCGM_FI_") || name_prefix(s, "gpulse_gpu_")) {
            if (add_gpu_series(d, s))
                goto out;
        } else if (name_is(s, "gpulse_job_cpu_seconds_total")) {
            if ((rc = ser_read(d->st, s, d->t0, d->t1, &d->cpu[d->ncpu++])))
                goto out;
        } else if (name_is(s, "gpulse_job_resident_memory_bytes")) {
            if ((rc = ser_read(d->st, s, d->t0, d->t1, &d->rss[d->nrss++])))
                goto out;
        } else if (name_is(s, "gpulse_job_loss")) {
            if ((rc = ser_read(d->st, s, d->t0, d->tc, &d->loss[d->nloss++])))
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
        } else if (name_is(s, "gpulse_job_phase_seconds_total")) {
            phases[nphases++] = s;
        }
    }
    if (d->ng)
        qsort(d->g, d->ng, sizeof *d->g, gpu_cmp);
    mg = calloc(d->ng ? d->ng : 1, sizeof *mg);
    if (!mg)
        goto out;
    for (size_t i = 0; i < d->ng; i++) {
        if ((rc = do_gpu(d, &d->g[i])))
            goto out;
        const struct gpu *g = &d->g[i];
        mg[i] = (struct gp_jobmodel_gpu){g->seconds, g->act_sum, g->act_w, g->peak, g->capacity,
                                         price_of(d, g), g->idle_s, g->unused_s};
        if (d->agg.n && !g->act.n && (g->used || g->fb_used)) {
            rc = NEED_RAW;
            goto out;
        }
    }
    struct gp_jobmodel_gpu_figures gf;
    /* the agent said how many GPUs the job held (gpulse_job_gpus) */
    bool held_none = false;
    for (size_t i = 0; i < d->sel.n && !held_none; i++)
        held_none = name_is(&d->sel.series[i], "gpulse_job_gpus");
    gp_jobmodel_gpu_figures(&d->act, mg, d->ng, held_none,
                            d->in->prices ? NAN : d->in->price_per_gpu_hour, &gf);

    for (size_t i = 0; i < d->nloss; i++)
        for (size_t k = 0; k < d->loss[i].n; k++)
            gp_jobmodel_loss(d->steps, (double)d->loss[i].t[k] / 1e3, d->loss[i].v[k]);

    /* Counters: the step stream's sums are their increases. */
    double *sums[5] = {&d->steps->steps, &d->steps->seconds, &d->steps->wait, &d->steps->samples,
                       &d->steps->tokens};
    const struct gp_store_series **lists[5] = {steps, secs, waits, samples, tokens};
    size_t counts[5] = {nsteps, nsecs, nwaits, nsamples, ntokens};
    struct ser x;
    rc = GP_ENOMEM;
    if (!(d->rk = calloc(d->in->nranks ? d->in->nranks : 1, sizeof *d->rk)))
        goto out;
    for (size_t i = 0; i < d->in->nranks; i++)
        gp_jobmodel_rank_init(&d->rk[i]);
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < counts[k]; i++) {
            if ((rc = ser_read(d->st, lists[k][i], d->t0, d->tc, &x)))
                goto out;
            if (x.n)
                gp_jobmodel_sum(sums[k], increase(&x, born(d, lists[k][i])));
            if (k == 0)
                for (size_t m = 0; m < nsecs; m++)
                    if (same_but_name(steps[i], secs[m])) {
                        struct ser y;
                        if ((rc = ser_read(d->st, secs[m], d->t0, d->tc, &y))) {
                            ser_free(&x);
                            goto out;
                        }
                        size_t ri = rank_of(d, steps[i]);
                        rc = add_intervals(d, &x, &y, born(d, steps[i]) && born(d, secs[m]),
                                           ri == SIZE_MAX ? NULL : &d->rk[ri]);
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
    d->host_cpu = cpu;
    d->rss_peak = rss_peak;
    d->wall = (double)(d->t1 - d->t0) / 1e3;
    d->gf = gf;
    if ((rc = job_cost(d, targets, ntargets, stepnos, nstepnos, gf.cost, &d->co)))
        goto out;
    if ((rc = gather_goodput(d, steps, nsteps, secs, nsecs, waits, nwaits, stepnos, nstepnos, phases,
                             nphases)))
        goto out;
    d->procs = procs, d->nprocs = nprocs;
    procs = NULL;
    rc = GP_OK;
out:
    d->mg = mg;
    free(targets);
    free(stepnos);
    free(phases);
    free(steps);
    free(secs);
    free(waits);
    free(samples);
    free(tokens);
    free(procs);
    return rc;
}

/* The model record's declaration (gpulse_job_model_flops, the first
 * rank's) into in; NaN / -1 when none. */
static void model_decl(struct doc *d, struct gp_jobmodel_mfu_in *in)
{
    in->flops_token = in->flops_sample = NAN;
    in->precision = -1;
    for (size_t i = 0; i < d->sel.n; i++) {
        const struct gp_store_series *s = &d->sel.series[i];
        if (!name_is(s, "gpulse_job_model_flops"))
            continue;
        struct gp_str per = lab(s, "per"), prec = lab(s, "precision");
        enum gp_precision p;
        if (!gp_precision_parse(prec.ptr, prec.len, &p) || (in->precision >= 0 && (int)p != in->precision))
            continue;
        double v = newest(d, s), *dst = str_eq(per, (struct gp_str){"token", 5}) ? &in->flops_token
                                      : str_eq(per, (struct gp_str){"sample", 6}) ? &in->flops_sample
                                                                                     : NULL;
        if (dst && v > 0 && isnan(*dst)) {
            *dst = v;
            in->precision = (int)p;
        }
    }
}

/* MFU (jobmodel.h) over the GPUs of d->g for which pick(d, i, ctx) holds
 * (all of them for the job, a rank's for the rank), into m. */
static void mfu_over(struct doc *d, struct gp_jobmodel_mfu_in *in, bool (*pick)(struct doc *, size_t, void *),
                     void *ctx, struct gp_jobmodel_mfu *m)
{
    char (*names)[96] = d->ng ? calloc(d->ng, sizeof *names) : NULL;
    const char **models = d->ng ? calloc(d->ng, sizeof *models) : NULL;
    in->models = models;
    in->ngpus = 0;
    if (names && models)
        for (size_t i = 0; i < d->ng; i++) {
            if (!pick(d, i, ctx))
                continue;
            snprintf(names[i], sizeof names[i], "%.*s", (int)d->g[i].model.len, d->g[i].model.ptr);
            models[in->ngpus++] = d->g[i].model.len ? names[i] : NULL;
        }
    gp_jobmodel_mfu(in, m);
    free(names);
    free(models);
    in->models = NULL;
}

static bool pick_all(struct doc *d, size_t i, void *ctx)
{
    (void)d, (void)i, (void)ctx;
    return true;
}

/* The job's MFU fields. */
static void put_mfu(struct doc *d, const struct gp_jobmodel_step_figures *sf, double activity,
                    struct gp_buf *b)
{
    struct gp_jobmodel_mfu_in in = {.tokens_per_second = sf->tokens_per_second,
                                    .samples_per_second = sf->samples_per_second, .activity = activity,
                                    .tensor_active = NAN, .dram_active = NAN, .link_busy = NAN};
    model_decl(d, &in);
    struct gp_jobmodel_mfu m;
    mfu_over(d, &in, pick_all, NULL, &m);
    const char *prec = in.precision >= 0 ? gp_precision_name((enum gp_precision)in.precision) : NULL;
    gp_buf_puts(b, ",\"precision\":");
    if (prec)
        gp_buf_printf(b, "\"%s\"", prec);
    else
        gp_buf_puts(b, "null");
    put_total(b, "model_flops_per_token", in.flops_token);
    put_total(b, "model_flops_per_sample", in.flops_sample);
    put_total(b, "model_flops_per_second", m.achieved_flops_per_second);
    put_total(b, "peak_flops_per_second", m.peak_flops_per_second);
    put_total(b, "mfu", m.mfu);
    gp_buf_puts(b, ",\"mfu_reason\":");
    str_or_null(b, (struct gp_str){m.why, strlen(m.why)});
    gp_buf_puts(b, ",\"mfu_gap\":");
    str_or_null(b, (struct gp_str){m.gap, strlen(m.gap)});
}

/* A rank: its node and its rank label's value ("" when it has none). */
struct rank_key {
    struct gp_str node, rank;
};

static bool pick_rank(struct doc *d, size_t i, void *ctx)
{
    const struct rank_key *k = ctx;
    return str_eq(d->g[i].node, k->node) && str_eq(d->g[i].rank, k->rank);
}

/* One rank's MFU: its tokens (samples) over the job's stepping span, on
 * its GPUs (those labelled with its rank on its node). */
static void put_rank_mfu(struct doc *d, struct rank_key k, const struct gp_jobmodel_step_figures *sf,
                         struct gp_buf *b)
{
    struct gp_jobmodel_rank rk;
    gp_jobmodel_rank_init(&rk);
    double *sums[2] = {&rk.tokens, &rk.samples};
    static const char *const names[2] = {"gpulse_job_tokens_total", "gpulse_job_samples_total"};
    for (size_t i = 0; i < d->sel.n; i++) {
        const struct gp_store_series *s = &d->sel.series[i];
        for (int n = 0; n < 2; n++) {
            struct ser x;
            if (!name_is(s, names[n]) || !str_eq(node_lab(s), k.node) || !str_eq(lab(s, "rank"), k.rank) ||
                ser_read(d->st, s, d->t0, d->tc, &x))
                continue;
            if (x.n)
                gp_jobmodel_sum(sums[n], increase(&x, born(d, s)));
            ser_free(&x);
        }
    }
    double act_sum = 0, act_w = 0;
    for (size_t i = 0; i < d->ng; i++)
        if (pick_rank(d, i, &k))
            act_sum += d->g[i].act_sum, act_w += d->g[i].act_w;
    struct gp_jobmodel_mfu_in in = {.activity = act_w > 0 ? act_sum / act_w : NAN, .tensor_active = NAN,
                                    .dram_active = NAN, .link_busy = NAN};
    gp_jobmodel_rank_rates(&rk, sf, &in);
    model_decl(d, &in);
    struct gp_jobmodel_mfu m;
    mfu_over(d, &in, pick_rank, &k, &m);
    put_total(b, "mfu", m.mfu);
    gp_buf_puts(b, ",\"mfu_reason\":");
    str_or_null(b, (struct gp_str){m.why, strlen(m.why)});
}

static void put_parts(struct gp_buf *b, const struct gp_goodput_figures *f)
{
    gp_buf_puts(b, ",\"seconds\":{");
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++) {
        gp_buf_printf(b, "%s\"%s\":", p ? "," : "", gp_goodput_part_name(p));
        num(b, f->part[p]);
    }
    gp_buf_putc(b, '}');
}

/* "goodput" (docs/jobs.md "Goodput"); null when no process reported. */
static void write_goodput(const struct doc *d, struct gp_buf *b)
{
    gp_buf_puts(b, ",\"goodput\":");
    if (!d->ngpr) {
        gp_buf_puts(b, "null");
        return;
    }
    gp_buf_puts(b, "{\"ratio\":");
    num(b, d->gp.ratio);
    put_total(b, "wall_seconds", d->gp.wall);
    put_parts(b, &d->gp);
    gp_buf_puts(b, ",\"biggest_badput\":");
    if (d->gp.biggest_badput >= 0)
        gp_buf_printf(b, "\"%s\"", gp_goodput_part_name(d->gp.biggest_badput));
    else
        gp_buf_puts(b, "null");
    gp_buf_printf(b, ",\"attempts\":%u", d->gp_attempts);
    put_total(b, "last_step", d->gp_last_step >= 0 ? d->gp_last_step : NAN);
    gp_buf_puts(b, ",\"ranks\":[");
    for (size_t i = 0; i < d->ngpr; i++) {
        const struct gproc *p = &d->gpr[i];
        gp_buf_puts(b, i ? ",{\"pid\":" : "{\"pid\":");
        struct gp_str pid = lab(p->steps, "pid"), rank = lab(p->steps, "rank");
        char num_s[24] = "", *end = NULL;
        if (pid.len && pid.len < sizeof num_s)
            memcpy(num_s, pid.ptr, pid.len);
        long long v = num_s[0] ? strtoll(num_s, &end, 10) : -1;
        if (v >= 0 && end && !*end) /* the agent's pids are numbers */
            gp_buf_printf(b, "%lld", v);
        else
            str_or_null(b, pid);
        gp_buf_puts(b, ",\"rank\":");
        str_or_null(b, rank);
        put_total(b, "ratio", p->f.ratio);
        put_parts(b, &p->f);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "]}");
}

/* Writes the document of a gathered d. GP_OK or GP_ENOMEM (the series). */
static int render(struct doc *d, struct gp_buf *b)
{
    const struct gp_jobdoc_in *in = d->in;
    const struct gp_jobmodel_gpu_figures gf = d->gf;
    const struct gp_jobmodel_gpu *mg = d->mg;
    const struct gp_store_series *const *procs = d->procs;
    size_t nprocs = d->nprocs;
    double cpu = d->host_cpu, rss_peak = d->rss_peak, wall = d->wall;
    const struct cost_out co = d->co;
    /* The document. */
    gp_buf_puts(b, "{\"id\":");
    gp_json_str(b, in->id, strlen(in->id));
    gp_buf_puts(b, ",\"scheme\":");
    str_or_null(b, (struct gp_str){in->scheme, strlen(in->scheme)});
    /* gpulse run labels its job's info series with the command */
    struct gp_str command = {"", 0};
    for (size_t i = 0; i < d->sel.n && !command.len; i++)
        if (name_is(&d->sel.series[i], "gpulse_job_info"))
            command = lab(&d->sel.series[i], "command");
    gp_buf_puts(b, ",\"command\":");
    str_or_null(b, command);
    gp_buf_printf(b, ",\"state\":\"%s\",\"exit_status\":", in->state);
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
    long long world = -1;
    for (size_t i = 0; i < in->nranks; i++)
        if (in->ranks[i].world_size != GP_JOBDOC_NONE && in->ranks[i].world_size > world)
            world = in->ranks[i].world_size;
    world = gp_jobmodel_world_size(world, in->nranks);
    struct gp_jobmodel_step_figures sf;
    gp_jobmodel_step_figures(d->steps, &sf);
    gp_buf_puts(b, "],\"world_size\":");
    if (world > 0)
        gp_buf_printf(b, "%lld", world);
    else
        gp_buf_puts(b, "null");
    gp_buf_puts(b, ",\"ranks\":[");
    for (size_t i = 0; i < in->nranks; i++) {
        const struct gp_jobdoc_rank *r = &in->ranks[i];
        long long rank = gp_jobmodel_rank(r->rank == GP_JOBDOC_NONE ? -1 : r->rank, in->nranks);
        long long local = gp_jobmodel_rank(r->local_rank == GP_JOBDOC_NONE ? -1 : r->local_rank, in->nranks);
        gp_buf_puts(b, i ? ",{\"rank\":" : "{\"rank\":");
        if (rank < 0)
            gp_buf_puts(b, "null");
        else
            gp_buf_printf(b, "%lld", rank);
        gp_buf_puts(b, ",\"node\":");
        gp_json_str(b, r->node, strlen(r->node));
        gp_buf_puts(b, ",\"local_rank\":");
        if (local < 0)
            gp_buf_puts(b, "null");
        else
            gp_buf_printf(b, "%lld", local);
        double pr = NAN;
        for (size_t k = 0; k < nprocs; k++)
            if (rank_of(d, procs[k]) == i) {
                pr = newest(d, procs[k]);
                break;
            }
        put_total(b, "processes", pr);
        char want[32] = "";
        if (r->rank != GP_JOBDOC_NONE)
            snprintf(want, sizeof want, "%lld", (long long)r->rank);
        put_rank_mfu(d, (struct rank_key){{r->node, strlen(r->node)}, {want, strlen(want)}}, &sf, b);
        struct gp_jobmodel_rank_figures rf;
        gp_jobmodel_rank_figures(d->rk, in->nranks, i, &rf);
        put_total(b, "step_seconds_mean", rf.step_mean);
        put_total(b, "step_seconds_best", rf.step_best);
        put_total(b, "straggler_relative", rf.relative);
        put_total(b, "straggler_individual", rf.individual);
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
        put_total(b, "peak_memory_ratio", gp_jobmodel_gpu_peak_ratio(&mg[i]));
        put_total(b, "activity_avg", gp_jobmodel_gpu_activity(&mg[i]));
        gp_buf_puts(b, ",\"activity_source\":");
        if (g->act.n)
            gp_buf_printf(b, "\"%s\"", g->source);
        else
            gp_buf_puts(b, "null");
        put_total(b, "gpu_seconds", g->seconds);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"totals\":{\"gpu_seconds\":");
    num(b, gf.gpu_seconds);
    put_total(b, "gpu_hours", gf.gpu_hours);
    put_total(b, "activity_avg", gf.activity_avg);
    put_total(b, "activity_p50", gf.activity_p50);
    put_total(b, "activity_p90", gf.activity_p90);
    put_total(b, "activity_p99", gf.activity_p99);
    put_total(b, "peak_gpu_memory_bytes", gf.peak_memory_bytes);
    put_total(b, "peak_gpu_memory_ratio", gf.peak_memory_ratio);
    put_total(b, "host_cpu_seconds", cpu);
    put_total(b, "host_cpu_avg_cores", wall > 0 ? cpu / wall : NAN);
    put_total(b, "host_rss_peak_bytes", rss_peak);
    put_total(b, "steps", sf.steps);
    put_total(b, "samples", sf.samples);
    put_total(b, "tokens", sf.tokens);
    put_total(b, "stepping_seconds", sf.stepping_seconds);
    put_total(b, "samples_per_second", sf.samples_per_second);
    put_total(b, "tokens_per_second", sf.tokens_per_second);
    put_total(b, "steps_per_second", sf.steps_per_second);
    gp_buf_puts(b, ",\"step_seconds\":");
    if (isfinite(sf.mean) && isfinite(sf.max)) {
        gp_buf_puts(b, "{\"mean\":");
        num(b, sf.mean);
        put_total(b, "p50", sf.p50);
        put_total(b, "p90", sf.p90);
        put_total(b, "p99", sf.p99);
        put_total(b, "max", sf.max);
        gp_buf_putc(b, '}');
    } else {
        gp_buf_puts(b, "null");
    }
    put_total(b, "data_wait_ratio", sf.data_wait_ratio);
    put_total(b, "loss_first", sf.loss_first);
    put_total(b, "loss_last", sf.loss_last);
    put_total(b, "loss_min", sf.loss_min);
    put_mfu(d, &sf, gf.activity_avg, b);
    put_total(b, "price_per_gpu_hour", gf.price_per_gpu_hour);
    put_total(b, "cost", gf.cost);
    put_total(b, "cost_idle", gf.cost_idle);
    put_total(b, "cost_unused_compute", gf.cost_unused_compute);
    put_total(b, "cost_per_hour", co.per_hour);
    put_total(b, "target_steps", co.target);
    put_total(b, "projected_seconds_left", co.seconds_left);
    put_total(b, "projected_cost_total", co.projected);
    put_total(b, "budget", in->budget > 0 ? in->budget : NAN);
    put_total(b, "budget_ratio", in->budget > 0 ? gf.cost / in->budget : NAN);
    gp_buf_puts(b, isfinite(gf.cost) ? ",\"currency\":\"USD\"}" : ",\"currency\":null}");
    write_goodput(d, b);
    if (in->series) {
        int rc = write_series(d, b);
        if (rc)
            return rc;
    }
    gp_buf_puts(b, ",\"advice\":[]}");
    return GP_OK;
}

static void doc_free(struct doc *d)
{
    for (size_t i = 0; i < d->ng; i++) {
        ser_free(&d->g[i].act);
        ser_free(&d->g[i].mem);
    }
    free(d->g);
    for (size_t i = 0; i < d->ncpu; i++)
        ser_free(&d->cpu[i]);
    for (size_t i = 0; i < d->nrss; i++)
        ser_free(&d->rss[i]);
    for (size_t i = 0; i < d->nloss; i++)
        ser_free(&d->loss[i]);
    free(d->cpu);
    free(d->rss);
    free(d->loss);
    free(d->iv);
    free(d->steps);
    free(d->mg);
    free(d->procs);
    free(d->rk);
    free(d->gpr);
    gp_storage_selection_free(&d->sel);
    gp_jobdoc_aggs_free(&d->agg);
}

/* Selects the job's series and gathers its figures into d (doc_free it
 * either way). raw: every series' raw samples, even where the cluster
 * would aggregate. GP_OK or an error with detail. */
static int doc_gather(struct doc *d, struct gp_storage *st, const struct gp_jobdoc_in *in, int raw,
                      char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->st = st;
    d->in = in;
    d->t0 = in->start_ms;
    d->t1 = in->range_end_ms > in->start_ms ? in->range_end_ms : in->start_ms;
    d->tc = in->end_ms != GP_JOBDOC_NONE ? d->t1 + GP_JOBDOC_TAIL_MS : d->t1;
    d->steps = malloc(sizeof *d->steps); /* 40 KiB of buckets: not on a handler's stack */
    if (!d->steps)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory building the job document");
    gp_jobmodel_steps_init(d->steps);
    gp_jobmodel_gpus_init(&d->act);
    struct gp_matcher m[2];
    int rc = gp_matcher_init(&m[0], GP_MATCH_EQ, "job", in->id, err, errlen);
    if (rc)
        return rc;
    /* Raw samples the cluster would move (gp_storage_pushdown): only the
     * families that need them, the GPU memory as aggregates. */
    size_t nm = 1;
    if (!raw && gp_storage_pushdown(st, m, 1, d->t0) &&
        !(rc = gp_matcher_init(&m[1], GP_MATCH_RE, "__name__", GP_JOBDOC_RAW_NAMES, err, errlen)))
        nm = 2;
    if (nm == 2 && (rc = gp_jobdoc_cluster_memory(st, in->id, d->t0, d->t1, in->series ? grid_step(d) : 0,
                                                  &d->agg)))
        rc = gp_seterr(err, errlen, rc, "asking the cluster for the job's GPU memory: %s",
                       rc == GP_ENET ? gp_storage_last_error() : gp_strerror(rc));
    if (!rc && (rc = gp_storage_select(st, m, nm, d->t0, d->tc, &d->sel)))
        gp_seterr(err, errlen, rc, "selecting the job's series: %s", gp_strerror(rc));
    for (size_t i = 0; i < nm; i++)
        gp_matcher_free(&m[i]);
    if (rc)
        return rc;
    rc = gather(d);
    if (rc == NEED_RAW) {
        doc_free(d);
        return doc_gather(d, st, in, 1, err, errlen);
    }
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
    size_t mark = out->len;
    int mark_err = out->err;
    int rc = doc_gather(&d, st, in, 0, err, errlen);
    if (!rc && (rc = render(&d, out)))
        gp_seterr(err, errlen, rc, "out of memory building the job document");
    if (!rc && out->err)
        rc = gp_seterr(err, errlen, out->err,
                       out->err == GP_ETOOBIG ? "the job document is larger than %zu bytes"
                                              : "writing the job document (%zu bytes max)",
                       out->max);
    doc_free(&d);
    if (rc) {
        out->len = mark;
        out->err = mark_err;
        if (out->data)
            out->data[out->len] = '\0';
    }
    return rc;
}

int gp_jobdoc_figures(struct gp_storage *st, const struct gp_jobdoc_in *in,
                      struct gp_jobdoc_figures *out, char *err, size_t errlen)
{
    struct doc d;
    int rc = doc_gather(&d, st, in, 0, err, errlen);
    out->cost = rc ? NAN : d.gf.cost;
    gp_goodput_figures_init(&out->goodput);
    if (!rc && d.ngpr)
        out->goodput = d.gp;
    doc_free(&d);
    return rc;
}

int gp_jobdoc_cost(struct gp_storage *st, const struct gp_jobdoc_in *in, double *cost, char *err,
                   size_t errlen)
{
    struct gp_jobdoc_figures f;
    int rc = gp_jobdoc_figures(st, in, &f, err, errlen);
    *cost = f.cost;
    return rc;
}
