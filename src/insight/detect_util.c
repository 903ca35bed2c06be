/*
 * detect_util.c - the detectors' shared parts (detect_util.h): keys,
 * hysteresis, single-pass statistics over a view's series, and the words
 * that name what an observation is about. Nothing here allocates except
 * gp_det_match_procs, once per evaluation.
 */
#include "detect_util.h"

#include "lib/err.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void key_clear(struct gp_observation *o, enum gp_detector d)
{
    memset(&o->key, 0, sizeof o->key);
    o->key.det = d;
    o->key.rank = -1;
    o->uuid[0] = '\0';
    o->bad = false;
    o->value = 0;
    o->summary[0] = '\0';
    o->evidence[0] = '\0';
    o->runbook[0] = '\0';
    o->nfaults = 0;
}

void gp_det_key_gpu(struct gp_observation *o, enum gp_detector d, const struct gp_view_gpu *g)
{
    key_clear(o, d);
    memcpy(o->key.node, g->node, sizeof o->key.node);
    memcpy(o->key.gpu, g->gpu, sizeof o->key.gpu);
    memcpy(o->key.job, g->job, sizeof o->key.job);
    o->key.rank = g->job[0] ? g->rank : -1;
    memcpy(o->uuid, g->uuid, sizeof o->uuid);
}

void gp_det_key_proc(struct gp_observation *o, enum gp_detector d, const struct gp_view_proc *p)
{
    key_clear(o, d);
    memcpy(o->key.node, p->node, sizeof o->key.node);
    memcpy(o->key.job, p->job, sizeof o->key.job);
    o->key.rank = p->rank;
    o->key.pid = p->pid;
}

void gp_det_key_job(struct gp_observation *o, enum gp_detector d, const struct gp_view_job *j)
{
    key_clear(o, d);
    memcpy(o->key.job, j->job, sizeof o->key.job);
}

bool gp_det_judge(const struct gp_detect_ctx *c, struct gp_observation *o, double value, bool above)
{
    bool active = c->active && c->active(c->active_ctx, &o->key);
    double limit = active ? c->cfg->clear : c->cfg->threshold;
    o->value = value;
    o->bad = !isnan(value) && (above ? value >= limit : value <= limit);
    return o->bad || active;
}

int gp_det_emit(const struct gp_detect_ctx *c, const struct gp_observation *o)
{
    return c->emit(c->emit_ctx, o);
}

void gp_det_printf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

void gp_det_gpu_name(const struct gp_view_gpu *g, char *out, size_t len)
{
    if (!g->job[0])
        gp_det_printf(out, len, "GPU %s on %s", g->gpu, g->node);
    else if (g->rank >= 0)
        gp_det_printf(out, len, "GPU %s on %s (job %s rank %d)", g->gpu, g->node, g->job,
                      (int)g->rank);
    else
        gp_det_printf(out, len, "GPU %s on %s (job %s)", g->gpu, g->node, g->job);
}

void gp_det_proc_name(const struct gp_view_proc *p, char *out, size_t len)
{
    if (p->rank >= 0)
        gp_det_printf(out, len, "rank %d of %s on %s (pid %u)", (int)p->rank, p->job, p->node,
                      (unsigned)p->pid);
    else
        gp_det_printf(out, len, "pid %u of %s on %s", (unsigned)p->pid, p->job, p->node);
}

double gp_det_mem_total(const struct gp_view *v, const struct gp_view_gpu *g, unsigned k)
{
    double t = gp_view_gpu_at(v, g, GP_VGM_MEM_TOTAL)[k];
    if (!isnan(t) && t > 0)
        return t;
    return g->spec && g->spec->memory_bytes ? (double)g->spec->memory_bytes : NAN;
}

void gp_det_window_gpu(const struct gp_view *v, const struct gp_view_gpu *g, unsigned from,
                       char *out, size_t len)
{
    gp_view_span_text(v, gp_view_gpu_span(v, g, from), out, len);
}

void gp_det_window_proc(const struct gp_view *v, const struct gp_view_proc *p, unsigned from,
                        char *out, size_t len)
{
    gp_view_span_text(v, gp_view_proc_span(v, p, from), out, len);
}

struct gp_det_stats gp_det_stats(const double *x, unsigned n)
{
    struct gp_det_stats s = {0, NAN, NAN, NAN, NAN};
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    unsigned cnt = 0;
    for (unsigned i = 0; i < n; i++) {
        double y = x[i];
        if (isnan(y))
            continue;
        cnt++;
        sum += y;
        sq += y * y;
        mn = y < mn ? y : mn;
        mx = y > mx ? y : mx;
    }
    if (!cnt)
        return s;
    s.n = cnt;
    s.mean = sum / cnt;
    double var = sq / cnt - s.mean * s.mean;
    s.sd = var > 0 ? sqrt(var) : 0;
    s.min = mn;
    s.max = mx;
    return s;
}

double gp_det_last(const double *x, unsigned n, unsigned *at)
{
    for (unsigned i = n; i-- > 0;)
        if (!isnan(x[i])) {
            if (at)
                *at = i;
            return x[i];
        }
    return NAN;
}

double gp_det_first(const double *x, unsigned n, unsigned *at)
{
    for (unsigned i = 0; i < n; i++)
        if (!isnan(x[i])) {
            if (at)
                *at = i;
            return x[i];
        }
    return NAN;
}

double gp_det_increase(const double *x, unsigned n)
{
    double inc = 0, prev = NAN;
    for (unsigned i = 0; i < n; i++) {
        double y = x[i];
        if (isnan(y))
            continue;
        if (!isnan(prev))
            inc += y >= prev ? y - prev : y;
        prev = y;
    }
    return inc;
}

struct gp_det_fit gp_det_linfit(const double *y, unsigned n, double step_s)
{
    struct gp_det_fit f = {0, NAN, NAN, NAN};
    /* centre t and y on the first values to keep the sums well scaled
     * (memory is ~1e11 bytes; its square would lose the slope) */
    double y0 = gp_det_first(y, n, NULL);
    double st = 0, sy = 0, stt = 0, sty = 0, syy = 0;
    unsigned cnt = 0;
    for (unsigned i = 0; i < n; i++) {
        if (isnan(y[i]))
            continue;
        double t = i * step_s, d = y[i] - y0;
        cnt++;
        st += t;
        sy += d;
        stt += t * t;
        sty += t * d;
        syy += d * d;
    }
    f.n = cnt;
    if (cnt < 2)
        return f;
    double vt = stt - st * st / cnt, vy = syy - sy * sy / cnt, cty = sty - st * sy / cnt;
    if (vt <= 0)
        return f;
    f.b = cty / vt;
    f.a = y0 + (sy - f.b * st) / cnt;
    f.r2 = vy > 0 ? (cty * cty) / (vt * vy) : 1.0;
    return f;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Per-job medians only (tens of ranks): qsort is fine there. */
double gp_det_median(double *a, unsigned n)
{
    qsort(a, n, sizeof *a, cmp_d);
    return n & 1 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

double gp_det_robust_z(double x, double median, double mad, double floor_frac)
{
    double floor = floor_frac * fabs(median);
    double s = mad > floor ? mad : floor;
    if (s <= 0)
        return 0;
    return 0.6745 * (x - median) / s;
}

int gp_det_match_procs(const struct gp_view *v, unsigned **gpu_proc, unsigned **proc_gpu)
{
    unsigned *gp = malloc((v->ngpus ? v->ngpus : 1) * sizeof *gp);
    unsigned *pg = malloc((v->nprocs ? v->nprocs : 1) * sizeof *pg);
    if (!gp || !pg) {
        free(gp);
        free(pg);
        return GP_ENOMEM;
    }
    for (unsigned i = 0; i < v->ngpus; i++)
        gp[i] = UINT_MAX;
    for (unsigned i = 0; i < v->nprocs; i++)
        pg[i] = UINT_MAX;
    for (unsigned ji = 0; ji < v->njobs; ji++) {
        const struct gp_view_job *j = &v->jobs[ji];
        for (unsigned a = 0; a < j->ngpus; a++) {
            const struct gp_view_gpu *g = &v->gpus[j->gpus[a]];
            unsigned same_node = 0, only = UINT_MAX, hit = UINT_MAX;
            for (unsigned b = 0; b < j->nprocs && hit == UINT_MAX; b++) {
                const struct gp_view_proc *p = &v->procs[j->procs[b]];
                /* the cheap test first: this runs for every GPU x rank of a job */
                if (g->rank >= 0 && p->rank >= 0 && p->rank != g->rank)
                    continue;
                if (strcmp(p->node, g->node))
                    continue;
                same_node++;
                if (g->rank >= 0 && p->rank == g->rank)
                    hit = j->procs[b];
                else
                    only = j->procs[b];
            }
            if (hit == UINT_MAX && same_node == 1)
                hit = only;
            if (hit != UINT_MAX) {
                gp[j->gpus[a]] = hit;
                if (pg[hit] == UINT_MAX)
                    pg[hit] = j->gpus[a];
            }
        }
    }
    *gpu_proc = gp;
    *proc_gpu = pg;
    return GP_OK;
}
