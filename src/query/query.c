/*
 * query.c - range queries, series, label names and values (query.h):
 * select from the store, evaluate, write the JSON answer (json.c) in the
 * envelope of Prometheus's HTTP API. A range query on raw samples is
 * written as PromQL and handed to the engine (range_promql below; without
 * agg one metric name at a time). One on the 1-minute rollups, which the
 * engine does not read, is evaluated here from the minutes (eval.c):
 *
 * A rollup query orders the selected series as the answer lists them:
 * without agg by their labels (Prometheus sorts a matrix that way); with
 * agg grouped by the result labels (the `by` labels a series has, as a
 * canonical label blob) and ordered by them, so a group's series are
 * adjacent. It then evaluates them in bounded batches on a few threads
 * (reading chunks is most of the work) and writes each batch in order:
 * memory is a batch of grids plus each thread's largest series, however
 * many series match, and the answer does not depend on the threads.
 *
 * A range a remote storage would answer with raw samples from the
 * cluster (gp_storage_pushdown: older than its local window) is not read:
 * the form's PromQL goes to the cluster (cluster_form), on rollup grids
 * with `offset 1ms` so its left-open windows are the rollups' minutes
 * [t - step, t), and one value per step and series comes back.
 *
 * Every function leaves out as it found it when it fails, so the HTTP
 * layer appends gp_query_error to the same buffer.
 *
 * A damaged chunk never makes a silent gap: the store returns the rest
 * of the series and says which span it skipped (gp_samples.damaged), and
 * the answer carries one entry per such series in Prometheus's
 * "warnings" array (at most DAMAGE_WARNINGS, then a count of the rest).
 */
#include "query/query.h"

#include "lib/err.h"
#include "ingest/remote_write.h"
#include "lib/strset.h"
#include "query/eval.h"
#include "lib/json.h"
#include "query/promql.h"
#include "storage/promapi.h"
#include "store/labels.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- shared helpers (inventory.c has its own small ones) ---- */

struct mark {
    size_t len;
    int err;
};

static struct mark mark_of(const struct gp_buf *b)
{
    return (struct mark){b->len, b->err};
}

/* Undoes a partial answer. */
static void rewind_to(struct gp_buf *b, struct mark m)
{
    b->len = m.len;
    b->err = m.err;
    if (b->data)
        b->data[b->len] = '\0';
}

/* GP_OK, or out's latched failure with a message. */
static int out_status(const struct gp_buf *out, char *err, size_t errlen)
{
    if (!out->err)
        return GP_OK;
    if (out->err == GP_ETOOBIG)
        return gp_seterr(err, errlen, GP_ETOOBIG,
                         "the answer is larger than %zu bytes: narrow the selector or the time "
                         "range, or raise the step",
                         out->max);
    return gp_seterr(err, errlen, out->err, "writing the answer: %s", gp_strerror(out->err));
}

static int str_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

/* Prometheus's labels.Compare on canonical blobs: pairwise by name, then
 * value; a set that runs out first sorts first. */
static int labels_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    struct gp_labels_iter ia, ib;
    gp_labels_iter_init(&ia, a, al);
    gp_labels_iter_init(&ib, b, bl);
    for (;;) {
        struct gp_str an, av, bn, bv;
        int ra = gp_labels_next(&ia, &an, &av) == 1;
        int rb = gp_labels_next(&ib, &bn, &bv) == 1;
        if (!ra || !rb)
            return ra - rb;
        int c = str_cmp(an.ptr, an.len, bn.ptr, bn.len);
        if (!c)
            c = str_cmp(av.ptr, av.len, bv.ptr, bv.len);
        if (c)
            return c;
    }
}

/* A series with the blob it is ordered by (its labels, or its group's). */
struct item {
    const struct gp_store_series *s;
    const uint8_t *key;
    size_t key_len;
};

static int item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    int c = labels_cmp(a->key, a->key_len, b->key, b->key_len);
    if (c)
        return c;
    return a->s->id < b->s->id ? -1 : a->s->id > b->s->id;
}

static int same_key(const struct item *a, const struct item *b)
{
    return a->key_len == b->key_len && (!a->key_len || memcmp(a->key, b->key, a->key_len) == 0);
}

/* ---- range queries ---- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* q's by labels sorted (canonical order) and unique into by; returns the
 * count or GP_EUSAGE. */
static int sorted_by(const struct gp_range_query *q, const char **by, char *err, size_t errlen)
{
    if (q->nby > GP_QUERY_MAX_BY)
        return gp_seterr(err, errlen, GP_EUSAGE, "by: more than %d labels", GP_QUERY_MAX_BY);
    size_t n = 0;
    for (size_t i = 0; i < q->nby; i++) {
        if (!q->by[i] || !q->by[i][0])
            return gp_seterr(err, errlen, GP_EUSAGE, "by: empty label name");
        if (strlen(q->by[i]) > GP_RW_MAX_LABEL_LEN)
            return gp_seterr(err, errlen, GP_EUSAGE, "by: label name longer than %d bytes",
                             GP_RW_MAX_LABEL_LEN);
        by[n++] = q->by[i];
    }
    qsort(by, n, sizeof *by, name_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(by[u - 1], by[i]) != 0)
            by[u++] = by[i];
    return (int)u;
}

/* Builds the items of a selection: keys are the series' own labels, or
 * (nby >= 0 with agg) the canonical blob of its `by` labels, stored in
 * keys. Sorted. GP_OK or GP_ENOMEM. */
static int make_items(const struct gp_store_selection *sel, int grouped, const char *const *by,
                      size_t nby, struct gp_buf *keys, struct item *items)
{
    size_t *off = NULL;
    if (grouped) {
        off = malloc((sel->n ? sel->n : 1) * sizeof *off);
        if (!off)
            return GP_ENOMEM;
    }
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        items[i].s = s;
        items[i].key = s->labels;
        items[i].key_len = s->labels_len;
        if (!grouped)
            continue;
        struct gp_label l[GP_QUERY_MAX_BY];
        size_t nl = 0;
        for (size_t b = 0; b < nby; b++) {
            struct gp_str v;
            if (gp_labels_get(s->labels, s->labels_len, by[b], &v) == 1 && v.len) {
                l[nl].name.ptr = by[b];
                l[nl].name.len = strlen(by[b]);
                l[nl].value = v;
                nl++;
            }
        }
        off[i] = keys->len;
        gp_labels_encode(l, nl, keys);
        items[i].key_len = keys->len - off[i];
    }
    if (grouped) {
        if (keys->err) {
            free(off);
            return GP_ENOMEM;
        }
        /* keys has stopped moving: point into it (all keys are empty
         * when no series has a `by` label, and then keys has no memory). */
        static const uint8_t none[1];
        for (size_t i = 0; i < sel->n; i++)
            items[i].key = keys->data ? (const uint8_t *)keys->data + off[i] : none;
        free(off);
    }
    qsort(items, sel->n, sizeof *items, item_cmp);
    return GP_OK;
}

/* Whether q runs on rollups: GP_OK with *use set, or GP_EUSAGE. Automatic
 * rollups for a range that starts where raw samples are gone widen its
 * grid to whole minutes (*start, *step); else they are q's. */
static int choose_rollups(const struct gp_range_query *q, int *use, int64_t *start, int64_t *step,
                          char *err, size_t errlen)
{
    int aligned = q->step_ms % 60000 == 0 && q->start_ms % 60000 == 0;
    *start = q->start_ms;
    *step = q->step_ms;
    if (q->rollups == 1 && !aligned)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "rollups need a step that is a multiple of 1m and a start on a whole "
                         "minute");
    int expired = q->raw_since_ms > 0 && q->start_ms < q->raw_since_ms;
    *use = q->rollups == 1 || (q->rollups < 0 && (aligned || expired));
    if (*use && !aligned) {
        *start -= ((*start % 60000) + 60000) % 60000;
        *step = (*step + 59999) / 60000 * 60000;
    }
    return GP_OK;
}

static void put_series_values(struct gp_buf *out, const struct gp_eval_range *r, const double *val,
                              const uint8_t *has)
{
    int first = 1;
    int64_t t = r->start_ms;
    for (size_t k = 0; k < r->npoints; k++, t += r->step_ms)
        if (has[k]) {
            gp_json_point(out, first, t, val[k]);
            first = 0;
        }
}

/*
 * Evaluation in batches, each spread over worker threads.
 *
 * A unit is one series (without agg) or one group (with agg: the run of
 * adjacent items sharing a key, so a group's sum is always taken by one
 * thread in one order, and the answer does not depend on the threads).
 * A batch is as many units as BATCH_CELLS grid cells hold; its units are
 * handed out through an atomic counter, evaluated into per-unit grids,
 * then written in order by the calling thread. Memory stays bounded
 * however many series match; reading and decoding chunks, most of a
 * query's time, runs on up to MAX_THREADS cores.
 */
#define BATCH_CELLS ((size_t)1 << 21)
#define MAX_THREADS 4
/* Below this many series a query runs on the calling thread alone. */
#define PARALLEL_MIN_SERIES 32

struct range_job;

struct worker {
    struct range_job *job;
    struct gp_rollups ru;
    double *val; /* one grid of scratch (grouped) */
    uint8_t *has;
    pthread_t th;
};

struct range_job {
    struct gp_storage *s;
    const struct gp_eval_range *r;
    enum gp_eval_mode mode;
    int grouped;
    int64_t mint, maxt;
    const struct item *items;
    const size_t *ustart; /* unit u is items [ustart[u], ustart[u + 1]) */
    size_t u0, u1;        /* the batch */
    size_t next;          /* next unit to take (atomic) */
    int failed;           /* atomic: stop taking units */
    double *val;          /* per unit of the batch: a grid (not grouped) */
    uint8_t *has;
    struct gp_eval_groups g; /* per unit of the batch: a group (grouped) */
    pthread_mutex_t mu;
    int rc;
    char err[256];
    struct gp_buf warn; /* under mu: JSON strings of the warnings, comma-separated */
    size_t nwarn;
};

#define DAMAGE_WARNINGS 10

static void rfc3339(int64_t ms, char *out, size_t len)
{
    time_t sec = (time_t)(ms / 1000 - (ms % 1000 < 0));
    struct tm tm;
    if (!gmtime_r(&sec, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, len, "%lld ms", (long long)ms);
}

/* Appends "data of series NAME{LABELS} between T1 and T2 is damaged and
 * was skipped" (a JSON string) to the job's warnings. */
static void note_damage(struct range_job *j, const struct gp_store_series *ss, int64_t from,
                        int64_t to)
{
    char text[1024], t1[40], t2[40];
    size_t n = 0;
    struct gp_labels_iter it;
    struct gp_str k, v;
    struct gp_str name;
    gp_labels_get(ss->labels, ss->labels_len, "__name__", &name);
    n += (size_t)snprintf(text, sizeof text, "data of series %.*s{", (int)name.len, name.ptr);
    gp_labels_iter_init(&it, ss->labels, ss->labels_len);
    int first = 1;
    while (gp_labels_next(&it, &k, &v) == 1 && n < sizeof text) {
        if (k.len == 8 && !memcmp(k.ptr, "__name__", 8))
            continue;
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%.*s=\"%.*s\"", first ? "" : ",",
                              (int)k.len, k.ptr, (int)v.len, v.ptr);
        first = 0;
    }
    rfc3339(from, t1, sizeof t1);
    rfc3339(to, t2, sizeof t2);
    if (n < sizeof text)
        snprintf(text + n, sizeof text - n, "} between %s and %s is damaged and was skipped", t1,
                 t2);
    pthread_mutex_lock(&j->mu);
    if (j->nwarn < DAMAGE_WARNINGS) {
        if (j->nwarn)
            gp_buf_puts(&j->warn, ",");
        gp_json_str(&j->warn, text, strlen(text));
    }
    j->nwarn++;
    pthread_mutex_unlock(&j->mu);
}

static void job_fail(struct range_job *j, int rc, const char *fmt, uint32_t id)
{
    pthread_mutex_lock(&j->mu);
    if (!j->rc) {
        j->rc = rc;
        snprintf(j->err, sizeof j->err, fmt, (unsigned)id, gp_strerror(rc));
    }
    pthread_mutex_unlock(&j->mu);
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Reads and evaluates one series' minutes into val/has; returns steps
 * with a value. */
static size_t eval_one(struct worker *w, const struct gp_store_series *ss, double *val,
                       uint8_t *has)
{
    struct range_job *j = w->job;
    w->ru.n = 0;
    w->ru.damaged = 0;
    int rc = gp_storage_read_rollups(j->s, ss->id, j->mint, j->maxt, &w->ru);
    size_t found = gp_eval_rollups(j->r, j->mode, w->ru.r, w->ru.n, val, has);
    if (w->ru.damaged)
        note_damage(j, ss, w->ru.damaged_from, w->ru.damaged_to);
    /* A damaged chunk (GP_EPARSE) is logged by the store, which still
     * returns the rest of the range: answer with that, and a warning. */
    if (rc && rc != GP_EPARSE)
        job_fail(j, rc, "reading series %u: %s", ss->id);
    return found;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct range_job *j = w->job;
    size_t np = j->r->npoints;
    for (;;) {
        size_t u = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (u >= j->u1 || __atomic_load_n(&j->failed, __ATOMIC_RELAXED))
            break;
        size_t slot = u - j->u0;
        for (size_t i = j->ustart[u]; i < j->ustart[u + 1]; i++) {
            if (!j->grouped) {
                eval_one(w, j->items[i].s, j->val + slot * np, j->has + slot * np);
            } else if (eval_one(w, j->items[i].s, w->val, w->has)) {
                gp_eval_groups_add(&j->g, slot, w->val, w->has);
            }
        }
    }
    return NULL;
}

/* Evaluates units [u0, u1) on nw workers (the first on this thread). */
static void run_batch(struct range_job *j, struct worker *w, size_t nw, size_t u0, size_t u1)
{
    j->u0 = u0;
    j->u1 = u1;
    j->next = u0;
    if (j->grouped)
        for (size_t u = u0; u < u1; u++)
            gp_eval_groups_clear(&j->g, u - u0);
    size_t started = 1;
    if (u1 - u0 < nw)
        nw = u1 - u0;
    for (; started < nw; started++)
        if (pthread_create(&w[started].th, NULL, work, &w[started]))
            break; /* fewer threads: the rest is shared by those running */
    work(&w[0]);
    for (size_t i = 1; i < started; i++)
        pthread_join(w[i].th, NULL);
}

/* Writes unit u of the batch (a series or a group) if it has any value. */
static void put_unit(struct gp_buf *out, const struct range_job *j, size_t u, int *first_series)
{
    const struct gp_eval_range *r = j->r;
    size_t slot = u - j->u0;
    const struct item *it = &j->items[j->ustart[u]];
    if (!j->grouped) {
        const uint8_t *has = j->has + slot * r->npoints;
        if (!memchr(has, 1, r->npoints))
            return;
        gp_buf_puts(out, *first_series ? "{\"metric\":" : ",{\"metric\":");
        *first_series = 0;
        gp_json_labels(out, it->s->labels, it->s->labels_len);
        gp_buf_puts(out, ",\"values\":[");
        put_series_values(out, r, j->val + slot * r->npoints, has);
        gp_buf_puts(out, "]}");
        return;
    }
    int first = 1;
    int64_t t = r->start_ms;
    for (size_t k = 0; k < r->npoints; k++, t += r->step_ms) {
        double v;
        if (!gp_eval_groups_get(&j->g, slot, k, &v))
            continue;
        if (first) {
            gp_buf_puts(out, *first_series ? "{\"metric\":" : ",{\"metric\":");
            *first_series = 0;
            gp_json_labels(out, it->key, it->key_len);
            gp_buf_puts(out, ",\"values\":[");
        }
        gp_json_point(out, first, t, v);
        first = 0;
    }
    if (!first)
        gp_buf_puts(out, "]}");
}

static size_t online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (size_t)n;
}

/* ---- the form on raw samples, through the PromQL engine ---- */

static const char *const agg_ops[] = {
    [GP_AGG_AVG] = "avg", [GP_AGG_MIN] = "min", [GP_AGG_MAX] = "max",
    [GP_AGG_SUM] = "sum", [GP_AGG_COUNT] = "count",
};

/* The lookback the form's PromQL runs with: the server's, else 5m. */
static int64_t form_lookback(const struct gp_range_query *q)
{
    return q->lim && q->lim->lookback_ms > 0 ? q->lim->lookback_ms : GP_QUERY_LOOKBACK_MS;
}

/* The metric q's selector names with its one __name__="N" matcher (and
 * no other __name__ matcher), else NULL. */
static const char *one_name(const struct gp_range_query *q)
{
    const char *name = NULL;
    for (size_t i = 0; i < q->nm; i++) {
        if (strcmp(q->m[i].name, "__name__"))
            continue;
        if (name || q->m[i].op != GP_MATCH_EQ || !q->m[i].value[0])
            return NULL;
        name = q->m[i].value;
    }
    return name;
}

/* q's selector written by the PromQL formatter: a range [range_ms] when
 * range_ms > 0, else an instant vector; offset_ms back in time. */
static void put_selector(const struct gp_range_query *q, int64_t range_ms, int64_t offset_ms,
                         struct gp_buf *out)
{
    struct gp_pq_node sel = {.kind = range_ms ? GP_PQ_MATRIX_SEL : GP_PQ_VECTOR_SEL,
                             .type = range_ms ? GP_PQ_T_MATRIX : GP_PQ_T_VECTOR};
    sel.u.sel.m = (struct gp_matcher *)q->m; /* read only */
    sel.u.sel.nm = q->nm;
    sel.u.sel.range_ms = range_ms;
    sel.u.sel.offset_ms = offset_ms;
    /* name{...} as a person writes it, when the name is a plain one */
    for (size_t i = 0; i < q->nm && !sel.u.sel.name; i++) {
        const struct gp_matcher *x = &q->m[i];
        const char *v = x->value;
        int ok = x->op == GP_MATCH_EQ && !strcmp(x->name, "__name__") && *v && !(*v >= '0' && *v <= '9');
        for (; ok && *v; v++)
            ok = (*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || (*v >= '0' && *v <= '9') ||
                 *v == '_' || *v == ':';
        if (ok)
            sel.u.sel.name = x->value;
    }
    gp_promql_format(&sel, out);
}

/* gp_query_form_promql with offset_ms on its selectors. */
static int form_promql(const struct gp_range_query *q, int64_t offset_ms, struct gp_buf *out)
{
    const char *by[GP_QUERY_MAX_BY];
    char err[128];
    int nby = sorted_by(q, by, err, sizeof err);
    if (nby < 0 || !q->m || !q->nm)
        return GP_EUSAGE;
    const char *name = NULL;
    if (q->agg == GP_AGG_NONE) {
        name = one_name(q);
        if (!name || nby)
            return GP_EUSAGE;
        gp_buf_puts(out, "label_replace(");
    } else {
        gp_buf_puts(out, agg_ops[q->agg]);
        if (nby) {
            gp_buf_puts(out, " by (");
            for (int i = 0; i < nby; i++)
                gp_buf_printf(out, "%s%s", i ? ", " : "", by[i]);
            gp_buf_putc(out, ')');
        }
        gp_buf_puts(out, " (");
    }
    gp_buf_puts(out, q->agg == GP_AGG_MIN   ? "min_over_time("
                     : q->agg == GP_AGG_MAX ? "max_over_time("
                                            : "avg_over_time(");
    put_selector(q, q->step_ms, offset_ms, out);
    gp_buf_putc(out, ')');
    /* A window as long as the lookback holds all the lookback could
     * find: the fallback would never answer, and costs a second read. */
    if (q->step_ms < form_lookback(q)) {
        gp_buf_puts(out, " or ");
        put_selector(q, 0, offset_ms, out);
        gp_buf_puts(out, " * 1");
    }
    if (!name) {
        gp_buf_putc(out, ')');
        return out->err ? out->err : GP_OK;
    }
    /* the name the window function dropped, back */
    struct gp_pq_node str = {.kind = GP_PQ_STRING, .type = GP_PQ_T_STRING};
    str.u.string.s = (char *)name; /* read only */
    str.u.string.len = strlen(name);
    gp_buf_puts(out, ", \"__name__\", ");
    gp_promql_format(&str, out);
    gp_buf_puts(out, ", \"\", \"\")");
    return out->err ? out->err : GP_OK;
}

int gp_query_form_promql(const struct gp_range_query *q, struct gp_buf *out)
{
    return form_promql(q, 0, out);
}

/* The form's series cap holds on the engine's path too (the engine's
 * own limit is samples): the index alone tells how many series the
 * range sees. GP_OK with the selection in sel, or an error. */
static int select_capped(struct gp_storage *s, const struct gp_range_query *q,
                         struct gp_store_selection *sel, char *err, size_t errlen)
{
    int64_t lookback = form_lookback(q);
    int64_t reach = q->step_ms > lookback ? q->step_ms : lookback;
    int rc = gp_storage_select(s, q->m, q->nm, q->start_ms - reach + 1, q->end_ms, sel);
    if (rc)
        return gp_seterr(err, errlen, rc, "selecting series: %s", gp_strerror(rc));
    if (sel->n > GP_QUERY_MAX_SERIES)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "the selector matches %zu series, more than the limit of %d: narrow it",
                         sel->n, GP_QUERY_MAX_SERIES);
    return GP_OK;
}

/*
 * Evaluates q's PromQL (gp_query_form_promql) into res, with Prometheus
 * 3's left-open windows (so the window is (t - step, t], every sample in
 * one step) and the server's samples cap, timeout and lookback: the
 * answer is what /api/v1/query_range?query=... gives for that expression
 * with --query.prom3-windows.
 */
static int eval_form(struct gp_storage *s, const struct gp_range_query *q,
                     struct gp_promql_result *res, char *err, size_t errlen)
{
    struct gp_buf text;
    gp_buf_init(&text, 0);
    int rc = gp_query_form_promql(q, &text);
    if (rc || !text.data) {
        gp_buf_free(&text);
        return gp_seterr(err, errlen, rc ? rc : GP_ENOMEM, "writing the query's PromQL");
    }
    struct gp_pq_node *e = NULL;
    char detail[256];
    rc = gp_promql_parse(text.data, text.len, &e, detail, sizeof detail);
    if (rc) {
        rc = rc == GP_ENOMEM ? rc : GP_EUSAGE;
        gp_seterr(err, errlen, rc, "%s: %s", text.data, detail);
        gp_buf_free(&text);
        return rc;
    }
    gp_buf_free(&text);
    struct gp_promql_limits lim = {0};
    if (q->lim)
        lim = *q->lim;
    lim.lookback_ms = form_lookback(q);
    lim.prom3_windows = 1;
    rc = gp_promql_range(s, e, q->start_ms, q->end_ms, q->step_ms, &lim, res, detail,
                         sizeof detail);
    if (rc)
        snprintf(err, errlen, "%s", detail);
    gp_promql_free(e);
    return rc;
}

/* The cluster's answer has more series than the form's cap. */
static int over_cap(char *err, size_t errlen)
{
    return gp_seterr(err, errlen, GP_EUSAGE,
                     "the selector matches more than the limit of %d series: narrow it",
                     GP_QUERY_MAX_SERIES);
}

/*
 * q's PromQL (form_promql, selectors offset_ms back) evaluated by the
 * cluster over q's grid exactly; its series appended to res. For ranges
 * this server does not hold (gp_storage_pushdown): one value per step
 * and series crosses the network instead of every raw sample.
 */
static int cluster_form(struct gp_storage *s, const struct gp_range_query *q, int64_t offset_ms,
                        struct gp_promql_result *res, char *err, size_t errlen)
{
    struct gp_buf text;
    gp_buf_init(&text, 0);
    int rc = form_promql(q, offset_ms, &text);
    if (rc || !text.data) {
        gp_buf_free(&text);
        return gp_seterr(err, errlen, rc ? rc : GP_ENOMEM, "writing the query's PromQL");
    }
    struct gp_storage_promql pq = {.query = text.data, .range = 1, .start_ms = q->start_ms,
                                   .end_ms = q->end_ms, .step_ms = q->step_ms, .exact_grid = 1,
                                   .timeout_ms = q->lim ? q->lim->timeout_ms : 0};
    struct gp_promapi_result x;
    rc = gp_storage_promql_matrix(s, &pq, &x);
    gp_buf_free(&text);
    if (!rc && res->n + x.n > GP_QUERY_MAX_SERIES)
        rc = over_cap(err, errlen);
    struct gp_promql_series *grown = NULL;
    if (!rc && x.n && !(grown = realloc(res->series, (res->n + x.n) * sizeof *grown)))
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; grown && i < x.n; i++) {
        res->series = grown;
        grown[res->n++] = (struct gp_promql_series){x.s[i].labels, x.s[i].labels_len, x.s[i].t,
                                                    x.s[i].v, x.s[i].n};
        x.s[i] = (struct gp_promapi_series){0}; /* moved */
    }
    gp_promapi_result_free(&x);
    if (rc == GP_ENET)
        snprintf(err, errlen, "%s", gp_storage_last_error());
    return rc;
}

/* Without agg, one metric name at a time (each series keeps __name__,
 * which its window function drops and label_replace puts back; two
 * metrics' series could not share one PromQL vector without it). */
struct by_name {
    struct gp_storage *s;
    const struct gp_range_query *q;
    int cluster;       /* the cluster evaluates (cluster_form), with offset_ms */
    int64_t offset_ms;
    struct gp_promql_result all; /* every name's series, then sorted */
    struct gp_buf warn;
    int rc;
    char *err;
    size_t errlen;
};

static void eval_name(void *arg, const char *name, size_t len)
{
    struct by_name *b = arg;
    if (b->rc)
        return;
    /* q's matchers with __name__="NAME" for its __name__ matchers, which
     * NAME satisfies (the selection found it through them) */
    struct gp_matcher m[GP_SELECTOR_MAX_MATCHERS + 1];
    struct gp_range_query q = *b->q;
    q.nm = 0;
    for (size_t i = 0; i < b->q->nm && q.nm < GP_SELECTOR_MAX_MATCHERS; i++)
        if (strcmp(b->q->m[i].name, "__name__"))
            m[q.nm++] = b->q->m[i]; /* a shallow copy, only read */
    char copy[GP_RW_MAX_LABEL_LEN + 1];
    snprintf(copy, sizeof copy, "%.*s", (int)len, name);
    struct gp_matcher *nm = &m[q.nm];
    b->rc = gp_matcher_init(nm, GP_MATCH_EQ, "__name__", copy, b->err, b->errlen);
    if (b->rc)
        return;
    q.nm++;
    q.m = m;
    struct gp_promql_result r = {0};
    b->rc = b->cluster ? cluster_form(b->s, &q, b->offset_ms, &r, b->err, b->errlen)
                       : eval_form(b->s, &q, &r, b->err, b->errlen);
    gp_matcher_free(nm);
    if (!b->rc && r.n) {
        struct gp_promql_series *grown =
            realloc(b->all.series, (b->all.n + r.n) * sizeof *grown);
        if (!grown) {
            b->rc = gp_seterr(b->err, b->errlen, GP_ENOMEM, "out of memory");
        } else {
            b->all.series = grown;
            memcpy(grown + b->all.n, r.series, r.n * sizeof *grown);
            b->all.n += r.n;
            r.n = 0; /* moved */
        }
    }
    if (!b->rc && r.warnings)
        gp_buf_printf(&b->warn, "%s%s", b->warn.len ? "\n" : "", r.warnings);
    gp_promql_result_free(&r);
}

static int series_cmp(const void *pa, const void *pb)
{
    const struct gp_promql_series *a = pa, *b = pb;
    return labels_cmp(a->labels, a->labels_len, b->labels, b->labels_len);
}

/* The answer's head on rollups: their resolution and the grid judged. */
static void put_rollup_head(struct gp_buf *out, const struct gp_eval_range *r)
{
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
                     "\"resolution\":\"1m\",\"start\":");
    gp_json_time(out, r->start_ms);
    gp_buf_puts(out, ",\"end\":");
    gp_json_time(out, r->end_ms);
    gp_buf_puts(out, ",\"step\":");
    gp_json_time(out, r->step_ms);
    gp_buf_puts(out, ",\"result\":[");
}

/* A rollup answer of the cluster's series, in the rollup path's shape. */
static void put_rollup_answer(struct gp_buf *out, const struct gp_eval_range *r,
                              const struct gp_promql_result *all)
{
    put_rollup_head(out, r);
    for (size_t i = 0; i < all->n; i++) {
        const struct gp_promql_series *x = &all->series[i];
        gp_buf_puts(out, i ? ",{\"metric\":" : "{\"metric\":");
        gp_json_labels(out, x->labels, x->labels_len);
        gp_buf_puts(out, ",\"values\":[");
        for (size_t k = 0; k < x->n; k++)
            gp_json_point(out, k == 0, x->t[k], x->v[k]);
        gp_buf_puts(out, "]}");
    }
    gp_buf_puts(out, "]}}");
}

static void add_name(void *arg, const char *name, size_t len)
{
    gp_strset_add(arg, name, len);
}

/*
 * The form through PromQL, rendered. Local (rr NULL, or the storage holds
 * the range): its PromQL through the engine on raw samples. Else the
 * cluster evaluates it (cluster_form; docs/storage.md "Old reads"): rr
 * non-NULL is the rollup grid, whose windows [t - step, t) are the
 * rollups' minutes (offset 1ms on left-open windows), answered in the
 * rollup path's shape; without agg the names come from the index.
 */
static int range_promql(struct gp_storage *s, const struct gp_range_query *q,
                        const struct gp_eval_range *rr, int cluster, struct gp_buf *out, char *err,
                        size_t errlen)
{
    struct gp_store_selection sel = {0};
    int rc = cluster ? GP_OK : select_capped(s, q, &sel, err, errlen);
    struct by_name b = {.s = s, .q = q, .err = err, .errlen = errlen, .cluster = cluster,
                        .offset_ms = rr ? 1 : 0};
    b.all.type = GP_PROMQL_MATRIX;
    gp_buf_init(&b.warn, 1 << 20);
    if (!rc && q->agg != GP_AGG_NONE) {
        rc = cluster ? cluster_form(s, q, b.offset_ms, &b.all, err, errlen)
                     : eval_form(s, q, &b.all, err, errlen);
        if (!rc && cluster && b.all.n)
            qsort(b.all.series, b.all.n, sizeof *b.all.series, series_cmp);
    } else if (!rc) {
        struct gp_strset names = {0};
        for (size_t i = 0; i < sel.n; i++) {
            struct gp_str v = {"", 0};
            gp_labels_get(sel.series[i].labels, sel.series[i].labels_len, "__name__", &v);
            gp_strset_add(&names, v.ptr, v.len);
        }
        if (cluster) {
            int64_t lookback = form_lookback(q);
            int64_t reach = q->step_ms > lookback ? q->step_ms : lookback;
            rc = gp_storage_label_values(s, "__name__", q->m, q->nm, q->start_ms - reach + 1,
                                         q->end_ms, add_name, &names);
            if (rc)
                gp_seterr(err, errlen, rc, "the metric names: %s",
                          rc == GP_ENET ? gp_storage_last_error() : gp_strerror(rc));
        }
        rc = rc ? rc : names.err;
        if (!rc) {
            gp_strset_each(&names, eval_name, &b);
            rc = b.rc;
        }
        if (!rc && cluster && b.all.n > GP_QUERY_MAX_SERIES) /* cluster_form counts per name */
            rc = over_cap(err, errlen);
        gp_strset_free(&names);
        if (!rc && b.all.n)
            qsort(b.all.series, b.all.n, sizeof *b.all.series, series_cmp);
        if (!rc && b.warn.len) {
            b.all.warnings = gp_buf_steal(&b.warn, NULL);
            rc = b.all.warnings ? GP_OK : GP_ENOMEM;
        }
    }
    gp_storage_selection_free(&sel);
    if (!rc) {
        struct mark m = mark_of(out);
        if (rr)
            put_rollup_answer(out, rr, &b.all);
        else
            gp_promql_render(&b.all, out);
        rc = out_status(out, err, errlen);
        if (rc)
            rewind_to(out, m);
    }
    gp_buf_free(&b.warn);
    gp_promql_result_free(&b.all);
    return rc;
}

int gp_query_range(struct gp_storage *s, const struct gp_range_query *q, struct gp_buf *out, char *err,
                   size_t errlen)
{
    struct mark m = mark_of(out);
    struct gp_eval_range r;
    int rc = gp_eval_range_init(&r, q->start_ms, q->end_ms, q->step_ms, err, errlen);
    if (rc)
        return rc;
    if (q->start_ms < INT64_MIN / 4 || q->end_ms > INT64_MAX / 4)
        return gp_seterr(err, errlen, GP_EUSAGE, "start or end out of range");
    if (!q->m || q->nm == 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "a range query needs a series selector (match)");
    if (q->agg == GP_AGG_NONE && q->nby)
        return gp_seterr(err, errlen, GP_EUSAGE, "by needs agg (avg, min, max, sum or count)");
    const char *by[GP_QUERY_MAX_BY];
    int nby = sorted_by(q, by, err, errlen);
    if (nby < 0)
        return nby;
    int use_rollups = 0;
    int64_t start_ms, step_ms;
    rc = choose_rollups(q, &use_rollups, &start_ms, &step_ms, err, errlen);
    if (rc)
        return rc;
    /* What the first step can see: its minutes or its lookback. */
    int64_t reach = step_ms > GP_QUERY_LOOKBACK_MS ? step_ms : GP_QUERY_LOOKBACK_MS;
    int cluster = gp_storage_pushdown(s, q->m, q->nm, start_ms - reach);
    if (!use_rollups)
        return range_promql(s, q, NULL, cluster, out, err, errlen);
    if (start_ms != q->start_ms || step_ms != q->step_ms) {
        rc = gp_eval_range_init(&r, start_ms, q->end_ms, step_ms, err, errlen);
        if (rc)
            return rc;
    }
    if (cluster) { /* the minutes' aggregates, not their raw samples */
        struct gp_range_query qr = *q;
        qr.start_ms = start_ms;
        qr.step_ms = step_ms;
        return range_promql(s, &qr, &r, 1, out, err, errlen);
    }

    struct range_job j;
    memset(&j, 0, sizeof j);
    pthread_mutex_init(&j.mu, NULL);
    gp_buf_init(&j.warn, 1 << 20);
    j.s = s;
    j.r = &r;
    j.mode = gp_eval_mode_for(q->agg);
    j.grouped = q->agg != GP_AGG_NONE;
    j.mint = r.start_ms - reach;
    j.maxt = q->end_ms - 1;

    struct gp_store_selection sel = {0};
    struct item *items = NULL;
    size_t *ustart = NULL;
    struct worker w[MAX_THREADS];
    memset(w, 0, sizeof w);
    size_t nw = 0;
    struct gp_buf keys;
    gp_buf_init(&keys, (size_t)1 << 30);

    /* The store judges a series' span by its raw samples: one whose raw
     * samples before the range have expired is found by those after it
     * (a series that ended before the raw retention is not found). */
    int64_t sel_maxt = q->raw_since_ms > 0 && j.maxt < q->raw_since_ms ? INT64_MAX : j.maxt;
    rc = gp_storage_select(s, q->m, q->nm, j.mint, sel_maxt, &sel);
    if (rc) {
        gp_seterr(err, errlen, rc, "selecting series: %s", gp_strerror(rc));
        goto done;
    }
    if (sel.n > GP_QUERY_MAX_SERIES) {
        rc = gp_seterr(err, errlen, GP_EUSAGE,
                       "the selector matches %zu series, more than the limit of %d: narrow it",
                       sel.n, GP_QUERY_MAX_SERIES);
        goto done;
    }
    items = malloc((sel.n ? sel.n : 1) * sizeof *items);
    ustart = malloc((sel.n + 1) * sizeof *ustart);
    if (!items || !ustart || make_items(&sel, j.grouped, by, (size_t)nby, &keys, items)) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    size_t nunits = 0;
    for (size_t i = 0; i < sel.n; i++)
        if (!j.grouped || i == 0 || !same_key(&items[i - 1], &items[i]))
            ustart[nunits++] = i;
    ustart[nunits] = sel.n;
    j.items = items;
    j.ustart = ustart;

    /* Grids for one batch, and the workers with their read buffers. */
    size_t per_batch = BATCH_CELLS / r.npoints;
    if (per_batch < 1)
        per_batch = 1;
    if (per_batch > nunits)
        per_batch = nunits ? nunits : 1;
    nw = sel.n >= PARALLEL_MIN_SERIES ? online_cpus() : 1;
    int ok = 1;
    if (j.grouped) {
        ok = gp_eval_groups_init(&j.g, q->agg, per_batch, r.npoints) == GP_OK;
    } else {
        j.val = malloc(per_batch * r.npoints * sizeof *j.val);
        j.has = malloc(per_batch * r.npoints);
        ok = j.val && j.has;
    }
    for (size_t i = 0; i < nw && ok; i++) {
        w[i].job = &j;
        if (j.grouped) {
            w[i].val = malloc(r.npoints * sizeof *w[i].val);
            w[i].has = malloc(r.npoints);
            ok = w[i].val && w[i].has;
        }
    }
    if (!ok) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }

    put_rollup_head(out, &r);
    int first_series = 1;
    for (size_t u0 = 0; u0 < nunits && !out->err; u0 += per_batch) {
        size_t u1 = u0 + per_batch < nunits ? u0 + per_batch : nunits;
        run_batch(&j, w, nw, u0, u1);
        if (j.rc) {
            rc = gp_seterr(err, errlen, j.rc, "%s", j.err);
            goto done;
        }
        for (size_t u = u0; u < u1; u++)
            put_unit(out, &j, u, &first_series);
    }
    gp_buf_puts(out, "]}");
    if (j.nwarn) {
        /* Prometheus's place for "answered, but not all of it". */
        gp_buf_puts(out, ",\"warnings\":[");
        gp_buf_append(out, j.warn.data, j.warn.len);
        if (j.nwarn > DAMAGE_WARNINGS)
            gp_buf_printf(out, ",\"data of %zu more series is damaged and was skipped\"",
                          j.nwarn - DAMAGE_WARNINGS);
        gp_buf_puts(out, "]");
    }
    gp_buf_puts(out, "}");
    rc = out_status(out, err, errlen);

done:
    if (rc)
        rewind_to(out, m);
    for (size_t i = 0; i < MAX_THREADS; i++) {
        gp_rollups_free(&w[i].ru);
        free(w[i].val);
        free(w[i].has);
    }
    gp_eval_groups_free(&j.g);
    gp_buf_free(&j.warn);
    free(j.val);
    free(j.has);
    pthread_mutex_destroy(&j.mu);
    free(ustart);
    free(items);
    gp_buf_free(&keys);
    gp_storage_selection_free(&sel);
    return rc;
}

/* ---- series ---- */

int gp_query_series(struct gp_storage *s, const struct gp_matcher *const *sel, const size_t *nm,
                    size_t nsel, int64_t start_ms, int64_t end_ms, struct gp_buf *out, char *err,
                    size_t errlen)
{
    if (nsel == 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "no match[] parameter provided");
    if (end_ms < start_ms)
        return gp_seterr(err, errlen, GP_EUSAGE, "end timestamp must not be before start time");
    struct mark m = mark_of(out);
    struct gp_store_selection *sels = calloc(nsel, sizeof *sels);
    struct item *items = NULL;
    int rc = GP_OK;
    if (!sels)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    size_t total = 0;
    for (size_t i = 0; i < nsel; i++) {
        if (!sel[i] || nm[i] == 0) {
            rc = gp_seterr(err, errlen, GP_EUSAGE, "match[] %zu: empty selector", i + 1);
            goto done;
        }
        rc = gp_storage_select(s, sel[i], nm[i], start_ms, end_ms, &sels[i]);
        if (rc) {
            gp_seterr(err, errlen, rc, "selecting series: %s", gp_strerror(rc));
            goto done;
        }
        total += sels[i].n;
    }
    items = malloc((total ? total : 1) * sizeof *items);
    if (!items) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i < nsel; i++)
        for (size_t j = 0; j < sels[i].n; j++) {
            items[n].s = &sels[i].series[j];
            items[n].key = sels[i].series[j].labels;
            items[n].key_len = sels[i].series[j].labels_len;
            n++;
        }
    /* By labels, ties by id: a series matched by two selectors is adjacent
     * to itself and written once. */
    qsort(items, n, sizeof *items, item_cmp);
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    for (size_t i = 0; i < n && !out->err; i++) {
        if (i && items[i].s->id == items[i - 1].s->id)
            continue;
        if (i)
            gp_buf_putc(out, ',');
        if (gp_json_labels(out, items[i].key, items[i].key_len)) {
            rc = gp_seterr(err, errlen, GP_EIO, "series %u: malformed labels",
                           (unsigned)items[i].s->id);
            goto done;
        }
    }
    gp_buf_puts(out, "]}");
    rc = out_status(out, err, errlen);
done:
    if (rc)
        rewind_to(out, m);
    free(items);
    for (size_t i = 0; i < nsel; i++)
        gp_storage_selection_free(&sels[i]);
    free(sels);
    return rc;
}

/* ---- label names and values ---- */

struct list_writer {
    struct gp_buf *out;
    int first;
};

static void write_item(void *arg, const char *p, size_t len)
{
    struct list_writer *w = arg;
    if (!w->first)
        gp_buf_putc(w->out, ',');
    w->first = 0;
    gp_json_str(w->out, p, len);
}

static int write_list(struct gp_storage *s, const char *name, struct gp_buf *out, char *err,
                      size_t errlen)
{
    struct mark m = mark_of(out);
    struct list_writer w = {out, 1};
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    int rc = name ? gp_storage_label_values(s, name, NULL, 0, INT64_MIN, INT64_MAX, write_item, &w)
                  : gp_storage_label_names(s, NULL, 0, INT64_MIN, INT64_MAX, write_item, &w);
    if (rc) {
        gp_seterr(err, errlen, rc, "listing labels: %s", gp_strerror(rc));
    } else {
        gp_buf_puts(out, "]}");
        rc = out_status(out, err, errlen);
    }
    if (rc)
        rewind_to(out, m);
    return rc;
}

int gp_query_label_list(struct gp_storage *s, const char *name, const struct gp_matcher *const *sel,
                        const size_t *nm, size_t nsel, int64_t start_ms, int64_t end_ms,
                        struct gp_buf *out, char *err, size_t errlen)
{
    int bounded = start_ms != INT64_MIN || end_ms != INT64_MAX;
    if (end_ms < start_ms)
        return gp_seterr(err, errlen, GP_EUSAGE, "end timestamp must not be before start time");
    if (name && name[0] == '\0')
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid label name: empty");
    if (!nsel && !bounded)
        return write_list(s, name, out, err, errlen);
    struct gp_strset x = {0};
    int rc = GP_OK;
    for (size_t i = 0; i < (nsel ? nsel : 1) && !rc && !x.err; i++) {
        const struct gp_matcher *m = nsel ? sel[i] : NULL;
        size_t n = nsel ? nm[i] : 0;
        rc = name ? gp_storage_label_values(s, name, m, n, start_ms, end_ms, gp_strset_add, &x)
                  : gp_storage_label_names(s, m, n, start_ms, end_ms, gp_strset_add, &x);
    }
    if (!rc)
        rc = x.err;
    if (rc) {
        gp_seterr(err, errlen, rc, "listing labels: %s", gp_strerror(rc));
    } else {
        struct mark mk = mark_of(out);
        struct list_writer w = {out, 1};
        gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
        gp_strset_each(&x, write_item, &w);
        gp_buf_puts(out, "]}");
        rc = out_status(out, err, errlen);
        if (rc)
            rewind_to(out, mk);
    }
    gp_strset_free(&x);
    return rc;
}

int gp_query_labels(struct gp_storage *s, struct gp_buf *out, char *err, size_t errlen)
{
    return write_list(s, NULL, out, err, errlen);
}

int gp_query_label_values(struct gp_storage *s, const char *name, struct gp_buf *out, char *err,
                          size_t errlen)
{
    if (!name || !*name)
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid label name: empty");
    if (strlen(name) > GP_RW_MAX_LABEL_LEN)
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid label name: longer than %d bytes",
                         GP_RW_MAX_LABEL_LEN);
    return write_list(s, name, out, err, errlen);
}

void gp_query_error(struct gp_buf *out, const char *type, const char *msg)
{
    gp_buf_puts(out, "{\"status\":\"error\",\"errorType\":");
    type = type ? type : "internal";
    msg = msg ? msg : "";
    gp_json_str(out, type, strlen(type));
    gp_buf_puts(out, ",\"error\":");
    gp_json_str(out, msg, strlen(msg));
    gp_buf_putc(out, '}');
}
