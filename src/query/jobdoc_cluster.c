/*
 * jobdoc_cluster.c - a job's series as aggregates the cluster evaluates
 * (jobdoc_cluster.h). Each request is one PromQL range query
 * (gp_storage_promql_matrix, on an exact grid) joining one term per
 * family and figure with `or`; each term puts back the __name__ its
 * function drops (and the same in gpulse_family, which `or` needs: it
 * matches label sets without __name__) and names its figure in
 * gpulse_fig, so one request carries every figure of every family and
 * the series keep their own labels: the document sorts them out as it
 * sorts raw ones.
 *
 *   figures  FN(NAME{job="J"}[end - t0 + 1ms]) at end: the samples of
 *            (t0 - 1ms, end], FN last_over_time, max_over_time,
 *            min_over_time or resets; end t1 for the document's range,
 *            the step counters' tc for theirs
 *   grid     max_over_time(NAME{job="J"}[STEP]) or NAME{job="J"} * 1 on
 *            t0, t0 + STEP, ... <= t1: the charts' windows (t - STEP, t]
 *            and the lookback fallback of an empty one, as gp_eval_raw
 *            reads them
 *
 * resets() counts any fall between two samples, as the document's
 * increase does (Prometheus; VictoriaMetrics also compares the sample
 * before the range, which can only send a counter back to raw, and its
 * newer releases ignore falls under 1e-12 of the value).
 */
#include "query/jobdoc_cluster.h"

#include "lib/err.h"
#include "query/promql.h"
#include "query/promql_ast.h"
#include "query/query.h"
#include "storage/promapi.h"
#include "store/labels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum fig { LAST, PEAK, LOW, RESETS, NFIG };
static const char *const fig_name[NFIG] = {"last", "peak", "low", "resets"};
static const char *const fig_fn[NFIG] = {"last_over_time", "max_over_time", "min_over_time", "resets"};
#define F(x) (1u << (x))
#define COUNTER (F(LAST) | F(PEAK) | F(LOW) | F(RESETS))

/* The aggregated families: their figures, whether they are read to tc
 * (the step counters' range), whether the memory chart shows them, and
 * whether the charts need their samples (then they are read raw). */
static const struct fam {
    const char *name;
    unsigned figs;
    int tail, grid, raw_with_charts;
} fams[] = {
    {"DCGM_FI_DEV_FB_USED", F(LAST) | F(PEAK), 0, 1, 0},
    {"DCGM_FI_DEV_FB_FREE", F(LAST), 0, 0, 0},
    {"DCGM_FI_DEV_FB_RESERVED", F(LAST), 0, 0, 0},
    {"gpulse_gpu_memory_used_bytes", F(LAST) | F(PEAK), 0, 1, 0},
    {"gpulse_gpu_memory_total_bytes", F(LAST), 0, 0, 0},
    {"gpulse_job_processes", F(LAST), 0, 0, 0},
    {"gpulse_job_target_steps", F(LAST), 0, 0, 0},
    {"gpulse_job_model_flops", F(LAST), 0, 0, 0},
    {"gpulse_job_info", F(LAST), 1, 0, 0}, /* its labels: the command */
    {"gpulse_job_gpus", F(LAST), 1, 0, 0}, /* whether the agent said */
    {"gpulse_job_samples_total", COUNTER, 1, 0, 0},
    {"gpulse_job_tokens_total", COUNTER, 1, 0, 0},
    {"gpulse_job_cpu_seconds_total", COUNTER, 0, 0, 1},
};
#define NFAMS (sizeof fams / sizeof *fams)

/* Every gpulse_job_ family jobdoc.c reads is here or aggregated above. */
#define RAW_ACTIVITY "DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL|"
#define RAW_JOB "step|steps_total|step_seconds_total|data_wait_seconds_total|phase_seconds_total|" \
                "resident_memory_bytes|loss"

const char *gp_jobdoc_cluster_raw_names(int charts)
{
    return charts ? RAW_ACTIVITY "gpulse_job_(" RAW_JOB "|cpu_seconds_total)"
                  : RAW_ACTIVITY "gpulse_job_(" RAW_JOB ")";
}

/* The step of a one-point request. At least a minute: VictoriaMetrics
 * drops a range query's points from now - its latency offset (30 s by
 * default) to now + step as incomplete where the step is under a minute
 * (-search.maxStepForPointsAdjustment), and a running job's range ends
 * now. */
#define POINT_STEP_MS 3600000

/* `or` matches label sets without __name__: the families' series of one
 * GPU differ by this label too, or all but the first would be dropped. */
#define FAMILY "gpulse_family"
#define FIG "gpulse_fig"

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

/* The figures of the families whose range is tail's (both: all), one term
 * each, over range_ms. */
static void figures_expr(const struct gp_matcher *job, int64_t range_ms, int tail, int charts,
                         struct gp_buf *out)
{
    int first = 1;
    for (size_t i = 0; i < NFAMS; i++) {
        if ((tail >= 0 && fams[i].tail != tail) || (charts && fams[i].raw_with_charts))
            continue;
        for (int f = 0; f < NFIG; f++) {
            if (!(fams[i].figs & F(f)))
                continue;
            gp_buf_puts(out, first ? "" : " or ");
            first = 0;
            gp_buf_printf(out, "label_replace(label_replace(label_replace(%s(", fig_fn[f]);
            selector(fams[i].name, job, range_ms, out);
            gp_buf_printf(out, "), \"__name__\", \"%s\", \"\", \"\"), \"" FAMILY "\", \"%s\", \"\", \"\"), \"" FIG
                               "\", \"%s\", \"\", \"\")",
                          fams[i].name, fams[i].name, fig_name[f]);
        }
    }
}

/* The memory chart: each shown family's peak per window. */
static void grid_expr(const struct gp_matcher *job, int64_t step, struct gp_buf *out)
{
    int first = 1;
    for (size_t i = 0; i < NFAMS; i++) {
        if (!fams[i].grid)
            continue;
        gp_buf_puts(out, first ? "label_replace(label_replace(max_over_time("
                               : " or label_replace(label_replace(max_over_time(");
        first = 0;
        selector(fams[i].name, job, step, out);
        gp_buf_putc(out, ')');
        if (step < GP_QUERY_LOOKBACK_MS) {
            gp_buf_puts(out, " or ");
            selector(fams[i].name, job, 0, out);
            gp_buf_puts(out, " * 1");
        }
        gp_buf_printf(out, ", \"__name__\", \"%s\", \"\", \"\"), \"" FAMILY "\", \"%s\", \"\", \"\")",
                      fams[i].name, fams[i].name);
    }
}

static int ask(struct gp_storage *st, const struct gp_buf *q, int64_t start, int64_t end, int64_t step,
               struct gp_promapi_result *res)
{
    memset(res, 0, sizeof *res);
    if (q->err || !q->data)
        return GP_ENOMEM;
    struct gp_storage_promql pq = {.query = q->data, .range = 1, .start_ms = start, .end_ms = end,
                                   .step_ms = step, .exact_grid = 1};
    return gp_storage_promql_matrix(st, &pq, res);
}

/* One figure of one series from an answer: its labels without gpulse_fig
 * (key, owned) and its value at the request's time. */
struct ent {
    uint8_t *key;
    size_t len;
    int fig;
    double v;
    int64_t end; /* the end of its range */
};

static int ent_cmp(const void *pa, const void *pb)
{
    const struct ent *a = pa, *b = pb;
    return gp_labels_cmp(a->key, a->len, b->key, b->len);
}

/* x's figure and key into e. GP_OK, GP_ENOMEM, or GP_EPARSE for a
 * series that is not one of ours (no gpulse_fig). */
static int ent_of(const struct gp_promapi_series *x, int64_t end, struct ent *e)
{
    struct gp_label l[64];
    size_t n = 0;
    struct gp_labels_iter it;
    struct gp_str name, val;
    e->fig = -1;
    gp_labels_iter_init(&it, x->labels, x->labels_len);
    while (gp_labels_next(&it, &name, &val) == 1) {
        if (name.len == strlen(FIG) && !memcmp(name.ptr, FIG, name.len)) {
            for (int f = 0; f < NFIG; f++)
                if (val.len == strlen(fig_name[f]) && !memcmp(val.ptr, fig_name[f], val.len))
                    e->fig = f;
        } else if (n < sizeof l / sizeof *l) {
            l[n++] = (struct gp_label){name, val};
        } else {
            return GP_EPARSE;
        }
    }
    if (e->fig < 0)
        return GP_EPARSE;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (gp_labels_encode(l, n, &b) || b.err) {
        gp_buf_free(&b);
        return b.err ? GP_ENOMEM : GP_EPARSE;
    }
    e->key = (uint8_t *)gp_buf_steal(&b, &e->len);
    e->v = x->n == 1 && x->t[0] == end ? x->v[0] : NAN;
    e->end = end;
    return e->key ? GP_OK : GP_ENOMEM;
}

static int agg_cmp(const void *pa, const void *pb)
{
    const struct gp_jobdoc_agg *a = pa, *b = pb;
    return gp_labels_cmp(a->s.labels, a->s.labels_len, b->s.labels, b->s.labels_len);
}

/* The figures of res1 (at end1) and res2 (at end2) into out, one
 * aggregate per series, sorted by labels. */
static int collect(struct gp_promapi_result *res[2], const int64_t end[2], int64_t t0,
                   struct gp_jobdoc_aggs *out)
{
    size_t n = 0, k = 0;
    for (int r = 0; r < 2; r++)
        n += res[r] ? res[r]->n : 0;
    struct ent *e = calloc(n ? n : 1, sizeof *e);
    if (!e)
        return GP_ENOMEM;
    int rc = GP_OK;
    for (int r = 0; r < 2 && !rc; r++)
        for (size_t i = 0; res[r] && i < res[r]->n && !rc; i++) {
            rc = ent_of(&res[r]->s[i], end[r], &e[k]);
            if (rc == GP_EPARSE)
                rc = GP_OK; /* not ours: left out */
            else if (!rc)
                k++;
        }
    qsort(e, k, sizeof *e, ent_cmp);
    if (!rc && k && !(out->a = calloc(k, sizeof *out->a)))
        rc = GP_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        struct gp_jobdoc_agg *a = out->n ? &out->a[out->n - 1] : NULL;
        if (!rc && (!a || gp_labels_cmp(e[i].key, e[i].len, a->s.labels, a->s.labels_len))) {
            a = &out->a[out->n++];
            a->s = (struct gp_store_series){.labels = e[i].key, .labels_len = e[i].len, .first_ms = t0,
                                            .last_ms = e[i].end};
            a->last = a->peak = a->low = a->resets = NAN;
            e[i].key = NULL; /* moved */
        }
        if (!rc) {
            double *dst[NFIG] = {&a->last, &a->peak, &a->low, &a->resets};
            *dst[e[i].fig] = e[i].v;
        }
        free(e[i].key);
    }
    free(e);
    return rc;
}

/* Moves each series of the grid answer to its aggregate. */
static void attach_grid(struct gp_promapi_result *grid, struct gp_jobdoc_aggs *out)
{
    for (size_t i = 0; i < grid->n; i++) {
        struct gp_promapi_series *g = &grid->s[i];
        struct gp_jobdoc_agg key = {.s = {.labels = g->labels, .labels_len = g->labels_len}};
        struct gp_jobdoc_agg *a = out->n ? bsearch(&key, out->a, out->n, sizeof *out->a, agg_cmp) : NULL;
        if (a && !a->t) { /* moved */
            a->t = g->t, a->v = g->v, a->n = g->n;
            g->t = NULL, g->v = NULL, g->n = 0;
        }
    }
}

int gp_jobdoc_cluster_read(struct gp_storage *st, const char *job, int64_t t0, int64_t t1, int64_t tc,
                           int64_t grid_step, int charts, struct gp_jobdoc_aggs *out)
{
    memset(out, 0, sizeof *out);
    struct gp_matcher jm;
    char err[128];
    int rc = gp_matcher_init(&jm, GP_MATCH_EQ, "job", job, err, sizeof err);
    if (rc)
        return rc;
    /* the counters' range, to tc even where tc is still to come (the
     * cluster answers a future time with what it holds) */
    int64_t te = tc > t1 ? tc : t1;
    struct gp_promapi_result job_res, tail_res, grid;
    memset(&tail_res, 0, sizeof tail_res);
    memset(&grid, 0, sizeof grid);
    struct gp_buf q;
    gp_buf_init(&q, 0);
    figures_expr(&jm, t1 - t0 + 1, te == t1 ? -1 : 0, charts, &q);
    rc = ask(st, &q, t1, t1, POINT_STEP_MS, &job_res);
    if (!rc && te > t1) {
        gp_buf_reset(&q);
        figures_expr(&jm, te - t0 + 1, 1, charts, &q);
        rc = ask(st, &q, te, te, POINT_STEP_MS, &tail_res);
    }
    if (!rc && grid_step > 0 && job_res.n) {
        gp_buf_reset(&q);
        grid_expr(&jm, grid_step, &q);
        rc = ask(st, &q, t0, t0 + (t1 - t0) / grid_step * grid_step, grid_step, &grid);
    }
    gp_buf_free(&q);
    struct gp_promapi_result *res[2] = {&job_res, &tail_res};
    const int64_t end[2] = {t1, te};
    if (!rc)
        rc = collect(res, end, t0, out);
    if (!rc)
        attach_grid(&grid, out);
    gp_promapi_result_free(&job_res);
    gp_promapi_result_free(&tail_res);
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
