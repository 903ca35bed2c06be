/* view.c - see view.h: the view's memory and its small helpers. */
#include "view.h"

#include "lib/duration.h"
#include "lib/err.h"
#include "lib/plural.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gp_vgm_names[GP_VGM__COUNT] = {
#define GP_VGM_NAME_(id, name, scale) #id,
    GP_VIEW_GPU_METRICS(GP_VGM_NAME_)
#undef GP_VGM_NAME_
};

const char *const gp_vpm_names[GP_VPM__COUNT] = {
#define GP_VPM_NAME_(id, name, scale) #id,
    GP_VIEW_PROC_METRICS(GP_VPM_NAME_)
#undef GP_VPM_NAME_
};

double gp_view_activity(const struct gp_view *v, const struct gp_view_gpu *g, unsigned k, bool *sm)
{
    double a = gp_view_gpu_at(v, g, GP_VGM_SM_ACTIVE)[k];
    bool is_sm = !isnan(a);
    if (!is_sm)
        a = gp_view_gpu_at(v, g, GP_VGM_UTIL)[k];
    if (sm)
        *sm = is_sm;
    return a;
}

/* Points k >= from where any of the nrows rows of block x has a reading. */
static struct gp_view_span span_of(const struct gp_view *v, const double *x, unsigned nrows,
                                   unsigned from)
{
    struct gp_view_span s = {v->npoints, 0};
    for (unsigned k = from; k < v->npoints; k++) {
        unsigned r = 0;
        while (r < nrows && isnan(x[(size_t)r * v->npoints + k]))
            r++;
        if (r == nrows)
            continue;
        if (!s.n)
            s.first = k;
        s.n++;
    }
    return s;
}

struct gp_view_span gp_view_gpu_span(const struct gp_view *v, const struct gp_view_gpu *g,
                                     unsigned from)
{
    return span_of(v, g->v, GP_VGM__COUNT, from);
}

struct gp_view_span gp_view_proc_span(const struct gp_view *v, const struct gp_view_proc *p,
                                      unsigned from)
{
    return span_of(v, p->v, GP_VPM__COUNT, from);
}

void gp_view_span_text(const struct gp_view *v, struct gp_view_span s, char *out, size_t len)
{
    if (!s.n) {
        snprintf(out, len, "no points");
        return;
    }
    if (s.first + 1 >= v->npoints) {
        snprintf(out, len, "the newest point (1 point)");
        return;
    }
    char span[32], step[32];
    unsigned covered = v->npoints - s.first; /* the first reading to the view's end */
    gp_format_duration((int64_t)(covered - 1) * v->step_ms, span, sizeof span);
    gp_format_duration(v->step_ms, step, sizeof step);
    const char *pts = gp_plural(s.n, "point", "points");
    if (s.n == covered)
        snprintf(out, len, "the last %s (%u %s %s apart)", span, s.n, pts, step);
    else
        snprintf(out, len, "the last %s (%u %s on a %s grid)", span, s.n, pts, step);
}

int gp_view_init(struct gp_view *v, unsigned npoints, int64_t t_end_ms, int64_t step_ms)
{
    memset(v, 0, sizeof *v);
    if (!npoints || step_ms <= 0)
        return GP_EUSAGE;
    v->npoints = npoints;
    v->t_end_ms = t_end_ms;
    v->step_ms = step_ms;
    return GP_OK;
}

/* A new series block of n metrics x npoints, all NaN. */
static double *nan_block(unsigned nmetrics, unsigned npoints)
{
    size_t n = (size_t)nmetrics * npoints;
    double *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++)
        p[i] = NAN;
    return p;
}

/* Grows an array of n elements of size sz to hold n + 1: capacity 8,
 * then doubling when n reaches a power of two, so the capacity is never
 * kept anywhere. */
static void *grow_one(void *arr, unsigned n, size_t sz)
{
    if (n && (n < 8 || (n & (n - 1))))
        return arr;
    size_t cap = n ? (size_t)n * 2 : 8;
    return realloc(arr, cap * sz);
}

struct gp_view_gpu *gp_view_add_gpu(struct gp_view *v)
{
    struct gp_view_gpu *arr = grow_one(v->gpus, v->ngpus, sizeof *arr);
    if (!arr)
        return NULL;
    v->gpus = arr;
    struct gp_view_gpu *g = &arr[v->ngpus];
    memset(g, 0, sizeof *g);
    g->rank = -1;
    g->v = nan_block(GP_VGM__COUNT, v->npoints);
    if (!g->v)
        return NULL;
    v->ngpus++;
    return g;
}

struct gp_view_proc *gp_view_add_proc(struct gp_view *v)
{
    struct gp_view_proc *arr = grow_one(v->procs, v->nprocs, sizeof *arr);
    if (!arr)
        return NULL;
    v->procs = arr;
    struct gp_view_proc *p = &arr[v->nprocs];
    memset(p, 0, sizeof *p);
    p->rank = -1;
    p->v = nan_block(GP_VPM__COUNT, v->npoints);
    if (!p->v)
        return NULL;
    v->nprocs++;
    return p;
}

double *gp_view_gpu_series(struct gp_view *v, struct gp_view_gpu *g, enum gp_vgm m)
{
    return g->v + (size_t)m * v->npoints;
}

double *gp_view_proc_series(struct gp_view *v, struct gp_view_proc *p, enum gp_vpm m)
{
    return p->v + (size_t)m * v->npoints;
}

static void free_jobs(struct gp_view *v)
{
    for (unsigned i = 0; i < v->njobs; i++) {
        free(v->jobs[i].gpus);
        free(v->jobs[i].procs);
    }
    free(v->jobs);
    v->jobs = NULL;
    v->njobs = 0;
}

/* The job named job, added when new; NULL when out of memory. */
static struct gp_view_job *job_of(struct gp_view *v, const char *job, unsigned *cap)
{
    for (unsigned i = 0; i < v->njobs; i++)
        if (!strcmp(v->jobs[i].job, job))
            return &v->jobs[i];
    if (v->njobs == *cap) {
        unsigned nc = *cap ? *cap * 2 : 16;
        struct gp_view_job *n = realloc(v->jobs, nc * sizeof *n);
        if (!n)
            return NULL;
        v->jobs = n;
        *cap = nc;
    }
    struct gp_view_job *j = &v->jobs[v->njobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->job, sizeof j->job, "%s", job);
    j->cost = NAN;
    j->goodput_ratio = j->goodput_wall_s = j->badput_s = NAN;
    j->badput = -1;
    return j;
}

static int push_index(unsigned **arr, unsigned *n, unsigned idx)
{
    unsigned *a = grow_one(*arr, *n, sizeof **arr);
    if (!a)
        return GP_ENOMEM;
    *arr = a;
    a[(*n)++] = idx;
    return GP_OK;
}

int gp_view_index_jobs(struct gp_view *v)
{
    free_jobs(v);
    unsigned cap = 0;
    for (unsigned i = 0; i < v->ngpus; i++) {
        if (!v->gpus[i].job[0])
            continue;
        struct gp_view_job *j = job_of(v, v->gpus[i].job, &cap);
        if (!j || push_index(&j->gpus, &j->ngpus, i))
            return GP_ENOMEM;
    }
    for (unsigned i = 0; i < v->nprocs; i++) {
        if (!v->procs[i].job[0])
            continue;
        struct gp_view_job *j = job_of(v, v->procs[i].job, &cap);
        if (!j || push_index(&j->procs, &j->nprocs, i))
            return GP_ENOMEM;
    }
    return GP_OK;
}

void gp_view_free(struct gp_view *v)
{
    if (!v)
        return;
    for (unsigned i = 0; i < v->ngpus; i++)
        free(v->gpus[i].v);
    for (unsigned i = 0; i < v->nprocs; i++)
        free(v->procs[i].v);
    free(v->gpus);
    free(v->procs);
    free_jobs(v);
    memset(v, 0, sizeof *v);
}
