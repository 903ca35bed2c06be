/*
 * expo_steps.c - the step telemetry families (docs/jobs.md "Series") and
 * the steps source's own counters, walked into a sink (expo.h).
 *
 * One series per reporting process: labels job (when it has one), rank
 * (when >= 0), the host label (a simulated rank's node), pid. Families are written whole, one after
 * the other, each with HELP and TYPE, and only when at least one process
 * has the reading (a process that never sent tokens= gets no tokens
 * series rather than a misleading 0). Label sets live on the stack per
 * process: the walk allocates nothing.
 */
#include "expo.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "lib/metrics.h"
#include "sources/steps_proto.h"
#include "sources/steps_trust.h"

#include <stdio.h>
#include <string.h>

enum step_fam {
    SF_STEPS, SF_STEP, SF_SECONDS, SF_DURATION, SF_WAIT, SF_SAMPLES, SF_TOKENS, SF_LOSS, SF_TARGET,
    SF_LOST, SF_EXIT, SF_END, SF_FR_MISSING, SF_FR_WAITING, SF__COUNT
};

/* The families in step_fam order (their rows in lib/metrics.h). */
static const enum gp_metric fams[SF__COUNT] = {
    [SF_STEPS] = GP_M_STEP_STEPS,     [SF_STEP] = GP_M_STEP_STEP,       [SF_SECONDS] = GP_M_STEP_SECONDS,
    [SF_DURATION] = GP_M_STEP_DURATION, [SF_WAIT] = GP_M_STEP_WAIT,     [SF_SAMPLES] = GP_M_STEP_SAMPLES,
    [SF_TOKENS] = GP_M_STEP_TOKENS,   [SF_LOSS] = GP_M_STEP_LOSS,       [SF_TARGET] = GP_M_STEP_TARGET,
    [SF_LOST] = GP_M_STEP_LOST,       [SF_EXIT] = GP_M_STEP_EXIT,       [SF_END] = GP_M_STEP_END,
    [SF_FR_MISSING] = GP_M_STEP_FR_MISSING, [SF_FR_WAITING] = GP_M_STEP_FR_WAITING,
};

/* Whether st has the reading of family k, and its value. */
static bool reading(const struct gp_step_stats *st, enum step_fam k, double *v)
{
    switch (k) {
    case SF_STEPS: *v = (double)st->steps_total; return true;
    case SF_STEP: *v = (double)st->last_step; return st->steps_total > 0;
    case SF_SECONDS: *v = st->step_seconds_total; return true;
    case SF_DURATION: *v = st->last_step_seconds; return st->steps_total > 0;
    case SF_WAIT: *v = st->data_wait_seconds_total; return st->data_wait_valid;
    case SF_SAMPLES: *v = st->samples_total; return st->samples_valid;
    case SF_TOKENS: *v = st->tokens_total; return st->tokens_valid;
    case SF_LOSS: *v = st->loss; return st->loss_valid;
    case SF_TARGET: *v = (double)st->target_steps; return st->target_steps > 0;
    case SF_LOST: *v = (double)st->lost_total; return true;
    case SF_EXIT: *v = st->exit_status; return st->ended && st->exit_status_valid;
    case SF_END: *v = st->end_time_s; return st->ended;
    case SF_FR_MISSING: *v = (double)st->fr_missing; return st->fr_missing_valid;
    case SF_FR_WAITING: *v = (double)st->fr_waiting; return st->fr_waiting_valid;
    case SF__COUNT: break;
    }
    return false;
}

/* job, rank, the host label, pid of st (numbers into rank and pid). */
static size_t step_labels(struct gp_metric_label *l, const struct gp_frame *f, const struct gp_step_stats *st,
                          const struct gp_expo_options *o, char rank[16], char pid[16])
{
    size_t n = 0;
    if (st->jid.job[0])
        l[n++] = (struct gp_metric_label){"job", st->jid.job};
    if (st->jid.rank >= 0) {
        snprintf(rank, 16, "%d", (int)st->jid.rank);
        l[n++] = (struct gp_metric_label){"rank", rank};
    }
    l[n++] = (struct gp_metric_label){o->hostname_label, st->node[0] ? st->node : f->hostname};
    snprintf(pid, 16, "%u", st->pid);
    l[n++] = (struct gp_metric_label){"pid", pid};
    return n;
}

static void walk_allocator(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o)
{
    static const char *const kinds[] = {"allocated", "reserved", "peak"};
    struct gp_metric_label l[6];
    char rank[16], pid[16], dev[16];
    bool any = false;
    for (unsigned i = 0; i < f->nsteps; i++) {
        const struct gp_step_stats *st = &f->steps[i];
        if (!st->nalloc)
            continue;
        if (!any)
            gp_metric_family(s, GP_M_STEP_ALLOCATOR);
        any = true;
        size_t n = step_labels(l, f, st, o, rank, pid);
        const struct gp_metric_labels set = {l, n, NULL};
        for (unsigned d = 0; d < st->nalloc; d++) {
            const struct gp_step_alloc *a = &st->alloc[d];
            const uint64_t v[3] = {a->allocated, a->reserved, a->peak};
            snprintf(dev, sizeof dev, "%d", (int)a->device);
            for (int k = 0; k < 3; k++) {
                const struct gp_metric_label e[2] = {{"device", dev}, {"kind", kinds[k]}};
                s->sample(s, gp_metric_name(GP_M_STEP_ALLOCATOR), &set, e, 2, (double)v[k]);
            }
        }
    }
}

/* The model record: one series per declared unit (docs/jobs.md, MFU). */
static void walk_model(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o)
{
    static const char *const per[2] = {"token", "sample"};
    struct gp_metric_label l[4];
    char rank[16], pid[16];
    bool any = false;
    for (unsigned i = 0; i < f->nsteps; i++) {
        const struct gp_step_stats *st = &f->steps[i];
        const double v[2] = {st->model_flops_token, st->model_flops_sample};
        const char *prec = gp_precision_name((enum gp_precision)st->model_precision);
        for (int k = 0; k < 2; k++) {
            if (!(v[k] > 0) || !prec)
                continue;
            if (!any)
                gp_metric_family(s, GP_M_STEP_MODEL_FLOPS);
            any = true;
            const struct gp_metric_labels set = {l, step_labels(l, f, st, o, rank, pid), NULL};
            const struct gp_metric_label e[2] = {{"per", per[k]}, {"precision", prec}};
            s->sample(s, gp_metric_name(GP_M_STEP_MODEL_FLOPS), &set, e, 2, v[k]);
        }
    }
}

/* gpulse_job_phase_seconds_total, every phase of a process that sent one
 * (zeros included, so an increase() sees the first). */
static void walk_phases(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o)
{
    struct gp_metric_label l[5];
    char rank[16], pid[16];
    bool any = false;
    for (unsigned i = 0; i < f->nsteps; i++) {
        const struct gp_step_stats *st = &f->steps[i];
        if (!st->phase_valid)
            continue;
        if (!any)
            gp_metric_family(s, GP_M_STEP_PHASE);
        any = true;
        const struct gp_metric_labels set = {l, step_labels(l, f, st, o, rank, pid), NULL};
        for (int p = 0; p < GP_STEP_PHASES; p++) {
            const struct gp_metric_label e = {"phase", gp_steps_phase_name((enum gp_steps_phase)p)};
            s->sample(s, gp_metric_name(GP_M_STEP_PHASE), &set, &e, 1, st->phase_seconds_total[p]);
        }
    }
}

static void walk_self(struct gp_metric_sink *s, const struct gp_frame *f)
{
    static const enum gp_metric c[] = {GP_M_STEPS_DATAGRAMS, GP_M_STEPS_RECORDS, GP_M_STEPS_MALFORMED};
    const uint64_t v[3] = {f->steps_self.datagrams, f->steps_self.records, f->steps_self.malformed};
    for (int i = 0; i < 3; i++) {
        gp_metric_family(s, c[i]);
        gp_metric_sample(s, c[i], NULL, NULL, NULL, (double)v[i]);
    }
    /* every reason, zeros included, so a rate() sees the first refusal */
    gp_metric_family(s, GP_M_STEPS_REFUSED);
    for (int r = 0; r < GP_STEPS_NREFUSED; r++)
        gp_metric_sample(s, GP_M_STEPS_REFUSED, NULL, "reason",
                         gp_steps_refusal_name((enum gp_steps_refusal)(r + 1)), (double)f->steps_self.refused[r]);
}

int gp_expo_walk_steps(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o)
{
    struct gp_metric_label l[4];
    char rank[16], pid[16];
    for (int k = 0; k < SF__COUNT; k++) {
        bool any = false;
        for (unsigned i = 0; i < f->nsteps; i++) {
            const struct gp_step_stats *st = &f->steps[i];
            double v;
            if (!reading(st, (enum step_fam)k, &v))
                continue;
            if (!any)
                gp_metric_family(s, fams[k]);
            any = true;
            const struct gp_metric_labels set = {l, step_labels(l, f, st, o, rank, pid), NULL};
            s->sample(s, gp_metric_name(fams[k]), &set, NULL, 0, v);
        }
    }
    walk_allocator(s, f, o);
    walk_model(s, f, o);
    walk_phases(s, f, o);
    if (f->src[GP_SRC_STEPS].active)
        walk_self(s, f);
    return s->err;
}
