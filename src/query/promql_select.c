/*
 * promql_select.c - where the evaluator reads data: instant vector
 * selectors, range selectors and subqueries.
 *
 * A selector selects its series once, over the union of the windows all
 * steps need (from the first step's time minus the lookback or range to
 * the last step's, after @ and offset), in label order as Prometheus's
 * storage yields them, reads each series once and slides over its
 * samples step by step. Range functions take one series at a time from a
 * range source, so a range query holds one series' samples at a time.
 * With 32 series or more, the series of a selection are read and
 * computed on two threads (gp_pq_sel_each: the store takes any number of
 * readers), one from each end of the label order, each result placed by
 * the series' place in it, so the answer does not depend on which thread
 * read what. A kernel that
 * gains from two independent series at once (avg_over_time) takes them in
 * pairs. A range selector read this way also computes, from the same
 * samples, an instant selector of the same series that the query
 * evaluates too (its twin, found by promql_cse.c), reaching back as far
 * as the longer of the range and the lookback.
 * A subquery evaluates its expression once, on the grid of the multiples
 * of its step that fall in the union window (absolute alignment), and
 * serves each step's window from that.
 *
 * Windows (Prometheus 2.42): an instant vector takes the newest sample
 * in [t - lookback, t], none when it is a stale marker; a range vector
 * the samples in [t - range, t], stale markers dropped. With
 * limits.prom3_windows both are left-open, as in Prometheus 3.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "query/eval.h"
#include "storage/storage.h"
#include "store/labels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- time of a selector or subquery at a step ---- */


static int64_t when_at(const struct gp_pq_ctx *c, const struct gp_pq_when *w,
                       const struct gp_pq_grid *g, size_t k)
{
    int64_t base;
    switch (w->at) {
    case GP_PQ_AT_TIME: base = w->at_ms; break;
    case GP_PQ_AT_START: base = c->qstart; break;
    case GP_PQ_AT_END: base = c->qend; break;
    default: base = gp_pq_grid_t(g, k); break;
    }
    return base - w->offset_ms;
}

/* ---- reading the store ---- */


/* qsort takes no argument: the selection being sorted, per thread. */
static __thread const struct gp_store_selection *sort_sel;
static int cmp_sel(const void *a, const void *b)
{
    const struct gp_store_series *x = sort_sel->series + *(const size_t *)a;
    const struct gp_store_series *y = sort_sel->series + *(const size_t *)b;
    return gp_pq_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

static int storage_err(struct gp_pq_ctx *c, int rc, const char *what)
{
    if (rc == GP_ENOMEM)
        return gp_pq_oom(c);
    if (rc == GP_ENET)
        return gp_seterr(c->err, c->errlen, GP_ENET, "%s: %s", what, gp_storage_last_error());
    return gp_seterr(c->err, c->errlen, rc == GP_EIO ? GP_EIO : rc, "%s: %s", what, gp_strerror(rc));
}

static int sel_open(struct gp_pq_ctx *c, struct gp_pq_sel_read *r, const struct gp_pq_sel *sel,
                    int64_t mint, int64_t maxt)
{
    memset(r, 0, sizeof *r);
    r->mint = mint;
    r->maxt = maxt;
    int rc = gp_storage_select(c->s, sel->m, sel->nm, mint, maxt, &r->sel);
    if (rc != GP_OK)
        return storage_err(c, rc, "select series");
    r->order = malloc((r->sel.n ? r->sel.n : 1) * sizeof *r->order);
    if (!r->order)
        return gp_pq_oom(c);
    for (size_t i = 0; i < r->sel.n; i++)
        r->order[i] = i;
    /* Prometheus's storage yields series sorted by labels: keep that order
     * for whatever depends on input order (topk groups, limitk). */
    sort_sel = &r->sel;
    qsort(r->order, r->sel.n, sizeof *r->order, cmp_sel);
    sort_sel = NULL;
    return GP_OK;
}

static void sel_close(struct gp_pq_sel_read *r)
{
    gp_storage_selection_free(&r->sel);
    free(r->order);
    gp_samples_free(&r->smp);
    memset(r, 0, sizeof *r);
}

/* Keeps text as d->first when it sorts before what is there. */
static void damage_first(struct gp_pq_damage *d, const char *text, int had)
{
    if (had && strcmp(text, d->first) >= 0)
        return;
    if ((size_t)snprintf(d->first, sizeof d->first, "%s", text) >= sizeof d->first)
        memcpy(d->first + sizeof d->first - 4, "...", 4); /* cut: said so */
}

void gp_pq_damage_note(struct gp_pq_damage *d, const struct gp_store_series *s,
                       const struct gp_samples *smp)
{
    if (!smp->damaged)
        return;
    struct gp_pq_damage one = {smp->damaged, 1, smp->damaged_from, smp->damaged_to, ""};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_pq_labels_str(s->labels, s->labels_len, &b);
    damage_first(&one, b.err || !b.data ? "{}" : b.data, 0);
    gp_buf_free(&b);
    gp_pq_damage_merge(d, &one);
}

void gp_pq_damage_merge(struct gp_pq_damage *into, const struct gp_pq_damage *d)
{
    if (!d->chunks)
        return;
    if (!into->chunks || d->from < into->from)
        into->from = d->from;
    if (!into->chunks || d->to > into->to)
        into->to = d->to;
    damage_first(into, d->first, into->series > 0);
    into->chunks += d->chunks;
    into->series += d->series;
}

/* Next series: 1 with its samples in r->smp, 0 at the end, or an error. */
static int sel_next(struct gp_pq_ctx *c, struct gp_pq_sel_read *r, const struct gp_store_series **ser)
{
    if (r->i >= r->sel.n)
        return 0;
    int rc = gp_pq_check(c);
    if (rc != GP_OK)
        return rc;
    const struct gp_store_series *s = r->sel.series + r->order[r->i++];
    r->smp.n = 0;
    r->smp.damaged = 0;
    rc = gp_storage_read(c->s, s->id, r->mint, r->maxt, &r->smp);
    gp_pq_damage_note(&c->damage, s, &r->smp);
    if (rc != GP_OK && rc != GP_EPARSE) /* a damaged chunk: the rest still counts */
        return storage_err(c, rc, "read series");
    *ser = s;
    return 1;
}

/* Drops stale markers in place (range vectors never hold them). */
size_t gp_pq_drop_stale(int64_t *t, double *v, size_t n)
{
    size_t i = 0;
    while (i < n && !(v[i] != v[i] && gp_eval_is_stale(v[i])))
        i++; /* most series have none: nothing moves */
    size_t o = i;
    for (; i < n; i++) {
        if (v[i] != v[i] && gp_eval_is_stale(v[i]))
            continue;
        t[o] = t[i];
        v[o] = v[i];
        o++;
    }
    return o;
}

/* Step k's window [end - range, end] of samples t[0..n): [*lo, *hi). */
void gp_pq_window_at(const struct gp_pq_ctx *c, const struct gp_pq_when *w, int64_t range,
                     const struct gp_pq_grid *g, size_t k, const int64_t *t, size_t n, size_t *lo,
                     size_t *hi, int64_t *from, int64_t *to)
{
    int64_t end = when_at(c, w, g, k), start = end - range;
    while (*hi < n && t[*hi] <= end)
        (*hi)++;
    while (*lo < *hi && (c->lim.prom3_windows ? t[*lo] <= start : t[*lo] < start))
        (*lo)++;
    *from = start;
    *to = end;
}

/* ---- reading a selection on both cores ---- */

struct vsel_job;
static int vsel_series(void *arg, size_t i, const struct gp_store_series *ser, int64_t *t,
                       double *v, size_t n, char *err, size_t errlen);

/* Below this many series a second thread costs more than it saves. */
#define PARALLEL_MIN_SERIES 32

struct each_run {
    struct gp_pq_ctx *c;
    struct gp_pq_sel_read *r;
    gp_pq_series_fn fn;
    gp_pq_pair_fn pair;
    void *arg;
    atomic_size_t next;
    atomic_int stop;
    pthread_mutex_t mu;
    int rc;
    char err[512];
    struct gp_pq_damage damage; /* under mu */
};

static void each_fail(struct each_run *e, int rc, const char *msg)
{
    pthread_mutex_lock(&e->mu);
    if (e->rc == GP_OK) {
        e->rc = rc;
        snprintf(e->err, sizeof e->err, "%s", msg);
    }
    pthread_mutex_unlock(&e->mu);
    atomic_store(&e->stop, 1);
}

/* Reads series i into smp and computes its twin; GP_OK or an error
 * reported to e. */
static int each_read(struct each_run *e, size_t i, struct gp_samples *smp, char *err,
                     size_t errlen)
{
    const struct gp_store_series *s = e->r->sel.series + e->r->order[i];
    smp->n = 0;
    smp->damaged = 0;
    int rc = gp_storage_read(e->c->s, s->id, e->r->mint, e->r->maxt, smp);
    if (smp->damaged) {
        pthread_mutex_lock(&e->mu);
        gp_pq_damage_note(&e->damage, s, smp);
        pthread_mutex_unlock(&e->mu);
    }
    if (rc != GP_OK && rc != GP_EPARSE) { /* a damaged chunk: the rest still counts */
        snprintf(err, errlen, "read series: %s",
                 rc == GP_ENET ? gp_storage_last_error() : gp_strerror(rc));
        each_fail(e, rc == GP_ENOMEM || rc == GP_ENET ? rc : GP_EIO, err);
        return rc;
    }
    /* The twin first: fn may change the arrays (drop stale markers). */
    if (e->r->twin && !atomic_load(&e->r->twin_failed) &&
        vsel_series(e->r->twin, i, s, smp->t, smp->v, smp->n, err, errlen) != GP_OK)
        atomic_store(&e->r->twin_failed, 1); /* its own evaluation will say why */
    err[0] = '\0';
    return GP_OK;
}

/* One reader of a run: the first thread takes the series from the front
 * of the label order, the second from the back, each claiming from one
 * count (so they meet wherever the work divides): each reads a node's
 * series one after the other, as the store's cache of decoded times
 * (bchunk.c) wants, where taking turns would split every node's series
 * between the two. */
struct each_side {
    struct each_run *e;
    int back;
};

static void *each_work(void *p)
{
    struct each_side *side = p;
    struct each_run *e = side->e;
    struct gp_samples smp[2];
    memset(smp, 0, sizeof smp);
    char err[512];
    size_t take = e->pair ? 2 : 1, n = e->r->sel.n, done = 0;
    for (;;) {
        if (atomic_load(&e->stop))
            break;
        size_t claim = atomic_fetch_add(&e->next, take);
        if (claim >= n)
            break;
        /* the claims of both add up to n at most: the ends never cross */
        size_t got = n - claim < take ? n - claim : take;
        size_t i = side->back ? n - done - got : done;
        done += got;
        if (gp_pq_now_ns() > e->c->deadline_ns) {
            each_fail(e, GP_PROMQL_ETIMEOUT, "query timed out in expression evaluation");
            break;
        }
        if (each_read(e, i, &smp[0], err, sizeof err) != GP_OK)
            break;
        int rc;
        if (got == 2) {
            if (each_read(e, i + 1, &smp[1], err, sizeof err) != GP_OK)
                break;
            int64_t *t[2] = {smp[0].t, smp[1].t};
            double *v[2] = {smp[0].v, smp[1].v};
            size_t sn[2] = {smp[0].n, smp[1].n};
            rc = e->pair(e->arg, i, t, v, sn, err, sizeof err);
        } else {
            const struct gp_store_series *s = e->r->sel.series + e->r->order[i];
            rc = e->fn(e->arg, i, s, smp[0].t, smp[0].v, smp[0].n, err, sizeof err);
        }
        if (rc != GP_OK) {
            each_fail(e, rc, err);
            break;
        }
    }
    gp_samples_free(&smp[0]);
    gp_samples_free(&smp[1]);
    return NULL;
}

int gp_pq_sel_each(struct gp_pq_ctx *c, struct gp_pq_sel_read *r, gp_pq_series_fn fn,
                   gp_pq_pair_fn pair, void *arg)
{
    struct each_run e;
    memset(&e, 0, sizeof e);
    e.c = c;
    e.r = r;
    e.fn = fn;
    e.pair = pair;
    e.arg = arg;
    atomic_init(&e.next, 0);
    atomic_init(&e.stop, 0);
    pthread_mutex_init(&e.mu, NULL);
    /* The store takes any number of readers; the remote backend keeps its
     * last error per thread, so it reads on this one. */
    pthread_t th;
    struct each_side front = {&e, 0}, back = {&e, 1};
    int two = r->sel.n >= PARALLEL_MIN_SERIES &&
              gp_storage_kind(c->s) == GP_STORAGE_EMBEDDED &&
              pthread_create(&th, NULL, each_work, &back) == 0;
    each_work(&front);
    if (two)
        pthread_join(th, NULL);
    pthread_mutex_destroy(&e.mu);
    gp_pq_damage_merge(&c->damage, &e.damage);
    if (e.rc != GP_OK)
        return gp_seterr(c->err, c->errlen, e.rc, "%s", e.err);
    return GP_OK;
}

/* ---- instant vector selector ---- */

struct vsel_job {
    const struct gp_pq_ctx *c;
    const struct gp_pq_grid *g;
    struct gp_pq_when w;
    int ts_mode;
    double **v;
    uint8_t **has;
    size_t *np;
    atomic_size_t held; /* points found so far, against max_samples */
    atomic_size_t cells; /* step slots allocated so far, against it too */
};

static int vsel_series(void *arg, size_t i, const struct gp_store_series *ser, int64_t *t,
                       double *v, size_t n, char *err, size_t errlen)
{
    (void)ser;
    struct vsel_job *j = arg;
    const struct gp_pq_ctx *c = j->c;
    const struct gp_pq_grid *g = j->g;
    int64_t lb = c->lim.lookback_ms;
    size_t p = 0, np = 0, moved = 0;
    for (size_t k = 0; k < g->n; k++) {
        int64_t at = when_at(c, &j->w, g, k);
        size_t q = gp_pq_first_past(t, p, n, at, moved);
        moved = q - p;
        p = q;
        if (p == 0)
            continue;
        int64_t ts = t[p - 1];
        double x = v[p - 1];
        if ((c->lim.prom3_windows ? ts <= at - lb : ts < at - lb) ||
            (x != x && gp_eval_is_stale(x)))
            continue;
        if (!j->v[i]) {
            if (c->cells + atomic_fetch_add(&j->cells, g->n) + g->n > c->lim.max_samples)
                return gp_seterr(err, errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
            j->v[i] = malloc(g->n * sizeof *j->v[i]);
            j->has[i] = calloc(g->n, 1);
            if (!j->v[i] || !j->has[i])
                return gp_seterr(err, errlen, GP_ENOMEM, "query: out of memory");
        }
        j->v[i][k] = j->ts_mode ? (double)ts / 1000.0 : x;
        j->has[i][k] = 1;
        np++;
    }
    j->np[i] = np;
    if (c->samples + atomic_fetch_add(&j->held, np) + np > c->lim.max_samples)
        return gp_seterr(err, errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
    return GP_OK;
}

static void vsel_init(struct vsel_job *j, const struct gp_pq_ctx *c, const struct gp_pq_sel *sel,
                      const struct gp_pq_grid *g, int ts_mode)
{
    memset(j, 0, sizeof *j);
    j->c = c;
    j->g = g;
    j->w = (struct gp_pq_when){sel->at, sel->at_ms, sel->offset_ms};
    j->ts_mode = ts_mode;
    atomic_init(&j->held, 0);
    atomic_init(&j->cells, 0);
}

/* Room for a result per series of a selection of n. */
static int vsel_alloc(struct gp_pq_ctx *c, struct vsel_job *j, size_t n)
{
    j->v = calloc(n ? n : 1, sizeof *j->v);
    j->has = calloc(n ? n : 1, sizeof *j->has);
    j->np = calloc(n ? n : 1, sizeof *j->np);
    return j->v && j->has && j->np ? GP_OK : gp_pq_oom(c);
}

/* The job's series into out, in label order whichever thread read them;
 * frees what the job holds. */
static int vsel_collect(struct gp_pq_ctx *c, struct vsel_job *j, const struct gp_pq_sel_read *r,
                        int rc, struct gp_pq_val *out)
{
    size_t n = r->sel.n;
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        if (!j->np[i])
            continue;
        const struct gp_store_series *s = r->sel.series + r->order[i];
        rc = gp_pq_val_adopt(c, out, j->g, s->labels, s->labels_len, j->v[i], j->has[i], j->np[i]);
        j->v[i] = NULL;
        j->has[i] = NULL;
    }
    for (size_t i = 0; j->v && j->has && i < n; i++) {
        free(j->v[i]);
        free(j->has[i]);
    }
    free(j->v);
    free(j->has);
    free(j->np);
    j->v = NULL;
    j->has = NULL;
    j->np = NULL;
    return rc;
}

int gp_pq_eval_vsel(struct gp_pq_ctx *c, const struct gp_pq_sel *sel, const struct gp_pq_grid *g,
                    int ts_mode, struct gp_pq_val *out)
{
    gp_pq_vector_new(out);
    if (!g->n)
        return GP_OK;
    struct vsel_job j;
    vsel_init(&j, c, sel, g, ts_mode);
    int64_t first = when_at(c, &j.w, g, 0), last = when_at(c, &j.w, g, g->n - 1);
    struct gp_pq_sel_read r;
    int rc = sel_open(c, &r, sel, first - c->lim.lookback_ms, last);
    if (rc == GP_OK && (rc = vsel_alloc(c, &j, r.sel.n)) == GP_OK)
        rc = gp_pq_sel_each(c, &r, vsel_series, NULL, &j);
    rc = vsel_collect(c, &j, &r, rc, out);
    sel_close(&r);
    return rc;
}

/* ---- range sources: matrix selectors and subqueries ---- */


int gp_pq_rsrc_open(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs, const struct gp_pq_node *e,
                    const struct gp_pq_grid *g, const struct gp_pq_sel *twin)
{
    memset(rs, 0, sizeof *rs);
    e = gp_pq_unparen(e);
    if (!g->n)
        return GP_OK;
    if (e->kind == GP_PQ_MATRIX_SEL) {
        const struct gp_pq_sel *sel = &e->u.sel;
        rs->w = (struct gp_pq_when){sel->at, sel->at_ms, sel->offset_ms};
        rs->range = sel->range_ms;
        int64_t first = when_at(c, &rs->w, g, 0), last = when_at(c, &rs->w, g, g->n - 1);
        /* The twin looks back from the same times (same offset and @):
         * one read over the longer of the two reaches serves both. */
        int64_t reach = twin && c->lim.lookback_ms > rs->range ? c->lim.lookback_ms : rs->range;
        int rc = sel_open(c, &rs->r, sel, first - reach, last);
        if (rc != GP_OK || !twin)
            return rc;
        struct vsel_job *j = malloc(sizeof *j);
        if (!j)
            return gp_pq_oom(c);
        vsel_init(j, c, twin, g, 0);
        rs->r.twin = j;
        atomic_init(&rs->r.twin_failed, 0);
        return vsel_alloc(c, j, rs->r.sel.n);
    }
    if (e->kind != GP_PQ_SUBQUERY)
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "expected a range vector");
    const struct gp_pq_subquery *sq = &e->u.sub;
    rs->sub = 1;
    rs->w = (struct gp_pq_when){sq->at, sq->at_ms, sq->offset_ms};
    rs->range = sq->range_ms;
    int64_t step = sq->step_ms > 0 ? sq->step_ms : c->lim.subquery_step_ms;
    int64_t first = when_at(c, &rs->w, g, 0), last = when_at(c, &rs->w, g, g->n - 1);
    int64_t lo = first - rs->range;
    /* Absolute alignment: the first multiple of step in the window. */
    int64_t start = step * (lo / step);
    if (start < lo || (c->lim.prom3_windows && start == lo))
        start += step;
    rs->ig = (struct gp_pq_grid){start, step, 0};
    if (last >= start)
        rs->ig.n = (size_t)((last - start) / step) + 1;
    /* Every step of the inner grid takes a slot: refuse a grid beyond the
     * samples limit before allocating it ("[1y:1ms]"). */
    if (rs->ig.n > c->lim.max_samples)
        return gp_seterr(c->err, c->errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
    int rc = gp_pq_eval(c, sq->expr, &rs->ig, &rs->inner);
    if (rc != GP_OK)
        return rc;
    rs->t = malloc((rs->ig.n ? rs->ig.n : 1) * sizeof *rs->t);
    rs->v = malloc((rs->ig.n ? rs->ig.n : 1) * sizeof *rs->v);
    return rs->t && rs->v ? GP_OK : gp_pq_oom(c);
}

int gp_pq_rsrc_twin(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs, struct gp_pq_val *out)
{
    struct vsel_job *j = rs->sub ? NULL : rs->r.twin;
    if (!j)
        return 0;
    gp_pq_vector_new(out);
    int rc = vsel_collect(c, j, &rs->r, atomic_load(&rs->r.twin_failed) ? GP_ERANGE : GP_OK, out);
    free(j);
    rs->r.twin = NULL;
    if (rc == GP_OK)
        return 1;
    gp_pq_val_free(c, out);
    if (c->err && c->errlen)
        c->err[0] = '\0'; /* its own evaluation will say why */
    return 0;
}

void gp_pq_rsrc_close(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs)
{
    if (!rs->sub && rs->r.twin) {
        struct gp_pq_val v;
        gp_pq_vector_new(&v);
        vsel_collect(c, rs->r.twin, &rs->r, GP_ERANGE, &v);
        free(rs->r.twin);
        rs->r.twin = NULL;
    }
    if (rs->sub)
        gp_pq_val_free(c, &rs->inner);
    else
        sel_close(&rs->r);
    free(rs->t);
    free(rs->v);
}

/* Next series of the source: 1, 0 at the end, or an error. */
int gp_pq_rsrc_next(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs)
{
    if (!rs->sub) {
        const struct gp_store_series *ser = NULL;
        int rc = rs->r.sel.n ? sel_next(c, &rs->r, &ser) : 0;
        if (rc != 1)
            return rc;
        rs->lab = ser->labels;
        rs->lablen = ser->labels_len;
        rs->n = gp_pq_drop_stale(rs->r.smp.t, rs->r.smp.v, rs->r.smp.n);
        rs->ct = rs->r.smp.t;
        rs->cv = rs->r.smp.v;
        return 1;
    }
    if (rs->inner.type != GP_PQ_T_VECTOR || rs->vi >= rs->inner.n)
        return 0;
    int rc = gp_pq_check(c);
    if (rc != GP_OK)
        return rc;
    const struct gp_pq_ser *s = rs->inner.s + rs->vi++;
    size_t n = 0;
    for (size_t k = 0; k < rs->ig.n; k++) {
        if (!s->has[k])
            continue;
        rs->t[n] = gp_pq_grid_t(&rs->ig, k);
        rs->v[n++] = s->v[k];
    }
    rs->lab = s->lab;
    rs->lablen = s->lablen;
    rs->n = n;
    rs->ct = rs->t;
    rs->cv = rs->v;
    return 1;
}

/* The window of step k: samples [*lo, *hi) of the current series. The
 * cursors only move forward: windows' ends never decrease. */
void gp_pq_rsrc_window(const struct gp_pq_ctx *c, const struct gp_pq_rsrc *rs,
                       const struct gp_pq_grid *g, size_t k, size_t *lo, size_t *hi,
                       int64_t *from, int64_t *to)
{
    gp_pq_window_at(c, &rs->w, rs->range, g, k, rs->ct, rs->n, lo, hi, from, to);
}

/* An instant query of a range selector or subquery: the raw matrix. */
int gp_pq_eval_matrix(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                       struct gp_pq_val *out)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_MATRIX;
    if (g->n != 1)
        return gp_seterr(c->err, c->errlen, GP_EUSAGE,
                         "invalid expression type \"range vector\" for range query, must be "
                         "Scalar or instant Vector");
    struct gp_pq_rsrc rs;
    int rc = gp_pq_rsrc_open(c, &rs, e, g, NULL);
    size_t cap = 0;
    while (rc == GP_OK && (rc = gp_pq_rsrc_next(c, &rs)) == 1) {
        rc = GP_OK;
        size_t lo = 0, hi = 0;
        int64_t from, to;
        gp_pq_rsrc_window(c, &rs, g, 0, &lo, &hi, &from, &to);
        if (hi == lo)
            continue;
        if ((rc = gp_pq_count(c, hi - lo)) != GP_OK)
            break;
        out->npoints += hi - lo;
        if (out->mn == cap) {
            cap = cap ? cap * 2 : 16;
            struct gp_promql_series *m = realloc(out->m, cap * sizeof *m);
            if (!m) {
                rc = gp_pq_oom(c);
                break;
            }
            out->m = m;
        }
        struct gp_promql_series *s = out->m + out->mn;
        memset(s, 0, sizeof *s);
        s->n = hi - lo;
        s->t = malloc(s->n * sizeof *s->t);
        s->v = malloc(s->n * sizeof *s->v);
        s->labels = rs.lablen ? malloc(rs.lablen) : NULL;
        out->mn++;
        if (!s->t || !s->v || (rs.lablen && !s->labels)) {
            rc = gp_pq_oom(c);
            break;
        }
        memcpy(s->t, rs.ct + lo, s->n * sizeof *s->t);
        memcpy(s->v, rs.cv + lo, s->n * sizeof *s->v);
        if (rs.lablen)
            memcpy(s->labels, rs.lab, rs.lablen);
        s->labels_len = rs.lablen;
    }
    gp_pq_rsrc_close(c, &rs);
    return rc;
}
