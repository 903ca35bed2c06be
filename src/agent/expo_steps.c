/*
 * expo_steps.c - the step telemetry families (docs/jobs.md "Series") and
 * the steps source's own counters, as Prometheus text.
 *
 * One series per reporting process: labels job (when it has one), rank
 * (when >= 0), the host label (a simulated rank's node), pid. Families are written whole, one after
 * the other, each with HELP and TYPE, and only when at least one process
 * has the reading (a process that never sent tokens= gets no tokens
 * series rather than a misleading 0). Label sets are formatted into a
 * stack buffer per process: rendering allocates nothing but the output.
 */
#include "expo.h"

#include "lib/err.h"
#include "lib/metrics.h"
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

/* Appends s escaped as a label value to out[*len..cap) (truncating). */
static void put_escaped(char *out, size_t cap, size_t *len, const char *s)
{
    for (; *s && *len + 3 < cap; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            out[(*len)++] = '\\';
            out[(*len)++] = *s == '\n' ? 'n' : *s;
        } else {
            out[(*len)++] = *s;
        }
    }
    out[*len] = '\0';
}

static void put_raw(char *out, size_t cap, size_t *len, const char *s)
{
    int n = snprintf(out + *len, cap - *len, "%s", s);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* job="..",rank="..",Hostname="..",pid=".." into out (NUL-terminated). */
static void step_labels(char *out, size_t cap, const struct gp_frame *f, const struct gp_step_stats *st,
                        const struct gp_expo_options *o)
{
    size_t len = 0;
    char num[32];
    out[0] = '\0';
    if (st->jid.job[0]) {
        put_raw(out, cap, &len, "job=\"");
        put_escaped(out, cap, &len, st->jid.job);
        put_raw(out, cap, &len, "\",");
    }
    if (st->jid.rank >= 0) {
        snprintf(num, sizeof num, "rank=\"%d\",", (int)st->jid.rank);
        put_raw(out, cap, &len, num);
    }
    put_raw(out, cap, &len, o->hostname_label);
    put_raw(out, cap, &len, "=\"");
    put_escaped(out, cap, &len, st->node[0] ? st->node : f->hostname);
    snprintf(num, sizeof num, "\",pid=\"%u\"", st->pid);
    put_raw(out, cap, &len, num);
}

static void series(struct gp_buf *b, const char *name, const char *labels, double v)
{
    gp_buf_puts(b, name);
    gp_buf_putc(b, '{');
    gp_buf_puts(b, labels);
    gp_buf_puts(b, "} ");
    gp_buf_put_double(b, v);
    gp_buf_putc(b, '\n');
}

static void render_allocator(struct gp_buf *b, const struct gp_frame *f, const struct gp_expo_options *o)
{
    static const char *const kinds[] = {"allocated", "reserved", "peak"};
    const char *name = gp_metric_name(GP_M_STEP_ALLOCATOR);
    char lab[1024], extra[96];
    bool any = false;
    for (unsigned i = 0; i < f->nsteps; i++) {
        const struct gp_step_stats *st = &f->steps[i];
        if (!st->nalloc)
            continue;
        if (!any)
            gp_metric_head(b, GP_M_STEP_ALLOCATOR);
        any = true;
        step_labels(lab, sizeof lab, f, st, o);
        for (unsigned d = 0; d < st->nalloc; d++) {
            const struct gp_step_alloc *a = &st->alloc[d];
            const uint64_t v[3] = {a->allocated, a->reserved, a->peak};
            for (int k = 0; k < 3; k++) {
                snprintf(extra, sizeof extra, ",device=\"%d\",kind=\"%s\"", (int)a->device, kinds[k]);
                gp_buf_puts(b, name);
                gp_buf_putc(b, '{');
                gp_buf_puts(b, lab);
                gp_buf_puts(b, extra);
                gp_buf_puts(b, "} ");
                gp_buf_put_u64(b, v[k]);
                gp_buf_putc(b, '\n');
            }
        }
    }
}

static void render_self(struct gp_buf *b, const struct gp_frame *f)
{
    static const enum gp_metric c[] = {GP_M_STEPS_DATAGRAMS, GP_M_STEPS_RECORDS, GP_M_STEPS_MALFORMED};
    const uint64_t v[3] = {f->steps_self.datagrams, f->steps_self.records, f->steps_self.malformed};
    for (int i = 0; i < 3; i++) {
        gp_metric_head(b, c[i]);
        gp_buf_printf(b, "%s %llu\n", gp_metric_name(c[i]), (unsigned long long)v[i]);
    }
    /* every reason, zeros included, so a rate() sees the first refusal */
    gp_metric_head(b, GP_M_STEPS_REFUSED);
    for (int r = 0; r < GP_STEPS_NREFUSED; r++)
        gp_buf_printf(b, "%s{reason=\"%s\"} %llu\n", gp_metric_name(GP_M_STEPS_REFUSED),
                      gp_steps_refusal_name((enum gp_steps_refusal)(r + 1)),
                      (unsigned long long)f->steps_self.refused[r]);
}

int gp_expo_render_steps(struct gp_buf *out, const struct gp_frame *f, const struct gp_expo_options *o)
{
    char lab[1024];
    for (int k = 0; k < SF__COUNT; k++) {
        bool any = false;
        for (unsigned i = 0; i < f->nsteps; i++) {
            const struct gp_step_stats *st = &f->steps[i];
            double v;
            if (!reading(st, (enum step_fam)k, &v))
                continue;
            if (!any)
                gp_metric_head(out, fams[k]);
            any = true;
            step_labels(lab, sizeof lab, f, st, o);
            series(out, gp_metric_name(fams[k]), lab, v);
        }
    }
    render_allocator(out, f, o);
    if (f->src[GP_SRC_STEPS].active)
        render_self(out, f);
    return out->err;
}
