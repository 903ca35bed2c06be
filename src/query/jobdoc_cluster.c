/*
 * jobdoc_cluster.c - a job's GPU memory as aggregates the cluster
 * evaluates (jobdoc_cluster.h). Each request is one PromQL range query
 * (gp_storage_promql_matrix, on an exact grid) joining one term per
 * memory family with `or`; each term puts back the __name__ its window
 * function drops (and the same in gpulse_family, which `or` needs), so
 * the series keep their own labels and the document sorts them out as it
 * sorts raw ones.
 *
 *   peaks   max_over_time(NAME{job="J"}[t1 - t0 + 1ms]) at t1: (t0 - 1ms, t1]
 *   newest  last_over_time(...) at t1, the same span
 *   grid    max_over_time(NAME{job="J"}[STEP]) or NAME{job="J"} * 1 on
 *           t0, t0 + STEP, ...: the charts' windows (t - STEP, t] and the
 *           lookback fallback of an empty one, as gp_eval_raw reads them
 */
#include "query/jobdoc_cluster.h"

#include "lib/err.h"
#include "query/promql.h"
#include "query/promql_ast.h"
#include "query/query.h"
#include "storage/promapi.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const mem_names[] = {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
                                        "DCGM_FI_DEV_FB_RESERVED", "gpulse_gpu_memory_used_bytes",
                                        "gpulse_gpu_memory_total_bytes"};
/* The ones whose peak and chart the document shows (the others give capacity). */
static int used_name(size_t i) { return i == 0 || i == 3; }

enum fig { PEAK, LAST, GRID };

/* `or` matches label sets without __name__: the families' series of one
 * GPU differ by this label too, or all but the first would be dropped. */
#define FAMILY "gpulse_family"

/* NAME{job="J"}[range_ms] (a vector selector with range_ms 0). */
static void selector(const char *name, const struct gp_matcher *job, int64_t range_ms, struct gp_buf *out)
{
    struct gp_matcher m[2] = {{0}, *job};
    m[0].op = GP_MATCH_EQ;
    m[0].name = (char *)"__name__";
    m[0].value = (char *)name;
    m[0].value_len = strlen(name);
    struct gp_pq_node sel = {.kind = range_ms ? GP_PQ_MATRIX_SEL : GP_PQ_VECTOR_SEL,
                             .type = range_ms ? GP_PQ_T_MATRIX : GP_PQ_T_VECTOR};
    sel.u.sel.name = (char *)name; /* read only, as m */
    sel.u.sel.m = m;
    sel.u.sel.nm = 2;
    sel.u.sel.range_ms = range_ms;
    gp_promql_format(&sel, out);
}

static void expr(enum fig f, const struct gp_matcher *job, int64_t range_ms, struct gp_buf *out)
{
    int first = 1;
    for (size_t i = 0; i < sizeof mem_names / sizeof *mem_names; i++) {
        if (f != LAST && !used_name(i))
            continue;
        gp_buf_puts(out, first ? "label_replace(label_replace(" : " or label_replace(label_replace(");
        first = 0;
        gp_buf_puts(out, f == LAST ? "last_over_time(" : "max_over_time(");
        selector(mem_names[i], job, range_ms, out);
        gp_buf_putc(out, ')');
        if (f == GRID && range_ms < GP_QUERY_LOOKBACK_MS) {
            gp_buf_puts(out, " or ");
            selector(mem_names[i], job, 0, out);
            gp_buf_puts(out, " * 1");
        }
        gp_buf_printf(out, ", \"__name__\", \"%s\", \"\", \"\"), \"" FAMILY "\", \"%s\", \"\", \"\")",
                      mem_names[i], mem_names[i]);
    }
}

static int ask(struct gp_storage *st, enum fig f, const struct gp_matcher *job, int64_t range_ms,
               int64_t start, int64_t end, int64_t step, struct gp_promapi_result *res)
{
    memset(res, 0, sizeof *res);
    struct gp_buf q;
    gp_buf_init(&q, 0);
    expr(f, job, range_ms, &q);
    if (q.err || !q.data) {
        gp_buf_free(&q);
        return GP_ENOMEM;
    }
    struct gp_storage_promql pq = {.query = q.data, .range = 1, .start_ms = start, .end_ms = end,
                                   .step_ms = step, .exact_grid = 1};
    int rc = gp_storage_promql_matrix(st, &pq, res);
    gp_buf_free(&q);
    return rc;
}

/* The series of res with labels l, or NULL. */
static struct gp_promapi_series *find(struct gp_promapi_result *res, const uint8_t *l, size_t len)
{
    for (size_t i = 0; i < res->n; i++)
        if (res->s[i].labels_len == len && !memcmp(res->s[i].labels, l, len))
            return &res->s[i];
    return NULL;
}

/* The value of a one-point answer's series at t, or NaN. */
static double at(const struct gp_promapi_series *x, int64_t t)
{
    return x && x->n == 1 && x->t[0] == t ? x->v[0] : NAN;
}

int gp_jobdoc_cluster_memory(struct gp_storage *st, const char *job, int64_t t0, int64_t t1,
                             int64_t grid_step, struct gp_jobdoc_aggs *out)
{
    memset(out, 0, sizeof *out);
    struct gp_matcher jm;
    char err[128];
    int rc = gp_matcher_init(&jm, GP_MATCH_EQ, "job", job, err, sizeof err);
    if (rc)
        return rc;
    struct gp_promapi_result last, peak, grid;
    memset(&peak, 0, sizeof peak);
    memset(&grid, 0, sizeof grid);
    rc = ask(st, LAST, &jm, t1 - t0 + 1, t1, t1, 1000, &last);
    if (!rc && last.n)
        rc = ask(st, PEAK, &jm, t1 - t0 + 1, t1, t1, 1000, &peak);
    if (!rc && last.n && grid_step > 0)
        rc = ask(st, GRID, &jm, grid_step, t0, t0 + (t1 - t0) / grid_step * grid_step, grid_step, &grid);
    if (!rc && last.n && !(out->a = calloc(last.n, sizeof *out->a)))
        rc = GP_ENOMEM;
    for (size_t i = 0; !rc && i < last.n; i++) {
        struct gp_promapi_series *x = &last.s[i];
        struct gp_jobdoc_agg *a = &out->a[out->n++];
        a->s = (struct gp_store_series){.labels = x->labels, .labels_len = x->labels_len,
                                        .first_ms = t0, .last_ms = t1};
        a->last = at(x, t1);
        a->peak = at(find(&peak, x->labels, x->labels_len), t1);
        struct gp_promapi_series *g = find(&grid, x->labels, x->labels_len);
        if (g) { /* moved */
            a->t = g->t, a->v = g->v, a->n = g->n;
            g->t = NULL, g->v = NULL, g->n = 0;
        }
        x->labels = NULL; /* moved */
    }
    gp_promapi_result_free(&last);
    gp_promapi_result_free(&peak);
    gp_promapi_result_free(&grid);
    gp_matcher_free(&jm);
    return rc;
}

void gp_jobdoc_aggs_free(struct gp_jobdoc_aggs *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free((void *)a->a[i].s.labels);
        free(a->a[i].t);
        free(a->a[i].v);
    }
    free(a->a);
    memset(a, 0, sizeof *a);
}

const struct gp_jobdoc_agg *gp_jobdoc_agg_of(const struct gp_jobdoc_aggs *a,
                                             const struct gp_store_series *s)
{
    /* by address: a document asks this for every series it reads */
    uintptr_t p = (uintptr_t)s, lo = a->n ? (uintptr_t)&a->a[0].s : 0;
    if (!a->n || p < lo || (p - lo) % sizeof *a->a || (p - lo) / sizeof *a->a >= a->n)
        return NULL;
    return &a->a[(p - lo) / sizeof *a->a];
}
