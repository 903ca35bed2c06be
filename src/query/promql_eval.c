/*
 * promql_eval.c - the PromQL evaluator: entry points (instant and range
 * queries), the dispatch over the syntax tree, selectors, subqueries and
 * function calls. Binary operators are in promql_binop.c, aggregations
 * in promql_agg.c (promql_int.h describes the representation).
 *
 * Every node is evaluated for all steps of its grid at once, as
 * Prometheus's rangeEval does. Selectors select their series once, over
 * the union of the windows every step needs, read each series once and
 * slide over its samples step by step. Range functions (rate, ...) take
 * one series at a time from a "range source" (a matrix selector reading
 * the store, or a subquery's evaluated inner expression) and compute its
 * value at every step from the window [t - range, t] of that step, so a
 * range query holds one series' samples at a time, not the whole range.
 *
 * Limits: the samples held (points of live values, plus the window of
 * the series being read) are counted against limits.max_samples; the
 * deadline is checked between series and steps.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "query/eval.h"
#include "query/promql_fn.h"
#include "storage/storage.h"
#include "store/labels.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_LOOKBACK_MS (5 * 60 * 1000LL)
#define DEFAULT_MAX_SAMPLES 50000000u
#define DEFAULT_TIMEOUT_MS (2 * 60 * 1000LL)
#define DEFAULT_SUBQUERY_STEP_MS (60 * 1000LL)

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gp_pq_check(struct gp_pq_ctx *c)
{
    if ((c->tick++ & 63) != 0)
        return GP_OK;
    if (mono_ns() > c->deadline_ns)
        return gp_seterr(c->err, c->errlen, GP_PROMQL_ETIMEOUT,
                         "query timed out in expression evaluation");
    return GP_OK;
}

int gp_pq_count(struct gp_pq_ctx *c, size_t n)
{
    c->samples += n;
    if (c->samples > c->peak)
        c->peak = c->samples;
    if (c->samples > c->lim.max_samples)
        return gp_seterr(c->err, c->errlen, GP_ERANGE,
                         "query processing would load too many samples into memory in query "
                         "execution");
    return GP_OK;
}

static void uncount(struct gp_pq_ctx *c, size_t n)
{
    c->samples = n > c->samples ? 0 : c->samples - n;
}

int gp_pq_oom(struct gp_pq_ctx *c)
{
    return gp_seterr(c->err, c->errlen, GP_ENOMEM, "query: out of memory");
}

const struct gp_pq_node *gp_pq_unparen(const struct gp_pq_node *e)
{
    while (e && e->kind == GP_PQ_PAREN)
        e = e->u.paren;
    return e;
}

/* ---- values ---- */

void gp_pq_val_free(struct gp_pq_ctx *c, struct gp_pq_val *v)
{
    if (c)
        uncount(c, v->npoints);
    free(v->sc);
    for (size_t i = 0; i < v->n; i++) {
        free(v->s[i].lab);
        free(v->s[i].v);
        free(v->s[i].has);
    }
    free(v->s);
    gp_pq_map_free(&v->idx);
    free(v->str);
    for (size_t i = 0; i < v->mn; i++) {
        free(v->m[i].labels);
        free(v->m[i].t);
        free(v->m[i].v);
    }
    free(v->m);
    memset(v, 0, sizeof *v);
}

/* Appends a series without looking at the map (labels known distinct). */
static int val_append(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                      const uint8_t *lab, size_t len, size_t *idx)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        struct gp_pq_ser *s = realloc(v->s, cap * sizeof *s);
        if (!s)
            return gp_pq_oom(c);
        v->s = s;
        v->cap = cap;
    }
    struct gp_pq_ser *s = v->s + v->n;
    memset(s, 0, sizeof *s);
    s->v = malloc((g->n ? g->n : 1) * sizeof *s->v);
    s->has = calloc(g->n ? g->n : 1, 1);
    if (len) {
        s->lab = malloc(len);
        if (s->lab)
            memcpy(s->lab, lab, len);
    }
    if (!s->v || !s->has || (len && !s->lab)) {
        free(s->v);
        free(s->has);
        free(s->lab);
        return gp_pq_oom(c);
    }
    s->lablen = len;
    *idx = v->n++;
    return GP_OK;
}

int gp_pq_val_series(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                     const uint8_t *lab, size_t len, size_t *idx)
{
    int added = 0;
    if (gp_pq_map_get(&v->idx, lab, len, v->n, idx, &added) != GP_OK)
        return gp_pq_oom(c);
    if (!added)
        return GP_OK;
    return val_append(c, v, g, lab, len, idx);
}

int gp_pq_val_put(struct gp_pq_ctx *c, struct gp_pq_val *v, size_t i, size_t k, double x)
{
    struct gp_pq_ser *s = v->s + i;
    if (s->has[k])
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                         "vector cannot contain metrics with the same labelset");
    s->has[k] = 1;
    s->v[k] = x;
    v->npoints++;
    return gp_pq_count(c, 1);
}

static int scalar_new(struct gp_pq_ctx *c, struct gp_pq_val *out, const struct gp_pq_grid *g)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_SCALAR;
    out->sc = malloc((g->n ? g->n : 1) * sizeof *out->sc);
    return out->sc ? GP_OK : gp_pq_oom(c);
}

static void vector_new(struct gp_pq_val *out)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_VECTOR;
}

/* ---- time of a selector or subquery at a step ---- */

struct pq_when {
    enum gp_pq_at at;
    int64_t at_ms, offset_ms;
};

static int64_t when_at(const struct gp_pq_ctx *c, const struct pq_when *w,
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

struct sel_read {
    struct gp_store_selection sel;
    size_t *order; /* selection indexes sorted by labels */
    size_t i;
    struct gp_samples smp;
    int64_t mint, maxt;
};

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

static int sel_open(struct gp_pq_ctx *c, struct sel_read *r, const struct gp_pq_sel *sel,
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

static void sel_close(struct sel_read *r)
{
    gp_storage_selection_free(&r->sel);
    free(r->order);
    gp_samples_free(&r->smp);
    memset(r, 0, sizeof *r);
}

/* Next series: 1 with its samples in r->smp, 0 at the end, or an error. */
static int sel_next(struct gp_pq_ctx *c, struct sel_read *r, const struct gp_store_series **ser)
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
    if (r->smp.damaged) {
        if (!c->damaged || r->smp.damaged_from < c->damaged_from)
            c->damaged_from = r->smp.damaged_from;
        if (!c->damaged || r->smp.damaged_to > c->damaged_to)
            c->damaged_to = r->smp.damaged_to;
        c->damaged += r->smp.damaged;
    }
    if (rc != GP_OK && rc != GP_EPARSE) /* a damaged chunk: the rest still counts */
        return storage_err(c, rc, "read series");
    *ser = s;
    return 1;
}

/* Drops stale markers in place (range vectors never hold them). */
static size_t drop_stale(int64_t *t, double *v, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != v[i] && gp_eval_is_stale(v[i]))
            continue;
        t[o] = t[i];
        v[o] = v[i];
        o++;
    }
    return o;
}

/* ---- instant vector selector ---- */

static int eval_vsel(struct gp_pq_ctx *c, const struct gp_pq_sel *sel, const struct gp_pq_grid *g,
                     int ts_mode, struct gp_pq_val *out)
{
    vector_new(out);
    if (!g->n)
        return GP_OK;
    struct pq_when w = {sel->at, sel->at_ms, sel->offset_ms};
    int64_t lb = c->lim.lookback_ms;
    int64_t first = when_at(c, &w, g, 0), last = when_at(c, &w, g, g->n - 1);
    struct sel_read r;
    int rc = sel_open(c, &r, sel, first - lb, last);
    const struct gp_store_series *ser;
    while (rc == GP_OK && (rc = sel_next(c, &r, &ser)) == 1) {
        rc = GP_OK;
        const int64_t *t = r.smp.t;
        const double *v = r.smp.v;
        size_t n = r.smp.n, j = 0, idx = (size_t)-1;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
            int64_t at = when_at(c, &w, g, k);
            while (j < n && t[j] <= at)
                j++;
            if (j == 0)
                continue;
            int64_t ts = t[j - 1];
            double x = v[j - 1];
            if ((c->lim.prom3_windows ? ts <= at - lb : ts < at - lb) ||
                (x != x && gp_eval_is_stale(x)))
                continue;
            if (idx == (size_t)-1)
                rc = val_append(c, out, g, ser->labels, ser->labels_len, &idx);
            if (rc == GP_OK)
                rc = gp_pq_val_put(c, out, idx, k, ts_mode ? (double)ts / 1000.0 : x);
        }
    }
    sel_close(&r);
    return rc;
}

/* ---- range sources: matrix selectors and subqueries ---- */

struct rsrc {
    struct pq_when w;
    int64_t range;
    int sub;
    struct sel_read r;            /* matrix selector */
    struct gp_pq_val inner;       /* subquery */
    struct gp_pq_grid ig;
    size_t vi;
    int64_t *t;
    double *v;
    /* the current series */
    const uint8_t *lab;
    size_t lablen, n;
    const int64_t *ct;
    const double *cv;
};

static int rsrc_open(struct gp_pq_ctx *c, struct rsrc *rs, const struct gp_pq_node *e,
                     const struct gp_pq_grid *g)
{
    memset(rs, 0, sizeof *rs);
    e = gp_pq_unparen(e);
    if (!g->n)
        return GP_OK;
    if (e->kind == GP_PQ_MATRIX_SEL) {
        const struct gp_pq_sel *sel = &e->u.sel;
        rs->w = (struct pq_when){sel->at, sel->at_ms, sel->offset_ms};
        rs->range = sel->range_ms;
        int64_t first = when_at(c, &rs->w, g, 0), last = when_at(c, &rs->w, g, g->n - 1);
        return sel_open(c, &rs->r, sel, first - rs->range, last);
    }
    if (e->kind != GP_PQ_SUBQUERY)
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "expected a range vector");
    const struct gp_pq_subquery *sq = &e->u.sub;
    rs->sub = 1;
    rs->w = (struct pq_when){sq->at, sq->at_ms, sq->offset_ms};
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
    int rc = gp_pq_eval(c, sq->expr, &rs->ig, &rs->inner);
    if (rc != GP_OK)
        return rc;
    rs->t = malloc((rs->ig.n ? rs->ig.n : 1) * sizeof *rs->t);
    rs->v = malloc((rs->ig.n ? rs->ig.n : 1) * sizeof *rs->v);
    return rs->t && rs->v ? GP_OK : gp_pq_oom(c);
}

static void rsrc_close(struct gp_pq_ctx *c, struct rsrc *rs)
{
    if (rs->sub)
        gp_pq_val_free(c, &rs->inner);
    else
        sel_close(&rs->r);
    free(rs->t);
    free(rs->v);
}

/* Next series of the source: 1, 0 at the end, or an error. */
static int rsrc_next(struct gp_pq_ctx *c, struct rsrc *rs)
{
    if (!rs->sub) {
        const struct gp_store_series *ser;
        int rc = rs->r.sel.n ? sel_next(c, &rs->r, &ser) : 0;
        if (rc != 1)
            return rc;
        rs->lab = ser->labels;
        rs->lablen = ser->labels_len;
        rs->n = drop_stale(rs->r.smp.t, rs->r.smp.v, rs->r.smp.n);
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
static void rsrc_window(const struct gp_pq_ctx *c, const struct rsrc *rs,
                        const struct gp_pq_grid *g, size_t k, size_t *lo, size_t *hi,
                        int64_t *from, int64_t *to)
{
    int64_t end = when_at(c, &rs->w, g, k), start = end - rs->range;
    while (*hi < rs->n && rs->ct[*hi] <= end)
        (*hi)++;
    while (*lo < *hi && (c->lim.prom3_windows ? rs->ct[*lo] <= start : rs->ct[*lo] < start))
        (*lo)++;
    *from = start;
    *to = end;
}

/* An instant query of a range selector or subquery: the raw matrix. */
static int eval_matrix(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                       struct gp_pq_val *out)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_MATRIX;
    if (g->n != 1)
        return gp_seterr(c->err, c->errlen, GP_EUSAGE,
                         "invalid expression type \"range vector\" for range query, must be "
                         "Scalar or instant Vector");
    struct rsrc rs;
    int rc = rsrc_open(c, &rs, e, g);
    size_t cap = 0;
    while (rc == GP_OK && (rc = rsrc_next(c, &rs)) == 1) {
        rc = GP_OK;
        size_t lo = 0, hi = 0;
        int64_t from, to;
        rsrc_window(c, &rs, g, 0, &lo, &hi, &from, &to);
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
    rsrc_close(c, &rs);
    return rc;
}

/* ---- function calls ---- */

static int eval_scalar_args(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                            const struct gp_pq_grid *g, size_t skip, struct gp_pq_val *args,
                            size_t *nargs)
{
    *nargs = 0;
    for (size_t i = 0; i < call->nargs; i++) {
        if (i == skip)
            continue;
        int rc = gp_pq_eval(c, call->args[i], g, &args[*nargs]);
        if (rc != GP_OK)
            return rc;
        if (args[*nargs].type != GP_PQ_T_SCALAR) {
            gp_pq_val_free(c, &args[*nargs]);
            return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "expected a scalar argument");
        }
        (*nargs)++;
    }
    return GP_OK;
}

/* The labels absent() and absent_over_time() give: the selector's
 * equality matchers, except __name__ and names matched more than once or
 * otherwise. */
static int absent_labels(struct gp_pq_ctx *c, const struct gp_pq_node *arg, struct gp_buf *out)
{
    gp_buf_reset(out);
    arg = gp_pq_unparen(arg);
    if (arg->kind != GP_PQ_VECTOR_SEL && arg->kind != GP_PQ_MATRIX_SEL)
        return GP_OK;
    const struct gp_pq_sel *sel = &arg->u.sel;
    struct gp_pq_lset ls = {0};
    int rc = GP_OK;
    for (size_t i = 0; i < sel->nm && rc == GP_OK; i++) {
        const struct gp_matcher *m = sel->m + i;
        if (strcmp(m->name, "__name__") == 0 || m->op != GP_MATCH_EQ)
            continue;
        int seen = 0;
        for (size_t j = 0; j < ls.n; j++)
            if (strlen(m->name) == ls.l[j].name.len && !memcmp(m->name, ls.l[j].name.ptr, ls.l[j].name.len))
                seen = 1;
        if (!seen)
            rc = gp_pq_lset_set(&ls, m->name, strlen(m->name), m->value, m->value_len);
    }
    for (size_t i = 0; i < sel->nm && rc == GP_OK; i++) {
        const struct gp_matcher *m = sel->m + i;
        if (strcmp(m->name, "__name__") == 0)
            continue;
        int first_eq = 0;
        if (m->op == GP_MATCH_EQ) {
            /* Only the first equality matcher of a name sets it. */
            first_eq = 1;
            for (size_t j = 0; j < i; j++)
                if (!strcmp(sel->m[j].name, m->name) && sel->m[j].op == GP_MATCH_EQ)
                    first_eq = 0;
        }
        if (!first_eq)
            gp_pq_lset_del(&ls, m->name);
    }
    if (rc == GP_OK)
        gp_pq_lset_encode(&ls, out);
    gp_pq_lset_free(&ls);
    return rc == GP_OK && !out->err ? GP_OK : gp_pq_oom(c);
}

/* A vector of one series with the given labels and value 1 at the steps
 * where present[k] is 0 (absent, absent_over_time). */
static int absent_result(struct gp_pq_ctx *c, const struct gp_pq_node *arg,
                         const struct gp_pq_grid *g, const uint8_t *present,
                         struct gp_pq_val *out)
{
    vector_new(out);
    int rc = absent_labels(c, arg, &c->tmp);
    size_t idx = (size_t)-1;
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if (present[k])
            continue;
        if (idx == (size_t)-1)
            rc = val_append(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len, &idx);
        if (rc == GP_OK)
            rc = gp_pq_val_put(c, out, idx, k, 1);
    }
    return rc;
}

static int call_range(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                      const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    size_t mi = 0;
    while (mi < call->nargs && call->args[mi]->type != GP_PQ_T_MATRIX)
        mi++;
    if (mi == call->nargs)
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "expected a range vector argument");
    struct gp_pq_val args[4];
    size_t nargs = 0;
    memset(args, 0, sizeof args);
    vector_new(out);
    int rc = call->nargs <= 4 ? eval_scalar_args(c, call, g, mi, args, &nargs) : GP_PQ_EEXEC;
    int absent = call->func == GP_PQ_F_ABSENT_OVER_TIME;
    uint8_t *present = absent ? calloc(g->n ? g->n : 1, 1) : NULL;
    if (absent && !present)
        rc = gp_pq_oom(c);
    struct rsrc rs;
    if (rc == GP_OK)
        rc = rsrc_open(c, &rs, call->args[mi], g);
    else
        memset(&rs, 0, sizeof rs), rs.sub = 1;
    while (rc == GP_OK && (rc = rsrc_next(c, &rs)) == 1) {
        rc = GP_OK;
        size_t lo = 0, hi = 0, idx = (size_t)-1, held = 0;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
            if ((rc = gp_pq_check(c)) != GP_OK)
                break;
            struct gp_pq_window win;
            rsrc_window(c, &rs, g, k, &lo, &hi, &win.start_ms, &win.end_ms);
            if (hi == lo)
                continue;
            if (hi - lo > held) { /* the series' largest window is what it holds */
                rc = gp_pq_count(c, hi - lo - held);
                held = hi - lo;
                if (rc != GP_OK)
                    break;
            }
            if (absent) {
                present[k] = 1;
                continue;
            }
            win.t = rs.ct + lo;
            win.v = rs.cv + lo;
            win.n = hi - lo;
            win.eval_ms = gp_pq_grid_t(g, k);
            win.counter_hint = 0;
            double a[4], x;
            for (size_t i = 0; i < nargs; i++)
                a[i] = args[i].sc[k];
            int got = gp_pq_fn_range(call->func, &win, a, nargs, &x);
            if (got < 0) {
                if (gp_pq_fn_check_args(call->func, a, nargs, c->err, c->errlen) == 0)
                    rc = gp_pq_oom(c);
                else
                    rc = GP_PQ_EEXEC;
                break;
            }
            if (!got)
                continue;
            if (idx == (size_t)-1) {
                /* last_over_time acts like offset: it keeps the name. */
                if (call->func == GP_PQ_F_LAST_OVER_TIME)
                    rc = gp_pq_val_series(c, out, g, rs.lab, rs.lablen, &idx);
                else {
                    gp_pq_labels_drop_name(rs.lab, rs.lablen, &c->tmp);
                    rc = c->tmp.err ? gp_pq_oom(c)
                                    : gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data,
                                                       c->tmp.len, &idx);
                }
                if (rc != GP_OK)
                    break;
            }
            rc = gp_pq_val_put(c, out, idx, k, x);
        }
        uncount(c, held);
    }
    rsrc_close(c, &rs);
    if (rc == GP_OK && absent)
        rc = absent_result(c, call->args[mi], g, present, out);
    free(present);
    for (size_t i = 0; i < nargs; i++)
        gp_pq_val_free(c, &args[i]);
    return rc;
}

/* Maps each sample of the vector argument (or of vector(time()) for the
 * date functions without one) through a value kernel; drops __name__. */
static int call_value(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                      const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    struct gp_pq_val in, args[3];
    size_t nargs = 0;
    memset(args, 0, sizeof args);
    vector_new(out);
    int rc = GP_OK;
    if (call->nargs == 0) { /* vector(time()) */
        vector_new(&in);
        size_t idx;
        rc = val_append(c, &in, g, NULL, 0, &idx);
        for (size_t k = 0; k < g->n && rc == GP_OK; k++)
            rc = gp_pq_val_put(c, &in, idx, k, (double)gp_pq_grid_t(g, k) / 1000.0);
    } else {
        rc = gp_pq_eval(c, call->args[0], g, &in);
    }
    if (rc == GP_OK && call->nargs <= 4)
        rc = eval_scalar_args(c, call, g, 0, args, &nargs);
    for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
        const struct gp_pq_ser *s = in.s + i;
        size_t idx = (size_t)-1;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
            if (!s->has[k])
                continue;
            double a[3];
            for (size_t j = 0; j < nargs; j++)
                a[j] = args[j].sc[k];
            if (call->func == GP_PQ_F_CLAMP && a[1] < a[0])
                continue; /* 2.42 outputs nothing when max < min */
            if (idx == (size_t)-1) {
                gp_pq_labels_drop_name(s->lab, s->lablen, &c->tmp);
                rc = c->tmp.err ? gp_pq_oom(c)
                                : gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data,
                                                   c->tmp.len, &idx);
                if (rc != GP_OK)
                    break;
            }
            rc = gp_pq_val_put(c, out, idx, k, gp_pq_fn_value(call->func, s->v[k], a, nargs));
        }
    }
    gp_pq_val_free(c, &in);
    for (size_t j = 0; j < nargs; j++)
        gp_pq_val_free(c, &args[j]);
    return rc;
}

/* Go's Regexp.Expand for a POSIX match whose group 1 is the whole
 * pattern (the matcher wraps it as ^(...)$): $1 is group 2, and so on;
 * names (POSIX has no named groups) and missing groups expand to "". */
static void expand(struct gp_buf *out, const char *tmpl, size_t tlen, const char *src,
                   const regmatch_t *pm, size_t npm)
{
    for (size_t i = 0; i < tlen;) {
        if (tmpl[i] != '$' || i + 1 >= tlen) {
            gp_buf_putc(out, tmpl[i++]);
            continue;
        }
        size_t j = i + 1, ns, ne;
        int braces = tmpl[j] == '{';
        if (tmpl[j] == '$') {
            gp_buf_putc(out, '$');
            i += 2;
            continue;
        }
        if (braces)
            j++;
        ns = j;
        while (j < tlen && (tmpl[j] == '_' || (tmpl[j] >= '0' && tmpl[j] <= '9') ||
                            (tmpl[j] >= 'a' && tmpl[j] <= 'z') || (tmpl[j] >= 'A' && tmpl[j] <= 'Z')))
            j++;
        ne = j;
        if (ne == ns || (braces && (j >= tlen || tmpl[j] != '}'))) {
            gp_buf_putc(out, tmpl[i++]); /* not a reference: a literal $ */
            continue;
        }
        if (braces)
            j++;
        size_t num = 0;
        int numeric = 1;
        for (size_t q = ns; q < ne; q++) {
            if (tmpl[q] < '0' || tmpl[q] > '9' || num > 100000)
                numeric = 0;
            else
                num = num * 10 + (size_t)(tmpl[q] - '0');
        }
        if (numeric && num + 1 < npm && pm[num + 1].rm_so >= 0)
            gp_buf_append(out, src + pm[num + 1].rm_so, (size_t)(pm[num + 1].rm_eo - pm[num + 1].rm_so));
        i = j;
    }
}

static int valid_label_name(const char *s, size_t len)
{
    if (!len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        int ok = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (i > 0 && ch >= '0' && ch <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

static const char *str_arg(const struct gp_pq_call *call, size_t i, size_t *len)
{
    const struct gp_pq_node *a = gp_pq_unparen(call->args[i]);
    if (a->kind != GP_PQ_STRING) {
        *len = 0;
        return "";
    }
    *len = a->u.string.len;
    return a->u.string.s;
}

/* label_replace and label_join: the vector with one label rewritten per
 * series (computed once per series, not per step). */
static int call_relabel(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                        const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    int replace = call->func == GP_PQ_F_LABEL_REPLACE;
    const char *fname = replace ? "label_replace" : "label_join";
    size_t dlen, l2, l3 = 0;
    const char *dst = str_arg(call, 1, &dlen), *a2 = str_arg(call, 2, &l2);
    const char *a3 = call->nargs > 3 ? str_arg(call, 3, &l3) : "";
    vector_new(out);
    if (!valid_label_name(dst, dlen))
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                         "invalid destination label name in %s(): %.*s", fname, (int)dlen, dst);
    regex_t re;
    int have_re = 0;
    if (replace) {
        size_t rlen;
        const char *rs = str_arg(call, 4, &rlen);
        struct gp_matcher m;
        char merr[256] = "";
        /* The matcher's check refuses what POSIX would read unlike RE2. */
        if (gp_matcher_init(&m, GP_MATCH_RE, "x", rs, merr, sizeof merr) != GP_OK)
            return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                             "invalid regular expression in label_replace(): %s", merr);
        gp_matcher_free(&m);
        gp_buf_reset(&c->tmp);
        gp_buf_printf(&c->tmp, "^(%.*s)$", (int)rlen, rs);
        if (c->tmp.err || regcomp(&re, c->tmp.data, REG_EXTENDED) != 0)
            return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                             "invalid regular expression in label_replace(): %.*s", (int)rlen, rs);
        have_re = 1;
    } else {
        for (size_t i = 3; i < call->nargs; i++) {
            size_t sl;
            const char *sn = str_arg(call, i, &sl);
            if (!valid_label_name(sn, sl))
                return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                                 "invalid source label name in label_join(): %.*s", (int)sl, sn);
        }
    }
    struct gp_pq_val in;
    int rc = gp_pq_eval(c, call->args[0], g, &in);
    struct gp_pq_lset ls = {0};
    struct gp_buf val = {0}, lab = {0};
    char *srcz = NULL;
    for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
        const struct gp_pq_ser *s = in.s + i;
        gp_buf_reset(&val);
        int change = 1;
        if (replace) {
            struct gp_rw_str sv = {"", 0};
            char an[256];
            snprintf(an, sizeof an, "%.*s", (int)l3, a3);
            gp_labels_get(s->lab, s->lablen, an, &sv);
            free(srcz);
            srcz = malloc(sv.len + 1);
            if (!srcz) {
                rc = gp_pq_oom(c);
                break;
            }
            memcpy(srcz, sv.ptr, sv.len);
            srcz[sv.len] = '\0';
            regmatch_t pm[32];
            if (memchr(srcz, '\0', sv.len) || regexec(&re, srcz, 32, pm, 0) != 0)
                change = 0;
            else
                expand(&val, a2, l2, srcz, pm, 32);
        } else {
            for (size_t j = 3; j < call->nargs; j++) {
                size_t sl;
                const char *sn = str_arg(call, j, &sl);
                char an[256];
                snprintf(an, sizeof an, "%.*s", (int)sl, sn);
                struct gp_rw_str sv = {"", 0};
                gp_labels_get(s->lab, s->lablen, an, &sv);
                if (j > 3)
                    gp_buf_append(&val, a2, l2);
                gp_buf_append(&val, sv.ptr, sv.len);
            }
        }
        if (val.err) {
            rc = gp_pq_oom(c);
            break;
        }
        const uint8_t *olab = s->lab;
        size_t olen = s->lablen;
        if (change) {
            if ((rc = gp_pq_lset_decode(&ls, s->lab, s->lablen)) != GP_OK ||
                (rc = gp_pq_lset_set(&ls, dst, dlen, val.data, val.len)) != GP_OK) {
                rc = gp_pq_oom(c);
                break;
            }
            gp_pq_lset_encode(&ls, &lab);
            if (lab.err) {
                rc = gp_pq_oom(c);
                break;
            }
            olab = (const uint8_t *)lab.data;
            olen = lab.len;
        }
        size_t idx;
        if ((rc = gp_pq_val_series(c, out, g, olab, olen, &idx)) != GP_OK)
            break;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++)
            if (s->has[k])
                rc = gp_pq_val_put(c, out, idx, k, s->v[k]);
    }
    free(srcz);
    gp_buf_free(&val);
    gp_buf_free(&lab);
    gp_pq_lset_free(&ls);
    if (have_re)
        regfree(&re);
    gp_pq_val_free(c, &in);
    /* Series that never had a point (all steps empty) are dropped. */
    return rc;
}

/* ---- sorting (instant queries: one step) ---- */

struct sort_key {
    const struct gp_pq_ser *s;
    double v;
    size_t pos;
};
/* qsort takes no argument: the sort_by_label call being sorted. */
static __thread const struct gp_pq_call *sort_call_tl;

/* NaN last in both directions, as 2.42 does; ties by input position. */
static int cmp_value(const struct sort_key *a, const struct sort_key *b, int desc)
{
    int an = a->v != a->v, bn = b->v != b->v;
    if (an != bn)
        return an - bn;
    if (!an && a->v != b->v)
        return (a->v < b->v) == !desc ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}
static int cmp_asc(const void *a, const void *b)
{
    return cmp_value(a, b, 0);
}
static int cmp_desc(const void *a, const void *b)
{
    return cmp_value(a, b, 1);
}
static int cmp_by_label(const void *pa, const void *pb)
{
    const struct sort_key *a = pa, *b = pb;
    const struct gp_pq_call *call = sort_call_tl;
    int desc = call->func == GP_PQ_F_SORT_BY_LABEL_DESC;
    for (size_t i = 1; i < call->nargs; i++) {
        size_t nl;
        const char *n = str_arg(call, i, &nl);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)nl, n);
        struct gp_rw_str x, y;
        gp_labels_get(a->s->lab, a->s->lablen, name, &x);
        gp_labels_get(b->s->lab, b->s->lablen, name, &y);
        int cmp = memcmp(x.ptr, y.ptr, x.len < y.len ? x.len : y.len);
        if (!cmp)
            cmp = x.len < y.len ? -1 : x.len > y.len;
        if (cmp)
            return desc ? -cmp : cmp;
    }
    int cmp = gp_pq_labels_cmp(a->s->lab, a->s->lablen, b->s->lab, b->s->lablen);
    return desc ? -cmp : cmp;
}

static int call_sort(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                     const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    int rc = gp_pq_eval(c, call->args[0], g, out);
    if (rc != GP_OK || g->n != 1) /* ordering means nothing across steps */
        return rc;
    struct sort_key *k = malloc((out->n ? out->n : 1) * sizeof *k);
    struct gp_pq_ser *tmp = malloc((out->n ? out->n : 1) * sizeof *tmp);
    if (!k || !tmp) {
        free(k);
        free(tmp);
        return gp_pq_oom(c);
    }
    /* Stable over an input sorted by labels, as Prometheus's is. */
    for (size_t i = 0; i < out->n; i++)
        k[i] = (struct sort_key){out->s + i, out->s[i].v[0], i};
    switch (call->func) {
    case GP_PQ_F_SORT: qsort(k, out->n, sizeof *k, cmp_asc); break;
    case GP_PQ_F_SORT_DESC: qsort(k, out->n, sizeof *k, cmp_desc); break;
    default:
        sort_call_tl = call;
        qsort(k, out->n, sizeof *k, cmp_by_label);
        sort_call_tl = NULL;
        break;
    }
    for (size_t i = 0; i < out->n; i++)
        tmp[i] = *k[i].s;
    memcpy(out->s, tmp, out->n * sizeof *tmp);
    free(k);
    free(tmp);
    gp_pq_map_free(&out->idx); /* indexes moved */
    out->ordered = 1;
    return GP_OK;
}

/* histogram_quantile(phi, buckets): series grouped by their labels
 * without le (and __name__), buckets collected per step. */
static int call_histogram_quantile(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                                   const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    struct gp_pq_val phi, in;
    vector_new(out);
    int rc = gp_pq_eval(c, call->args[0], g, &phi);
    if (rc != GP_OK)
        return rc;
    if ((rc = gp_pq_eval(c, call->args[1], g, &in)) != GP_OK) {
        gp_pq_val_free(c, &phi);
        return rc;
    }
    size_t *grp = malloc((in.n ? in.n : 1) * sizeof *grp);
    double *le = malloc((in.n ? in.n : 1) * sizeof *le);
    struct gp_pq_map gm = {0};
    size_t ng = 0;
    static const char *le_name[] = {"le"};
    struct gp_pq_labels lel = {(char **)le_name, 1};
    if (!grp || !le)
        rc = gp_pq_oom(c);
    for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
        struct gp_rw_str v;
        grp[i] = (size_t)-1;
        if (!gp_labels_get(in.s[i].lab, in.s[i].lablen, "le", &v))
            continue;
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(v.len < 63 ? v.len : 63), v.ptr);
        char *end;
        double b = strtod(tmp, &end);
        if (end == tmp || *end) {
            if (!strcmp(tmp, "+Inf") || !strcmp(tmp, "Inf") || !strcmp(tmp, "inf"))
                b = INFINITY;
            else
                continue; /* not a bucket bound: ignored */
        }
        le[i] = b;
        gp_pq_labels_key(in.s[i].lab, in.s[i].lablen, &lel, 0, &c->tmp);
        if (c->tmp.err || gp_pq_map_get(&gm, c->tmp.data, c->tmp.len, ng, &grp[i], NULL) != GP_OK) {
            rc = gp_pq_oom(c);
            break;
        }
        if (grp[i] == ng) {
            size_t idx;
            rc = val_append(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len, &idx);
            ng++;
        }
    }
    struct gp_pq_bucket *b = malloc((in.n ? in.n : 1) * sizeof *b);
    size_t *nb = calloc(ng ? ng : 1, sizeof *nb), *off = calloc(ng + 1, sizeof *off);
    if (!b || !nb || !off)
        rc = rc ? rc : gp_pq_oom(c);
    if (rc == GP_OK) {
        /* Bucket slots per group: count series per group once. */
        for (size_t i = 0; i < in.n; i++)
            if (grp[i] != (size_t)-1)
                off[grp[i] + 1]++;
        for (size_t q = 0; q < ng; q++)
            off[q + 1] += off[q];
    }
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        memset(nb, 0, ng * sizeof *nb);
        for (size_t i = 0; i < in.n; i++) {
            size_t q = grp[i];
            if (q == (size_t)-1 || !in.s[i].has[k])
                continue;
            b[off[q] + nb[q]++] = (struct gp_pq_bucket){le[i], in.s[i].v[k]};
        }
        for (size_t q = 0; q < ng && rc == GP_OK; q++)
            if (nb[q])
                rc = gp_pq_val_put(c, out, q, k,
                                   gp_pq_histogram_quantile(phi.sc[k], b + off[q], nb[q]));
    }
    free(b);
    free(nb);
    free(off);
    free(grp);
    free(le);
    gp_pq_map_free(&gm);
    gp_pq_val_free(c, &phi);
    gp_pq_val_free(c, &in);
    return rc;
}

static int eval_call(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                     struct gp_pq_val *out)
{
    const struct gp_pq_call *call = &e->u.call;
    int rc;
    switch (call->func) {
    case GP_PQ_F_TIME:
    case GP_PQ_F_PI:
        if ((rc = scalar_new(c, out, g)) != GP_OK)
            return rc;
        for (size_t k = 0; k < g->n; k++)
            out->sc[k] = call->func == GP_PQ_F_PI ? M_PI : (double)gp_pq_grid_t(g, k) / 1000.0;
        return GP_OK;
    case GP_PQ_F_VECTOR: {
        struct gp_pq_val a;
        if ((rc = gp_pq_eval(c, call->args[0], g, &a)) != GP_OK)
            return rc;
        vector_new(out);
        size_t idx;
        rc = val_append(c, out, g, NULL, 0, &idx);
        for (size_t k = 0; k < g->n && rc == GP_OK; k++)
            rc = gp_pq_val_put(c, out, idx, k, a.sc[k]);
        gp_pq_val_free(c, &a);
        return rc;
    }
    case GP_PQ_F_SCALAR: {
        struct gp_pq_val a;
        if ((rc = gp_pq_eval(c, call->args[0], g, &a)) != GP_OK)
            return rc;
        if ((rc = scalar_new(c, out, g)) == GP_OK) {
            for (size_t k = 0; k < g->n; k++) {
                size_t cnt = 0;
                double x = NAN;
                for (size_t i = 0; i < a.n; i++)
                    if (a.s[i].has[k])
                        cnt++, x = a.s[i].v[k];
                out->sc[k] = cnt == 1 ? x : NAN;
            }
        }
        gp_pq_val_free(c, &a);
        return rc;
    }
    case GP_PQ_F_ABSENT: {
        struct gp_pq_val a;
        if ((rc = gp_pq_eval(c, call->args[0], g, &a)) != GP_OK)
            return rc;
        uint8_t *present = calloc(g->n ? g->n : 1, 1);
        if (!present) {
            gp_pq_val_free(c, &a);
            return gp_pq_oom(c);
        }
        for (size_t i = 0; i < a.n; i++)
            for (size_t k = 0; k < g->n; k++)
                present[k] |= a.s[i].has[k];
        gp_pq_val_free(c, &a);
        rc = absent_result(c, call->args[0], g, present, out);
        free(present);
        return rc;
    }
    case GP_PQ_F_TIMESTAMP: {
        const struct gp_pq_node *a = gp_pq_unparen(call->args[0]);
        struct gp_pq_val in;
        /* Of a selector: the sample's own time; else the step's. */
        rc = a->kind == GP_PQ_VECTOR_SEL ? eval_vsel(c, &a->u.sel, g, 1, &in)
                                         : gp_pq_eval(c, a, g, &in);
        if (rc != GP_OK)
            return rc;
        vector_new(out);
        for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
            size_t idx = (size_t)-1;
            for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
                if (!in.s[i].has[k])
                    continue;
                if (idx == (size_t)-1) {
                    gp_pq_labels_drop_name(in.s[i].lab, in.s[i].lablen, &c->tmp);
                    rc = gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len,
                                          &idx);
                    if (rc != GP_OK)
                        break;
                }
                rc = gp_pq_val_put(c, out, idx, k,
                                   a->kind == GP_PQ_VECTOR_SEL
                                       ? in.s[i].v[k]
                                       : (double)gp_pq_grid_t(g, k) / 1000.0);
            }
        }
        gp_pq_val_free(c, &in);
        return rc;
    }
    case GP_PQ_F_LABEL_REPLACE:
    case GP_PQ_F_LABEL_JOIN:
        return call_relabel(c, call, g, out);
    case GP_PQ_F_SORT:
    case GP_PQ_F_SORT_DESC:
    case GP_PQ_F_SORT_BY_LABEL:
    case GP_PQ_F_SORT_BY_LABEL_DESC:
        return call_sort(c, call, g, out);
    case GP_PQ_F_HISTOGRAM_QUANTILE:
        return call_histogram_quantile(c, call, g, out);
    case GP_PQ_F_HISTOGRAM_COUNT:
    case GP_PQ_F_HISTOGRAM_SUM:
    case GP_PQ_F_HISTOGRAM_FRACTION: {
        /* Native histograms only: float series give nothing. */
        struct gp_pq_val a;
        size_t vi = call->func == GP_PQ_F_HISTOGRAM_FRACTION ? 2 : 0;
        if (vi >= call->nargs)
            vi = call->nargs - 1;
        if ((rc = gp_pq_eval(c, call->args[vi], g, &a)) != GP_OK)
            return rc;
        gp_pq_val_free(c, &a);
        vector_new(out);
        return GP_OK;
    }
    default:
        break;
    }
    if (gp_pq_fn_is_range_kernel(call->func) || call->func == GP_PQ_F_ABSENT_OVER_TIME)
        return call_range(c, call, g, out);
    if (gp_pq_fn_is_value_kernel(call->func))
        return call_value(c, call, g, out);
    return gp_seterr(c->err, c->errlen, GP_EUNSUPPORTED, "function %s is not supported",
                     gp_pq_func_name(call->func));
}

/* ---- dispatch ---- */

static int eval_unary(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                      struct gp_pq_val *out)
{
    struct gp_pq_val in;
    int rc = gp_pq_eval(c, e->u.unary.expr, g, &in);
    if (rc != GP_OK || !e->u.unary.negate) {
        *out = in;
        return rc;
    }
    if (in.type == GP_PQ_T_SCALAR) {
        for (size_t k = 0; k < g->n; k++)
            in.sc[k] = -in.sc[k];
        *out = in;
        return GP_OK;
    }
    vector_new(out);
    for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
        size_t idx = (size_t)-1;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
            if (!in.s[i].has[k])
                continue;
            if (idx == (size_t)-1) {
                gp_pq_labels_drop_name(in.s[i].lab, in.s[i].lablen, &c->tmp);
                if ((rc = gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len,
                                           &idx)) != GP_OK)
                    break;
            }
            rc = gp_pq_val_put(c, out, idx, k, -in.s[i].v[k]);
        }
    }
    gp_pq_val_free(c, &in);
    return rc;
}

int gp_pq_eval(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
               struct gp_pq_val *out)
{
    memset(out, 0, sizeof *out);
    int rc = gp_pq_check(c);
    if (rc != GP_OK)
        return rc;
    switch (e->kind) {
    case GP_PQ_NUMBER:
        if ((rc = scalar_new(c, out, g)) != GP_OK)
            return rc;
        for (size_t k = 0; k < g->n; k++)
            out->sc[k] = e->u.number;
        return GP_OK;
    case GP_PQ_STRING:
        out->type = GP_PQ_T_STRING;
        out->str = malloc(e->u.string.len + 1);
        if (!out->str)
            return gp_pq_oom(c);
        memcpy(out->str, e->u.string.s, e->u.string.len);
        out->str[e->u.string.len] = '\0';
        return GP_OK;
    case GP_PQ_VECTOR_SEL: rc = eval_vsel(c, &e->u.sel, g, 0, out); break;
    case GP_PQ_MATRIX_SEL:
    case GP_PQ_SUBQUERY: rc = eval_matrix(c, e, g, out); break;
    case GP_PQ_CALL: rc = eval_call(c, e, g, out); break;
    case GP_PQ_AGG: rc = gp_pq_eval_agg(c, e, g, out); break;
    case GP_PQ_BINARY: rc = gp_pq_eval_binary(c, e, g, out); break;
    case GP_PQ_UNARY: return eval_unary(c, e, g, out);
    case GP_PQ_PAREN: return gp_pq_eval(c, e->u.paren, g, out);
    default: return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "unknown expression node");
    }
    if (rc != GP_OK)
        gp_pq_val_free(c, out);
    return rc;
}

/* ---- entry points ---- */

static void ctx_init(struct gp_pq_ctx *c, struct gp_storage *s, const struct gp_promql_limits *lim,
                     int64_t start, int64_t end, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    if (lim)
        c->lim = *lim;
    if (c->lim.lookback_ms <= 0)
        c->lim.lookback_ms = DEFAULT_LOOKBACK_MS;
    if (!c->lim.max_samples)
        c->lim.max_samples = DEFAULT_MAX_SAMPLES;
    if (c->lim.timeout_ms <= 0)
        c->lim.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (c->lim.subquery_step_ms <= 0)
        c->lim.subquery_step_ms = DEFAULT_SUBQUERY_STEP_MS;
    c->qstart = start;
    c->qend = end;
    c->deadline_ns = mono_ns() + c->lim.timeout_ms * 1000000;
    c->err = err;
    c->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
}

static void ctx_finish(struct gp_pq_ctx *c, struct gp_promql_result *out)
{
    out->samples_peak = c->peak;
    if (c->damaged) {
        struct gp_buf w = {0};
        gp_buf_printf(&w, "store: %llu damaged chunk(s) skipped between %lld and %lld ms",
                      (unsigned long long)c->damaged, (long long)c->damaged_from,
                      (long long)c->damaged_to);
        out->warnings = w.err ? NULL : gp_buf_steal(&w, NULL);
        gp_buf_free(&w);
    }
    gp_buf_free(&c->tmp);
}

static int cmp_result(const void *a, const void *b)
{
    const struct gp_promql_series *x = a, *y = b;
    return gp_pq_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

/* Moves the points of v's series into out as a vector (one step) or a
 * matrix; series without points are left out. */
static int to_result(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                     struct gp_promql_result *out)
{
    size_t n = 0;
    out->series = calloc(v->n ? v->n : 1, sizeof *out->series);
    if (!out->series)
        return gp_pq_oom(c);
    for (size_t i = 0; i < v->n; i++) {
        struct gp_pq_ser *s = v->s + i;
        size_t np = 0;
        for (size_t k = 0; k < g->n; k++)
            np += s->has[k];
        if (!np)
            continue;
        struct gp_promql_series *o = out->series + n++;
        o->labels = s->lab;
        o->labels_len = s->lablen;
        s->lab = NULL;
        o->t = malloc(np * sizeof *o->t);
        o->v = malloc(np * sizeof *o->v);
        out->n = n;
        if (!o->t || !o->v)
            return gp_pq_oom(c);
        for (size_t k = 0; k < g->n; k++) {
            if (!s->has[k])
                continue;
            o->t[o->n] = gp_pq_grid_t(g, k);
            o->v[o->n++] = s->v[k];
        }
    }
    out->n = n;
    if (!v->ordered || g->n != 1)
        qsort(out->series, n, sizeof *out->series, cmp_result);
    return GP_OK;
}

int gp_promql_instant(struct gp_storage *s, const struct gp_pq_node *e, int64_t t_ms,
                      const struct gp_promql_limits *lim, struct gp_promql_result *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct gp_pq_ctx c;
    ctx_init(&c, s, lim, t_ms, t_ms, err, errlen);
    struct gp_pq_grid g = {t_ms, 1, 1};
    struct gp_pq_val v;
    int rc = gp_pq_eval(&c, e, &g, &v);
    if (rc == GP_OK) {
        out->t = t_ms;
        switch (v.type) {
        case GP_PQ_T_SCALAR:
            out->type = GP_PROMQL_SCALAR;
            out->scalar = v.sc[0];
            break;
        case GP_PQ_T_STRING:
            out->type = GP_PROMQL_STRING;
            out->string = v.str;
            v.str = NULL;
            break;
        case GP_PQ_T_VECTOR:
            out->type = GP_PROMQL_VECTOR;
            rc = to_result(&c, &v, &g, out);
            break;
        case GP_PQ_T_MATRIX:
            out->type = GP_PROMQL_MATRIX;
            out->series = v.m;
            out->n = v.mn;
            v.m = NULL;
            v.mn = 0;
            qsort(out->series, out->n, sizeof *out->series, cmp_result);
            break;
        }
    }
    gp_pq_val_free(&c, &v);
    ctx_finish(&c, out);
    return rc;
}

int gp_promql_range(struct gp_storage *s, const struct gp_pq_node *e, int64_t start_ms,
                    int64_t end_ms, int64_t step_ms, const struct gp_promql_limits *lim,
                    struct gp_promql_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PROMQL_MATRIX;
    struct gp_eval_range r;
    int rc = gp_eval_range_init(&r, start_ms, end_ms, step_ms, err, errlen);
    if (rc != GP_OK)
        return rc;
    if (e->type != GP_PQ_T_SCALAR && e->type != GP_PQ_T_VECTOR)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid expression type \"%s\" for range query, must be Scalar or "
                         "instant Vector",
                         e->type == GP_PQ_T_MATRIX ? "range vector" : "string");
    struct gp_pq_ctx c;
    ctx_init(&c, s, lim, start_ms, end_ms, err, errlen);
    struct gp_pq_grid g = {start_ms, step_ms, r.npoints};
    struct gp_pq_val v;
    rc = gp_pq_eval(&c, e, &g, &v);
    if (rc == GP_OK && v.type == GP_PQ_T_SCALAR) {
        out->series = calloc(1, sizeof *out->series);
        if (!out->series)
            rc = gp_pq_oom(&c);
        else {
            out->n = 1;
            struct gp_promql_series *o = out->series;
            o->t = malloc(g.n * sizeof *o->t);
            o->v = malloc(g.n * sizeof *o->v);
            if (!o->t || !o->v)
                rc = gp_pq_oom(&c);
            for (size_t k = 0; rc == GP_OK && k < g.n; k++) {
                o->t[k] = gp_pq_grid_t(&g, k);
                o->v[k] = v.sc[k];
            }
            o->n = rc == GP_OK ? g.n : 0;
        }
    } else if (rc == GP_OK) {
        v.ordered = 0;
        rc = to_result(&c, &v, &g, out);
    }
    gp_pq_val_free(&c, &v);
    ctx_finish(&c, out);
    return rc;
}

void gp_promql_result_free(struct gp_promql_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->series[i].labels);
        free(r->series[i].t);
        free(r->series[i].v);
    }
    free(r->series);
    free(r->string);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
