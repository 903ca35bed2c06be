/*
 * jobdoc.c - the job document (jobdoc.h) in two steps: gather selects
 * the job's series, reads each once into memory (filtered of stale
 * markers and NaN) and feeds them to the job model (jobmodel.h), which
 * computes the figures; render writes them, with the grids on request,
 * as JSON. gp_jobdoc_cost gathers without rendering (the budget
 * detector's cost).
 *
 * Its parts (jobdoc_int.h): the GPUs (jobdoc_gpu.c), goodput
 * (jobdoc_goodput.c) and the charts (jobdoc_charts.c) each have their
 * own module; this one sorts the series out, reads the step stream, the
 * host and the cost, and writes the document around them.
 *
 * In storage: remote, a job reaching before the local window would move
 * every raw sample of every series of the job from the cluster: there the
 * selection takes only the families that need raw samples
 * (gp_jobdoc_cluster_raw_names) and the others come as the cluster's
 * aggregates (jobdoc_cluster.h): GPU memory, newest values, counter
 * totals, which the GPUs, gp_jobdoc_newest and gp_jobdoc_ser_read take in
 * place of samples. The figures are computed here either way.
 */
#include "query/jobdoc.h"

#include "lib/err.h"
#include "lib/json.h"
#include "query/cost.h"
#include "query/eval.h"
#include "query/jobdoc_charts.h"
#include "query/jobdoc_cluster.h"
#include "query/jobdoc_goodput.h"
#include "query/jobdoc_gpu.h"
#include "query/jobdoc_int.h"
#include "query/jobmodel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cost totals of the job (cost.h's arithmetic over its GPUs). */
struct cost_out {
    double cost, per_hour, target, seconds_left, projected;
};

struct doc {
    const struct gp_jobdoc_in *in;
    struct gp_jobdoc_src src; /* the store, the range, the aggregates below */
    struct gp_store_selection sel;
    /* From the cluster (jobdoc_cluster.h): the series of the families it
     * aggregates; sel then holds only gp_jobdoc_cluster_raw_names. */
    struct gp_jobdoc_aggs agg;
    struct gp_jobdoc_gpus gpus;
    struct gp_jobdoc_ser *cpu, *rss, *loss; /* loss: gpulse_job_loss, what the clients sent */
    size_t ncpu, nrss, nloss;
    struct gp_jobdoc_interval *iv;
    size_t niv, civ;
    struct gp_jobmodel_steps *steps; /* the step stream (jobmodel.h) */
    struct gp_jobmodel_gpus act;
    /* gathered: the figures the document shows */
    struct gp_jobmodel_gpu *mg;      /* per GPU, as d->gpus */
    struct gp_jobmodel_gpu_figures gf;
    const struct gp_store_series **procs; /* gpulse_job_processes */
    size_t nprocs;
    struct gp_jobmodel_rank *rk;     /* per rank, as in->ranks: straggler scores */
    double host_cpu, rss_peak, wall;
    struct cost_out co;
    struct gp_jobdoc_goodput good;   /* jobdoc_goodput.h */
};

/* The job's series: the cluster's aggregates (none in embedded mode),
 * then the selection. */
static size_t nseries(const struct doc *d)
{
    return d->agg.n + d->sel.n;
}

static const struct gp_store_series *series_at(const struct doc *d, size_t i)
{
    return i < d->agg.n ? &d->agg.a[i].s : &d->sel.series[i - d->agg.n];
}

/* The index in in->ranks of series s's node and rank; SIZE_MAX: none. */
static size_t rank_of(const struct doc *d, const struct gp_store_series *s)
{
    struct gp_str n = gp_jobdoc_node(s), rk = gp_jobdoc_lab(s, "rank");
    for (size_t i = 0; i < d->in->nranks; i++) {
        const struct gp_jobdoc_rank *r = &d->in->ranks[i];
        char want[32] = "";
        if (r->rank != GP_JOBDOC_NONE)
            snprintf(want, sizeof want, "%lld", (long long)r->rank);
        if (gp_jobdoc_str_eq(n, (struct gp_str){r->node, strlen(r->node)}) &&
            gp_jobdoc_str_eq(rk, (struct gp_str){want, strlen(want)}))
            return i;
    }
    return SIZE_MAX;
}

/* Adds the step-time intervals of one process (steps and seconds
 * counters), to its rank's too (rk; NULL: none). */
static int add_intervals(struct doc *d, const struct gp_jobdoc_ser *steps, const struct gp_jobdoc_ser *secs,
                         int from0, struct gp_jobmodel_rank *rk)
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
                    struct gp_jobdoc_interval *n = realloc(d->iv, nc * sizeof *n);
                    if (!n)
                        return GP_ENOMEM;
                    d->iv = n;
                    d->civ = nc;
                }
                d->iv[d->niv++] = (struct gp_jobdoc_interval){steps->t[i], dc, ds};
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

static double price_of(const struct doc *d, const struct gp_jobdoc_gpu *g)
{
    if (d->in->prices)
        return gp_prices_of(d->in->prices, g->model.ptr, g->model.len);
    return d->in->price_per_gpu_hour;
}

/* Steps per second of x over its last 5 minutes of samples; NaN when
 * unknown (fewer than two samples, a reset). */
static double recent_rate(const struct gp_jobdoc_ser *x)
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
    for (size_t i = 0; i < d->gpus.n; i++)
        if (gp_jobdoc_gpu_last(&d->gpus.g[i]) > newest_t)
            newest_t = gp_jobdoc_gpu_last(&d->gpus.g[i]);
    co->per_hour = NAN;
    for (size_t i = 0; i < d->gpus.n; i++) {
        const struct gp_jobdoc_gpu *g = &d->gpus.g[i];
        double price = price_of(d, g);
        if (price > 0 && gp_jobdoc_gpu_samples(g)->n && g->step > 0) {
            /* held now: seen within two of its steps of the job's newest sample */
            if (gp_jobdoc_gpu_last(g) >= newest_t - 2 * g->step - 1000)
                co->per_hour = (isfinite(co->per_hour) ? co->per_hour : 0) + price;
        }
    }
    co->cost = cost; /* the job model's */
    co->target = NAN;
    for (size_t i = 0; i < ntargets; i++) {
        double t = gp_jobdoc_newest(&d->src, targets[i]);
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
        double v = gp_jobdoc_newest(&d->src, stepnos[i]);
        if (isfinite(v) && !(step >= v)) {
            step = v;
            lead = stepnos[i];
        }
    }
    if (!lead)
        return GP_OK;
    struct gp_jobdoc_ser x;
    int rc = gp_jobdoc_ser_read(&d->src, lead, d->src.t0, d->src.t1, &x);
    if (rc)
        return rc;
    double rate = recent_rate(&x);
    gp_jobdoc_ser_free(&x);
    gp_cost_project(co->cost, isfinite(co->per_hour) ? co->per_hour : NAN, co->target, step, rate,
                    &co->seconds_left, &co->projected);
    return GP_OK;
}

/* gather's answer when the cluster's aggregates cannot give a figure:
 * a GPU without activity samples counts its GPU-seconds from its memory
 * samples' gaps; a counter that fell (a reset) adds each value after a
 * fall. doc_gather reads the job raw then. */
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
    size_t nsel = nseries(d) ? nseries(d) : 1;
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
        if (d->agg.a[i].resets > 0) { /* its increase needs every sample */
            rc = NEED_RAW;
            goto out;
        }
    for (size_t i = 0; i < nseries(d); i++) {
        const struct gp_store_series *s = series_at(d, i);
        if (gp_jobdoc_gpu_family(s)) {
            if ((rc = gp_jobdoc_gpus_add(&d->gpus, s)))
                goto out;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_cpu_seconds_total")) {
            if ((rc = gp_jobdoc_ser_read(&d->src, s, d->src.t0, d->src.t1, &d->cpu[d->ncpu++])))
                goto out;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_resident_memory_bytes")) {
            if ((rc = gp_jobdoc_ser_read(&d->src, s, d->src.t0, d->src.t1, &d->rss[d->nrss++])))
                goto out;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_loss")) {
            if ((rc = gp_jobdoc_ser_read(&d->src, s, d->src.t0, d->src.tc, &d->loss[d->nloss++])))
                goto out;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_steps_total")) {
            steps[nsteps++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_step_seconds_total")) {
            secs[nsecs++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_data_wait_seconds_total")) {
            waits[nwaits++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_samples_total")) {
            samples[nsamples++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_tokens_total")) {
            tokens[ntokens++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_processes")) {
            procs[nprocs++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_target_steps")) {
            targets[ntargets++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_step")) {
            stepnos[nstepnos++] = s;
        } else if (gp_jobdoc_name_is(s, "gpulse_job_phase_seconds_total")) {
            phases[nphases++] = s;
        }
    }
    gp_jobdoc_gpus_sort(&d->gpus);
    mg = calloc(d->gpus.n ? d->gpus.n : 1, sizeof *mg);
    if (!mg)
        goto out;
    for (size_t i = 0; i < d->gpus.n; i++) {
        if ((rc = gp_jobdoc_gpu_read(&d->src, &d->gpus.g[i], &d->act)))
            goto out;
        const struct gp_jobdoc_gpu *g = &d->gpus.g[i];
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
    for (size_t i = 0; i < nseries(d) && !held_none; i++)
        held_none = gp_jobdoc_name_is(series_at(d, i), "gpulse_job_gpus");
    gp_jobmodel_gpu_figures(&d->act, mg, d->gpus.n, held_none,
                            d->in->prices ? NAN : d->in->price_per_gpu_hour, &gf);

    for (size_t i = 0; i < d->nloss; i++)
        for (size_t k = 0; k < d->loss[i].n; k++)
            gp_jobmodel_loss(d->steps, (double)d->loss[i].t[k] / 1e3, d->loss[i].v[k]);

    /* Counters: the step stream's sums are their increases. */
    double *sums[5] = {&d->steps->steps, &d->steps->seconds, &d->steps->wait, &d->steps->samples,
                       &d->steps->tokens};
    const struct gp_store_series **lists[5] = {steps, secs, waits, samples, tokens};
    size_t counts[5] = {nsteps, nsecs, nwaits, nsamples, ntokens};
    struct gp_jobdoc_ser x;
    rc = GP_ENOMEM;
    if (!(d->rk = calloc(d->in->nranks ? d->in->nranks : 1, sizeof *d->rk)))
        goto out;
    for (size_t i = 0; i < d->in->nranks; i++)
        gp_jobmodel_rank_init(&d->rk[i]);
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < counts[k]; i++) {
            if ((rc = gp_jobdoc_ser_read(&d->src, lists[k][i], d->src.t0, d->src.tc, &x)))
                goto out;
            if (x.n)
                gp_jobmodel_sum(sums[k], gp_jobdoc_increase(&x, gp_jobdoc_born(&d->src, lists[k][i])));
            if (k == 0)
                for (size_t m = 0; m < nsecs; m++)
                    if (gp_jobdoc_same_except(steps[i], secs[m], NULL)) {
                        struct gp_jobdoc_ser y;
                        if ((rc = gp_jobdoc_ser_read(&d->src, secs[m], d->src.t0, d->src.tc, &y))) {
                            gp_jobdoc_ser_free(&x);
                            goto out;
                        }
                        size_t ri = rank_of(d, steps[i]);
                        int from0 = gp_jobdoc_born(&d->src, steps[i]) && gp_jobdoc_born(&d->src, secs[m]);
                        rc = add_intervals(d, &x, &y, from0, ri == SIZE_MAX ? NULL : &d->rk[ri]);
                        gp_jobdoc_ser_free(&y);
                        if (rc) {
                            gp_jobdoc_ser_free(&x);
                            goto out;
                        }
                        break;
                    }
            gp_jobdoc_ser_free(&x);
        }
    double cpu = NAN;
    for (size_t i = 0; i < d->ncpu; i++)
        if (d->cpu[i].n)
            cpu = (isfinite(cpu) ? cpu : 0) +
                  gp_jobdoc_increase(&d->cpu[i], gp_jobdoc_born(&d->src, d->cpu[i].s));
    double rss_peak = NAN;
    if (d->nrss) {
        int64_t step = 0;
        for (size_t i = 0; i < d->nrss && !step; i++)
            step = gp_jobdoc_median_gap(&d->rss[i]);
        if (step <= 0)
            step = 1000;
        int64_t span = d->src.t1 - d->src.t0;
        if (span / step > 10000)
            step = span / 10000 + 1;
        struct gp_eval_range r;
        if (!gp_eval_range_init(&r, d->src.t0, d->src.t1, step, NULL, 0)) {
            double *v = malloc(r.npoints * 2 * sizeof *v);
            uint8_t *h = malloc(r.npoints * 2);
            if (!v || !h) {
                free(v);
                free(h);
                rc = GP_ENOMEM;
                goto out;
            }
            gp_jobdoc_grid_sum(&r, GP_EVAL_MAX, d->rss, d->nrss, v, h, v + r.npoints, h + r.npoints);
            for (size_t k = 0; k < r.npoints; k++)
                if (h[k] && !(rss_peak >= v[k]))
                    rss_peak = v[k];
            free(v);
            free(h);
        }
    }
    d->host_cpu = cpu;
    d->rss_peak = rss_peak;
    d->wall = (double)(d->src.t1 - d->src.t0) / 1e3;
    d->gf = gf;
    if ((rc = job_cost(d, targets, ntargets, stepnos, nstepnos, gf.cost, &d->co)))
        goto out;
    struct gp_jobdoc_goodput_in gi = {steps, secs, waits, stepnos, phases,
                                      nsteps, nsecs, nwaits, nstepnos, nphases};
    if ((rc = gp_jobdoc_goodput_gather(&d->src, &gi, &d->good)))
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
    for (size_t i = 0; i < nseries(d); i++) {
        const struct gp_store_series *s = series_at(d, i);
        if (!gp_jobdoc_name_is(s, "gpulse_job_model_flops"))
            continue;
        struct gp_str per = gp_jobdoc_lab(s, "per"), prec = gp_jobdoc_lab(s, "precision");
        enum gp_precision p;
        if (!gp_precision_parse(prec.ptr, prec.len, &p) || (in->precision >= 0 && (int)p != in->precision))
            continue;
        double v = gp_jobdoc_newest(&d->src, s);
        double *dst = gp_jobdoc_str_eq(per, (struct gp_str){"token", 5})    ? &in->flops_token
                      : gp_jobdoc_str_eq(per, (struct gp_str){"sample", 6}) ? &in->flops_sample
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
    char (*names)[96] = d->gpus.n ? calloc(d->gpus.n, sizeof *names) : NULL;
    const char **models = d->gpus.n ? calloc(d->gpus.n, sizeof *models) : NULL;
    in->models = models;
    in->ngpus = 0;
    if (names && models)
        for (size_t i = 0; i < d->gpus.n; i++) {
            if (!pick(d, i, ctx))
                continue;
            snprintf(names[i], sizeof names[i], "%.*s", (int)d->gpus.g[i].model.len, d->gpus.g[i].model.ptr);
            models[in->ngpus++] = d->gpus.g[i].model.len ? names[i] : NULL;
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
    gp_jobdoc_total(b, "model_flops_per_token", in.flops_token);
    gp_jobdoc_total(b, "model_flops_per_sample", in.flops_sample);
    gp_jobdoc_total(b, "model_flops_per_second", m.achieved_flops_per_second);
    gp_jobdoc_total(b, "peak_flops_per_second", m.peak_flops_per_second);
    gp_jobdoc_total(b, "mfu", m.mfu);
    gp_buf_puts(b, ",\"mfu_reason\":");
    gp_jobdoc_str_or_null(b, (struct gp_str){m.why, strlen(m.why)});
    gp_buf_puts(b, ",\"mfu_gap\":");
    gp_jobdoc_str_or_null(b, (struct gp_str){m.gap, strlen(m.gap)});
}

/* A rank: its node and its rank label's value ("" when it has none). */
struct rank_key {
    struct gp_str node, rank;
};

static bool pick_rank(struct doc *d, size_t i, void *ctx)
{
    const struct rank_key *k = ctx;
    return gp_jobdoc_str_eq(d->gpus.g[i].node, k->node) && gp_jobdoc_str_eq(d->gpus.g[i].rank, k->rank);
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
    for (size_t i = 0; i < nseries(d); i++) {
        const struct gp_store_series *s = series_at(d, i);
        for (int n = 0; n < 2; n++) {
            struct gp_jobdoc_ser x;
            if (!gp_jobdoc_name_is(s, names[n]) || !gp_jobdoc_str_eq(gp_jobdoc_node(s), k.node) ||
                !gp_jobdoc_str_eq(gp_jobdoc_lab(s, "rank"), k.rank) ||
                gp_jobdoc_ser_read(&d->src, s, d->src.t0, d->src.tc, &x))
                continue;
            if (x.n)
                gp_jobmodel_sum(sums[n], gp_jobdoc_increase(&x, gp_jobdoc_born(&d->src, s)));
            gp_jobdoc_ser_free(&x);
        }
    }
    double act_sum = 0, act_w = 0;
    for (size_t i = 0; i < d->gpus.n; i++)
        if (pick_rank(d, i, &k))
            act_sum += d->gpus.g[i].act_sum, act_w += d->gpus.g[i].act_w;
    struct gp_jobmodel_mfu_in in = {.activity = act_w > 0 ? act_sum / act_w : NAN, .tensor_active = NAN,
                                    .dram_active = NAN, .link_busy = NAN};
    gp_jobmodel_rank_rates(&rk, sf, &in);
    model_decl(d, &in);
    struct gp_jobmodel_mfu m;
    mfu_over(d, &in, pick_rank, &k, &m);
    gp_jobdoc_total(b, "mfu", m.mfu);
    gp_buf_puts(b, ",\"mfu_reason\":");
    gp_jobdoc_str_or_null(b, (struct gp_str){m.why, strlen(m.why)});
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
    gp_jobdoc_str_or_null(b, (struct gp_str){in->scheme, strlen(in->scheme)});
    /* gpulse run labels its job's info series with the command */
    struct gp_str command = {"", 0};
    for (size_t i = 0; i < nseries(d) && !command.len; i++)
        if (gp_jobdoc_name_is(series_at(d, i), "gpulse_job_info"))
            command = gp_jobdoc_lab(series_at(d, i), "command");
    gp_buf_puts(b, ",\"command\":");
    gp_jobdoc_str_or_null(b, command);
    gp_buf_printf(b, ",\"state\":\"%s\",\"exit_status\":", in->state);
    if (in->exit_status == GP_JOBDOC_NONE)
        gp_buf_puts(b, "null,\"signal\":null");
    else if (in->exit_status >= 128)
        gp_buf_printf(b, "%lld,\"signal\":%lld", (long long)in->exit_status,
                      (long long)(in->exit_status - 128));
    else
        gp_buf_printf(b, "%lld,\"signal\":null", (long long)in->exit_status);
    gp_buf_puts(b, ",\"start\":");
    gp_json_time(b, d->src.t0);
    gp_buf_puts(b, ",\"end\":");
    if (in->end_ms == GP_JOBDOC_NONE)
        gp_buf_puts(b, "null");
    else
        gp_json_time(b, in->end_ms);
    gp_jobdoc_total(b, "wall_seconds", wall);
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
                pr = gp_jobdoc_newest(&d->src, procs[k]);
                break;
            }
        gp_jobdoc_total(b, "processes", pr);
        char want[32] = "";
        if (r->rank != GP_JOBDOC_NONE)
            snprintf(want, sizeof want, "%lld", (long long)r->rank);
        put_rank_mfu(d, (struct rank_key){{r->node, strlen(r->node)}, {want, strlen(want)}}, &sf, b);
        struct gp_jobmodel_rank_figures rf;
        gp_jobmodel_rank_figures(d->rk, in->nranks, i, &rf);
        gp_jobdoc_total(b, "step_seconds_mean", rf.step_mean);
        gp_jobdoc_total(b, "step_seconds_best", rf.step_best);
        gp_jobdoc_total(b, "straggler_relative", rf.relative);
        gp_jobdoc_total(b, "straggler_individual", rf.individual);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"gpus\":[");
    for (size_t i = 0; i < d->gpus.n; i++) {
        const struct gp_jobdoc_gpu *g = &d->gpus.g[i];
        gp_buf_puts(b, i ? ",{\"node\":" : "{\"node\":");
        gp_json_str(b, g->node.ptr, g->node.len);
        gp_buf_puts(b, ",\"gpu\":");
        gp_json_str(b, g->gpu.ptr, g->gpu.len);
        gp_buf_puts(b, ",\"uuid\":");
        gp_jobdoc_str_or_null(b, g->uuid);
        gp_buf_puts(b, ",\"model\":");
        gp_jobdoc_str_or_null(b, g->model);
        gp_jobdoc_total(b, "memory_total_bytes", g->capacity);
        gp_jobdoc_total(b, "peak_memory_bytes", g->peak);
        gp_jobdoc_total(b, "peak_memory_ratio", gp_jobmodel_gpu_peak_ratio(&mg[i]));
        gp_jobdoc_total(b, "activity_avg", gp_jobmodel_gpu_activity(&mg[i]));
        gp_buf_puts(b, ",\"activity_source\":");
        if (g->act.n)
            gp_buf_printf(b, "\"%s\"", g->source);
        else
            gp_buf_puts(b, "null");
        gp_jobdoc_total(b, "gpu_seconds", g->seconds);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "],\"totals\":{\"gpu_seconds\":");
    gp_jobdoc_num(b, gf.gpu_seconds);
    gp_jobdoc_total(b, "gpu_hours", gf.gpu_hours);
    gp_jobdoc_total(b, "activity_avg", gf.activity_avg);
    gp_jobdoc_total(b, "activity_p50", gf.activity_p50);
    gp_jobdoc_total(b, "activity_p90", gf.activity_p90);
    gp_jobdoc_total(b, "activity_p99", gf.activity_p99);
    gp_jobdoc_total(b, "peak_gpu_memory_bytes", gf.peak_memory_bytes);
    gp_jobdoc_total(b, "peak_gpu_memory_ratio", gf.peak_memory_ratio);
    gp_jobdoc_total(b, "host_cpu_seconds", cpu);
    gp_jobdoc_total(b, "host_cpu_avg_cores", wall > 0 ? cpu / wall : NAN);
    gp_jobdoc_total(b, "host_rss_peak_bytes", rss_peak);
    gp_jobdoc_total(b, "steps", sf.steps);
    gp_jobdoc_total(b, "samples", sf.samples);
    gp_jobdoc_total(b, "tokens", sf.tokens);
    gp_jobdoc_total(b, "stepping_seconds", sf.stepping_seconds);
    gp_jobdoc_total(b, "samples_per_second", sf.samples_per_second);
    gp_jobdoc_total(b, "tokens_per_second", sf.tokens_per_second);
    gp_jobdoc_total(b, "steps_per_second", sf.steps_per_second);
    gp_buf_puts(b, ",\"step_seconds\":");
    if (isfinite(sf.mean) && isfinite(sf.max)) {
        gp_buf_puts(b, "{\"mean\":");
        gp_jobdoc_num(b, sf.mean);
        gp_jobdoc_total(b, "p50", sf.p50);
        gp_jobdoc_total(b, "p90", sf.p90);
        gp_jobdoc_total(b, "p99", sf.p99);
        gp_jobdoc_total(b, "max", sf.max);
        gp_buf_putc(b, '}');
    } else {
        gp_buf_puts(b, "null");
    }
    gp_jobdoc_total(b, "data_wait_ratio", sf.data_wait_ratio);
    gp_jobdoc_total(b, "loss_first", sf.loss_first);
    gp_jobdoc_total(b, "loss_last", sf.loss_last);
    gp_jobdoc_total(b, "loss_min", sf.loss_min);
    put_mfu(d, &sf, gf.activity_avg, b);
    gp_jobdoc_total(b, "price_per_gpu_hour", gf.price_per_gpu_hour);
    gp_jobdoc_total(b, "cost", gf.cost);
    gp_jobdoc_total(b, "cost_idle", gf.cost_idle);
    gp_jobdoc_total(b, "cost_unused_compute", gf.cost_unused_compute);
    gp_jobdoc_total(b, "cost_per_hour", co.per_hour);
    gp_jobdoc_total(b, "target_steps", co.target);
    gp_jobdoc_total(b, "projected_seconds_left", co.seconds_left);
    gp_jobdoc_total(b, "projected_cost_total", co.projected);
    gp_jobdoc_total(b, "budget", in->budget > 0 ? in->budget : NAN);
    gp_jobdoc_total(b, "budget_ratio", in->budget > 0 ? gf.cost / in->budget : NAN);
    gp_buf_puts(b, isfinite(gf.cost) ? ",\"currency\":\"USD\"}" : ",\"currency\":null}");
    gp_jobdoc_goodput_write(&d->good, b);
    if (in->series) {
        struct gp_jobdoc_charts_in ci = {d->src.t0, d->src.t1, &d->gpus, d->iv, d->niv, d->loss,
                                         d->cpu, d->rss, d->nloss, d->ncpu, d->nrss};
        int rc = gp_jobdoc_charts_write(&ci, b);
        if (rc)
            return rc;
    }
    gp_buf_puts(b, ",\"advice\":[]}");
    return GP_OK;
}

static void doc_free(struct doc *d)
{
    gp_jobdoc_gpus_free(&d->gpus);
    for (size_t i = 0; i < d->ncpu; i++)
        gp_jobdoc_ser_free(&d->cpu[i]);
    for (size_t i = 0; i < d->nrss; i++)
        gp_jobdoc_ser_free(&d->rss[i]);
    for (size_t i = 0; i < d->nloss; i++)
        gp_jobdoc_ser_free(&d->loss[i]);
    free(d->cpu);
    free(d->rss);
    free(d->loss);
    free(d->iv);
    free(d->steps);
    free(d->mg);
    free(d->procs);
    free(d->rk);
    gp_jobdoc_goodput_free(&d->good);
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
    d->src.st = st;
    d->src.agg = &d->agg;
    d->in = in;
    d->src.t0 = in->start_ms;
    d->src.t1 = in->range_end_ms > in->start_ms ? in->range_end_ms : in->start_ms;
    d->src.tc = in->end_ms != GP_JOBDOC_NONE ? d->src.t1 + GP_JOBDOC_TAIL_MS : d->src.t1;
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
     * families that need them, the others as aggregates. */
    size_t nm = 1;
    if (!raw && gp_storage_pushdown(st, m, 1, d->src.t0) &&
        !(rc = gp_matcher_init(&m[1], GP_MATCH_RE, "__name__", gp_jobdoc_cluster_raw_names(in->series), err,
                               errlen)))
        nm = 2;
    int64_t grid = in->series ? gp_jobdoc_grid_step(d->src.t0, d->src.t1) : 0;
    if (nm == 2 && (rc = gp_jobdoc_cluster_read(st, in->id, d->src.t0, d->src.t1, d->src.tc, grid, in->series,
                                                &d->agg)))
        rc = gp_seterr(err, errlen, rc, "asking the cluster for the job's aggregates: %s",
                       rc == GP_ENET ? gp_storage_last_error() : gp_strerror(rc));
    if (!rc && (rc = gp_storage_select(st, m, nm, d->src.t0, d->src.tc, &d->sel)))
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
    if (!rc && d.good.n)
        out->goodput = d.good.f;
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
