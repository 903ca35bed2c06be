/* history.c - see history.h. */
#include "history.h"

#include "query/cost.h"
#include "lib/gpumodels.h"
#include "query/jobmodel.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MIB 1048576.0
#define GIB 1073741824.0

#define MAX_RANKS 256
#define MAX_GPUS 64
#define MAX_REPORTERS 256 /* goodput is kept for this many step reporters */

struct cell {
    double sum, max;
    uint32_t n;
};

struct curve {
    struct cell c[GP_HISTORY_POINTS];
};

struct hgpu {
    char uuid[96], model[96], node[256];
    unsigned index;
    double mem_total;        /* bytes; 0 unknown */
    bool saw_sm_active;      /* activity came from GPM SM active at least once */
    double gpu_seconds;      /* ticks held by the job, weighted by their width */
    double price;            /* USD per GPU-hour: configured, else the model table's; 0 none */
    double act_sum, act_dt;  /* time-weighted activity */
    double idle_s, unused_s; /* the job model's idle and unused seconds */
    double peak_mem;         /* bytes */
    bool peak_valid;
    int32_t rank;            /* the rank of the first of the job's processes seen on it; -1 none */
    struct curve act, mem;
};

struct hrank {
    int32_t rank, local_rank;
    unsigned procs;
    char node[256];
};

struct gp_history {
    pthread_mutex_t mu;
    char job[GP_JOB_LEN];
    char *command;
    double interval_s, price;
    double start_s, end_s;
    bool ended;
    int status;
    bool have_ru;
    struct rusage ru;
    char node[256];

    /* points: point k covers `width` ticks starting at t[k] */
    unsigned width, nb, in_point;
    double t[GP_HISTORY_POINTS];
    uint64_t ticks;
    double last_tick_s;

    struct hgpu *gpus;
    unsigned ngpus;
    struct curve cpu, rss, step, loss;
    struct gp_jobmodel_gpus act; /* GPU time at each activity */
    /* time-weighted profiling averages over the job's GPUs, where reported */
    struct wavg { double sum, dt; } occ, tensor, dram, link;

    bool cpu_valid;
    double cpu_seconds, prev_cpu;
    bool prev_cpu_valid, rss_valid;
    double rss_peak;
    struct hrank ranks[MAX_RANKS];
    unsigned nranks;
    int32_t world_size;

    struct gp_jobmodel_steps steps; /* the step stream, reduced (query/jobmodel.h) */
    double flops_token, flops_sample; /* the model record; 0 not said */
    int precision;                    /* -1 not said */

    /* per reporting process: its goodput, its rank (from the frames; -1
     * until seen with one) and its straggler and MFU inputs, the records
     * of each sampling interval gathered into one interval (win_*), as
     * the server's counters give them; the earlier attempts of the job */
    struct greporter {
        uint32_t pid;
        int32_t rank;
        struct gp_goodput_rank g;
        struct gp_jobmodel_rank rk;
        double win, win_n, win_s; /* the open interval: its index, steps, seconds */
    } reporters[MAX_REPORTERS];
    unsigned nreporters;
    struct gp_goodput_figures prior;
    unsigned prior_attempts;
    double prior_last_step;

    /* status line: steps seen at the last status, for the rate */
    double rate_t;
    uint64_t rate_steps;
    double rate;
    double last_act, last_mem, last_mem_total, last_rss;
    bool last_act_valid, last_mem_valid;
};

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct gp_history *gp_history_new(const struct gp_history_options *o)
{
    struct gp_history *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->gpus = calloc(MAX_GPUS, sizeof *h->gpus);
    h->command = strdup(o->command ? o->command : "");
    if (!h->gpus || !h->command) {
        free(h->gpus);
        free(h->command);
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    snprintf(h->job, sizeof h->job, "%s", o->job);
    h->interval_s = o->interval_s > 0 ? o->interval_s : 1.0;
    h->price = o->price_per_gpu_hour;
    h->start_s = o->start_s > 0 ? o->start_s : wall_s();
    h->width = 1;
    h->world_size = -1;
    h->precision = -1;
    gp_jobmodel_steps_init(&h->steps);
    h->steps.steps = h->steps.seconds = 0; /* gpulse run sees the whole stream */
    gp_jobmodel_gpus_init(&h->act);
    gp_goodput_figures_init(&h->prior);
    h->prior_last_step = -1;
    h->rate_t = h->start_s;
    return h;
}

void gp_history_free(struct gp_history *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->mu);
    free(h->gpus);
    free(h->command);
    free(h);
}

static void cell_add(struct cell *c, double v)
{
    if (!isfinite(v))
        return;
    c->max = c->n ? fmax(c->max, v) : v;
    c->sum += v;
    c->n++;
}

static void curve_halve(struct curve *cv, unsigned nb)
{
    for (unsigned i = 0; i < nb / 2; i++) {
        struct cell a = cv->c[2 * i], b = cv->c[2 * i + 1], m = a;
        m.sum = a.sum + b.sum;
        m.n = a.n + b.n;
        m.max = !a.n ? b.max : !b.n ? a.max : fmax(a.max, b.max);
        cv->c[i] = m;
    }
    memset(&cv->c[nb / 2], 0, (GP_HISTORY_POINTS - nb / 2) * sizeof cv->c[0]);
}

/* Makes room for this tick: a new point when the last one is full,
 * merging pairs of points when every point is used. */
static void next_point(struct gp_history *h, double now)
{
    if (h->nb && h->in_point < h->width) {
        h->in_point++;
        return;
    }
    if (h->nb == GP_HISTORY_POINTS) {
        for (unsigned i = 0; i < h->nb / 2; i++)
            h->t[i] = h->t[2 * i];
        curve_halve(&h->cpu, h->nb);
        curve_halve(&h->rss, h->nb);
        curve_halve(&h->step, h->nb);
        curve_halve(&h->loss, h->nb);
        for (unsigned g = 0; g < h->ngpus; g++) {
            curve_halve(&h->gpus[g].act, h->nb);
            curve_halve(&h->gpus[g].mem, h->nb);
        }
        h->nb /= 2;
        h->width *= 2;
    }
    h->t[h->nb++] = now;
    h->in_point = 1;
}

static struct hgpu *find_gpu(struct gp_history *h, const struct gp_gpu *g, const char *node)
{
    for (unsigned i = 0; i < h->ngpus; i++)
        if (!strcmp(h->gpus[i].uuid, g->uuid) && !strcmp(h->gpus[i].node, node))
            return &h->gpus[i];
    if (h->ngpus == MAX_GPUS)
        return NULL;
    struct hgpu *x = &h->gpus[h->ngpus++];
    memset(x, 0, sizeof *x);
    snprintf(x->uuid, sizeof x->uuid, "%s", g->uuid);
    snprintf(x->model, sizeof x->model, "%s", g->model);
    snprintf(x->node, sizeof x->node, "%s", node);
    x->index = g->index;
    x->rank = -1;
    x->idle_s = x->unused_s = NAN;
    x->price = h->price > 0 ? h->price : gp_prices_of(NULL, g->model, strlen(g->model));
    return x;
}

static bool is_ours(const struct gp_history *h, const struct gp_frame *f, uint32_t pid)
{
    const struct gp_proc *p = gp_frame_find_proc(f, pid);
    return p && !strcmp(p->jid.job, h->job);
}

/* GPU activity 0-1: SM active where the GPU has it, else coarse utilization. */
static bool activity(const struct gp_gpu *g, double *a, bool *sm)
{
    *sm = gp_gpu_has(g, GPF_PROF_SM_ACTIVE);
    if (*sm)
        *a = g->val[GPF_PROF_SM_ACTIVE];
    else if (gp_gpu_has(g, GPF_GPU_UTIL))
        *a = g->val[GPF_GPU_UTIL] / 100.0;
    else
        return false;
    *a = fmin(fmax(*a, 0.0), 1.0);
    return true;
}

static double memory_total(const struct gp_gpu *g)
{
    if (gp_gpu_has(g, GPF_MEMORY_TOTAL))
        return g->val[GPF_MEMORY_TOTAL];
    if (gp_gpu_has(g, GPF_FB_USED) && gp_gpu_has(g, GPF_FB_FREE))
        return (g->val[GPF_FB_USED] + g->val[GPF_FB_FREE] +
                (gp_gpu_has(g, GPF_FB_RESERVED) ? g->val[GPF_FB_RESERVED] : 0)) * MIB;
    return 0;
}

static void wavg_add(struct wavg *w, const struct gp_gpu *g, enum gp_gpu_field fld, double scale, double dt)
{
    if (!gp_gpu_has(g, fld))
        return;
    w->sum += g->val[fld] * scale * dt;
    w->dt += dt;
}

/* How busy the GPU's links are, 0-1: the busier of NVLink and PCIe, each
 * the larger direction's bytes per second over the model's per-direction
 * bandwidth. NaN when the GPU reports no link traffic or the model is
 * unknown. */
static double link_busy(const struct gp_gpu *g)
{
    const struct gp_gpumodel *m = gp_gpumodel_find(g->model);
    if (!m)
        return NAN;
    double busy = NAN;
    if (m->nvlink_gbps > 0 && gp_gpu_has(g, GPF_PROF_NVLINK_TX) && gp_gpu_has(g, GPF_PROF_NVLINK_RX))
        busy = fmax(g->val[GPF_PROF_NVLINK_TX], g->val[GPF_PROF_NVLINK_RX]) / (m->nvlink_gbps * 1e9);
    if (m->pcie_gbps > 0 && gp_gpu_has(g, GPF_PROF_PCIE_TX) && gp_gpu_has(g, GPF_PROF_PCIE_RX)) {
        double p = fmax(g->val[GPF_PROF_PCIE_TX], g->val[GPF_PROF_PCIE_RX]) / (m->pcie_gbps * 1e9);
        busy = isnan(busy) ? p : fmax(busy, p);
    }
    return isnan(busy) ? NAN : fmin(busy, 1.0);
}

static void record_gpus(struct gp_history *h, const struct gp_frame *f, double dt, unsigned pt)
{
    double act_sum = 0, mem_sum = 0, total_sum = 0;
    unsigned nact = 0, nmem = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (g->lost)
            continue;
        bool held = false, mem_valid = false;
        double mem = 0;
        int32_t rank = -1;
        for (unsigned j = 0; j < g->nprocs; j++) {
            if (!is_ours(h, f, g->procs[j].pid))
                continue;
            held = true;
            if (rank < 0)
                rank = gp_frame_find_proc(f, g->procs[j].pid)->jid.rank;
            if (g->procs[j].mem_valid) {
                mem += (double)g->procs[j].mem_bytes;
                mem_valid = true;
            }
        }
        if (!held)
            continue;
        struct hgpu *x = find_gpu(h, g, g->node[0] ? g->node : f->hostname);
        if (!x)
            continue;
        if (x->rank < 0)
            x->rank = rank;
        double total = memory_total(g);
        if (total > 0)
            x->mem_total = total;
        if (!mem_valid && gp_gpu_has(g, GPF_MEMORY_USED)) {
            mem = g->val[GPF_MEMORY_USED];
            mem_valid = true;
        } else if (!mem_valid && gp_gpu_has(g, GPF_FB_USED)) {
            mem = g->val[GPF_FB_USED] * MIB;
            mem_valid = true;
        }
        x->gpu_seconds += dt;
        double a;
        bool sm;
        if (activity(g, &a, &sm)) {
            x->saw_sm_active |= sm;
            x->act_sum += a * dt;
            x->act_dt += dt;
            gp_jobmodel_activity(&h->act, a, dt);
            gp_jobmodel_busy(&x->idle_s, &x->unused_s, a, dt);
            cell_add(&x->act.c[pt], a);
            act_sum += a;
            nact++;
        }
        wavg_add(&h->occ, g, GPF_PROF_SM_OCCUPANCY, 1, dt);
        wavg_add(&h->tensor, g, GPF_PROF_TENSOR, 1, dt);
        wavg_add(&h->dram, g, GPF_PROF_DRAM, 1, dt);
        double link = link_busy(g);
        if (isfinite(link)) {
            h->link.sum += link * dt;
            h->link.dt += dt;
        }
        if (mem_valid) {
            if (!x->peak_valid || mem > x->peak_mem)
                x->peak_mem = mem;
            x->peak_valid = true;
            cell_add(&x->mem.c[pt], mem);
            mem_sum += mem;
            total_sum += x->mem_total;
            nmem++;
        }
    }
    h->last_act_valid = nact > 0;
    h->last_act = nact ? act_sum / nact : 0;
    h->last_mem_valid = nmem > 0;
    h->last_mem = mem_sum;
    h->last_mem_total = total_sum;
}

static void record_rank(struct gp_history *h, const struct gp_job *j, const char *node)
{
    for (unsigned i = 0; i < h->nranks; i++)
        if (h->ranks[i].rank == j->id.rank && !strcmp(h->ranks[i].node, node)) {
            if (j->nprocs > h->ranks[i].procs)
                h->ranks[i].procs = j->nprocs;
            return;
        }
    if (h->nranks == MAX_RANKS)
        return;
    struct hrank *r = &h->ranks[h->nranks++];
    r->rank = j->id.rank;
    r->local_rank = j->id.local_rank;
    r->procs = j->nprocs;
    snprintf(r->node, sizeof r->node, "%s", node);
}

static void record_host(struct gp_history *h, const struct gp_frame *f, double dt, unsigned pt)
{
    double cpu = 0, rss = 0;
    bool any = false;
    for (unsigned i = 0; i < f->njobs; i++) {
        const struct gp_job *j = &f->jobs[i];
        if (strcmp(j->id.job, h->job))
            continue;
        any = true;
        cpu += j->cpu_seconds;
        rss += (double)j->rss_bytes;
        if (j->id.world_size > 0)
            h->world_size = j->id.world_size;
        record_rank(h, j, f->hostname);
    }
    if (!any)
        return;
    h->cpu_valid = h->rss_valid = true;
    if (cpu > h->cpu_seconds)
        h->cpu_seconds = cpu;
    if (h->prev_cpu_valid && cpu >= h->prev_cpu && dt > 0)
        cell_add(&h->cpu.c[pt], (cpu - h->prev_cpu) / dt);
    h->prev_cpu = cpu;
    h->prev_cpu_valid = true;
    cell_add(&h->rss.c[pt], rss);
    if (rss > h->rss_peak)
        h->rss_peak = rss;
    h->last_rss = rss;
}

void gp_history_frame(struct gp_history *h, const struct gp_frame *f)
{
    pthread_mutex_lock(&h->mu);
    snprintf(h->node, sizeof h->node, "%s", f->hostname);
    double now = (double)f->time_ms / 1000.0;
    double dt = h->ticks ? now - h->last_tick_s : h->interval_s;
    if (dt <= 0 || dt > 3600)
        dt = h->interval_s;
    h->ticks++;
    h->last_tick_s = now;
    next_point(h, now);
    unsigned pt = h->nb - 1;
    record_gpus(h, f, dt, pt);
    record_host(h, f, dt, pt);
    /* a reporter's rank: its process's, as the jobs source read it */
    for (unsigned i = 0; i < h->nreporters; i++) {
        struct greporter *r = &h->reporters[i];
        const struct gp_proc *p = gp_frame_find_proc(f, r->pid);
        if (r->rank < 0 && p && is_ours(h, f, r->pid))
            r->rank = p->jid.rank;
    }
    pthread_mutex_unlock(&h->mu);
}

/* Reporter pid, new when first seen (its goodput's wall time from the
 * command's start: gpulse run starts every rank); NULL beyond the cap. */
static struct greporter *reporter(struct gp_history *h, uint32_t pid)
{
    for (unsigned i = 0; i < h->nreporters; i++)
        if (h->reporters[i].pid == pid)
            return &h->reporters[i];
    if (h->nreporters == MAX_REPORTERS)
        return NULL;
    struct greporter *r = &h->reporters[h->nreporters++];
    r->pid = pid;
    r->rank = -1;
    gp_goodput_rank_init(&r->g, h->start_s, h->prior_last_step);
    gp_jobmodel_rank_init(&r->rk);
    r->win = -1;
    r->win_n = r->win_s = 0;
    return r;
}

/* Closes a reporter's open interval into its straggler figures. */
static void close_interval(struct greporter *r)
{
    if (r->win_n > 0)
        gp_jobmodel_rank_interval(&r->rk, r->win_n, r->win_s);
    r->win_n = r->win_s = 0;
}

void gp_history_phase(struct gp_history *h, uint32_t pid, const char *name, double t_end,
                      double seconds)
{
    pthread_mutex_lock(&h->mu);
    struct greporter *r = reporter(h, pid);
    if (r)
        gp_goodput_phase(&r->g, name, t_end, seconds);
    pthread_mutex_unlock(&h->mu);
}

void gp_history_prior(struct gp_history *h, const struct gp_goodput_figures *prior,
                      unsigned attempts, double last_step)
{
    pthread_mutex_lock(&h->mu);
    h->prior = *prior;
    h->prior_attempts = attempts;
    h->prior_last_step = last_step;
    for (unsigned i = 0; i < h->nreporters; i++)
        h->reporters[i].g.resume_from = last_step;
    pthread_mutex_unlock(&h->mu);
}

/* This attempt's figures; the caller holds the lock. */
static void goodput_now(const struct gp_history *h, double end, struct gp_goodput_figures *f,
                        double *last_step)
{
    gp_goodput_figures_init(f);
    *last_step = -1;
    for (unsigned i = 0; i < h->nreporters; i++) {
        gp_goodput_add_rank(f, &h->reporters[i].g, end);
        if (h->reporters[i].g.last_step > *last_step)
            *last_step = h->reporters[i].g.last_step;
    }
    gp_goodput_finish(f);
}

void gp_history_goodput(struct gp_history *h, struct gp_goodput_figures *f, double *last_step)
{
    pthread_mutex_lock(&h->mu);
    goodput_now(h, h->ended ? h->end_s : wall_s(), f, last_step);
    pthread_mutex_unlock(&h->mu);
}

void gp_history_step(struct gp_history *h, const struct gp_history_step *s)
{
    if (!isfinite(s->seconds) || s->seconds < 0 || !isfinite(s->t_end))
        return;
    pthread_mutex_lock(&h->mu);
    struct greporter *r = reporter(h, s->pid);
    if (r) {
        gp_goodput_step(&r->g, s->t_end, s->seconds, s->has_wait ? s->wait_seconds : NAN, s->n);
        /* the sampling interval the step ended in, counted from the start */
        double win = floor((s->t_end - h->start_s) / h->interval_s);
        if (win != r->win)
            close_interval(r);
        r->win = win;
        r->win_n++;
        r->win_s += s->seconds;
        gp_jobmodel_sum(&r->rk.tokens, s->has_tokens ? s->tokens : NAN);
        gp_jobmodel_sum(&r->rk.samples, s->has_samples ? s->samples : NAN);
    }
    gp_jobmodel_step(&h->steps, s->t_end, s->seconds, s->has_wait ? s->wait_seconds : NAN,
                     s->has_samples ? s->samples : NAN, s->has_tokens ? s->tokens : NAN);
    if (s->has_loss)
        gp_jobmodel_loss(&h->steps, s->t_end, s->loss);
    if (!h->nb)
        next_point(h, wall_s());
    cell_add(&h->step.c[h->nb - 1], s->seconds);
    if (s->has_loss)
        cell_add(&h->loss.c[h->nb - 1], s->loss);
    pthread_mutex_unlock(&h->mu);
}

void gp_history_model(struct gp_history *h, double flops_token, double flops_sample, int precision)
{
    pthread_mutex_lock(&h->mu);
    h->flops_token = flops_token;
    h->flops_sample = flops_sample;
    h->precision = precision;
    pthread_mutex_unlock(&h->mu);
}

void gp_history_finish(struct gp_history *h, double end_s, int status, const struct rusage *ru)
{
    pthread_mutex_lock(&h->mu);
    h->ended = true;
    h->end_s = end_s;
    h->status = status;
    if (ru) {
        h->ru = *ru;
        h->have_ru = true;
    }
    pthread_mutex_unlock(&h->mu);
}

static void put_duration(struct gp_buf *b, double s)
{
    long t = (long)s;
    gp_buf_printf(b, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void gp_history_status(struct gp_history *h, struct gp_buf *out, double now_s)
{
    pthread_mutex_lock(&h->mu);
    gp_buf_printf(out, "[gpulse] %s ", h->job);
    put_duration(out, now_s - h->start_s);
    /* the rate over the last 2 s or more, so it follows changes without
     * jumping with each batch of records */
    if (now_s - h->rate_t >= 2.0) {
        h->rate = (double)((uint64_t)h->steps.steps - h->rate_steps) / (now_s - h->rate_t);
        h->rate_t = now_s;
        h->rate_steps = (uint64_t)h->steps.steps;
    }
    if (h->steps.steps > 0)
        gp_buf_printf(out, " | step %llu (%.1f/s)", (unsigned long long)h->steps.steps, h->rate);
    if (h->last_act_valid)
        gp_buf_printf(out, " | GPU %.0f%%", h->last_act * 100);
    else
        gp_buf_puts(out, " | no GPU");
    if (h->last_mem_valid) {
        gp_buf_printf(out, " | GPU mem %.1f", h->last_mem / GIB);
        if (h->last_mem_total > 0)
            gp_buf_printf(out, "/%.1f", h->last_mem_total / GIB);
        gp_buf_puts(out, " GiB");
    }
    if (h->rss_valid && h->last_rss < GIB)
        gp_buf_printf(out, " | RSS %.0f MiB", h->last_rss / MIB);
    else if (h->rss_valid)
        gp_buf_printf(out, " | RSS %.2f GiB", h->last_rss / GIB);
    pthread_mutex_unlock(&h->mu);
}

/* A number, or null when not finite (the document never shows NaN). */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *curve_json(const struct gp_history *h, const struct curve *cv, bool use_max)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < h->nb; i++) {
        const struct cell *c = &cv->c[i];
        json_array_append_new(a, c->n ? num(use_max ? c->max : c->sum / c->n) : json_null());
    }
    return a;
}

static json_t *times_json(const struct gp_history *h)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < h->nb; i++)
        json_array_append_new(a, json_real(h->t[i] - h->start_s));
    return a;
}

static void put_state(const struct gp_history *h, json_t *d)
{
    if (!h->ended) {
        json_object_set_new(d, "state", json_string("running"));
        json_object_set_new(d, "exit_status", json_null());
        json_object_set_new(d, "signal", json_null());
        return;
    }
    int st = h->status;
    bool sig = WIFSIGNALED(st);
    int code = sig ? 128 + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    json_object_set_new(d, "state", json_string(sig ? "killed" : code ? "failed" : "finished"));
    json_object_set_new(d, "exit_status", json_integer(code));
    json_object_set_new(d, "signal", sig ? json_integer(WTERMSIG(st)) : json_null());
}

/* The job model's view of GPU i. */
static struct gp_jobmodel_gpu model_gpu(const struct hgpu *x)
{
    return (struct gp_jobmodel_gpu){
        .seconds = x->gpu_seconds,
        .act_sum = x->act_sum,
        .act_w = x->act_dt,
        .peak = x->peak_valid ? x->peak_mem : NAN,
        .capacity = x->mem_total > 0 ? x->mem_total : NAN,
        .price = x->price,
        .idle_s = x->idle_s,
        .unused_s = x->unused_s,
    };
}

static json_t *gpus_json(const struct gp_history *h, struct gp_jobmodel_gpu *mg)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < h->ngpus; i++) {
        const struct hgpu *x = &h->gpus[i];
        mg[i] = model_gpu(x);
        const struct gp_jobmodel_gpu *g = &mg[i];
        json_t *o = json_object();
        char idx[16];
        snprintf(idx, sizeof idx, "%u", x->index);
        json_object_set_new(o, "node", json_string(x->node));
        json_object_set_new(o, "gpu", json_string(idx));
        json_object_set_new(o, "uuid", json_string(x->uuid));
        json_object_set_new(o, "model", json_string(x->model));
        json_object_set_new(o, "memory_total_bytes", num(g->capacity));
        json_object_set_new(o, "peak_memory_bytes", num(g->peak));
        json_object_set_new(o, "peak_memory_ratio", num(gp_jobmodel_gpu_peak_ratio(g)));
        json_object_set_new(o, "activity_avg", num(gp_jobmodel_gpu_activity(g)));
        json_object_set_new(o, "activity_source",
                            x->act_dt > 0 ? json_string(x->saw_sm_active ? "sm_active" : "gpu_util") : json_null());
        json_object_set_new(o, "gpu_seconds", json_real(x->gpu_seconds));
        json_array_append_new(a, o);
    }
    return a;
}

/* MFU from the model record, the throughput and the GPUs' models. */
static void put_mfu(const struct gp_history *h, const struct gp_jobmodel_step_figures *sf, double activity,
                    json_t *t)
{
    const char *models[MAX_GPUS];
    for (unsigned i = 0; i < h->ngpus; i++)
        models[i] = h->gpus[i].model;
    const struct wavg *w[] = {&h->tensor, &h->dram, &h->link};
    double hw[3];
    for (int i = 0; i < 3; i++)
        hw[i] = w[i]->dt > 0 ? w[i]->sum / w[i]->dt : NAN;
    struct gp_jobmodel_mfu_in in = {
        .flops_token = h->flops_token, .flops_sample = h->flops_sample, .precision = h->precision,
        .tokens_per_second = sf->tokens_per_second, .samples_per_second = sf->samples_per_second,
        .models = models, .ngpus = h->ngpus,
        .activity = activity, .tensor_active = hw[0], .dram_active = hw[1], .link_busy = hw[2],
    };
    struct gp_jobmodel_mfu m;
    gp_jobmodel_mfu(&in, &m);
    const char *prec = h->precision >= 0 ? gp_precision_name((enum gp_precision)h->precision) : NULL;
    json_object_set_new(t, "precision", prec ? json_string(prec) : json_null());
    json_object_set_new(t, "model_flops_per_token", num(h->flops_token > 0 ? h->flops_token : NAN));
    json_object_set_new(t, "model_flops_per_sample", num(h->flops_sample > 0 ? h->flops_sample : NAN));
    json_object_set_new(t, "model_flops_per_second", num(m.achieved_flops_per_second));
    json_object_set_new(t, "peak_flops_per_second", num(m.peak_flops_per_second));
    json_object_set_new(t, "mfu", num(m.mfu));
    json_object_set_new(t, "mfu_reason", m.why[0] ? json_string(m.why) : json_null());
    json_object_set_new(t, "mfu_gap", m.gap[0] ? json_string(m.gap) : json_null());
}

static json_t *totals_json(const struct gp_history *h, double wall, json_t *gpus_out)
{
    json_t *t = json_object();
    struct gp_jobmodel_gpu mg[MAX_GPUS];
    json_t *gpus = gpus_json(h, mg);
    struct gp_jobmodel_gpu_figures gf;
    /* the job seen in a tick without a GPU held none */
    gp_jobmodel_gpu_figures(&h->act, mg, h->ngpus, h->rss_valid, h->price > 0 ? h->price : NAN, &gf);
    json_object_set_new(t, "gpu_seconds", num(gf.gpu_seconds));
    json_object_set_new(t, "gpu_hours", num(gf.gpu_hours));
    json_object_set_new(t, "activity_avg", num(gf.activity_avg));
    json_object_set_new(t, "activity_p50", num(gf.activity_p50));
    json_object_set_new(t, "activity_p90", num(gf.activity_p90));
    json_object_set_new(t, "activity_p99", num(gf.activity_p99));
    const struct wavg *w[] = {&h->occ, &h->tensor, &h->dram, &h->link};
    const char *wn[] = {"sm_occupancy_avg", "tensor_active_avg", "dram_active_avg", "link_busy_avg"};
    for (int i = 0; i < 4; i++)
        json_object_set_new(t, wn[i], w[i]->dt > 0 ? json_real(w[i]->sum / w[i]->dt) : json_null());
    json_object_set_new(t, "rank_step_spread", json_null()); /* the job model has none yet */
    json_object_set_new(t, "peak_gpu_memory_bytes", num(gf.peak_memory_bytes));
    json_object_set_new(t, "peak_gpu_memory_ratio", num(gf.peak_memory_ratio));

    /* The kernel's accounting of the reaped command is exact; samples miss
     * what happened between ticks and after the last one. */
    double cpu = h->cpu_valid ? h->cpu_seconds : NAN, rss = h->rss_valid ? h->rss_peak : NAN;
    if (h->have_ru) {
        double ru_cpu = (double)h->ru.ru_utime.tv_sec + (double)h->ru.ru_utime.tv_usec / 1e6 +
                        (double)h->ru.ru_stime.tv_sec + (double)h->ru.ru_stime.tv_usec / 1e6;
        double ru_rss = (double)h->ru.ru_maxrss * 1024.0;
        cpu = isnan(cpu) ? ru_cpu : fmax(cpu, ru_cpu);
        rss = isnan(rss) ? ru_rss : fmax(rss, ru_rss);
    }
    json_object_set_new(t, "host_cpu_seconds", num(cpu));
    json_object_set_new(t, "host_cpu_avg_cores", num(wall > 0 ? cpu / wall : NAN));
    json_object_set_new(t, "host_rss_peak_bytes", num(rss));

    struct gp_jobmodel_step_figures sf;
    gp_jobmodel_step_figures(&h->steps, &sf);
    json_object_set_new(t, "steps", json_integer((json_int_t)sf.steps));
    json_object_set_new(t, "samples", num(sf.samples));
    json_object_set_new(t, "tokens", num(sf.tokens));
    json_object_set_new(t, "stepping_seconds", num(sf.stepping_seconds));
    json_object_set_new(t, "samples_per_second", num(sf.samples_per_second));
    json_object_set_new(t, "tokens_per_second", num(sf.tokens_per_second));
    json_object_set_new(t, "steps_per_second", num(sf.steps_per_second));
    if (sf.steps > 0) {
        json_t *s = json_object();
        json_object_set_new(s, "mean", num(sf.mean));
        json_object_set_new(s, "p50", num(sf.p50));
        json_object_set_new(s, "p90", num(sf.p90));
        json_object_set_new(s, "p99", num(sf.p99));
        json_object_set_new(s, "max", num(sf.max));
        json_object_set_new(t, "step_seconds", s);
    } else {
        json_object_set_new(t, "step_seconds", json_null());
    }
    json_object_set_new(t, "data_wait_ratio", num(sf.data_wait_ratio));
    json_object_set_new(t, "loss_first", num(sf.loss_first));
    json_object_set_new(t, "loss_last", num(sf.loss_last));
    json_object_set_new(t, "loss_min", num(sf.loss_min));
    put_mfu(h, &sf, gf.activity_avg, t);
    json_object_set_new(t, "price_per_gpu_hour", num(gf.price_per_gpu_hour));
    json_object_set_new(t, "cost", num(gf.cost));
    json_object_set_new(t, "cost_idle", num(gf.cost_idle));
    json_object_set_new(t, "cost_unused_compute", num(gf.cost_unused_compute));
    json_object_set_new(t, "currency", isfinite(gf.cost) ? json_string("USD") : json_null());
    json_array_extend(gpus_out, gpus);
    json_decref(gpus);
    return t;
}

static json_t *series_json(const struct gp_history *h)
{
    json_t *s = json_object(), *gpus = json_array();
    for (unsigned i = 0; i < h->ngpus; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "uuid", json_string(h->gpus[i].uuid));
        json_object_set_new(o, "node", json_string(h->gpus[i].node));
        json_object_set_new(o, "t", times_json(h));
        json_object_set_new(o, "activity", curve_json(h, &h->gpus[i].act, false));
        json_object_set_new(o, "memory_bytes", curve_json(h, &h->gpus[i].mem, true));
        json_array_append_new(gpus, o);
    }
    json_object_set_new(s, "gpus", gpus);
    json_t *steps = json_object();
    json_object_set_new(steps, "t", times_json(h));
    json_object_set_new(steps, "seconds", curve_json(h, &h->step, false));
    json_object_set_new(steps, "loss", curve_json(h, &h->loss, false));
    json_object_set_new(s, "steps", steps);
    json_t *host = json_object();
    json_object_set_new(host, "t", times_json(h));
    json_object_set_new(host, "cpu_cores", curve_json(h, &h->cpu, false));
    json_object_set_new(host, "rss_bytes", curve_json(h, &h->rss, true));
    json_object_set_new(s, "host", host);
    return s;
}

static json_t *parts_json(const struct gp_goodput_figures *f)
{
    json_t *o = json_object();
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        json_object_set_new(o, gp_goodput_part_name(p), json_real(f->part[p]));
    return o;
}

/* docs/jobs.md "Goodput": the job's figures over every attempt, and this
 * attempt's reporters. Null when no process reported a step or phase. */
static json_t *goodput_json(const struct gp_history *h, double end)
{
    if (!h->nreporters && !h->prior_attempts)
        return json_null();
    struct gp_goodput_figures now, job;
    double last;
    goodput_now(h, end, &now, &last);
    gp_goodput_figures_init(&job);
    gp_goodput_add(&job, &h->prior);
    gp_goodput_add(&job, &now);
    gp_goodput_finish(&job);
    if (h->prior_last_step > last)
        last = h->prior_last_step;
    json_t *o = json_object();
    json_object_set_new(o, "ratio", num(job.ratio));
    json_object_set_new(o, "wall_seconds", json_real(job.wall));
    json_object_set_new(o, "seconds", parts_json(&job));
    json_object_set_new(o, "biggest_badput", job.biggest_badput >= 0
                                                 ? json_string(gp_goodput_part_name(job.biggest_badput))
                                                 : json_null());
    json_object_set_new(o, "attempts", json_integer(h->prior_attempts + 1));
    json_object_set_new(o, "last_step", last >= 0 ? json_real(last) : json_null());
    json_t *ranks = json_array();
    for (unsigned i = 0; i < h->nreporters; i++) {
        struct gp_goodput_figures r;
        gp_goodput_figures_init(&r);
        gp_goodput_add_rank(&r, &h->reporters[i].g, end);
        gp_goodput_finish(&r);
        json_t *x = json_object();
        json_object_set_new(x, "pid", json_integer(h->reporters[i].pid));
        json_object_set_new(x, "ratio", num(r.ratio));
        json_object_set_new(x, "seconds", parts_json(&r));
        json_array_append_new(ranks, x);
    }
    json_object_set_new(o, "ranks", ranks);
    return o;
}

/* Rank i's figures from the reporters of its rank, their open intervals
 * closed (on a copy: more records may come). */
static void rank_model(const struct gp_history *h, unsigned i, struct gp_jobmodel_rank *out)
{
    gp_jobmodel_rank_init(out);
    for (unsigned k = 0; k < h->nreporters; k++) {
        struct greporter r = h->reporters[k];
        if (r.rank != h->ranks[i].rank)
            continue;
        close_interval(&r);
        gp_jobmodel_rank_merge(out, &r.rk);
    }
}

/* Each rank's MFU and straggler scores (the job model's). One rank is
 * the whole job: its MFU is the job's, over every GPU. */
static void put_ranks(const struct gp_history *h, json_t *totals, json_t *ranks)
{
    struct gp_jobmodel_rank rk[MAX_RANKS];
    for (unsigned i = 0; i < h->nranks; i++)
        rank_model(h, i, &rk[i]);
    struct gp_jobmodel_step_figures sf;
    gp_jobmodel_step_figures(&h->steps, &sf);
    for (unsigned i = 0; i < h->nranks && i < json_array_size(ranks); i++) {
        json_t *o = json_array_get(ranks, i);
        if (h->nranks == 1) {
            json_object_set(o, "mfu", json_object_get(totals, "mfu"));
            json_object_set(o, "mfu_reason", json_object_get(totals, "mfu_reason"));
        } else {
            const char *models[MAX_GPUS];
            size_t n = 0;
            double act_sum = 0, act_w = 0;
            for (unsigned g = 0; g < h->ngpus; g++)
                if (h->gpus[g].rank == h->ranks[i].rank) {
                    models[n++] = h->gpus[g].model;
                    act_sum += h->gpus[g].act_sum;
                    act_w += h->gpus[g].act_dt;
                }
            struct gp_jobmodel_mfu_in in = {
                .flops_token = h->flops_token, .flops_sample = h->flops_sample, .precision = h->precision,
                .models = models, .ngpus = n, .activity = act_w > 0 ? act_sum / act_w : NAN,
                .tensor_active = NAN, .dram_active = NAN, .link_busy = NAN,
            };
            gp_jobmodel_rank_rates(&rk[i], &sf, &in);
            struct gp_jobmodel_mfu m;
            gp_jobmodel_mfu(&in, &m);
            json_object_set_new(o, "mfu", num(m.mfu));
            json_object_set_new(o, "mfu_reason", m.why[0] ? json_string(m.why) : json_null());
        }
        struct gp_jobmodel_rank_figures rf;
        gp_jobmodel_rank_figures(rk, h->nranks, i, &rf);
        json_object_set_new(o, "step_seconds_mean", num(rf.step_mean));
        json_object_set_new(o, "step_seconds_best", num(rf.step_best));
        json_object_set_new(o, "straggler_relative", num(rf.relative));
        json_object_set_new(o, "straggler_individual", num(rf.individual));
    }
}

json_t *gp_history_document(struct gp_history *h)
{
    pthread_mutex_lock(&h->mu);
    json_t *d = json_object();
    double end = h->ended ? h->end_s : wall_s();
    double wall = end - h->start_s;
    json_object_set_new(d, "id", json_string(h->job));
    json_object_set_new(d, "scheme", json_string(gp_job_scheme_names[GP_JOB_RUN]));
    json_object_set_new(d, "command", json_string(h->command));
    put_state(h, d);
    json_object_set_new(d, "start", json_real(h->start_s));
    json_object_set_new(d, "end", h->ended ? json_real(h->end_s) : json_null());
    json_object_set_new(d, "wall_seconds", json_real(wall));

    json_t *nodes = json_array(), *ranks = json_array();
    if (h->ticks)
        json_array_append_new(nodes, json_string(h->node));
    for (unsigned i = 0; i < h->nranks; i++) {
        const struct hrank *r = &h->ranks[i];
        json_t *o = json_object();
        long long rank = gp_jobmodel_rank(r->rank, h->nranks);
        long long local = gp_jobmodel_rank(r->local_rank, h->nranks);
        json_object_set_new(o, "rank", rank >= 0 ? json_integer(rank) : json_null());
        json_object_set_new(o, "node", json_string(r->node));
        json_object_set_new(o, "local_rank", local >= 0 ? json_integer(local) : json_null());
        json_object_set_new(o, "processes", json_integer(r->procs));
        json_array_append_new(ranks, o);
    }
    json_object_set_new(d, "nodes", nodes);
    json_object_set_new(d, "ranks", ranks);
    long long world = gp_jobmodel_world_size(h->world_size, h->nranks);
    json_object_set_new(d, "world_size", world > 0 ? json_integer(world) : json_null());
    json_t *gpus = json_array();
    json_t *totals = totals_json(h, wall, gpus);
    put_ranks(h, totals, ranks);
    json_object_set_new(d, "gpus", gpus);
    json_object_set_new(d, "totals", totals);
    json_object_set_new(d, "goodput", goodput_json(h, end));
    json_object_set_new(d, "series", series_json(h));
    json_object_set_new(d, "advice", json_array());
    pthread_mutex_unlock(&h->mu);
    return d;
}
