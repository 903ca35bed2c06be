/*
 * detect_hang.c - job_hang: a job whose every live rank has gone without
 * a step for longer than its own allowance.
 *
 * Each step reporter of a job is judged by its own pace, as
 * nvidia-resiliency-ext's timeouts are: a rank that has stepped gets
 * step_multiple x its recent mean step time (at least min_stall), one
 * that has not stepped yet gets first_step (start-up, data loading,
 * compilation), and one that checkpointed in the window at least
 * checkpoint_multiple x its longest checkpoint (phases are reported
 * when they end, so a checkpoint under way is seen by the ones before
 * it). Its stall is the time from the first point that shows
 * its current step count to the view's end: a grid step late at most,
 * never early. Only live ranks count: a reporter absent from the newest
 * point (its agent forgot it) or one that said `end` is not judged, so
 * a finished or crashed job is not called hung.
 *
 * The job is the entity: its value is the smallest stall / allowance of
 * its live ranks, so it is bad only when every rank stopped; one rank
 * that is slow while the others step is a straggler's business. The
 * text names, for a person deciding whom to look at: the ranks that
 * stopped first (earliest stall, within one grid step), the last step of
 * each rank, and what their GPUs do since: busy at full use is the
 * signature of ranks spinning in a collective (NCCL kernels poll), idle
 * the signature of a rank stuck on the host (data, I/O, a deadlock).
 * Busy is judged by utilization (a kernel resident) where the GPU has
 * it: NCCL's polling kernels hold a few SMs, so SM activity reads 10-25 %
 * while utilization reads 100 %; activity where it has not.
 * Where the agent reads PyTorch Flight Recorder dumps
 * (sources/flightrec.h), the ranks missing from the collective the
 * others wait in come first: they are the ones to look at.
 *
 * Scratch (per-rank figures) is allocated once per evaluation.
 */
#include "detect_util.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANG_SPINNING 0.9 /* mean activity at or above: spinning */
#define HANG_IDLE 0.05    /* at or below: idle */
#define HANG_FIRST_NAMED 4 /* ranks named in the summary as stopped first */

/* One live rank's stall. */
struct stall {
    unsigned proc;     /* index in v->procs */
    unsigned since;    /* first point showing its current count */
    double stall_s;    /* t_end - time(since) */
    double step_s;     /* recent mean step time; NaN before the first step */
    double allow_s;    /* its allowance */
    double last_step;  /* gpulse_job_step at the newest point; NaN: none */
    double activity;   /* its GPU's mean utilization (else activity) since `since`; NaN: none */
    double ckpt_s;     /* its longest checkpoint in the window; NaN: none */
    double missing;    /* Flight Recorder: the collective it never entered; NaN: none */
    double waiting;    /* ... the one it waits in; NaN: none */
};

/*
 * Rank p's stall into *out. Returns false when p is not judged: not at
 * the newest point, or it said `end`.
 */
static bool rank_stall(const struct gp_detect_ctx *c, unsigned pi, unsigned gi,
                       struct stall *out)
{
    const struct gp_view *v = c->view;
    const struct gp_view_proc *p = &v->procs[pi];
    const double *st = gp_view_proc_at(v, p, GP_VPM_STEPS);
    const double *ss = gp_view_proc_at(v, p, GP_VPM_STEP_SECONDS);
    unsigned last = v->npoints - 1;
    if (isnan(st[last]) || !isnan(gp_view_proc_at(v, p, GP_VPM_END)[last]))
        return false;
    double cur = st[last];
    unsigned since = last;
    for (unsigned k = last; k-- > 0;) {
        if (isnan(st[k]))
            continue;
        if (st[k] != cur)
            break;
        since = k;
    }
    /* A checkpoint reported after the last step (a phase is reported at
     * its end) is sign of life: the stall runs from its report. Its
     * length, the counter's increase, sizes the allowance. */
    const double *ck = gp_view_proc_at(v, p, GP_VPM_CHECKPOINT);
    out->ckpt_s = NAN;
    for (unsigned k = 1, prev = isnan(ck[0]) ? UINT_MAX : 0; k < v->npoints; k++) {
        if (isnan(ck[k]))
            continue;
        if (prev != UINT_MAX && ck[k] > ck[prev]) {
            double d = ck[k] - ck[prev];
            out->ckpt_s = isnan(out->ckpt_s) ? d : fmax(out->ckpt_s, d);
            if (k > since)
                since = k;
        }
        prev = k;
    }
    out->proc = pi;
    out->since = since;
    out->stall_s = (double)(v->t_end_ms - gp_view_time(v, since)) / 1000.0;
    out->last_step = gp_view_proc_at(v, p, GP_VPM_LAST_STEP)[last];
    out->missing = gp_view_proc_at(v, p, GP_VPM_FR_MISSING)[last];
    out->waiting = gp_view_proc_at(v, p, GP_VPM_FR_WAITING)[last];
    out->step_s = NAN;
    if (cur > 0) {
        /* the steps the window saw up to the stall, else the lifetime mean */
        double steps = gp_det_increase(st, since + 1), secs = gp_det_increase(ss, since + 1);
        if (!(steps > 0 && secs > 0)) {
            steps = cur;
            secs = ss[last];
        }
        if (steps > 0 && secs > 0)
            out->step_s = secs / steps;
    }
    const struct gp_detector_cfg *cfg = c->cfg;
    double floor_s = (double)cfg->min_stall_ms / 1000.0;
    if (isnan(out->step_s))
        out->allow_s = cur > 0 ? floor_s : (double)cfg->first_step_ms / 1000.0;
    else
        out->allow_s = fmax(cfg->step_multiple * out->step_s, floor_s);
    if (!isnan(out->ckpt_s))
        out->allow_s = fmax(out->allow_s, cfg->checkpoint_multiple * out->ckpt_s);
    out->activity = NAN;
    if (gi != UINT_MAX) {
        unsigned n = 0;
        double sum = 0;
        const double *util = gp_view_gpu_at(v, &v->gpus[gi], GP_VGM_UTIL);
        /* after the point that saw the last step: that one was busy stepping */
        for (unsigned k = since + 1 < v->npoints ? since + 1 : since; k < v->npoints; k++) {
            double a = !isnan(util[k]) ? util[k] : gp_view_activity(v, &v->gpus[gi], k, NULL);
            if (!isnan(a)) {
                n++;
                sum += a;
            }
        }
        out->activity = n ? sum / n : NAN;
    }
    return true;
}

/* "spinning at 98 % (waiting in a collective)", "idle (2 %)", "at 40 %". */
static void gpu_words(double act, char *out, size_t len)
{
    if (isnan(act))
        gp_det_printf(out, len, "no GPU seen");
    else if (act >= HANG_SPINNING)
        gp_det_printf(out, len, "GPU spinning at %.0f %% (waiting in a collective)", 100 * act);
    else if (act <= HANG_IDLE)
        gp_det_printf(out, len, "GPU idle (%.0f %%)", 100 * act);
    else
        gp_det_printf(out, len, "GPU at %.0f %%", 100 * act);
}

/* "step 1180" or "no step yet" / "step n/a" into out. */
static void step_words(const struct stall *s, const struct gp_view *v, char *out, size_t len)
{
    double total = gp_view_proc_at(v, &v->procs[s->proc], GP_VPM_STEPS)[v->npoints - 1];
    if (!(total > 0))
        gp_det_printf(out, len, "no step yet");
    else if (!isnan(s->last_step))
        gp_det_printf(out, len, "last step %.0f", s->last_step);
    else
        gp_det_printf(out, len, "%.0f steps", total);
}

/* The rank's name for texts: "rank 3" or "pid 4242". */
static void rank_words(const struct gp_view_proc *p, char *out, size_t len)
{
    if (p->rank >= 0)
        gp_det_printf(out, len, "rank %d", (int)p->rank);
    else
        gp_det_printf(out, len, "pid %u", (unsigned)p->pid);
}

/* Appends to buf at *at (bounded, silently cut). */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at = *at + (size_t)n < len ? *at + (size_t)n : len - 1;
}

/* "Flight Recorder: rank 3 never entered collective 57, where 3 ranks
 * wait; " into out, or "" when no rank's dumps say one is missing. */
static void missing_words(const struct gp_view *v, const struct stall *s, unsigned n, char *out,
                          size_t len)
{
    size_t at = 0;
    unsigned nmiss = 0, nwait = 0;
    double seq = NAN;
    char w[64];
    out[0] = '\0';
    for (unsigned i = 0; i < n; i++)
        nwait += !isnan(s[i].waiting);
    for (unsigned i = 0; i < n; i++) {
        if (isnan(s[i].missing))
            continue;
        if (nmiss == HANG_FIRST_NAMED) {
            put(out, len, &at, " and more");
            break;
        }
        rank_words(&v->procs[s[i].proc], w, sizeof w);
        put(out, len, &at, "%s%s", nmiss ? ", " : "Flight Recorder: ", w);
        seq = isnan(seq) ? s[i].missing : fmin(seq, s[i].missing);
        nmiss++;
    }
    if (nmiss)
        put(out, len, &at, " never entered collective %.0f, where %u %s; ", seq, nwait,
            nwait == 1 ? "rank waits" : "ranks wait");
}

/* Writes the job's summary and evidence from its n live ranks' stalls. */
static void hang_text(const struct gp_detect_ctx *c, const struct gp_view_job *j,
                      const struct stall *s, unsigned n, struct gp_observation *o)
{
    const struct gp_view *v = c->view;
    /* the earliest stall, and the ranks within one grid step of it */
    double first = 0, least = INFINITY;
    unsigned nfirst = 0, nspin = 0, nidle = 0, ngpu = 0;
    for (unsigned i = 0; i < n; i++) {
        first = fmax(first, s[i].stall_s);
        least = fmin(least, s[i].stall_s / s[i].allow_s);
    }
    double tie = (double)v->step_ms / 1000.0;
    for (unsigned i = 0; i < n; i++) {
        nfirst += s[i].stall_s >= first - tie;
        if (!isnan(s[i].activity)) {
            ngpu++;
            nspin += s[i].activity >= HANG_SPINNING;
            nidle += s[i].activity <= HANG_IDLE;
        }
    }
    char dur[32], who[512], what[160], w[64], stepw[48], fr[192];
    missing_words(v, s, n, fr, sizeof fr);
    gp_format_duration((int64_t)(first * 1000), dur, sizeof dur);
    size_t at = 0;
    who[0] = '\0';
    if (nfirst == n && n > 1) {
        char grid[32];
        gp_format_duration(v->step_ms, grid, sizeof grid);
        put(who, sizeof who, &at, "all %u ranks stopped within %s of each other", n, grid);
    } else {
        unsigned named = 0;
        put(who, sizeof who, &at, "stopped first: ");
        for (unsigned i = 0; i < n && named < HANG_FIRST_NAMED; i++) {
            if (s[i].stall_s < first - tie)
                continue;
            rank_words(&v->procs[s[i].proc], w, sizeof w);
            step_words(&s[i], v, stepw, sizeof stepw);
            put(who, sizeof who, &at, "%s%s (%s)", named ? ", " : "", w, stepw);
            named++;
        }
        if (nfirst > named)
            put(who, sizeof who, &at, " and %u more", nfirst - named);
    }
    if (!ngpu)
        gp_det_printf(what, sizeof what, "no GPU of its ranks is seen");
    else if (nspin == ngpu)
        gp_det_printf(what, sizeof what, "%s spinning at full use: waiting in a collective",
                      ngpu == 1 ? "its GPU is" : "every GPU is");
    else if (nidle == ngpu)
        gp_det_printf(what, sizeof what, "%s idle: stuck on the host, not in a GPU kernel",
                      ngpu == 1 ? "its GPU is" : "every GPU is");
    else
        gp_det_printf(what, sizeof what, "%u of %u GPUs spinning at full use, %u idle", nspin,
                      ngpu, nidle);
    gp_det_printf(o->summary, sizeof o->summary,
                  "job %s hangs: no step on %u live %s for %s (%.1f x their allowance); %s%s; %s",
                  j->job, n, gp_plural(n, "rank", "ranks"), dur, least, fr, who, what);
    at = 0;
    for (unsigned i = 0; i < n; i++) {
        char st[32], al[32], g[160];
        rank_words(&v->procs[s[i].proc], w, sizeof w);
        step_words(&s[i], v, stepw, sizeof stepw);
        gp_format_duration((int64_t)(s[i].stall_s * 1000), st, sizeof st);
        gp_format_duration((int64_t)(s[i].allow_s * 1000), al, sizeof al);
        gpu_words(s[i].activity, g, sizeof g);
        if (!isnan(s[i].ckpt_s))
            put(g, sizeof g, &(size_t){strlen(g)}, "; longest checkpoint %.0f s", s[i].ckpt_s);
        if (!isnan(s[i].missing))
            put(g, sizeof g, &(size_t){strlen(g)}, "; never entered collective %.0f", s[i].missing);
        else if (!isnan(s[i].waiting))
            put(g, sizeof g, &(size_t){strlen(g)}, "; waits in collective %.0f", s[i].waiting);
        if (isnan(s[i].step_s))
            put(o->evidence, sizeof o->evidence, &at, "%s%s on %s: %s, no step for %s, allowance %s; %s",
                i ? "; " : "", w, v->procs[s[i].proc].node, stepw, st, al, g);
        else
            put(o->evidence, sizeof o->evidence, &at,
                "%s%s on %s: %s, no step for %s, allowance %s (%.3g x %.3f s a step); %s",
                i ? "; " : "", w, v->procs[s[i].proc].node, stepw, st, al, c->cfg->step_multiple,
                s[i].step_s, g);
    }
}

/*
 * HANG (above): min over a job's live step reporters of stall /
 * allowance; bad above (1: every rank past its allowance).
 */
int gp_det_hang(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    unsigned most = 1;
    for (unsigned ji = 0; ji < v->njobs; ji++)
        most = v->jobs[ji].nprocs > most ? v->jobs[ji].nprocs : most;
    unsigned *gpu_proc = NULL, *proc_gpu = NULL;
    struct stall *s = malloc(most * sizeof *s);
    int rc = s ? gp_det_match_procs(v, &gpu_proc, &proc_gpu) : GP_ENOMEM;
    struct gp_observation o;
    for (unsigned ji = 0; ji < v->njobs && rc == GP_OK; ji++) {
        const struct gp_view_job *j = &v->jobs[ji];
        unsigned n = 0;
        double least = INFINITY;
        for (unsigned b = 0; b < j->nprocs; b++)
            if (rank_stall(c, j->procs[b], proc_gpu[j->procs[b]], &s[n])) {
                least = fmin(least, s[n].stall_s / s[n].allow_s);
                n++;
            }
        if (!n)
            continue;
        gp_det_key_job(&o, GP_DET_HANG, j);
        if (gp_det_judge(c, &o, least, true))
            hang_text(c, j, s, n, &o);
        rc = gp_det_emit(c, &o);
    }
    free(s);
    free(gpu_proc);
    free(proc_gpu);
    return rc;
}
