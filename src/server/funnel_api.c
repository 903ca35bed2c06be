/*
 * funnel_api.c - GET /api/v1/fleet/funnel?start=&end= (docs/api.md
 * "Fleet funnel"): reads the range's series and hands them to the funnel
 * (query/funnel.h), which does all the arithmetic.
 *
 *   GPUs     each GPU's activity series in the range, one per GPU and
 *            job (cost_api.c's reading, so the funnel's cost is
 *            /api/v1/cost's), priced by modelName; its `job` label makes
 *            it allocated, its `team` label names the team.
 *   users    a series' `user` label, else the uid of the job's processes
 *            on that node (gpulse_process_info's `uid`: the process
 *            owner; the server cannot resolve names).
 *   zombies  gpulse_gpu_process_memory_bytes's newest sample in the range
 *            against the newest gpulse_job_end_time_seconds of the same
 *            job and node; both read near the series' last sample, from
 *            its newest rollup minute when raw samples are gone there.
 *   long     ranges longer than GP_FUNNEL_RAW_MAX_MS or starting before
 *            the raw retention (or resolution=1m) read each GPU's
 *            1-minute rollups over the whole minutes of the range.
 *   cluster  where those reads would move raw samples from a remote
 *            cluster (gp_storage_pushdown; docs/storage.md "Cost and the
 *            funnel"), the series are selected by name only, the cluster
 *            computes the rollups (gp_storage_read_rollups_all) and the
 *            counts of zombies' minutes after their job's end, and only
 *            the raw tails a figure needs (a step, a newest value) are
 *            read, one request per distinct last minute (each_tail). The
 *            funnel's arithmetic is the same either way.
 * Memory: one request's selections and samples, freed before it returns.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/json.h"
#include "query/funnel.h"
#include "server/gpu_series.h"
#include "store/labels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZOMBIE_LOOKBACK_MS (31LL * 24 * 3600 * 1000) /* a job's end before the range still counts */
#define NEWEST_WINDOW_MS (10 * 60 * 1000) /* raw samples read before a series' last one */
#define PAST_END_MS (2 * 60 * 1000) /* a tail looks this far past the range for a next sample */

static void copy(char *dst, size_t cap, struct gp_str v)
{
    snprintf(dst, cap, "%.*s", (int)v.len, v.ptr);
}

static int same(struct gp_str a, struct gp_str b)
{
    return a.len == b.len && !gp_srv_rw_cmp(a, b);
}

/* The newest non-NaN sample of x at or before hi; NaN when none. */
static double newest_of(const struct gp_samples *x, int64_t hi, int64_t *t)
{
    for (size_t i = x->n; i-- > 0;)
        if (x->t[i] <= hi && !isnan(x->v[i])) {
            *t = x->t[i];
            return x->v[i];
        }
    return NAN;
}

/* The newest value of series c in [start, end]; NaN when none. Reads the
 * raw samples just before its last one, then (f->rollups) its newest
 * rollup minute, whose max stands for the value at the minute's end (a
 * process's memory and a job's end time hardly fall), else the whole
 * range raw. */
static double newest(struct gp_storage *st, struct gp_funnel *f, const struct gp_srv_cand *c,
                     int64_t start, int64_t end, int64_t *t)
{
    int64_t hi = c->s->last_ms < end ? c->s->last_ms : end;
    if (hi < start)
        return NAN;
    int64_t lo = hi - NEWEST_WINDOW_MS > start ? hi - NEWEST_WINDOW_MS : start;
    struct gp_samples smp = {0};
    double v = NAN;
    int rc = gp_storage_read(st, c->s->id, lo, hi, &smp);
    if (!rc || rc == GP_EPARSE)
        v = newest_of(&smp, hi, t);
    if (isnan(v) && lo > start && !f->rollups) {
        smp.n = 0;
        rc = gp_storage_read(st, c->s->id, start, lo, &smp);
        if (!rc || rc == GP_EPARSE)
            v = newest_of(&smp, hi, t);
    }
    gp_samples_free(&smp);
    if (!isnan(v) || !f->rollups)
        return v;
    struct gp_rollups ru = {0};
    rc = gp_storage_read_rollups(st, c->s->id, start, hi, &ru);
    for (size_t i = ru.n; (!rc || rc == GP_EPARSE) && i-- > 0;)
        if (ru.r[i].count && !isnan(ru.r[i].max)) {
            v = ru.r[i].max;
            *t = ru.r[i].t + 59999 < hi ? ru.r[i].t + 59999 : hi;
            f->estimated++;
            break;
        }
    gp_rollups_free(&ru);
    return v;
}

/* The median gap of series c's raw samples in the NEWEST_WINDOW_MS up to
 * hi, its last sample in the range: the step its rollups' counts stand
 * for; 0 where raw samples are gone. */
static int raw_step_at(struct gp_storage *st, const struct gp_srv_cand *c, int64_t start, int64_t hi,
                       int64_t *step)
{
    *step = 0;
    if (hi < start)
        return GP_OK;
    struct gp_samples smp = {0};
    size_t k = 0;
    int rc = gp_srv_activity_samples(st, c, hi - NEWEST_WINDOW_MS > start ? hi - NEWEST_WINDOW_MS : start,
                                     hi, &smp, step, &k);
    gp_samples_free(&smp);
    return rc;
}

static int raw_step(struct gp_storage *st, const struct gp_srv_cand *c, int64_t start, int64_t end,
                    int64_t *step)
{
    return raw_step_at(st, c, start, c->s->last_ms < end ? c->s->last_ms : end, step);
}

/* Host series (no gpu label) of one name, for owners and job ends. */
struct hostset {
    struct gp_store_selection sel;
    struct gp_srv_cand *c;
    size_t n;
    double *v; /* each series' newest value (job ends); NULL: not read */
};

static int user_of(const struct hostset *procs, struct gp_str node, struct gp_str job,
                   char *out, size_t cap)
{
    for (size_t i = 0; i < procs->n; i++)
        if (same(procs->c[i].node, node) && same(procs->c[i].job, job)) {
            struct gp_str uid = gp_srv_label(procs->c[i].s, "uid");
            if (uid.len) {
                copy(out, cap, uid);
                return 1;
            }
        }
    return 0;
}

/* 1 when reads of name from start on would move raw samples from the
 * cluster (gp_storage_pushdown). */
static int pushed(struct gp_storage *st, const char *name, int64_t start)
{
    struct gp_matcher m;
    char err[64];
    if (gp_matcher_init(&m, GP_MATCH_EQ, "__name__", name, err, sizeof err))
        return 0;
    int p = gp_storage_pushdown(st, &m, 1, start) == 1;
    gp_matcher_free(&m);
    return p;
}

/* One GPU's (and job's) series chosen for the funnel and what it read. */
struct pick {
    size_t cand;          /* in the candidates; SIZE_MAX: none */
    struct gp_rollups ru; /* its minutes (rollups) */
    int64_t step;         /* what a sample stands for */
};

static int cmp_series(const void *a, const void *b)
{
    const struct gp_store_series *x = *(const struct gp_store_series *const *)a,
                                 *y = *(const struct gp_store_series *const *)b;
    return gp_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

struct lmidx {
    int64_t lm;
    size_t i;
};

static int cmp_lm(const void *a, const void *b)
{
    const struct lmidx *x = a, *y = b;
    return x->lm != y->lm ? (x->lm > y->lm) - (x->lm < y->lm) : (x->i > y->i) - (x->i < y->i);
}

/* fn(arg, i, s): s is x[i] as a selection of its tail holds it. */
typedef int (*tail_fn)(void *arg, size_t i, const struct gp_store_series *s);

/* fn for series x, which a tail's selection does not hold (the local
 * window answered it, and x is another server's): its own samples of
 * [lo, hi], read where x was selected, give its first and last. */
static int alone(struct gp_storage *st, const struct gp_store_series *x, int64_t lo, int64_t hi,
                 tail_fn fn, void *arg, size_t i)
{
    struct gp_samples smp = {0};
    int rc = gp_storage_read(st, x->id, lo, hi, &smp);
    if (rc == GP_EPARSE)
        rc = GP_OK;
    if (!rc && smp.n) {
        struct gp_store_series y = *x;
        y.first_ms = smp.t[0];
        y.last_ms = smp.t[smp.n - 1];
        rc = fn(arg, i, &y);
    }
    gp_samples_free(&smp);
    return rc;
}

/*
 * The raw tails of series x[0..n) whose last minute in the range is
 * lm[i]: one request (gp_storage_select_like) per distinct minute, over
 * [lm - back, lm + 59999] (not before start), so that each series' reads
 * within that span are answered from it. The range's last minute reaches
 * PAST_END_MS past last: a series whose last_ms is then past last goes on
 * after the range, which the embedded store knows from its last sample.
 * Matched by labels: the local window, which may answer it, has ids of
 * its own.
 */
static int each_tail(struct gp_storage *st, const struct gp_store_series *const *x,
                     const int64_t *lm, size_t n, int64_t back, int64_t start, int64_t last,
                     tail_fn fn, void *arg)
{
    struct lmidx *o = malloc((n ? n : 1) * sizeof *o);
    const struct gp_store_series **grp = malloc((n ? n : 1) * sizeof *grp), **held = NULL;
    int rc = o && grp ? GP_OK : GP_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        o[i] = (struct lmidx){lm[i], i};
    if (!rc && n)
        qsort(o, n, sizeof *o, cmp_lm);
    for (size_t a = 0, b; !rc && a < n; a = b) {
        for (b = a; b < n && o[b].lm == o[a].lm; b++)
            grp[b - a] = x[o[b].i];
        int64_t lo = o[a].lm - back > start ? o[a].lm - back : start;
        int64_t qmax = o[a].lm + 59999 < last ? o[a].lm + 59999 : last + PAST_END_MS;
        struct gp_store_selection tail = {0};
        rc = gp_storage_select_like(st, grp, b - a, lo, qmax, &tail);
        const struct gp_store_series **nh =
            rc ? NULL : realloc(held, (tail.n ? tail.n : 1) * sizeof *held);
        if (!rc && !nh)
            rc = GP_ENOMEM;
        if (nh)
            held = nh;
        for (size_t k = 0; !rc && k < tail.n; k++)
            held[k] = &tail.series[k];
        if (!rc && tail.n)
            qsort(held, tail.n, sizeof *held, cmp_series);
        /* the reads fn makes are answered from `tail`, the newest selection */
        for (size_t q = a; !rc && q < b; q++) {
            const struct gp_store_series **h =
                tail.n ? bsearch(&x[o[q].i], held, tail.n, sizeof *held, cmp_series) : NULL;
            rc = h ? fn(arg, o[q].i, *h) : alone(st, x[o[q].i], lo, qmax, fn, arg, o[q].i);
        }
        gp_storage_selection_free(&tail);
    }
    free(o);
    free(grp);
    free(held);
    return rc;
}

struct step_arg {
    struct gp_storage *st;
    const struct gp_srv_cand *c;
    struct pick **order;
    int64_t start, last;
};

/* A pick's step from its tail: the median gap up to its last sample. */
static int step_of(void *arg, size_t i, const struct gp_store_series *s)
{
    struct step_arg *a = arg;
    struct gp_srv_cand x = a->c[a->order[i]->cand];
    x.s = s;
    return raw_step_at(a->st, &x, a->start, s->last_ms < a->last ? s->last_ms : a->last,
                       &a->order[i]->step);
}

/*
 * The rollups and steps of each GPU run of c from the cluster
 * (gp_storage_read_rollups_all: the minutes as PromQL it evaluates),
 * with nothing but the series' names selected: the run's best series is
 * the first kind (SM activity) with minutes in the range, of its series
 * the one with the newest minute; its step the median gap of the raw
 * samples in the NEWEST_WINDOW_MS up to its last (each_tail).
 */
static int cluster_picks(struct gp_storage *st, const struct gp_srv_cand *c, size_t n,
                         struct pick *pk, size_t npk, int64_t start, int64_t last)
{
    struct gp_store_series *sub = malloc((n ? n : 1) * sizeof *sub);
    size_t *of = malloc((n ? n : 1) * sizeof *of);
    struct gp_rollups *ru = calloc(n ? n : 1, sizeof *ru);
    struct pick **order = malloc((npk ? npk : 1) * sizeof *order);
    const struct gp_store_series **tx = malloc((npk ? npk : 1) * sizeof *tx);
    int64_t *lm = malloc((npk ? npk : 1) * sizeof *lm);
    int rc = sub && of && ru && order && tx && lm ? GP_OK : GP_ENOMEM;
    /* Round k asks for the k-th kind of the runs still without minutes. */
    for (int kind = 0, more = 1; !rc && more; kind++) {
        more = 0;
        size_t m = 0;
        for (size_t p = 0, i = 0; p < npk; p++) {
            size_t j = gp_srv_gpu_run(c, n, i, 1);
            for (size_t k = i; pk[p].cand == SIZE_MAX && k < j; k++) {
                more |= c[k].kind > kind;
                if (c[k].kind == kind) {
                    sub[m] = *c[k].s;
                    of[m++] = k;
                }
            }
            i = j;
        }
        if (!m)
            continue;
        struct gp_store_selection ss = {.series = sub, .n = m};
        struct gp_srv_cand one = {.kind = kind};
        double cuts[GP_FUNNEL_CUTS];
        size_t ncuts = gp_funnel_rollup_cuts(gp_srv_activity_unit(&one), cuts);
        rc = gp_storage_read_rollups_all(st, &ss, start, last, cuts, ncuts, ru);
        for (size_t q = 0, p = 0, i = 0; !rc && q < m; q++) {
            while (of[q] >= gp_srv_gpu_run(c, n, i, 1)) /* the run of of[q] */
                i = gp_srv_gpu_run(c, n, i, 1), p++;
            struct pick *x = &pk[p];
            if (ru[q].n && (x->cand == SIZE_MAX || ru[q].r[ru[q].n - 1].t > x->ru.r[x->ru.n - 1].t)) {
                gp_rollups_free(&x->ru);
                x->cand = of[q];
                x->ru = ru[q];
            } else {
                gp_rollups_free(&ru[q]);
            }
            memset(&ru[q], 0, sizeof ru[q]);
        }
        if (rc)
            for (size_t q = 0; q < m; q++)
                gp_rollups_free(&ru[q]);
    }
    /* The steps, from the tails. */
    size_t no = 0;
    for (size_t p = 0; !rc && p < npk; p++)
        if (pk[p].cand != SIZE_MAX) {
            order[no] = &pk[p];
            tx[no] = c[pk[p].cand].s;
            lm[no++] = pk[p].ru.r[pk[p].ru.n - 1].t;
        }
    struct step_arg sa = {st, c, order, start, last};
    if (!rc)
        rc = each_tail(st, tx, lm, no, NEWEST_WINDOW_MS, start, last, step_of, &sa);
    free(tx);
    free(lm);
    free(sub);
    free(of);
    free(ru);
    free(order);
    return rc;
}

static int add_gpus(struct gp_server *s, struct gp_storage *st, struct gp_funnel *f,
                    const struct hostset *procs, char *err, size_t errlen)
{
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    size_t n = 0;
    int64_t last = f->rollups ? f->end_ms - 1 : f->end_ms; /* rollups: whole minutes before end */
    /* Rollups the cluster would make from raw samples: it computes them,
     * and only the series' names are selected here. */
    int cluster = f->rollups && pushed(st, "DCGM_FI_PROF_SM_ACTIVE", f->start_ms);
    int rc = gp_srv_activity_series(st, f->start_ms, last, cluster ? last : INT64_MIN, &sel, &c, &n,
                                    err, errlen);
    size_t npk = 0;
    for (size_t i = 0; i < n; i = gp_srv_gpu_run(c, n, i, 1))
        npk++;
    struct pick *pk = calloc(npk ? npk : 1, sizeof *pk);
    if (!rc && !pk)
        rc = GP_ENOMEM;
    for (size_t p = 0, i = 0; !rc && p < npk; p++, i = gp_srv_gpu_run(c, n, i, 1))
        pk[p].cand = cluster ? SIZE_MAX : i; /* c[i] is the best of its run: SM first, newest */
    if (!rc && cluster)
        rc = cluster_picks(st, c, n, pk, npk, f->start_ms, last);
    for (size_t p = 0; !rc && p < npk; p++) {
        if (pk[p].cand == SIZE_MAX)
            continue;
        const struct gp_srv_cand *b = &c[pk[p].cand];
        char job[GP_FUNNEL_KEY_LEN], user[GP_FUNNEL_KEY_LEN], team[GP_FUNNEL_KEY_LEN];
        copy(job, sizeof job, b->job);
        copy(user, sizeof user, gp_srv_label(b->s, "user"));
        copy(team, sizeof team, gp_srv_label(b->s, "team"));
        if (!user[0] && b->job.len)
            user_of(procs, b->node, b->job, user, sizeof user);
        double usd_hour = gp_prices_of(&s->prices, b->model.ptr, b->model.len);
        if (f->rollups) {
            if (!cluster) {
                rc = gp_storage_read_rollups(st, b->s->id, f->start_ms, last, &pk[p].ru);
                if (rc == GP_EPARSE)
                    rc = GP_OK; /* a damaged chunk: the rest still counts */
                if (!rc)
                    rc = raw_step(st, b, f->start_ms, last, &pk[p].step);
            }
            struct gp_funnel_gpu_rollups g = {
                .r = pk[p].ru.r, .n = pk[p].ru.n, .unit = gp_srv_activity_unit(b),
                .step_ms = pk[p].step, .usd_hour = usd_hour, .job = job, .user = user, .team = team};
            if (!rc)
                rc = gp_funnel_add_rollups(f, &g);
            continue;
        }
        struct gp_samples smp = {0};
        int64_t step = 0;
        size_t k = 0;
        rc = gp_srv_activity_samples(st, b, f->start_ms, f->end_ms, &smp, &step, &k);
        if (!rc && k) {
            struct gp_funnel_gpu g = {.act = smp.v, .n = k, .step_ms = step, .usd_hour = usd_hour,
                                      .job = job, .user = user, .team = team};
            rc = gp_funnel_add(f, &g);
        }
        gp_samples_free(&smp);
    }
    for (size_t p = 0; pk && p < npk; p++)
        gp_rollups_free(&pk[p].ru);
    free(pk);
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}

/* A zombie candidate read from the cluster: its newest sample. */
struct znew {
    struct gp_storage *st;
    int64_t hi;
    double *v;
    int64_t *t;
};

static int newest_of_tail(void *arg, size_t i, const struct gp_store_series *s)
{
    struct znew *z = arg;
    struct gp_samples smp = {0};
    int rc = gp_storage_read(z->st, s->id, s->first_ms, s->last_ms < z->hi ? s->last_ms : z->hi, &smp);
    if (!rc || rc == GP_EPARSE) {
        z->v[i] = newest_of(&smp, z->hi, &z->t[i]);
        rc = GP_OK;
    }
    gp_samples_free(&smp);
    return rc;
}

/*
 * The newest sample in [start, hi] of the candidates x[0..n), whose jobs
 * ended at end_s[i], from the cluster (v[i] NaN: none after the grace):
 * only a sample later than the end and its grace makes a zombie, so the
 * cluster counts each candidate's minutes from that end on (one PromQL
 * request per job end, gp_storage_read_rollups_all), and the newest
 * minute's raw samples are read (each_tail). A process that left with
 * its job moves nothing.
 */
static int cluster_newest(struct gp_storage *st, const struct gp_store_series *const *x,
                          const double *end_s, size_t n, int64_t start, int64_t hi, double *v,
                          int64_t *t)
{
    struct gp_store_series *sub = malloc((n ? n : 1) * sizeof *sub);
    struct gp_rollups *ru = calloc(n ? n : 1, sizeof *ru);
    const struct gp_store_series **tx = malloc((n ? n : 1) * sizeof *tx);
    int64_t *lm = malloc((n ? n : 1) * sizeof *lm);
    size_t *of = malloc((n ? n : 1) * sizeof *of), *ti = malloc((n ? n : 1) * sizeof *ti);
    char *done = calloc(n ? n : 1, 1);
    int rc = sub && ru && tx && lm && of && ti && done ? GP_OK : GP_ENOMEM;
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
        v[i] = NAN;
    for (size_t i = 0; !rc && i < n; i++) {
        if (done[i])
            continue;
        size_t m = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] && end_s[j] == end_s[i]) {
                done[j] = 1;
                sub[m] = *x[j];
                of[m++] = j;
            }
        double after = (end_s[i] + GP_FUNNEL_ZOMBIE_GRACE_S) * 1e3;
        int64_t from = after > (double)start ? (int64_t)after : start;
        struct gp_store_selection ss = {.series = sub, .n = m};
        double none[1];
        if (from <= hi)
            rc = gp_storage_read_rollups_all(st, &ss, from, hi, none, 0, ru);
        for (size_t q = 0; q < m && from <= hi; q++) {
            if (!rc && ru[q].n) {
                tx[nt] = x[of[q]];
                ti[nt] = of[q];
                lm[nt++] = ru[q].r[ru[q].n - 1].t;
            }
            gp_rollups_free(&ru[q]);
        }
    }
    double *tv = malloc((nt ? nt : 1) * sizeof *tv);
    int64_t *tt = malloc((nt ? nt : 1) * sizeof *tt);
    if (!rc && (!tv || !tt))
        rc = GP_ENOMEM;
    for (size_t q = 0; !rc && q < nt; q++)
        tv[q] = NAN, tt[q] = 0;
    struct znew z = {st, hi, tv, tt};
    if (!rc)
        rc = each_tail(st, tx, lm, nt, 0, start, hi, newest_of_tail, &z);
    for (size_t q = 0; !rc && q < nt; q++) {
        v[ti[q]] = tv[q];
        t[ti[q]] = tt[q];
    }
    free(tv);
    free(tt);
    free(sub);
    free(ru);
    free(tx);
    free(lm);
    free(of);
    free(ti);
    free(done);
    return rc;
}

static int add_zombies(struct gp_storage *st, struct gp_funnel *f, const struct hostset *ends,
                       char *err, size_t errlen)
{
    static const char *const names[] = {"gpulse_gpu_process_memory_bytes"};
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    size_t n = 0;
    int64_t hi = f->end_ms - f->rollups;
    /* from the cluster: the series' names only, then the newest samples
     * of the candidates (cluster_newest) */
    int cluster = pushed(st, names[0], f->start_ms);
    int rc = gp_srv_gpu_series_since(st, names, 1, f->start_ms, cluster ? hi : f->end_ms,
                                     cluster ? hi : INT64_MIN, 1, &sel, &c, &n, err, errlen);
    double *end_s = malloc((n ? n : 1) * sizeof *end_s), *v = malloc((n ? n : 1) * sizeof *v);
    int64_t *t = calloc(n ? n : 1, sizeof *t);
    const struct gp_store_series **x = malloc((n ? n : 1) * sizeof *x);
    size_t *cand = malloc((n ? n : 1) * sizeof *cand);
    if (!rc && (!end_s || !v || !t || !x || !cand))
        rc = GP_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!c[i].job.len)
            continue;
        double e = NAN;
        for (size_t k = 0; k < ends->n; k++)
            if (same(ends->c[k].node, c[i].node) && same(ends->c[k].job, c[i].job) &&
                isfinite(ends->v[k]) && (isnan(e) || ends->v[k] > e))
                e = ends->v[k];
        if (isnan(e))
            continue;
        end_s[m] = e;
        x[m] = c[i].s;
        cand[m++] = i;
    }
    if (!rc && cluster)
        rc = cluster_newest(st, x, end_s, m, f->start_ms, hi, v, t);
    for (size_t q = 0; !rc && q < m; q++) {
        const struct gp_srv_cand *ci = &c[cand[q]];
        struct gp_funnel_zombie z = {.job_end_s = end_s[q]};
        if (cluster) {
            z.memory_bytes = v[q];
            z.seen_ms = t[q];
        } else {
            z.memory_bytes = newest(st, f, ci, f->start_ms, hi, &z.seen_ms);
        }
        copy(z.node, sizeof z.node, ci->node);
        copy(z.gpu, sizeof z.gpu, ci->gpu);
        copy(z.pid, sizeof z.pid, gp_srv_label(ci->s, "pid"));
        copy(z.comm, sizeof z.comm, gp_srv_label(ci->s, "comm"));
        copy(z.job, sizeof z.job, ci->job);
        rc = gp_funnel_zombie(f, &z);
    }
    free(end_s);
    free(v);
    free(t);
    free(x);
    free(cand);
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}

/* Whether [start, end] is read from rollups: asked, longer than raw
 * reading is quick for, or starting where raw samples are gone. */
static bool use_rollups(const struct gp_server *s, int64_t start, int64_t end, int resolution)
{
    if (resolution != GP_SRV_FUNNEL_AUTO)
        return resolution == GP_SRV_FUNNEL_ROLLUP;
    return end - start > GP_FUNNEL_RAW_MAX_MS || start < gp_wall_ms() - s->cfg.retention_raw_ms;
}

int gp_srv_funnel_data(struct gp_server *s, struct gp_storage *st, int64_t start, int64_t end,
                       int resolution, struct gp_buf *out, char *err, size_t errlen)
{
    bool rollups = use_rollups(s, start, end, resolution);
    if (rollups) { /* the whole minutes of the range, at least one */
        start -= ((start % 60000) + 60000) % 60000;
        end -= ((end % 60000) + 60000) % 60000;
        if (end <= start)
            end = start + 60000;
    }
    static const char *const proc_names[] = {"gpulse_process_info"};
    static const char *const end_names[] = {"gpulse_job_end_time_seconds"};
    struct hostset procs = {0}, ends = {0};
    struct gp_funnel f;
    gp_funnel_init(&f, start, end);
    f.rollups = rollups;
    /* Owners are labels: no sample of the processes is read. */
    int rc = gp_srv_host_series_since(st, proc_names, 1, start, end, end, &procs.sel, &procs.c,
                                      &procs.n, err, errlen);
    if (!rc)
        rc = gp_srv_host_series(st, end_names, 1, start - ZOMBIE_LOOKBACK_MS, end, &ends.sel,
                                &ends.c, &ends.n, err, errlen);
    if (!rc && ends.n && !(ends.v = malloc(ends.n * sizeof *ends.v)))
        rc = GP_ENOMEM;
    for (size_t k = 0; !rc && k < ends.n; k++) {
        int64_t t;
        ends.v[k] = newest(st, &f, &ends.c[k], start - ZOMBIE_LOOKBACK_MS, end - rollups, &t);
    }
    if (!rc)
        rc = add_gpus(s, st, &f, &procs, err, errlen);
    if (!rc)
        rc = add_zombies(st, &f, &ends, err, errlen);
    if (!rc) {
        gp_funnel_sort(&f);
        gp_funnel_json(&f, out);
    }
    gp_funnel_free(&f);
    free(procs.c);
    free(ends.c);
    free(ends.v);
    gp_storage_selection_free(&procs.sel);
    gp_storage_selection_free(&ends.sel);
    return rc;
}

void gp_srv_handle_funnel(struct gp_server *s, struct gp_storage *st,
                          const struct gp_http_request *req, struct gp_http_response *resp)
{
    int64_t start, end;
    if (!gp_srv_range(req, resp, &start, &end))
        return;
    int resolution = GP_SRV_FUNNEL_AUTO;
    const char *v = gp_http_query(req, "resolution");
    if (v && !strcmp(v, "raw"))
        resolution = GP_SRV_FUNNEL_RAW;
    else if (v && !strcmp(v, "1m"))
        resolution = GP_SRV_FUNNEL_ROLLUP;
    else if (v && *v && strcmp(v, "auto")) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'resolution': '%.40s' (use auto, raw or 1m)", v);
        return;
    }
    char err[256] = "";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_srv_funnel_data(s, st, start, end, resolution, &resp->body, err, sizeof err);
    gp_buf_puts(&resp->body, "}\n");
    if (rc)
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "reading the funnel: %s", err[0] ? err : gp_strerror(rc));
    else if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: narrow the range",
                   resp->body.max);
}
