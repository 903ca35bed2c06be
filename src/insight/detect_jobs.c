/*
 * detect_jobs.c - the detectors that compare within a job or judge a
 * job as a whole: stragglers and budgets.
 *
 * A straggler is judged against its own job's peers with robust
 * statistics (median and median absolute deviation), so one slow rank
 * cannot hide itself by pulling the mean, and a job of identical ranks
 * (MAD 0) does not turn microseconds into outliers: the spread has a
 * floor relative to the median. Ranks are compared by their mean step
 * time where at least 3 report steps; otherwise the job's GPUs are
 * compared by their mean activity. The cause is looked for on the
 * straggler's GPU: a power limit set under its peers' (an operator's
 * `nvidia-smi -pl`, the power capping it explains), throttling, a lower
 * SM clock than its peers, PCIe replays.
 *
 * Scratch for the per-job medians is allocated once per evaluation.
 */
#include "detect_util.h"

#include "query/goodput.h"

#include "lib/err.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STRAG_MIN_PEERS 3
#define STRAG_STEP_FLOOR 0.02  /* MAD floor: 2 % of the median step time */
#define STRAG_ACT_FLOOR 0.05   /* 5 % of the median activity */
#define STRAG_BUSY 0.5
#define STRAG_CLOCK_GAP 0.05   /* a clock 5 % under the peers' median */
#define STRAG_LIMIT_GAP 0.05   /* a power limit 5 % under the peers' median */

/* What the GPU of a straggler shows over the window. */
struct gpu_look {
    double throttle_share; /* points with a thermal or power reason set */
    double busy_clock;     /* mean SM clock while busy, Hz; NaN: none */
    double replays;        /* PCIe replay counter increase */
    double activity;       /* mean activity; NaN: none */
    double power_limit;    /* mean power limit, W; NaN: none */
};

/* The job's peers, for a straggler's cause: medians over its GPUs. */
struct peers {
    double clock; /* busy SM clock, Hz; NaN: none */
    double limit; /* power limit, W; NaN: none */
};

static struct gpu_look look(const struct gp_view *v, const struct gp_view_gpu *g)
{
    const double *th = gp_view_gpu_at(v, g, GP_VGM_THROTTLE_THERMAL);
    const double *pw = gp_view_gpu_at(v, g, GP_VGM_THROTTLE_POWER);
    const double *ck = gp_view_gpu_at(v, g, GP_VGM_SM_CLOCK);
    const double *pl = gp_view_gpu_at(v, g, GP_VGM_POWER_LIMIT);
    unsigned nr = 0, nt = 0, nc = 0, na = 0, nl = 0;
    double cs = 0, as = 0, ls = 0;
    for (unsigned k = 0; k < v->npoints; k++) {
        if (!isnan(pl[k])) {
            nl++;
            ls += pl[k];
        }
        bool seen = !isnan(th[k]) || !isnan(pw[k]);
        nr += seen;
        nt += seen && (th[k] >= 0.5 || pw[k] >= 0.5);
        double a = gp_view_activity(v, g, k, NULL);
        if (!isnan(a)) {
            na++;
            as += a;
            if (a >= STRAG_BUSY && !isnan(ck[k])) {
                nc++;
                cs += ck[k];
            }
        }
    }
    return (struct gpu_look){
        nr ? (double)nt / nr : 0,
        nc ? cs / nc : NAN,
        gp_det_increase(gp_view_gpu_at(v, g, GP_VGM_PCIE_REPLAY), v->npoints),
        na ? as / na : NAN,
        nl ? ls / nl : NAN,
    };
}

/* The median SM clock while busy (Hz) and power limit (W) of job j's
 * GPUs (NaN: none), using scratch (j->ngpus doubles). Computed once per
 * job, when a cause is first written. */
static struct peers peer_figures(const struct gp_view *v, const struct gp_view_job *j, double *scratch)
{
    struct peers p = {NAN, NAN};
    for (int which = 0; which < 2; which++) {
        unsigned n = 0;
        for (unsigned a = 0; a < j->ngpus; a++) {
            struct gpu_look l = look(v, &v->gpus[j->gpus[a]]);
            double x = which ? l.power_limit : l.busy_clock;
            if (!isnan(x))
                scratch[n++] = x;
        }
        *(which ? &p.limit : &p.clock) = n ? gp_det_median(scratch, n) : NAN;
    }
    return p;
}

/* Writes the likely cause on GPU gi into out: what its GPU shows that
 * its peers' do not (peers: the job's medians). */
static void cause(const struct gp_view *v, unsigned gi, struct peers peers, char *out, size_t len)
{
    if (gi == UINT_MAX) {
        gp_det_printf(out, len, "its GPU is not known: check its node for other load");
        return;
    }
    struct gpu_look me = look(v, &v->gpus[gi]);
    if (!isnan(me.power_limit) && !isnan(peers.limit) && me.power_limit < (1 - STRAG_LIMIT_GAP) * peers.limit) {
        char capped[64] = ""; /* GPUs without clock-event reasons (AMD) do not say */
        if (me.throttle_share > 0)
            gp_det_printf(capped, sizeof capped, " (power capping on %.0f %% of points)",
                          100 * me.throttle_share);
        gp_det_printf(out, len,
                      "GPU %s is held at a %.0f W power limit vs %.0f W on its peers%s: restore its "
                      "limit (nvidia-smi -pl)",
                      v->gpus[gi].gpu, me.power_limit, peers.limit, capped);
    } else if (me.throttle_share > 0)
        gp_det_printf(out, len, "thermal or power throttling on %.0f %% of points of GPU %s",
                      100 * me.throttle_share, v->gpus[gi].gpu);
    else if (!isnan(me.busy_clock) && !isnan(peers.clock) &&
             me.busy_clock < (1 - STRAG_CLOCK_GAP) * peers.clock)
        gp_det_printf(out, len, "GPU %s runs its SMs at %.0f MHz vs %.0f MHz on its peers",
                      v->gpus[gi].gpu, me.busy_clock / 1e6, peers.clock / 1e6);
    else if (me.replays > 0)
        gp_det_printf(out, len, "PCIe replays on GPU %s rose by %.0f", v->gpus[gi].gpu,
                      me.replays);
    else
        gp_det_printf(out, len, "nothing seen on GPU %s: check its node for other load",
                      v->gpus[gi].gpu);
}

/* Per-rank mean step time over the window; NaN when it did not step. */
static double step_time(const struct gp_view *v, const struct gp_view_proc *p, double *steps)
{
    *steps = gp_det_increase(gp_view_proc_at(v, p, GP_VPM_STEPS), v->npoints);
    double secs = gp_det_increase(gp_view_proc_at(v, p, GP_VPM_STEP_SECONDS), v->npoints);
    return *steps > 0 && secs > 0 ? secs / *steps : NAN;
}

/* Median and MAD of x[0..n) using tmp (n doubles). */
static void med_mad(const double *x, unsigned n, double *tmp, double *med, double *mad)
{
    for (unsigned i = 0; i < n; i++)
        tmp[i] = x[i];
    *med = gp_det_median(tmp, n);
    for (unsigned i = 0; i < n; i++)
        tmp[i] = fabs(x[i] - *med);
    *mad = gp_det_median(tmp, n);
}

/* Straggler by step time over the job's reporting ranks (>= 3). */
static int by_steps(const struct gp_detect_ctx *c, const struct gp_view_job *j,
                    const unsigned *proc_gpu, double *x, double *tmp, unsigned *idx, unsigned n)
{
    const struct gp_view *v = c->view;
    double med, mad;
    med_mad(x, n, tmp, &med, &mad);
    struct peers peers = {NAN, NAN};
    bool have_peers = false;
    struct gp_observation o;
    for (unsigned r = 0; r < n; r++) {
        const struct gp_view_proc *p = &v->procs[idx[r]];
        double z = gp_det_robust_z(x[r], med, mad, STRAG_STEP_FLOOR);
        gp_det_key_proc(&o, GP_DET_STRAGGLER, p);
        unsigned gi = proc_gpu[idx[r]];
        if (gi != UINT_MAX)
            memcpy(o.key.gpu, v->gpus[gi].gpu, sizeof o.key.gpu);
        if (gp_det_judge(c, &o, z, true)) {
            char who[320], why[200], win[96];
            gp_det_proc_name(p, who, sizeof who);
            gp_det_window_proc(v, p, 0, win, sizeof win);
            if (!have_peers) {
                peers = peer_figures(v, j, tmp);
                have_peers = true;
            }
            cause(v, gi, peers, why, sizeof why);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s%s%s is a straggler: %.3f s a step vs %.3f s median of %u ranks "
                          "(z %.1f); likely cause: %s",
                          who, gi != UINT_MAX ? " GPU " : "", gi != UINT_MAX ? v->gpus[gi].gpu : "",
                          x[r], med, n, z, why);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "mean step time over %s: %.4f s; job %s: median %.4f s, MAD %.4f s "
                          "(floor %.0f %% of the median), %u ranks; robust z 0.6745*(x-median)/"
                          "MAD = %.2f; threshold %.2f, clear %.2f",
                          win, x[r], j->job, med, mad, 100 * STRAG_STEP_FLOOR, n, z,
                          c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* Straggler by activity over the job's GPUs (>= 3): far below the median. */
static int by_activity(const struct gp_detect_ctx *c, const struct gp_view_job *j, double *x,
                       double *tmp, unsigned *idx, unsigned n)
{
    const struct gp_view *v = c->view;
    double med, mad;
    med_mad(x, n, tmp, &med, &mad);
    struct peers peers = {NAN, NAN};
    bool have_peers = false;
    struct gp_observation o;
    for (unsigned r = 0; r < n; r++) {
        const struct gp_view_gpu *g = &v->gpus[idx[r]];
        /* how far below the median: the score of the negated values */
        double z = gp_det_robust_z(-x[r], -med, mad, STRAG_ACT_FLOOR);
        gp_det_key_gpu(&o, GP_DET_STRAGGLER, g);
        if (gp_det_judge(c, &o, z, true)) {
            char who[320], why[200], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            if (!have_peers) {
                peers = peer_figures(v, j, tmp);
                have_peers = true;
            }
            cause(v, idx[r], peers, why, sizeof why);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s lags its job: activity %.0f %% vs %.0f %% median of %u GPUs (z %.1f); "
                          "likely cause: %s",
                          who, 100 * x[r], 100 * med, n, z, why);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "mean activity over %s: %.3f; job %s: median %.3f, MAD %.3f (floor "
                          "%.0f %% of the median), %u GPUs (fewer than %d ranks report steps); "
                          "robust z 0.6745*(median-x)/MAD = %.2f; threshold %.2f, clear %.2f",
                          win, x[r], j->job, med, mad, 100 * STRAG_ACT_FLOOR, n, STRAG_MIN_PEERS,
                          z, c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * STRAGGLER (above): a robust z-score per rank of a job, 0.6745 *
 * (x - median) / MAD with the MAD floored at 2 % of the median, where x
 * is the rank's mean step time over the window (step seconds / steps);
 * for jobs with fewer than 3 stepping ranks but at least 3 GPUs, x is a
 * GPU's mean activity and the score counts how far below the median it
 * is (floor 5 %). Jobs with fewer than 3 peers are not judged.
 */
int gp_det_straggler(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    unsigned most = 1;
    for (unsigned ji = 0; ji < v->njobs; ji++) {
        most = v->jobs[ji].nprocs > most ? v->jobs[ji].nprocs : most;
        most = v->jobs[ji].ngpus > most ? v->jobs[ji].ngpus : most;
    }
    unsigned *gpu_proc = NULL, *proc_gpu = NULL;
    double *x = malloc(most * sizeof *x), *tmp = malloc(most * sizeof *tmp);
    unsigned *idx = malloc(most * sizeof *idx);
    int rc = x && tmp && idx ? gp_det_match_procs(v, &gpu_proc, &proc_gpu) : GP_ENOMEM;
    for (unsigned ji = 0; ji < v->njobs && rc == GP_OK; ji++) {
        const struct gp_view_job *j = &v->jobs[ji];
        unsigned n = 0;
        for (unsigned b = 0; b < j->nprocs; b++) {
            double steps, t = step_time(v, &v->procs[j->procs[b]], &steps);
            if (!isnan(t)) {
                x[n] = t;
                idx[n++] = j->procs[b];
            }
        }
        if (n >= STRAG_MIN_PEERS) {
            rc = by_steps(c, j, proc_gpu, x, tmp, idx, n);
            continue;
        }
        n = 0;
        for (unsigned a = 0; a < j->ngpus; a++) {
            const struct gp_view_gpu *g = &v->gpus[j->gpus[a]];
            unsigned cnt = 0;
            double sum = 0;
            for (unsigned k = 0; k < v->npoints; k++) {
                double act = gp_view_activity(v, g, k, NULL);
                if (!isnan(act)) {
                    cnt++;
                    sum += act;
                }
            }
            if (cnt && cnt * 2 >= v->npoints) {
                x[n] = sum / cnt;
                idx[n++] = j->gpus[a];
            }
        }
        if (n >= STRAG_MIN_PEERS)
            rc = by_activity(c, j, x, tmp, idx, n);
    }
    free(x);
    free(tmp);
    free(idx);
    free(gpu_proc);
    free(proc_gpu);
    return rc;
}

/*
 * BUDGET (above): the job's cost so far / its configured budget, for
 * jobs with a budget and a known cost.
 */
int gp_det_budget(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned ji = 0; ji < v->njobs; ji++) {
        const struct gp_view_job *j = &v->jobs[ji];
        if (!(j->budget > 0) || isnan(j->cost))
            continue;
        double ratio = j->cost / j->budget;
        gp_det_key_job(&o, GP_DET_BUDGET, j);
        if (gp_det_judge(c, &o, ratio, true)) {
            gp_det_printf(o.summary, sizeof o.summary,
                          "job %s has cost $%.2f of its $%.2f budget (%.0f %%) on %u %s", j->job,
                          j->cost, j->budget, 100 * ratio, j->ngpus,
                          gp_plural(j->ngpus, "GPU", "GPUs"));
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "cost so far $%.2f, budget $%.2f, ratio %.3f; %u %s, %u %s in the "
                          "window; threshold %.2f, clear %.2f",
                          j->cost, j->budget, ratio, j->ngpus, gp_plural(j->ngpus, "GPU", "GPUs"),
                          j->nprocs, gp_plural(j->nprocs, "step reporter", "step reporters"),
                          c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * LOW_GOODPUT: the job's goodput so far (productive step time / the
 * ranks' wall time, docs/jobs.md "Goodput"), bad below, for jobs with at
 * least GP_DET_GOODPUT_MIN_S of rank time (start-up alone would make
 * every young job look bad); the alert names the biggest badput.
 */
#define GP_DET_GOODPUT_MIN_S 300.0

int gp_det_low_goodput(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned ji = 0; ji < v->njobs; ji++) {
        const struct gp_view_job *j = &v->jobs[ji];
        if (isnan(j->goodput_ratio) || !(j->goodput_wall_s >= GP_DET_GOODPUT_MIN_S))
            continue;
        gp_det_key_job(&o, GP_DET_LOW_GOODPUT, j);
        if (gp_det_judge(c, &o, j->goodput_ratio, false)) {
            const char *bad = j->badput >= 0 ? gp_goodput_part_name(j->badput) : "none";
            double share = j->badput >= 0 ? j->badput_s / j->goodput_wall_s : 0;
            gp_det_printf(o.summary, sizeof o.summary,
                          "job %s trained the model %.0f %% of its time; the biggest badput is %s "
                          "(%.0f %%)",
                          j->job, 100 * j->goodput_ratio, bad, 100 * share);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "goodput %.3f over %.0f rank-seconds; %s %.1f s; threshold %.2f, clear %.2f",
                          j->goodput_ratio, j->goodput_wall_s, bad, j->badput_s, c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}
