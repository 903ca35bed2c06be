/*
 * jobdoc_charts.c - a job document's "series" (jobdoc_charts.h). Each
 * chart is one grid over the job's range. Gauges go through the query
 * engine's windows (gp_eval_raw: a window's mean or maximum, the lookback
 * where it is empty), so a chart shows what a range query of the same
 * step would; counters (step time, CPU) put each increment in the window
 * its second sample ends in, so a window's figures add up to the totals.
 */
#include "query/jobdoc_charts.h"

#include "lib/err.h"
#include "lib/json.h"
#include "query/jobdoc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t gp_jobdoc_grid_step(int64_t t0, int64_t t1)
{
    int64_t span = t1 - t0, step = (span + GP_JOBDOC_MAX_POINTS - 2) / (GP_JOBDOC_MAX_POINTS - 1);
    return step < 1000 ? 1000 : step;
}

void gp_jobdoc_grid_sum(const struct gp_eval_range *r, enum gp_eval_mode mode, const struct gp_jobdoc_ser *xs,
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
        gp_jobdoc_num(b, has && !has[k] ? NAN : v[k]);
    }
    gp_buf_putc(b, ']');
}

/* `"t":[...]` (after a comma: comma), the grid's times in seconds since
 * its start. */
static void put_times(struct gp_buf *b, const struct gp_eval_range *r, int comma)
{
    gp_buf_puts(b, comma ? ",\"t\":[" : "\"t\":[");
    for (size_t k = 0; k < r->npoints; k++) {
        if (k)
            gp_buf_putc(b, ',');
        gp_jobdoc_num(b, (double)((int64_t)k * r->step_ms) / 1e3);
    }
    gp_buf_putc(b, ']');
}

/* The window of r that time t (ms) ends in: (t - step, t] of point k. */
static size_t window_of(const struct gp_eval_range *r, int64_t t)
{
    int64_t off = t - r->start_ms;
    return off <= 0 ? 0 : (size_t)((off + r->step_ms - 1) / r->step_ms);
}

int gp_jobdoc_charts_write(const struct gp_jobdoc_charts_in *in, struct gp_buf *b)
{
    struct gp_eval_range r;
    if (gp_eval_range_init(&r, in->t0, in->t1, gp_jobdoc_grid_step(in->t0, in->t1), NULL, 0))
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
    for (size_t i = 0; i < in->gpus->n; i++) {
        const struct gp_jobdoc_gpu *g = &in->gpus->g[i];
        gp_buf_puts(b, i ? ",{\"uuid\":" : "{\"uuid\":");
        gp_jobdoc_str_or_null(b, g->uuid);
        gp_buf_puts(b, ",\"node\":");
        gp_json_str(b, g->node.ptr, g->node.len);
        gp_buf_puts(b, ",\"gpu\":");
        gp_json_str(b, g->gpu.ptr, g->gpu.len);
        put_times(b, &r, 1);
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
    for (size_t i = 0; i < in->niv; i++) {
        size_t k = window_of(&r, in->iv[i].t);
        if (k < np) {
            tmp[k] += in->iv[i].sec;
            acc[k] += in->iv[i].steps;
        }
    }
    for (size_t k = 0; k < np; k++) {
        has[k] = acc[k] > 0;
        tmp[k] = has[k] ? tmp[k] / acc[k] : 0;
    }
    put_times(b, &r, 0);
    put_array(b, "seconds", tmp, has, np);
    /* Loss per window: the mean over the reporters that have one there. */
    gp_jobdoc_grid_sum(&r, GP_EVAL_MEAN, in->loss, in->nloss, tmp, has, acc, th);
    for (size_t k = 0; k < np; k++)
        acc[k] = 0;
    for (size_t i = 0; i < in->nloss; i++) {
        gp_eval_raw(&r, GP_EVAL_MEAN, in->loss[i].t, in->loss[i].v, in->loss[i].n, val, th);
        for (size_t k = 0; k < np; k++)
            acc[k] += th[k];
    }
    for (size_t k = 0; k < np; k++)
        tmp[k] = has[k] ? tmp[k] / acc[k] : 0;
    put_array(b, "loss", tmp, has, np);
    gp_buf_puts(b, "},\"host\":{");
    put_times(b, &r, 0);
    /* CPU cores per window: counter increments that end in it / its length. */
    for (size_t k = 0; k < np; k++)
        acc[k] = 0;
    memset(has, 0, np);
    for (size_t i = 0; i < in->ncpu; i++) {
        const struct gp_jobdoc_ser *x = &in->cpu[i];
        for (size_t m = 1; m < x->n; m++) {
            double dv = x->v[m] - x->v[m - 1];
            size_t k = window_of(&r, x->t[m]);
            if (k < np) {
                acc[k] += (dv >= 0 ? dv : x->v[m]) / ((double)r.step_ms / 1e3);
                has[k] = 1;
            }
        }
    }
    put_array(b, "cpu_cores", acc, has, np);
    gp_jobdoc_grid_sum(&r, GP_EVAL_MEAN, in->rss, in->nrss, acc, has, tmp, th);
    put_array(b, "rss_bytes", acc, has, np);
    gp_buf_puts(b, "}}");
    free(val);
    free(has);
    return GP_OK;
}
