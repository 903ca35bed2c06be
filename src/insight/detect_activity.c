/*
 * detect_activity.c - the detectors that judge how a GPU's time is
 * spent: saturated, idle while a job holds its memory, starved of input
 * data, busy without tensor cores, bound by memory bandwidth.
 *
 * Activity is GPM SM activity where the GPU reports it, else coarse
 * utilization (gp_view_activity), per point. Each detector makes one
 * pass over the few series it needs; the shape tests (bursts, dips) are
 * shares of points above or below fixed levels, so a compute-bound job
 * with short dips between batches (a few low points, a high mean) is
 * told from a starved one (a low mean made of idle stretches and bursts).
 */
#include "detect_util.h"

#include "lib/err.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define LOW_ACT 0.2   /* a point this idle or less is "idle" */
#define HIGH_ACT 0.5  /* a point this busy or more is "busy" */
#define IDLE_MIN_BYTES GP_DET_GIB
#define IDLE_MIN_SHARE 0.05
#define IDLE_MAX_POINT 0.2 /* no point of an idle GPU above this */
#define STARVE_MIN_IDLE_SHARE 0.25
#define STARVE_MIN_BUSY_SHARE 0.1
#define STARVE_MIN_PEAK 0.6
#define STARVE_PCIE_RATIO 2.0
#define STARVE_PCIE_MIN 100e6 /* bytes/s during idle points */
#define TENSOR_BUSY 0.3
#define MEMBOUND_MAX_SM 0.5

/* Activity over the window: one pass, with the shares the shape tests use. */
struct act {
    unsigned n, nlow, nhigh;
    double mean, min, max;
    bool sm;              /* SM activity (GPM), else coarse utilization */
    double rx_low, rx_work; /* mean PCIe RX at idle and at the other points; NaN: none */
};

static struct act activity(const struct gp_view *v, const struct gp_view_gpu *g)
{
    const double *sm = gp_view_gpu_at(v, g, GP_VGM_SM_ACTIVE);
    const double *ut = gp_view_gpu_at(v, g, GP_VGM_UTIL);
    const double *rx = gp_view_gpu_at(v, g, GP_VGM_PCIE_RX);
    struct act a = {0, 0, 0, NAN, NAN, NAN, false, NAN, NAN};
    double sum = 0, mn = INFINITY, mx = -INFINITY, rl = 0, rh = 0;
    unsigned nrl = 0, nrh = 0, nsm = 0;
    for (unsigned k = 0; k < v->npoints; k++) {
        double x = sm[k];
        if (isnan(x))
            x = ut[k];
        else
            nsm++;
        if (isnan(x))
            continue;
        a.n++;
        sum += x;
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        if (x <= LOW_ACT) {
            a.nlow++;
            if (!isnan(rx[k])) {
                rl += rx[k];
                nrl++;
            }
        } else {
            a.nhigh += x >= HIGH_ACT;
            if (!isnan(rx[k])) {
                rh += rx[k];
                nrh++;
            }
        }
    }
    if (!a.n)
        return a;
    a.mean = sum / a.n;
    a.min = mn;
    a.max = mx;
    a.sm = nsm * 2 >= a.n;
    a.rx_low = nrl ? rl / nrl : NAN;
    a.rx_work = nrh ? rh / nrh : NAN;
    return a;
}

static const char *act_name(const struct act *a)
{
    return a->sm ? "SM activity" : "utilization";
}

/*
 * SATURATED (above): mean SM activity (GPM) over the window; judged
 * where at least half the points have an SM activity reading. Coarse
 * utilization is not judged: it reads 100 % whenever any kernel runs,
 * however few SMs it keeps busy, so it would call most busy cards
 * saturated.
 */
int gp_det_saturated(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        struct act a = activity(v, g);
        if (!a.sm || a.n * 2 < v->npoints)
            continue;
        gp_det_key_gpu(&o, GP_DET_SATURATED, g);
        if (gp_det_judge(c, &o, a.mean, true)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s is fully busy: %s %.0f %% on average over %s (lowest %.0f %%)", who,
                          act_name(&a), 100 * a.mean, win, 100 * a.min);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "%s over %s: mean %.3f, min %.3f, max %.3f, %u points with a reading; "
                          "threshold %.2f, clear %.2f",
                          act_name(&a), win, a.mean, a.min, a.max, a.n, c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * IDLE_ALLOCATED (below): mean activity over the window of a GPU a job
 * holds. Bad only when its memory used (newest reading) is at least
 * 1 GiB and 5 % of the card, and no point rose above 0.2 (a job in a
 * quiet phase with real bursts is not idle).
 */
int gp_det_idle_allocated(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        if (!g->job[0])
            continue;
        struct act a = activity(v, g);
        if (a.n * 2 < v->npoints)
            continue;
        unsigned at;
        double used = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_MEM_USED), v->npoints, &at);
        double total = isnan(used) ? NAN : gp_det_mem_total(v, g, at);
        bool holds = used >= IDLE_MIN_BYTES && (isnan(total) || used >= IDLE_MIN_SHARE * total);
        gp_det_key_gpu(&o, GP_DET_IDLE_ALLOCATED, g);
        bool text = gp_det_judge(c, &o, a.mean, false);
        o.bad = o.bad && holds && a.max <= IDLE_MAX_POINT;
        if (text) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s holds %.1f GiB but runs nothing: %s %.1f %% on average, at most "
                          "%.1f %% over %s",
                          who, isnan(used) ? 0.0 : used / GP_DET_GIB, act_name(&a), 100 * a.mean,
                          100 * a.max, win);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "%s over %s: mean %.3f, max %.3f (idle: no point above %.2f); memory "
                          "used %.2f GiB of %.2f GiB (judged from 1 GiB and 5 %%); threshold %.2f, "
                          "clear %.2f",
                          act_name(&a), win, a.mean, a.max, IDLE_MAX_POINT,
                          isnan(used) ? 0.0 : used / GP_DET_GIB,
                          isnan(total) ? 0.0 : total / GP_DET_GIB, c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * DATA_STARVED (above): a starvation share 0-1. Where the GPU's rank
 * reports data wait: data-wait seconds / step seconds over the window.
 * Else from the activity's shape: 1 - mean activity when the GPU
 * alternates idle stretches and work (at least 25 % of points idle and
 * either bursts - 10 % of points busy, a peak of 0.6 - or PCIe RX while
 * idle at twice its rate while working, at least 100 MB/s), 0 when it does
 * not (steady work with short dips, or plain idleness).
 */
int gp_det_data_starved(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    unsigned *gpu_proc, *proc_gpu;
    int rc = gp_det_match_procs(v, &gpu_proc, &proc_gpu);
    if (rc)
        return rc;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus && rc == GP_OK; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        double dw = NAN, st = NAN;
        const struct gp_view_proc *p = NULL;
        if (gpu_proc[i] != UINT_MAX) {
            p = &v->procs[gpu_proc[i]];
            const double *w = gp_view_proc_at(v, p, GP_VPM_DATA_WAIT);
            if (!isnan(gp_det_first(w, v->npoints, NULL))) {
                dw = gp_det_increase(w, v->npoints);
                st = gp_det_increase(gp_view_proc_at(v, p, GP_VPM_STEP_SECONDS), v->npoints);
            }
        }
        struct act a = activity(v, g);
        bool by_wait = st > 0;
        if (!by_wait && a.n * 2 < v->npoints)
            continue;
        bool peaks = a.nhigh >= STARVE_MIN_BUSY_SHARE * a.n && a.max >= STARVE_MIN_PEAK;
        bool pcie = a.rx_low >= STARVE_PCIE_MIN && a.rx_low >= STARVE_PCIE_RATIO * a.rx_work;
        bool bursty = a.n && a.nlow >= STARVE_MIN_IDLE_SHARE * a.n && (peaks || pcie);
        double value;
        if (by_wait)
            value = dw / st > 1 ? 1 : dw / st;
        else
            value = bursty ? 1 - a.mean : 0;
        gp_det_key_gpu(&o, GP_DET_DATA_STARVED, g);
        if (gp_det_judge(c, &o, value, true)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            if (by_wait) /* the share is the process's: its readings' span */
                gp_det_window_proc(v, p, 0, win, sizeof win);
            else
                gp_det_window_gpu(v, g, 0, win, sizeof win);
            if (by_wait)
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s waits for input data %.0f %% of its step time over %s", who,
                              100 * value, win);
            else
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s waits for input: idle on %.0f %% of points between bursts, %s "
                              "%.0f %% on average over %s",
                              who, a.n ? 100.0 * a.nlow / a.n : 0.0, act_name(&a), 100 * a.mean,
                              win);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s: data wait %.1f s of %.1f s step time; %s mean %.3f, max %.3f, "
                          "%u of %u points idle (<= %.1f), %u busy (>= %.1f); PCIe RX %.1f MB/s "
                          "idle vs %.1f MB/s working; judged by %s; threshold %.2f, clear %.2f",
                          win, isnan(dw) ? 0.0 : dw, isnan(st) ? 0.0 : st, act_name(&a), a.mean,
                          a.max, a.nlow, a.n, LOW_ACT, a.nhigh, HIGH_ACT,
                          isnan(a.rx_low) ? 0.0 : a.rx_low / 1e6,
                          isnan(a.rx_work) ? 0.0 : a.rx_work / 1e6,
                          by_wait ? "the data-wait share" : "the activity's shape",
                          c->cfg->threshold, c->cfg->clear);
        }
        rc = gp_det_emit(c, &o);
    }
    free(gpu_proc);
    free(proc_gpu);
    return rc;
}

/*
 * NO_TENSOR_CORES (below): mean tensor-pipe activity over the points
 * where the GPU is busy (activity > 0.3). Judged only on cards whose
 * model has tensor cores and that report TENSOR (GPM), and only when it
 * was busy on at least half the points with a tensor reading.
 */
int gp_det_no_tensor_cores(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        if (!g->spec || !g->spec->tensor_cores)
            continue;
        const double *te = gp_view_gpu_at(v, g, GP_VGM_TENSOR);
        unsigned nt = 0, nbusy = 0;
        double tsum = 0, asum = 0;
        for (unsigned k = 0; k < v->npoints; k++) {
            if (isnan(te[k]))
                continue;
            nt++;
            double x = gp_view_activity(v, g, k, NULL);
            if (x > TENSOR_BUSY) {
                nbusy++;
                tsum += te[k];
                asum += x;
            }
        }
        if (nt < 3 || nbusy * 2 < nt)
            continue;
        double tmean = tsum / nbusy;
        gp_det_key_gpu(&o, GP_DET_NO_TENSOR_CORES, g);
        if (gp_det_judge(c, &o, tmean, false)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s (%s) is busy (%.0f %%) but its tensor cores are at %.1f %% over %s",
                          who, g->spec->short_name, 100 * asum / nbusy, 100 * tmean, win);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s: busy (activity > %.1f) on %u of %u points with a tensor "
                          "reading; mean activity %.3f and tensor-pipe activity %.4f on them; "
                          "%s peak %.0f TFLOP/s dense bf16; threshold %.3f, clear %.3f",
                          win, TENSOR_BUSY, nbusy, nt, asum / nbusy, tmean, g->spec->short_name,
                          g->spec->tensor_tflops, c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * MEMORY_BOUND (above): mean DRAM activity over the points where DRAM
 * and SM activity both have readings (GPM). Bad only when the mean SM
 * activity over those points is below 0.5.
 */
int gp_det_memory_bound(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *dr = gp_view_gpu_at(v, g, GP_VGM_DRAM);
        const double *sm = gp_view_gpu_at(v, g, GP_VGM_SM_ACTIVE);
        unsigned n = 0;
        double dsum = 0, ssum = 0;
        for (unsigned k = 0; k < v->npoints; k++) {
            if (isnan(dr[k]) || isnan(sm[k]))
                continue;
            n++;
            dsum += dr[k];
            ssum += sm[k];
        }
        if (n < 3)
            continue;
        double dram = dsum / n, smm = ssum / n;
        gp_det_key_gpu(&o, GP_DET_MEMORY_BOUND, g);
        bool text = gp_det_judge(c, &o, dram, true);
        o.bad = o.bad && smm < MEMBOUND_MAX_SM;
        if (text) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s is memory-bandwidth bound: DRAM %.0f %% busy while SMs are %.0f %% "
                          "active over %s",
                          who, 100 * dram, 100 * smm, win);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s, %u points: mean DRAM activity %.3f, mean SM activity %.3f "
                          "(judged below %.2f); peak bandwidth %.0f GB/s (0: unknown model); "
                          "threshold %.2f, clear %.2f",
                          win, n, dram, smm, MEMBOUND_MAX_SM, g->spec ? g->spec->mem_bw_gbps : 0.0,
                          c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}
