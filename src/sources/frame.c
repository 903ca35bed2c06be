/* frame.c - frame memory: arrays that grow, then get reused every tick. */
#include "frame.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

const struct gp_gpu_field_info gp_gpu_fields[GPF__COUNT] = {
#define GP_FIELD_INFO_(id, name, type, help) [GPF_##id] = {name, GP_##type, help},
    GP_GPU_FIELDS(GP_FIELD_INFO_)
#undef GP_FIELD_INFO_
};

const struct gp_clock_event_name gp_clock_event_names[] = {
#define GP_REASON_ROW_(bit, name) {bit, name},
    GP_CLOCK_EVENTS(GP_REASON_ROW_)
#undef GP_REASON_ROW_
};
const unsigned gp_clock_event_count = sizeof gp_clock_event_names / sizeof gp_clock_event_names[0];

const char *const gp_cpu_mode_names[GP_CPU__COUNT] = {
#define GP_MODE_NAME_(id, name) name,
    GP_CPU_MODES(GP_MODE_NAME_)
#undef GP_MODE_NAME_
};

const char *const gp_mem_kind_names[GP_MEM__COUNT] = {
#define GP_MEM_NAME_(id, label, key) label,
    GP_MEM_KINDS(GP_MEM_NAME_)
#undef GP_MEM_NAME_
};

const char *const gp_psi_resource_names[GP_PSI__COUNT] = {"cpu", "memory", "io"};
const char *const gp_psi_kind_names[GP_PSI_KIND__COUNT] = {"some", "full"};

const char *const gp_source_names[GP_SRC__COUNT] = {
#define GP_SRC_NAME_(id, name) name,
    GP_SOURCES(GP_SRC_NAME_)
#undef GP_SRC_NAME_
};

const char *const gp_job_scheme_names[GP_JOB__COUNT] = {
#define GP_JOB_SCHEME_NAME_(id, name) name,
    GP_JOB_SCHEMES(GP_JOB_SCHEME_NAME_)
#undef GP_JOB_SCHEME_NAME_
};

const char *gp_vendor_name(enum gp_vendor v) { return v == GP_VENDOR_AMD ? "amd" : "nvidia"; }

void gp_frame_init(struct gp_frame *f) { memset(f, 0, sizeof *f); }

void gp_frame_free(struct gp_frame *f)
{
    if (!f)
        return;
    for (unsigned i = 0; i < f->cap_gpus; i++)
        free(f->gpus[i].procs);
    free(f->gpus);
    free(f->procs);
    free(f->roots);
    free(f->steps);
    free(f->jobs);
    memset(f, 0, sizeof *f);
}

void gp_frame_reset(struct gp_frame *f)
{
    f->ngpus = 0;
    f->nprocs = 0;
    f->nroots = 0;
    f->nsteps = 0;
    f->njobs = 0;
    f->nsim_jobs = 0;
    memset(&f->host, 0, sizeof f->host);
}

/* Grows *arr (of elements of size sz) to hold at least n; new slots zeroed. */
static int grow(void **arr, unsigned *cap, unsigned n, size_t sz)
{
    if (n <= *cap)
        return 0;
    unsigned nc = *cap ? *cap * 2 : 8;
    while (nc < n)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * sz);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * sz, 0, (size_t)(nc - *cap) * sz);
    *arr = p;
    *cap = nc;
    return 0;
}

struct gp_gpu *gp_frame_add_gpu(struct gp_frame *f)
{
    if (grow((void **)&f->gpus, &f->cap_gpus, f->ngpus + 1, sizeof *f->gpus))
        return NULL;
    struct gp_gpu *g = &f->gpus[f->ngpus++];
    struct gp_gpu_proc *procs = g->procs;
    unsigned cap = g->cap_procs;
    memset(g, 0, sizeof *g);
    g->procs = procs;
    g->cap_procs = cap;
    g->mig_gi = -1;
    g->job_idx = -1;
    return g;
}

struct gp_proc *gp_frame_add_proc(struct gp_frame *f)
{
    if (grow((void **)&f->procs, &f->cap_procs, f->nprocs + 1, sizeof *f->procs))
        return NULL;
    struct gp_proc *p = &f->procs[f->nprocs++];
    memset(p, 0, sizeof *p);
    return p;
}

struct gp_gpu_proc *gp_gpu_add_proc(struct gp_gpu *g)
{
    if (grow((void **)&g->procs, &g->cap_procs, g->nprocs + 1, sizeof *g->procs))
        return NULL;
    struct gp_gpu_proc *p = &g->procs[g->nprocs++];
    memset(p, 0, sizeof *p);
    return p;
}

int gp_frame_add_root(struct gp_frame *f, uint32_t pid)
{
    if (grow((void **)&f->roots, &f->cap_roots, f->nroots + 1, sizeof *f->roots))
        return GP_ENOMEM;
    f->roots[f->nroots++] = pid;
    return GP_OK;
}

struct gp_step_stats *gp_frame_add_steps(struct gp_frame *f)
{
    if (grow((void **)&f->steps, &f->cap_steps, f->nsteps + 1, sizeof *f->steps))
        return NULL;
    struct gp_step_stats *s = &f->steps[f->nsteps++];
    memset(s, 0, sizeof *s);
    return s;
}

struct gp_job *gp_frame_add_job(struct gp_frame *f)
{
    if (grow((void **)&f->jobs, &f->cap_jobs, f->njobs + 1, sizeof *f->jobs))
        return NULL;
    struct gp_job *j = &f->jobs[f->njobs++];
    memset(j, 0, sizeof *j);
    return j;
}

static int cmp_pid(const void *a, const void *b)
{
    uint32_t x = ((const struct gp_proc *)a)->pid, y = ((const struct gp_proc *)b)->pid;
    return (x > y) - (x < y);
}

void gp_frame_sort_procs(struct gp_frame *f)
{
    /* /proc lists pids in ascending order already; check before sorting. */
    for (unsigned i = 1; i < f->nprocs; i++)
        if (f->procs[i - 1].pid > f->procs[i].pid) {
            qsort(f->procs, f->nprocs, sizeof *f->procs, cmp_pid);
            return;
        }
}

const struct gp_proc *gp_frame_find_proc(const struct gp_frame *f, uint32_t pid)
{
    unsigned lo = 0, hi = f->nprocs;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (f->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->nprocs && f->procs[lo].pid == pid ? &f->procs[lo] : NULL;
}

int gp_frame_copy(struct gp_frame *dst, const struct gp_frame *src)
{
    gp_frame_reset(dst);
    if (grow((void **)&dst->gpus, &dst->cap_gpus, src->ngpus, sizeof *dst->gpus) ||
        grow((void **)&dst->procs, &dst->cap_procs, src->nprocs, sizeof *dst->procs))
        return -1;
    for (unsigned i = 0; i < src->ngpus; i++) {
        const struct gp_gpu *s = &src->gpus[i];
        struct gp_gpu *d = gp_frame_add_gpu(dst);
        struct gp_gpu_proc *procs = d->procs;
        unsigned cap = d->cap_procs;
        *d = *s;
        d->procs = procs;
        d->cap_procs = cap;
        d->nprocs = 0;
        if (grow((void **)&d->procs, &d->cap_procs, s->nprocs, sizeof *d->procs))
            return -1;
        if (s->nprocs)
            memcpy(d->procs, s->procs, s->nprocs * sizeof *s->procs);
        d->nprocs = s->nprocs;
    }
    if (src->nprocs)
        memcpy(dst->procs, src->procs, src->nprocs * sizeof *src->procs);
    dst->nprocs = src->nprocs;
    if (grow((void **)&dst->roots, &dst->cap_roots, src->nroots, sizeof *dst->roots) ||
        grow((void **)&dst->steps, &dst->cap_steps, src->nsteps, sizeof *dst->steps) ||
        grow((void **)&dst->jobs, &dst->cap_jobs, src->njobs, sizeof *dst->jobs))
        return -1;
    if (src->nroots)
        memcpy(dst->roots, src->roots, src->nroots * sizeof *src->roots);
    if (src->nsteps)
        memcpy(dst->steps, src->steps, src->nsteps * sizeof *src->steps);
    if (src->njobs)
        memcpy(dst->jobs, src->jobs, src->njobs * sizeof *src->jobs);
    dst->nroots = src->nroots;
    dst->nsteps = src->nsteps;
    dst->njobs = src->njobs;
    dst->nsim_jobs = src->nsim_jobs;
    dst->seq = src->seq;
    dst->time_ms = src->time_ms;
    dst->tick_duration_s = src->tick_duration_s;
    memcpy(dst->hostname, src->hostname, sizeof dst->hostname);
    dst->host = src->host;
    dst->steps_self = src->steps_self;
    memcpy(dst->src, src->src, sizeof dst->src);
    return 0;
}
