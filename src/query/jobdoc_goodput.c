/*
 * jobdoc_goodput.c - a job document's goodput (jobdoc_goodput.h). The
 * counters say what happened between two of their samples, so each
 * interval of a process's steps counter is one goodput interval: the
 * increases of its step seconds, data wait and phase counters over it,
 * its step number at its end. A process of the same rank (labels but
 * pid) that starts after another is a restart: it starts where its
 * counters say it began and its steps numbered at or below the earlier
 * ones' last step are lost work; the earlier one ends where it starts.
 * The first process of a rank starts with the job.
 */
#include "query/jobdoc_goodput.h"

#include "lib/err.h"
#include "sources/steps_proto.h"
#include "store/labels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A process that reported steps: its series and span. */
struct gp_jobdoc_gproc {
    const struct gp_store_series *steps, *secs, *wait, *stepno, *phase[3];
    int64_t first, last; /* its steps counter's first and last sample (ms) */
    double start, end, resume_from, last_step;
    struct gp_goodput_figures f;
};

/* The newest value of x at or before t (ms); 0 when none: a counter not
 * yet reported counts from 0. */
static double counter_at(const struct gp_jobdoc_ser *x, int64_t t)
{
    double v = 0;
    for (size_t i = 0; i < x->n && x->t[i] <= t; i++)
        v = x->v[i];
    return v;
}

/* A counter's increase from t0 to t1 (ms); a reset counts from 0. */
static double counter_delta(const struct gp_jobdoc_ser *x, int64_t t0, int64_t t1)
{
    double a = counter_at(x, t0), b = counter_at(x, t1);
    return b >= a ? b - a : b;
}

/* Start order; processes that start together by their labels, so the
 * order does not hang on the backend's series ids. */
static int gproc_cmp(const void *pa, const void *pb)
{
    const struct gp_jobdoc_gproc *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    const struct gp_store_series *x = a->steps, *y = b->steps;
    return gp_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

/* One reporting process's goodput: its counters' increases between
 * samples fed to goodput.h (phases first: a phase and the first steps in
 * one interval count the phase before them), up to its end. */
static int gproc_feed(const struct gp_jobdoc_src *src, struct gp_jobdoc_goodput *out,
                      struct gp_jobdoc_gproc *p)
{
    struct gp_jobdoc_ser x[7];
    const struct gp_store_series *ss[7] = {p->steps, p->secs, p->wait, p->stepno,
                                           p->phase[0], p->phase[1], p->phase[2]};
    memset(x, 0, sizeof x);
    int rc = GP_OK;
    for (int k = 0; k < 7 && !rc; k++)
        if (ss[k])
            rc = gp_jobdoc_ser_read(src, ss[k], src->t0, src->tc, &x[k]);
    if (!rc) {
        struct gp_goodput_rank r;
        gp_goodput_rank_init(&r, p->start, p->resume_from);
        /* a counter born in the job counts from 0 before its first sample */
        int64_t prev = gp_jobdoc_born(src, p->steps) ? INT64_MIN : (x[0].n ? x[0].t[0] : 0);
        for (size_t i = 0; i < x[0].n; i++) {
            int64_t t = x[0].t[i];
            if (t <= prev)
                continue;
            double te = (double)t / 1e3 < p->end ? (double)t / 1e3 : p->end;
            for (int k = 0; k < 3; k++) {
                double dp = ss[4 + k] ? counter_delta(&x[4 + k], prev, t) : 0;
                if (dp > 0)
                    gp_goodput_phase(&r, gp_steps_phase_name((enum gp_steps_phase)k), te, dp);
            }
            double n = counter_delta(&x[0], prev, t);
            if (n > 0)
                gp_goodput_interval(&r, te, counter_delta(&x[1], prev, t),
                                    p->wait ? counter_delta(&x[2], prev, t) : NAN,
                                    p->stepno ? counter_at(&x[3], t) : -1, n);
            prev = t;
        }
        gp_goodput_figures_init(&p->f);
        gp_goodput_add_rank(&p->f, &r, p->end);
        gp_goodput_finish(&p->f);
        p->last_step = r.last_step;
        if (r.last_step > out->last_step)
            out->last_step = r.last_step;
    }
    for (int k = 0; k < 7; k++)
        gp_jobdoc_ser_free(&x[k]);
    return rc;
}

/* The series of in's lists that belong to process p (same labels but the
 * name; a phase's but its phase). */
static void gproc_series(const struct gp_jobdoc_goodput_in *in, struct gp_jobdoc_gproc *p)
{
    const struct gp_store_series *s = p->steps;
    for (size_t k = 0; k < in->nsecs && !p->secs; k++)
        if (gp_jobdoc_same_except(s, in->secs[k], NULL))
            p->secs = in->secs[k];
    for (size_t k = 0; k < in->nwaits && !p->wait; k++)
        if (gp_jobdoc_same_except(s, in->waits[k], NULL))
            p->wait = in->waits[k];
    for (size_t k = 0; k < in->nstepnos && !p->stepno; k++)
        if (gp_jobdoc_same_except(s, in->stepnos[k], NULL))
            p->stepno = in->stepnos[k];
    for (size_t k = 0; k < in->nphases; k++) {
        struct gp_str ph = gp_jobdoc_lab(in->phases[k], "phase");
        for (int q = 0; q < 3; q++) {
            const char *name = gp_steps_phase_name((enum gp_steps_phase)q);
            if (ph.len == strlen(name) && !memcmp(ph.ptr, name, ph.len) &&
                gp_jobdoc_same_except(s, in->phases[k], "phase"))
                p->phase[q] = in->phases[k];
        }
    }
}

int gp_jobdoc_goodput_gather(const struct gp_jobdoc_src *src, const struct gp_jobdoc_goodput_in *in,
                             struct gp_jobdoc_goodput *out)
{
    memset(out, 0, sizeof *out);
    gp_goodput_figures_init(&out->f);
    out->last_step = -1;
    if (!in->nsteps)
        return GP_OK;
    out->p = calloc(in->nsteps, sizeof *out->p);
    if (!out->p)
        return GP_ENOMEM;
    for (size_t i = 0; i < in->nsteps; i++) {
        struct gp_jobdoc_gproc *p = &out->p[out->n];
        p->steps = in->steps[i];
        p->first = in->steps[i]->first_ms > src->t0 ? in->steps[i]->first_ms : src->t0;
        p->last = in->steps[i]->last_ms;
        gproc_series(in, p);
        if (p->secs)
            out->n++;
        else
            memset(p, 0, sizeof *p);
    }
    qsort(out->p, out->n, sizeof *out->p, gproc_cmp);
    /* starts and attempts, in start order */
    for (size_t i = 0; i < out->n; i++) {
        struct gp_jobdoc_gproc *p = &out->p[i];
        p->start = (double)src->t0 / 1e3;
        p->end = (double)src->t1 / 1e3;
        p->resume_from = -1;
        unsigned attempt = 1;
        for (size_t j = 0; j < i; j++)
            attempt += gp_jobdoc_same_except(p->steps, out->p[j].steps, "pid") && out->p[j].last <= p->first;
        if (attempt > 1) { /* a restart: it began where its first sample's counters say */
            struct gp_jobdoc_ser x;
            int rc = gp_jobdoc_ser_read(src, p->secs, p->first, p->first, &x);
            if (rc)
                return rc;
            double done = x.n ? x.v[0] : 0;
            gp_jobdoc_ser_free(&x);
            p->start = (double)p->first / 1e3 - done;
        }
        if (attempt > out->attempts)
            out->attempts = attempt;
    }
    /* an earlier process of a rank ends where the next one starts (the
     * agent keeps a gone sender's series for minutes) */
    for (size_t i = 0; i < out->n; i++)
        for (size_t j = i + 1; j < out->n; j++)
            if (gp_jobdoc_same_except(out->p[i].steps, out->p[j].steps, "pid") &&
                out->p[j].start > out->p[i].start && out->p[j].start < out->p[i].end)
                out->p[i].end = out->p[j].start;
    /* fed in start order: a restart resumes after its rank's last step */
    for (size_t i = 0; i < out->n; i++) {
        struct gp_jobdoc_gproc *p = &out->p[i];
        for (size_t j = 0; j < i; j++)
            if (gp_jobdoc_same_except(p->steps, out->p[j].steps, "pid") && out->p[j].end <= p->start &&
                out->p[j].last_step > p->resume_from)
                p->resume_from = out->p[j].last_step;
        int rc = gproc_feed(src, out, p);
        if (rc)
            return rc;
        gp_goodput_add(&out->f, &p->f);
    }
    gp_goodput_finish(&out->f);
    return GP_OK;
}

static void put_parts(struct gp_buf *b, const struct gp_goodput_figures *f)
{
    gp_buf_puts(b, ",\"seconds\":{");
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++) {
        gp_buf_printf(b, "%s\"%s\":", p ? "," : "", gp_goodput_part_name(p));
        gp_jobdoc_num(b, f->part[p]);
    }
    gp_buf_putc(b, '}');
}

void gp_jobdoc_goodput_write(const struct gp_jobdoc_goodput *g, struct gp_buf *b)
{
    gp_buf_puts(b, ",\"goodput\":");
    if (!g->n) {
        gp_buf_puts(b, "null");
        return;
    }
    gp_buf_puts(b, "{\"ratio\":");
    gp_jobdoc_num(b, g->f.ratio);
    gp_jobdoc_total(b, "wall_seconds", g->f.wall);
    put_parts(b, &g->f);
    gp_buf_puts(b, ",\"biggest_badput\":");
    if (g->f.biggest_badput >= 0)
        gp_buf_printf(b, "\"%s\"", gp_goodput_part_name(g->f.biggest_badput));
    else
        gp_buf_puts(b, "null");
    gp_buf_printf(b, ",\"attempts\":%u", g->attempts);
    gp_jobdoc_total(b, "last_step", g->last_step >= 0 ? g->last_step : NAN);
    gp_buf_puts(b, ",\"ranks\":[");
    for (size_t i = 0; i < g->n; i++) {
        const struct gp_jobdoc_gproc *p = &g->p[i];
        gp_buf_puts(b, i ? ",{\"pid\":" : "{\"pid\":");
        struct gp_str pid = gp_jobdoc_lab(p->steps, "pid"), rank = gp_jobdoc_lab(p->steps, "rank");
        char num_s[24] = "", *end = NULL;
        if (pid.len && pid.len < sizeof num_s)
            memcpy(num_s, pid.ptr, pid.len);
        long long v = num_s[0] ? strtoll(num_s, &end, 10) : -1;
        if (v >= 0 && end && !*end) /* the agent's pids are numbers */
            gp_buf_printf(b, "%lld", v);
        else
            gp_jobdoc_str_or_null(b, pid);
        gp_buf_puts(b, ",\"rank\":");
        gp_jobdoc_str_or_null(b, rank);
        gp_jobdoc_total(b, "ratio", p->f.ratio);
        put_parts(b, &p->f);
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "]}");
}

void gp_jobdoc_goodput_free(struct gp_jobdoc_goodput *g)
{
    free(g->p);
    memset(g, 0, sizeof *g);
}
