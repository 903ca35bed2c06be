/*
 * detect_memory.c - the memory detectors: near exhaustion and predicted
 * out-of-memory (per GPU, from device memory used), leaks and allocator
 * fragmentation (per step-reporting rank, from its allocator series).
 *
 * OOM prediction and leak detection are where noise does damage: a
 * linear fit through noisy flat memory has some slope, and a job that
 * grows once (model load, first batch, cache warm-up) then plateaus has
 * a large average slope. So the OOM prediction asks for a fit that
 * explains most of the variance and for growth that continues in the
 * newest third of the fit window, over at least 5 minutes of points;
 * the leak asks for growth that a line explains at a steady step rate,
 * with no single jump holding most of the growth, that still continues
 * in the newest third of the rank's points. Not a count of rising
 * intervals: allocator noise makes half the intervals of a flat plateau
 * rise, and a stepwise leak with partial frees rises on few of them.
 */
#include "detect_util.h"

#include "lib/err.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

/* OOM prediction fits the newest 10 minutes of the window. */
#define OOM_FIT_MS (10 * 60 * 1000)
#define OOM_MIN_POINTS 5
/* ... over points spanning at least half of that: a line through a
 * minute of start-up growth predicted OOM in 9.5 minutes for a job that
 * ran out at 17; no extrapolation further than twice the span judged */
#define OOM_MIN_SPAN_MS (OOM_FIT_MS / 2)
#define OOM_MIN_R2 0.8
/* the newest third must grow at least this share of the fitted rate */
#define RECENT_SHARE 0.5
/* "no OOM in sight": the value when memory does not grow (7 days) */
#define OOM_NEVER_S (7.0 * 86400)

#define LEAK_MIN_INTERVALS 5
#define LEAK_MAX_RATE_CV 0.2 /* steady step rate: sd / mean of per-interval rates */
#define LEAK_MIN_R2 0.8 /* the line explains the memory: growth, not noise */
#define LEAK_MAX_JUMP_SHARE 0.5

#define FRAG_MIN_SLACK GP_DET_GIB

/*
 * Least-squares lines through y[0..n) (*all) and through its newest
 * third, at least 3 points (*recent); true when memory still grows: a
 * rising line whose newest third rises at half its rate or more. A fit,
 * not point-to-point rises, so allocator noise averages out, and growth
 * that has stopped (a plateau after warm-up) is no longer judged.
 */
static bool still_rising(const double *y, unsigned n, double step_s, struct gp_det_fit *all,
                         struct gp_det_fit *recent)
{
    unsigned nrec = n / 3 < 3 ? 3 : n / 3;
    if (nrec > n)
        nrec = n;
    *all = gp_det_linfit(y, n, step_s);
    *recent = gp_det_linfit(y + (n - nrec), nrec, step_s);
    return all->b > 0 && recent->n >= 3 && recent->b >= RECENT_SHARE * all->b;
}

/*
 * MEMORY_HIGH (above): device memory used / total at the newest point
 * with a reading (total from the GPU, else the model table). Judges
 * every GPU that reports memory used and whose size is known.
 */
int gp_det_memory_high(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *used = gp_view_gpu_at(v, g, GP_VGM_MEM_USED);
        unsigned at;
        double u = gp_det_last(used, v->npoints, &at);
        if (isnan(u))
            continue;
        double total = gp_det_mem_total(v, g, at);
        if (isnan(total))
            continue;
        gp_det_key_gpu(&o, GP_DET_MEMORY_HIGH, g);
        if (gp_det_judge(c, &o, u / total, true)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            struct gp_det_stats s = gp_det_stats(used, v->npoints);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s uses %.1f of %.1f GiB of its memory (%.0f %%)", who, u / GP_DET_GIB,
                          total / GP_DET_GIB, 100 * u / total);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "memory used %.2f GiB of %.2f GiB (ratio %.3f) at the newest point; over "
                          "%s: min %.2f, mean %.2f, max %.2f GiB; threshold %.2f, clear %.2f",
                          u / GP_DET_GIB, total / GP_DET_GIB, u / total, win, s.min / GP_DET_GIB,
                          s.mean / GP_DET_GIB, s.max / GP_DET_GIB, c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * OOM_PREDICTED (below): seconds until device memory used reaches the
 * GPU's total, from a least-squares line through memory used over the
 * newest 10 minutes of the window (NaN points skipped), projected from
 * the line's value now. A prediction needs at least 5 points spanning
 * 5 minutes or more (a GPU that reported for less is not predicted), a rising
 * line with R^2 >= 0.8 (noise around a flat level explains little) and
 * the newest third of the points still rising at half the fitted rate or
 * more (a step that has plateaued does not predict anything). Without a
 * prediction the value is 7 days.
 */
int gp_det_oom_predicted(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    double step_s = (double)v->step_ms / 1000;
    unsigned nfit = (unsigned)(OOM_FIT_MS / v->step_ms) + 1;
    if (nfit > v->npoints)
        nfit = v->npoints;
    unsigned start = v->npoints - nfit;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *used = gp_view_gpu_at(v, g, GP_VGM_MEM_USED) + start;
        unsigned at;
        double u = gp_det_last(used, nfit, &at);
        if (isnan(u))
            continue;
        double total = gp_det_mem_total(v, g, start + at);
        if (isnan(total))
            continue;
        struct gp_det_fit f, r;
        bool growing = still_rising(used, nfit, step_s, &f, &r);
        if (f.n < OOM_MIN_POINTS)
            continue;
        unsigned first;
        gp_det_first(used, nfit, &first);
        double span_s = (double)(at - first) * step_s;
        bool long_enough = span_s * 1000 >= OOM_MIN_SPAN_MS;
        double now = f.a + f.b * (double)(nfit - 1) * step_s;
        bool rising = long_enough && growing && f.r2 >= OOM_MIN_R2;
        double secs = OOM_NEVER_S;
        if (rising) {
            secs = now >= total ? 0 : (total - now) / f.b;
            if (secs > OOM_NEVER_S)
                secs = OOM_NEVER_S;
        }
        gp_det_key_gpu(&o, GP_DET_OOM_PREDICTED, g);
        if (gp_det_judge(c, &o, secs, false)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, start, win, sizeof win);
            double per_min = f.b * 60 / GP_DET_GIB;
            if (rising)
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s will run out of memory in ~%.0f min: %.1f of %.1f GiB used, "
                              "%+.2f GiB/min over %s",
                              who, secs / 60, u / GP_DET_GIB, total / GP_DET_GIB, per_min, win);
            else if (!long_enough)
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s: memory used %.1f of %.1f GiB, too short a history to predict "
                              "(%.0f s of the %.0f s a prediction needs)",
                              who, u / GP_DET_GIB, total / GP_DET_GIB, span_s,
                              OOM_MIN_SPAN_MS / 1000.0);
            else
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s no longer grows toward its memory limit: %.1f of %.1f GiB used",
                              who, u / GP_DET_GIB, total / GP_DET_GIB);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "linear fit of memory used over %s: %u points spanning %.0f s (a "
                          "prediction needs %.0f s), slope %+.3f GiB/min, "
                          "R^2 %.2f; newest %u points: slope %+.3f GiB/min; fitted now %.2f GiB, "
                          "last reading %.2f GiB, total %.2f GiB; %.0f s to the limit "
                          "(threshold %.0f s, clear %.0f s)",
                          win, f.n, span_s, OOM_MIN_SPAN_MS / 1000.0, per_min, f.r2, r.n, r.b * 60 / GP_DET_GIB, now / GP_DET_GIB,
                          u / GP_DET_GIB, total / GP_DET_GIB, secs, c->cfg->threshold,
                          c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/*
 * MEMORY_LEAK (above): growth of a rank's memory over the window as a
 * share of its memory at the window's start: the framework allocator's
 * allocated bytes, else device memory used of the rank's GPU. Judged
 * from the intervals between points where both the step counter and
 * memory are known (a step counter reset skips its interval). Bad only
 * when the pattern is a leak: at least 5 intervals, a steady step rate
 * (sd / mean of the per-interval rates <= 0.2, so a stalled or
 * restarting job is not judged), a least-squares line through the
 * rank's points explains at least 80 % of the variance (R^2), no single
 * interval holds more than half the growth, and the growth continues:
 * still_rising over the rank's points.
 */
int gp_det_memory_leak(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    double step_s = (double)v->step_ms / 1000;
    unsigned *gpu_proc, *proc_gpu;
    int rc = gp_det_match_procs(v, &gpu_proc, &proc_gpu);
    if (rc)
        return rc;
    struct gp_observation o;
    for (unsigned i = 0; i < v->nprocs && rc == GP_OK; i++) {
        const struct gp_view_proc *p = &v->procs[i];
        const double *steps = gp_view_proc_at(v, p, GP_VPM_STEPS);
        const double *mem = gp_view_proc_at(v, p, GP_VPM_ALLOCATED);
        bool device = false;
        if (isnan(gp_det_first(mem, v->npoints, NULL))) {
            if (proc_gpu[i] == UINT_MAX)
                continue;
            mem = gp_view_gpu_at(v, &v->gpus[proc_gpu[i]], GP_VGM_MEM_USED);
            device = true;
        }
        unsigned prev = UINT_MAX, kfirst = 0, nint = 0, ngrow = 0, nrate = 0;
        double m0 = NAN, m1 = NAN, rsum = 0, rsq = 0, maxjump = 0, nsteps = 0;
        for (unsigned k = 0; k < v->npoints; k++) {
            if (isnan(steps[k]) || isnan(mem[k]))
                continue;
            if (prev != UINT_MAX) {
                double ds = steps[k] - steps[prev], dm = mem[k] - mem[prev];
                if (ds >= 0) {
                    double rate = ds / ((k - prev) * step_s);
                    rsum += rate;
                    rsq += rate * rate;
                    nrate++;
                    nint++;
                    nsteps += ds;
                    if (dm > 0) {
                        ngrow++;
                        maxjump = dm > maxjump ? dm : maxjump;
                    }
                }
            } else {
                m0 = mem[k];
                kfirst = k;
            }
            m1 = mem[k];
            prev = k;
        }
        if (nint < LEAK_MIN_INTERVALS || !(m0 > 0))
            continue;
        double rmean = rsum / nrate, rvar = rsq / nrate - rmean * rmean;
        double cv = rmean > 0 ? sqrt(rvar > 0 ? rvar : 0) / rmean : INFINITY;
        double growth = m1 - m0, value = growth / m0;
        bool steady = cv <= LEAK_MAX_RATE_CV;
        bool spread = growth > 0 && maxjump <= LEAK_MAX_JUMP_SHARE * growth;
        struct gp_det_fit fa, fr;
        bool continues = still_rising(mem + kfirst, prev - kfirst + 1, step_s, &fa, &fr);
        bool linear = fa.r2 >= LEAK_MIN_R2;
        gp_det_key_proc(&o, GP_DET_MEMORY_LEAK, p);
        bool text = gp_det_judge(c, &o, value, true);
        o.bad = o.bad && steady && linear && spread && continues;
        if (text) {
            char who[320], win[96];
            gp_det_proc_name(p, who, sizeof who);
            gp_det_window_proc(v, p, 0, win, sizeof win);
            double per_step = nsteps > 0 ? growth / nsteps : 0;
            if (o.bad)
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s grows %.1f MiB a step at a steady %.2f steps/s: %+.2f GiB "
                              "(%+.1f %%) over %s",
                              who, per_step / GP_DET_MIB, rmean, growth / GP_DET_GIB, 100 * value,
                              win);
            else if (linear && spread && !continues)
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s: memory grew %+.2f GiB over %s but no longer grows", who,
                              growth / GP_DET_GIB, win);
            else
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s: memory does not grow step after step (%+.2f GiB over %s)", who,
                              growth / GP_DET_GIB, win);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "%s over %s: %.2f -> %.2f GiB (%+.2f %%), %.0f steps, %.2f MiB/step; "
                          "grew on %u of %u intervals, largest jump %.1f %% of the growth; fitted "
                          "%+.1f MiB/min with R^2 %.2f (from %.2f), newest %u points %+.1f MiB/min (still growing from "
                          "%.0f %%); step rate %.2f/s, variation %.2f (steady <= %.2f); threshold "
                          "%.3f, clear %.3f",
                          device ? "device memory used" : "allocator allocated bytes", win,
                          m0 / GP_DET_GIB, m1 / GP_DET_GIB, 100 * value, nsteps,
                          nsteps > 0 ? growth / nsteps / GP_DET_MIB : 0.0, ngrow, nint,
                          growth > 0 ? 100 * maxjump / growth : 0.0, fa.b * 60 / GP_DET_MIB, fa.r2,
                          LEAK_MIN_R2, fr.n,
                          fr.b * 60 / GP_DET_MIB, 100 * RECENT_SHARE, rmean, cv, LEAK_MAX_RATE_CV,
                          c->cfg->threshold, c->cfg->clear);
        }
        rc = gp_det_emit(c, &o);
    }
    free(gpu_proc);
    free(proc_gpu);
    return rc;
}

/*
 * FRAGMENTATION (above): (reserved - allocated) / allocated of a rank's
 * framework allocator at the newest point with both. Bad only when the
 * slack is at least 1 GiB too: a small process's ratio costs nothing.
 */
int gp_det_fragmentation(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->nprocs; i++) {
        const struct gp_view_proc *p = &v->procs[i];
        const double *al = gp_view_proc_at(v, p, GP_VPM_ALLOCATED);
        const double *re = gp_view_proc_at(v, p, GP_VPM_RESERVED);
        unsigned k = v->npoints;
        while (k-- > 0 && (isnan(al[k]) || isnan(re[k])))
            ;
        if (k == UINT_MAX || !(al[k] > 0))
            continue;
        double slack = re[k] - al[k], ratio = slack / al[k];
        gp_det_key_proc(&o, GP_DET_FRAGMENTATION, p);
        bool text = gp_det_judge(c, &o, ratio, true);
        o.bad = o.bad && slack >= FRAG_MIN_SLACK;
        if (text) {
            char who[320], win[96];
            gp_det_proc_name(p, who, sizeof who);
            gp_det_window_proc(v, p, 0, win, sizeof win);
            gp_det_printf(o.summary, sizeof o.summary,
                          "%s: the allocator reserves %.1f GiB but uses %.1f GiB (%.0f %% more "
                          "than allocated)",
                          who, re[k] / GP_DET_GIB, al[k] / GP_DET_GIB, 100 * ratio);
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "allocator reserved %.2f GiB, allocated %.2f GiB, slack %.2f GiB (judged "
                          "from 1 GiB) at the newest point of %s; ratio %.3f, threshold %.2f, "
                          "clear %.2f",
                          re[k] / GP_DET_GIB, al[k] / GP_DET_GIB, slack / GP_DET_GIB, win,
                          ratio, c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}
