/* jobmodel.c - the job model's arithmetic (jobmodel.h). */
#include "query/jobmodel.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define STEP_MIN_S 1e-6
#define STEP_RATIO 1.01

void gp_jobmodel_sum(double *sum, double v)
{
    if (isfinite(v))
        *sum = (isfinite(*sum) ? *sum : 0) + v;
}

void gp_jobmodel_steps_init(struct gp_jobmodel_steps *m)
{
    memset(m->hist, 0, sizeof m->hist);
    m->steps = m->seconds = m->wait = m->samples = m->tokens = NAN;
    m->start_s = m->end_s = m->max = NAN;
    m->loss_first = m->loss_last = m->loss_min = m->loss_first_t = m->loss_last_t = NAN;
}

void gp_jobmodel_loss(struct gp_jobmodel_steps *m, double t, double loss)
{
    if (!isfinite(loss) || !isfinite(t))
        return;
    if (!(m->loss_first_t <= t))
        m->loss_first_t = t, m->loss_first = loss;
    if (!(m->loss_last_t > t))
        m->loss_last_t = t, m->loss_last = loss;
    if (!(m->loss_min <= loss))
        m->loss_min = loss;
}

static int step_bucket(double s)
{
    if (!(s > STEP_MIN_S))
        return 0;
    int b = (int)(log(s / STEP_MIN_S) / log(STEP_RATIO));
    return b < 0 ? 0 : b >= GP_JOBMODEL_STEP_BUCKETS ? GP_JOBMODEL_STEP_BUCKETS - 1 : b;
}

static void dist_add(struct gp_jobmodel_steps *m, double n, double each)
{
    struct gp_jobmodel_bucket *b = &m->hist[step_bucket(each)];
    b->w += n;
    b->sum += n * each;
    if (!(m->max >= each))
        m->max = each;
}

void gp_jobmodel_step(struct gp_jobmodel_steps *m, double t_end, double seconds, double wait,
                      double samples, double tokens)
{
    if (!isfinite(seconds) || seconds < 0 || !isfinite(t_end))
        return;
    gp_jobmodel_sum(&m->steps, 1);
    gp_jobmodel_sum(&m->seconds, seconds);
    gp_jobmodel_sum(&m->wait, wait);
    gp_jobmodel_sum(&m->samples, samples);
    gp_jobmodel_sum(&m->tokens, tokens);
    /* a step's seconds run from the previous step's end (the protocol) */
    double start = t_end - seconds;
    if (!(m->start_s <= start))
        m->start_s = start;
    if (!(m->end_s >= t_end))
        m->end_s = t_end;
    dist_add(m, 1, seconds);
}

void gp_jobmodel_interval(struct gp_jobmodel_steps *m, double n, double seconds)
{
    if (n > 0 && isfinite(seconds) && seconds >= 0)
        dist_add(m, n, seconds / n);
}

/* Nearest rank over weights: the mean of the bucket where the cumulative
 * weight reaches q of the whole. NaN when empty. */
static double pct(const struct gp_jobmodel_bucket *b, size_t nb, double q)
{
    double total = 0;
    for (size_t i = 0; i < nb; i++)
        total += b[i].w;
    if (!(total > 0))
        return NAN;
    double want = q * total, cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += b[i].w;
        if (b[i].w > 0 && cum >= want * (1 - 1e-12))
            return b[i].sum / b[i].w;
    }
    for (size_t i = nb; i-- > 0;)
        if (b[i].w > 0)
            return b[i].sum / b[i].w;
    return NAN;
}

void gp_jobmodel_step_figures(const struct gp_jobmodel_steps *m, struct gp_jobmodel_step_figures *f)
{
    f->steps = m->steps;
    f->samples = m->samples;
    f->tokens = m->tokens;
    /* throughput over the stepping span: start-up and the tail after the
     * last step do not dilute it */
    double span = m->end_s > m->start_s ? m->end_s - m->start_s : NAN;
    f->stepping_seconds = span;
    f->steps_per_second = m->steps > 0 ? m->steps / span : NAN;
    f->samples_per_second = m->samples / span;
    f->tokens_per_second = m->tokens / span;
    bool any = m->steps > 0 && isfinite(m->seconds);
    f->mean = any ? m->seconds / m->steps : NAN;
    f->p50 = any ? pct(m->hist, GP_JOBMODEL_STEP_BUCKETS, 0.50) : NAN;
    f->p90 = any ? pct(m->hist, GP_JOBMODEL_STEP_BUCKETS, 0.90) : NAN;
    f->p99 = any ? pct(m->hist, GP_JOBMODEL_STEP_BUCKETS, 0.99) : NAN;
    f->max = any ? m->max : NAN;
    f->data_wait_ratio = m->seconds > 0 ? m->wait / m->seconds : NAN;
    f->loss_first = m->loss_first;
    f->loss_last = m->loss_last;
    f->loss_min = m->loss_min;
}

long long gp_jobmodel_rank(long long rank, size_t nranks)
{
    return rank >= 0 ? rank : nranks == 1 ? 0 : -1;
}

long long gp_jobmodel_world_size(long long world_size, size_t nranks)
{
    return world_size > 0 ? world_size : nranks == 1 ? 1 : -1;
}

void gp_jobmodel_gpus_init(struct gp_jobmodel_gpus *a)
{
    memset(a, 0, sizeof *a);
}

void gp_jobmodel_activity(struct gp_jobmodel_gpus *a, double v, double w)
{
    if (!isfinite(v) || !(w > 0))
        return;
    v = fmin(fmax(v, 0.0), 1.0);
    struct gp_jobmodel_bucket *b = &a->act[lround(v * (GP_JOBMODEL_ACT_BUCKETS - 1))];
    b->w += w;
    b->sum += v * w;
}

void gp_jobmodel_busy(double *idle_s, double *unused_s, double a, double w)
{
    a = isnan(a) ? 0 : fmin(fmax(a, 0.0), 1.0);
    gp_jobmodel_sum(idle_s, a < GP_JOBMODEL_IDLE_ACTIVITY ? w : 0);
    gp_jobmodel_sum(unused_s, (1 - a) * w);
}

double gp_jobmodel_gpu_activity(const struct gp_jobmodel_gpu *g)
{
    return g->act_w > 0 ? g->act_sum / g->act_w : NAN;
}

double gp_jobmodel_gpu_peak_ratio(const struct gp_jobmodel_gpu *g)
{
    return g->capacity > 0 ? g->peak / g->capacity : NAN;
}

void gp_jobmodel_gpu_figures(const struct gp_jobmodel_gpus *a, const struct gp_jobmodel_gpu *g,
                             size_t n, bool held_none, double fallback_price,
                             struct gp_jobmodel_gpu_figures *f)
{
    double secs = NAN, act_sum = 0, act_w = 0, peak = NAN, ratio = NAN, cost = NAN, priced = 0;
    double idle = 0, unused = 0;
    bool busy_known = false;
    for (size_t i = 0; i < n; i++) {
        gp_jobmodel_sum(&secs, g[i].seconds);
        act_sum += g[i].act_sum;
        act_w += g[i].act_w;
        if (isfinite(g[i].peak) && !(peak >= g[i].peak))
            peak = g[i].peak;
        double r = gp_jobmodel_gpu_peak_ratio(&g[i]);
        if (isfinite(r) && !(ratio >= r))
            ratio = r;
        busy_known |= isfinite(g[i].idle_s);
        if (g[i].price > 0 && isfinite(g[i].price) && g[i].seconds > 0) {
            double per_s = g[i].price / 3600.0;
            gp_jobmodel_sum(&cost, g[i].seconds * per_s);
            priced += g[i].seconds;
            if (isfinite(g[i].idle_s))
                idle += g[i].idle_s * per_s, unused += g[i].unused_s * per_s;
        }
    }
    if (!n && held_none)
        secs = cost = 0; /* no GPU held: nothing to pay */
    f->gpu_seconds = secs;
    f->gpu_hours = secs / 3600.0;
    f->activity_avg = act_w > 0 ? act_sum / act_w : NAN;
    f->activity_p50 = pct(a->act, GP_JOBMODEL_ACT_BUCKETS, 0.50);
    f->activity_p90 = pct(a->act, GP_JOBMODEL_ACT_BUCKETS, 0.90);
    f->activity_p99 = pct(a->act, GP_JOBMODEL_ACT_BUCKETS, 0.99);
    f->peak_memory_bytes = peak;
    f->peak_memory_ratio = ratio;
    f->cost = cost;
    f->cost_idle = priced > 0 && busy_known ? idle : NAN;
    f->cost_unused_compute = priced > 0 && busy_known ? unused : NAN;
    f->price_per_gpu_hour = priced > 0 ? cost / (priced / 3600.0) : fallback_price > 0 ? fallback_price : NAN;
}

void gp_jobmodel_rank_init(struct gp_jobmodel_rank *r)
{
    r->steps = r->seconds = 0;
    r->best = r->tokens = r->samples = NAN;
}

void gp_jobmodel_rank_merge(struct gp_jobmodel_rank *into, const struct gp_jobmodel_rank *r)
{
    into->steps += r->steps;
    into->seconds += r->seconds;
    if (r->best > 0 && !(into->best <= r->best))
        into->best = r->best;
    gp_jobmodel_sum(&into->tokens, r->tokens);
    gp_jobmodel_sum(&into->samples, r->samples);
}

void gp_jobmodel_rank_rates(const struct gp_jobmodel_rank *r, const struct gp_jobmodel_step_figures *job,
                            struct gp_jobmodel_mfu_in *in)
{
    in->tokens_per_second = r->tokens / job->stepping_seconds;
    in->samples_per_second = r->samples / job->stepping_seconds;
}

void gp_jobmodel_rank_interval(struct gp_jobmodel_rank *r, double n, double seconds)
{
    if (!(n > 0) || !(seconds >= 0))
        return;
    r->steps += n;
    r->seconds += seconds;
    double mean = seconds / n;
    if (mean > 0 && !(r->best <= mean))
        r->best = mean;
}

static double rank_mean(const struct gp_jobmodel_rank *r)
{
    return r->steps > 0 && r->seconds > 0 ? r->seconds / r->steps : NAN;
}

void gp_jobmodel_rank_figures(const struct gp_jobmodel_rank *r, size_t n, size_t i,
                              struct gp_jobmodel_rank_figures *f)
{
    double fastest = NAN;
    for (size_t k = 0; k < n; k++) {
        double m = rank_mean(&r[k]);
        if (!(fastest <= m))
            fastest = isnan(m) ? fastest : m;
    }
    f->step_mean = rank_mean(&r[i]);
    f->step_best = isnan(f->step_mean) ? NAN : r[i].best;
    f->relative = fastest / f->step_mean;
    f->individual = f->step_best / f->step_mean;
}

/* MFU well under activity: the GPU is "active" without doing model math.
 * The hardware figures name the likeliest cause. */
#define GAP_ACTIVITY 0.5 /* activity at least this */
#define GAP_RATIO 0.5    /* and MFU under this share of it */
#define BUSY 0.5         /* a DRAM or link figure this high is the bottleneck */
#define TENSOR_IDLE 0.2  /* tensor cores busy less than this */

static void explain_gap(const struct gp_jobmodel_mfu_in *in, struct gp_jobmodel_mfu *o)
{
    o->gap[0] = '\0';
    if (!isfinite(o->mfu) || !(in->activity >= GAP_ACTIVITY) || o->mfu >= GAP_RATIO * in->activity)
        return;
    int n = snprintf(o->gap, sizeof o->gap, "GPU activity %.0f%% but MFU %.1f%%: ", in->activity * 100,
                     o->mfu * 100);
    if (n < 0 || (size_t)n >= sizeof o->gap)
        return;
    char *p = o->gap + n;
    size_t left = sizeof o->gap - (size_t)n;
    if (in->link_busy >= BUSY)
        snprintf(p, left, "communication: the links are %.0f%% busy, and time in collectives "
                 "computes nothing for the model", in->link_busy * 100);
    else if (in->dram_active >= BUSY)
        snprintf(p, left, "memory-bound: DRAM is %.0f%% busy, the kernels wait on memory more than "
                 "on math (fuse kernels, larger batches)", in->dram_active * 100);
    else if (in->tensor_active < TENSOR_IDLE)
        snprintf(p, left, "tensor cores busy only %.0f%%: math outside the tensor cores (fp32, "
                 "element-wise or small kernels)", in->tensor_active * 100);
    else
        snprintf(p, left, "activity counts any running kernel: small kernels, launch overhead, "
                 "memory-bound or communication kernels keep the GPU active without model math");
}

void gp_jobmodel_mfu(const struct gp_jobmodel_mfu_in *in, struct gp_jobmodel_mfu *o)
{
    o->achieved_flops_per_second = o->peak_flops_per_second = o->mfu = NAN;
    o->per = NULL;
    o->why[0] = o->gap[0] = '\0';
    bool tok = in->flops_token > 0, smp = in->flops_sample > 0;
    if (tok && in->tokens_per_second >= 0)
        o->per = "token", o->achieved_flops_per_second = in->flops_token * in->tokens_per_second;
    else if (smp && in->samples_per_second >= 0)
        o->per = "sample", o->achieved_flops_per_second = in->flops_sample * in->samples_per_second;
    const char *prec = in->precision >= 0 ? gp_precision_name((enum gp_precision)in->precision) : NULL;
    double peak = 0;
    const char *unknown = NULL, *lacking = NULL;
    for (size_t i = 0; i < in->ngpus && prec; i++) {
        const struct gp_gpumodel *m = gp_gpumodel_find(in->models[i]);
        double t = gp_gpumodel_peak_tflops(m, (enum gp_precision)in->precision);
        if (!m && !unknown)
            unknown = in->models[i] ? in->models[i] : "";
        else if (m && !(t > 0) && !lacking)
            lacking = m->short_name;
        peak += t * 1e12;
    }
    if (prec && in->ngpus && !unknown && !lacking)
        o->peak_flops_per_second = peak;
    if (!tok && !smp)
        snprintf(o->why, sizeof o->why, "no model FLOPs declared (a model record: gpulse.model())");
    else if (!o->per)
        snprintf(o->why, sizeof o->why, "the steps reported no %s", tok ? "tokens" : "samples");
    else if (!prec)
        snprintf(o->why, sizeof o->why, "no precision declared");
    else if (!in->ngpus)
        snprintf(o->why, sizeof o->why, "the job held no GPU");
    else if (unknown)
        snprintf(o->why, sizeof o->why, "GPU model '%s' is not in the model table", unknown);
    else if (lacking)
        snprintf(o->why, sizeof o->why, "the model table has no %s peak for the %s", prec, lacking);
    else if (!(o->achieved_flops_per_second >= 0))
        snprintf(o->why, sizeof o->why, "no throughput: the job has no stepping span");
    else
        o->mfu = o->achieved_flops_per_second / peak;
    explain_gap(in, o);
}
