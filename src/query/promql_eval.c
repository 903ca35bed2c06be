/*
 * promql_eval.c - the PromQL evaluator's entry points (instant and range
 * queries), the dispatch over the syntax tree, values and limits.
 * Selectors and subqueries are in promql_select.c, calls in
 * promql_call.c, binary operators in promql_binop.c, aggregations in
 * promql_agg.c (promql_int.h describes the representation).
 *
 * Every node is evaluated for all steps of its grid at once, as
 * Prometheus's rangeEval does; an instant query is a grid of one step.
 *
 * Limits: the samples held (points of live values, plus the window of
 * the series being read) are counted against limits.max_samples, with
 * the peak reported in the result; the deadline is checked between
 * series and steps (every 64th check reads the clock).
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "query/eval.h"
#include "storage/storage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_LOOKBACK_MS (5 * 60 * 1000LL)
#define DEFAULT_MAX_SAMPLES 50000000u
#define DEFAULT_TIMEOUT_MS (2 * 60 * 1000LL)
#define DEFAULT_SUBQUERY_STEP_MS (60 * 1000LL)

int64_t gp_pq_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gp_pq_check(struct gp_pq_ctx *c)
{
    if ((c->tick++ & 63) != 0)
        return GP_OK;
    if (gp_pq_now_ns() > c->deadline_ns)
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
        return gp_seterr(c->err, c->errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
    return GP_OK;
}

void gp_pq_uncount(struct gp_pq_ctx *c, size_t n)
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
    if (c) {
        gp_pq_uncount(c, v->npoints);
        c->cells = v->ncells > c->cells ? 0 : c->cells - v->ncells;
    }
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
int gp_pq_val_append(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
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
    return gp_pq_cells(c, v, g->n);
}

int gp_pq_cells(struct gp_pq_ctx *c, struct gp_pq_val *v, size_t n)
{
    c->cells += n;
    v->ncells += n;
    if (c->cells > c->lim.max_samples)
        return gp_seterr(c->err, c->errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
    return GP_OK;
}

int gp_pq_val_adopt(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                    const uint8_t *lab, size_t len, double *vals, uint8_t *has, size_t np)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        struct gp_pq_ser *s = realloc(v->s, cap * sizeof *s);
        if (!s) {
            free(vals);
            free(has);
            return gp_pq_oom(c);
        }
        v->s = s;
        v->cap = cap;
    }
    struct gp_pq_ser *s = v->s + v->n;
    memset(s, 0, sizeof *s);
    if (len && !(s->lab = malloc(len))) {
        free(vals);
        free(has);
        return gp_pq_oom(c);
    }
    if (len)
        memcpy(s->lab, lab, len);
    s->lablen = len;
    s->v = vals;
    s->has = has;
    v->n++;
    v->npoints += np;
    int rc = gp_pq_cells(c, v, g->n);
    return rc == GP_OK ? gp_pq_count(c, np) : rc;
}

int gp_pq_val_copy(struct gp_pq_ctx *c, const struct gp_pq_val *src, const struct gp_pq_grid *g,
                   struct gp_pq_val *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->ordered = src->ordered;
    int rc = GP_OK;
    switch (src->type) {
    case GP_PQ_T_SCALAR:
        if ((rc = gp_pq_scalar_new(c, dst, g)) == GP_OK && g->n)
            memcpy(dst->sc, src->sc, g->n * sizeof *dst->sc);
        return rc;
    case GP_PQ_T_STRING:
        dst->str = strdup(src->str ? src->str : "");
        return dst->str ? GP_OK : gp_pq_oom(c);
    case GP_PQ_T_VECTOR:
        for (size_t i = 0; i < src->n && rc == GP_OK; i++) {
            const struct gp_pq_ser *s = src->s + i;
            size_t idx, np = 0;
            if ((rc = gp_pq_val_append(c, dst, g, s->lab, s->lablen, &idx)) != GP_OK)
                break;
            memcpy(dst->s[idx].v, s->v, g->n * sizeof *s->v);
            memcpy(dst->s[idx].has, s->has, g->n);
            for (size_t k = 0; k < g->n; k++)
                np += s->has[k];
            dst->npoints += np;
            rc = gp_pq_count(c, np);
        }
        return rc;
    case GP_PQ_T_MATRIX:
        if (!(dst->m = calloc(src->mn ? src->mn : 1, sizeof *dst->m)))
            return gp_pq_oom(c);
        for (size_t i = 0; i < src->mn && rc == GP_OK; i++) {
            const struct gp_promql_series *s = src->m + i;
            struct gp_promql_series *d = dst->m + dst->mn++;
            d->t = malloc((s->n ? s->n : 1) * sizeof *d->t);
            d->v = malloc((s->n ? s->n : 1) * sizeof *d->v);
            d->labels = s->labels_len ? malloc(s->labels_len) : NULL;
            if (!d->t || !d->v || (s->labels_len && !d->labels))
                return gp_pq_oom(c);
            memcpy(d->t, s->t, s->n * sizeof *d->t);
            memcpy(d->v, s->v, s->n * sizeof *d->v);
            if (s->labels_len)
                memcpy(d->labels, s->labels, s->labels_len);
            d->labels_len = s->labels_len;
            d->n = s->n;
            dst->npoints += s->n;
            rc = gp_pq_count(c, s->n);
        }
        return rc;
    }
    return rc;
}

int gp_pq_val_series(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                     const uint8_t *lab, size_t len, size_t *idx)
{
    int added = 0;
    if (gp_pq_map_get(&v->idx, lab, len, v->n, idx, &added) != GP_OK)
        return gp_pq_oom(c);
    if (!added)
        return GP_OK;
    return gp_pq_val_append(c, v, g, lab, len, idx);
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

int gp_pq_scalar_new(struct gp_pq_ctx *c, struct gp_pq_val *out, const struct gp_pq_grid *g)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_SCALAR;
    out->sc = malloc((g->n ? g->n : 1) * sizeof *out->sc);
    return out->sc ? GP_OK : gp_pq_oom(c);
}

void gp_pq_vector_new(struct gp_pq_val *out)
{
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_VECTOR;
}

int gp_pq_map_points(struct gp_pq_ctx *c, const struct gp_pq_val *in, const struct gp_pq_grid *g,
                     int drop_name, gp_pq_point_fn fn, void *arg, struct gp_pq_val *out)
{
    gp_pq_vector_new(out);
    int rc = GP_OK;
    for (size_t i = 0; i < in->n && rc == GP_OK; i++) {
        const struct gp_pq_ser *s = in->s + i;
        size_t idx = (size_t)-1;
        for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
            double x = s->v[k];
            if (!s->has[k] || !fn(arg, k, &x))
                continue;
            if (idx == (size_t)-1) {
                const uint8_t *lab = s->lab;
                size_t len = s->lablen;
                if (drop_name) {
                    gp_pq_labels_drop_name(s->lab, s->lablen, &c->tmp);
                    if (c->tmp.err)
                        return gp_pq_oom(c);
                    lab = (const uint8_t *)c->tmp.data;
                    len = c->tmp.len;
                }
                if ((rc = gp_pq_val_series(c, out, g, lab, len, &idx)) != GP_OK)
                    break;
            }
            rc = gp_pq_val_put(c, out, idx, k, x);
        }
    }
    return rc;
}

/* ---- dispatch ---- */

static int negate(void *arg, size_t k, double *x)
{
    (void)arg;
    (void)k;
    *x = -*x;
    return 1;
}

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
    /* Unary minus drops the name, as 2.42 does. */
    rc = gp_pq_map_points(c, &in, g, 1, negate, NULL, out);
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
    size_t slot = (size_t)-1;
    if (c->cse && (rc = gp_pq_cse_get(c, e, g, out, &slot)) != 0) {
        if (rc > 0)
            return GP_OK;
        gp_pq_val_free(c, out);
        return rc;
    }
    switch (e->kind) {
    case GP_PQ_NUMBER:
        if ((rc = gp_pq_scalar_new(c, out, g)) != GP_OK)
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
    case GP_PQ_VECTOR_SEL: rc = gp_pq_eval_vsel(c, &e->u.sel, g, 0, out); break;
    case GP_PQ_MATRIX_SEL:
    case GP_PQ_SUBQUERY: rc = gp_pq_eval_matrix(c, e, g, out); break;
    case GP_PQ_CALL: rc = gp_pq_eval_call(c, e, g, out); break;
    case GP_PQ_AGG: rc = gp_pq_eval_agg(c, e, g, out); break;
    case GP_PQ_BINARY: rc = gp_pq_eval_binary(c, e, g, out); break;
    case GP_PQ_UNARY: rc = eval_unary(c, e, g, out); break;
    case GP_PQ_PAREN: return gp_pq_eval(c, e->u.paren, g, out);
    default: return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "unknown expression node");
    }
    if (rc != GP_OK)
        gp_pq_val_free(c, out);
    else if (slot != (size_t)-1)
        gp_pq_cse_put(c, slot, out, g);
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
    c->deadline_ns = gp_pq_now_ns() + c->lim.timeout_ms * 1000000;
    c->err = err;
    c->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
}

static void ctx_finish(struct gp_pq_ctx *c, struct gp_promql_result *out)
{
    out->samples_peak = c->peak;
    const struct gp_pq_damage *d = &c->damage;
    if (d->chunks) {
        struct gp_buf w = {0};
        gp_buf_printf(&w, "store: %llu damaged chunk(s) skipped between %lld and %lld ms, of %s",
                      (unsigned long long)d->chunks, (long long)d->from, (long long)d->to, d->first);
        if (d->series > 1)
            gp_buf_printf(&w, " and %llu more series", (unsigned long long)(d->series - 1));
        out->warnings = w.err ? NULL : gp_buf_steal(&w, NULL);
        gp_buf_free(&w);
    }
    gp_pq_cse_free(c);
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
    gp_pq_cse_scan(&c, e);
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
            if (out->n > 1) /* series is NULL when nothing matched */
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
    gp_pq_cse_scan(&c, e);
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
