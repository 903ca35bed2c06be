/*
 * jobdoc_gpu.c - the GPUs of a job document (jobdoc_gpu.h). A GPU is
 * known by any of its families; its activity is DCGM_FI_PROF_SM_ACTIVE
 * where it has samples, else DCGM_FI_DEV_GPU_UTIL / 100; its memory
 * gpulse_gpu_memory_used_bytes, else DCGM_FI_DEV_FB_USED (MiB). Each
 * activity sample weighs the time to the next one, at most two scrape
 * steps (a gap is not held time), the last one step; the scrape step is
 * the median gap, so one late scrape does not change it.
 *
 * Where the cluster aggregated the memory (jobdoc_cluster.h), its peak
 * is the cluster's max_over_time and the chart windows' peaks stand in
 * for the samples; the capacity is the newest value either way.
 */
#include "query/jobdoc_gpu.h"

#include "lib/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gp_jobdoc_gpu_family(const struct gp_store_series *s)
{
    return gp_jobdoc_name_prefix(s, "DCGM_FI_") || gp_jobdoc_name_prefix(s, "gpulse_gpu_");
}

/* s's GPU: found, or added; NULL for a series without a gpu label or out
 * of memory. */
static struct gp_jobdoc_gpu *gpu_of(struct gp_jobdoc_gpus *gs, const struct gp_store_series *s)
{
    struct gp_str node = gp_jobdoc_node(s), idx = gp_jobdoc_lab(s, "gpu"), mig = gp_jobdoc_lab(s, "GPU_I_ID");
    if (!idx.len)
        return NULL;
    for (size_t i = 0; i < gs->n; i++)
        if (gp_jobdoc_str_eq(gs->g[i].node, node) && gp_jobdoc_str_eq(gs->g[i].gpu, idx) &&
            gp_jobdoc_str_eq(gs->g[i].mig, mig))
            return &gs->g[i];
    struct gp_jobdoc_gpu *ng = realloc(gs->g, (gs->n + 1) * sizeof *ng);
    if (!ng)
        return NULL;
    gs->g = ng;
    struct gp_jobdoc_gpu *g = &ng[gs->n++];
    memset(g, 0, sizeof *g);
    g->node = node;
    g->gpu = idx;
    g->mig = mig;
    return g;
}

int gp_jobdoc_gpus_add(struct gp_jobdoc_gpus *gs, const struct gp_store_series *s)
{
    struct gp_jobdoc_gpu *g = gpu_of(gs, s);
    if (!g)
        return gp_jobdoc_lab(s, "gpu").len ? GP_ENOMEM : GP_OK;
    struct gp_str u = gp_jobdoc_lab(s, "UUID"), mdl = gp_jobdoc_lab(s, "modelName");
    if (u.len)
        g->uuid = u;
    if (mdl.len)
        g->model = mdl;
    if (!g->rank.len)
        g->rank = gp_jobdoc_lab(s, "rank");
    const struct gp_store_series **slot =
        gp_jobdoc_name_is(s, "DCGM_FI_PROF_SM_ACTIVE")          ? &g->sm
        : gp_jobdoc_name_is(s, "DCGM_FI_DEV_GPU_UTIL")          ? &g->util
        : gp_jobdoc_name_is(s, "DCGM_FI_DEV_FB_USED")           ? &g->fb_used
        : gp_jobdoc_name_is(s, "DCGM_FI_DEV_FB_FREE")           ? &g->fb_free
        : gp_jobdoc_name_is(s, "DCGM_FI_DEV_FB_RESERVED")       ? &g->fb_res
        : gp_jobdoc_name_is(s, "gpulse_gpu_memory_used_bytes")  ? &g->used
        : gp_jobdoc_name_is(s, "gpulse_gpu_memory_total_bytes") ? &g->total
                                                                : NULL;
    if (slot && (!*slot || s->last_ms > (*slot)->last_ms))
        *slot = s;
    return GP_OK;
}

static int gpu_cmp(const void *pa, const void *pb)
{
    const struct gp_jobdoc_gpu *a = pa, *b = pb;
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

void gp_jobdoc_gpus_sort(struct gp_jobdoc_gpus *gs)
{
    if (gs->n)
        qsort(gs->g, gs->n, sizeof *gs->g, gpu_cmp);
}

/* g's activity samples (0-1) and their source. */
static int read_activity(const struct gp_jobdoc_src *src, struct gp_jobdoc_gpu *g)
{
    int rc;
    const struct gp_store_series *a = g->sm ? g->sm : g->util;
    if (!a)
        return GP_OK;
    if ((rc = gp_jobdoc_ser_read(src, a, src->t0, src->t1, &g->act)))
        return rc;
    if (!g->act.n && g->sm && g->util) {
        gp_jobdoc_ser_free(&g->act);
        a = g->util;
        if ((rc = gp_jobdoc_ser_read(src, a, src->t0, src->t1, &g->act)))
            return rc;
    }
    g->source = a == g->sm ? "sm_active" : "gpu_util";
    if (a == g->util)
        for (size_t i = 0; i < g->act.n; i++)
            g->act.v[i] /= 100.0;
    return GP_OK;
}

/* g's memory samples in bytes, its peak and its capacity. */
static int read_memory(const struct gp_jobdoc_src *src, struct gp_jobdoc_gpu *g)
{
    const struct gp_store_series *m = g->used ? g->used : g->fb_used;
    const struct gp_jobdoc_agg *ma = m && src->agg ? gp_jobdoc_agg_of(src->agg, m) : NULL;
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
        int rc = gp_jobdoc_ser_read(src, m, src->t0, src->t1, &g->mem);
        if (rc)
            return rc;
        for (size_t i = 0; i < g->mem.n; i++)
            g->mem.v[i] *= scale;
    }
    g->peak = ma ? ma->peak * scale : NAN;
    for (size_t i = 0; i < g->mem.n && !ma; i++)
        if (!(g->peak >= g->mem.v[i]))
            g->peak = g->mem.v[i];
    g->capacity = gp_jobdoc_newest(src, g->total);
    if (!isfinite(g->capacity) && g->fb_used && g->fb_free) {
        double r = g->fb_res ? gp_jobdoc_newest(src, g->fb_res) : 0;
        g->capacity = (gp_jobdoc_newest(src, g->fb_used) + gp_jobdoc_newest(src, g->fb_free) +
                       (isfinite(r) ? r : 0)) *
                      1048576.0;
    }
    if (!(g->capacity > 0))
        g->capacity = NAN;
    return GP_OK;
}

int gp_jobdoc_gpu_read(const struct gp_jobdoc_src *src, struct gp_jobdoc_gpu *g,
                       struct gp_jobmodel_gpus *act)
{
    int rc;
    if ((rc = read_activity(src, g)) || (rc = read_memory(src, g)))
        return rc;
    const struct gp_jobdoc_ser *p = gp_jobdoc_gpu_samples(g);
    g->step = gp_jobdoc_median_gap(p);
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
        gp_jobmodel_activity(act, g->act.v[i], w);
    }
    return GP_OK;
}

const struct gp_jobdoc_ser *gp_jobdoc_gpu_samples(const struct gp_jobdoc_gpu *g)
{
    return g->act.n ? &g->act : &g->mem;
}

int64_t gp_jobdoc_gpu_last(const struct gp_jobdoc_gpu *g)
{
    const struct gp_jobdoc_ser *p = gp_jobdoc_gpu_samples(g);
    return p->n ? p->t[p->n - 1] : 0;
}

void gp_jobdoc_gpus_free(struct gp_jobdoc_gpus *gs)
{
    for (size_t i = 0; i < gs->n; i++) {
        gp_jobdoc_ser_free(&gs->g[i].act);
        gp_jobdoc_ser_free(&gs->g[i].mem);
    }
    free(gs->g);
    memset(gs, 0, sizeof *gs);
}
