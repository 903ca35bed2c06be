/*
 * storage_rollups.c - the 1-minute rollups of every series of a
 * selection at once (storage.h gp_storage_read_rollups_all).
 *
 * Where the store holds the samples (embedded, the remote window) this is
 * gp_storage_read_rollups per series. Where they would come raw from the
 * cluster (gp_storage_pushdown), the cluster computes the minutes
 * instead: one PromQL range query per metric name of the selection, on
 * the grid of minute ends (nocache), of four terms
 *
 *   label_replace(F_over_time({__name__="N"}[1m] offset 1ms), "gpulse_rollup", "F", "", "")
 *
 * F = count, sum, min, max joined with `or` (the label keeps the four
 * apart: `or` matches label sets without __name__). With cuts, min and
 * max are asked `and` the minute straddles one, (min < C and max >= C)
 * `or` ...; the minutes left out get the mean for both, which puts their
 * samples on the same side of every cut (with no cut, none is asked). At T = minute + 1m the
 * window (T - 1ms - 1m, T - 1ms] is the minute [t, t + 59999], the span
 * the store's rollup covers; VictoriaMetrics's windows are left-open as
 * that needs (Prometheus 2 closes them: a sample at t - 1 ms counts in two
 * minutes there). So four numbers a minute cross the network instead of
 * every sample of it, and the caller's arithmetic is the same. Each
 * answer's series is matched to the selection's by its labels without
 * __name__ and gpulse_rollup.
 */
#include "storage/storage_int.h"

#include "lib/err.h"
#include "storage/promapi.h"
#include "store/labels.h"
#include "store/store_fmt.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROLLUP_LABEL "gpulse_rollup"

static const char *const figs[] = {"count", "sum", "min", "max"};

/* The key of a label set: name\0value\0 of each label but the two the
 * answer adds or drops, in the canonical (sorted) order. */
static int key_of(const uint8_t *l, size_t len, struct gp_buf *out)
{
    struct gp_labels_iter it;
    struct gp_str n, v;
    gp_labels_iter_init(&it, l, len);
    while (gp_labels_next(&it, &n, &v) == 1) {
        if ((n.len == 8 && !memcmp(n.ptr, "__name__", 8)) ||
            (n.len == sizeof ROLLUP_LABEL - 1 && !memcmp(n.ptr, ROLLUP_LABEL, n.len)))
            continue;
        gp_buf_append(out, n.ptr, n.len);
        gp_buf_putc(out, '\0');
        gp_buf_append(out, v.ptr, v.len);
        gp_buf_putc(out, '\0');
    }
    return out->err ? GP_ENOMEM : GP_OK;
}

struct keyed {
    size_t idx;      /* in the selection */
    size_t off, len; /* the key in the keys buffer, then at p */
    const char *p;
};

static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The figure of an answer's series: its gpulse_rollup value's index, -1. */
static int fig_of(const struct gp_promapi_series *x)
{
    struct gp_str v;
    if (gp_labels_get(x->labels, x->labels_len, ROLLUP_LABEL, &v) != 1)
        return -1;
    for (int f = 0; f < 4; f++)
        if (v.len == strlen(figs[f]) && !memcmp(v.ptr, figs[f], v.len))
            return f;
    return -1;
}

/* The minutes of one answer's series into the rollups of its selection
 * series (ascending minutes, points at minute ends). */
static int merge(struct gp_rollups *ru, const struct gp_promapi_series *x, int f)
{
    size_t k = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->t[i] % 60000)
            continue; /* off the grid of minute ends: not a minute */
        int64_t t = x->t[i] - 60000;
        while (k < ru->n && ru->r[k].t < t)
            k++;
        if (k == ru->n || ru->r[k].t != t) {
            struct gp_rollup z = {.t = t, .min = NAN, .max = NAN, .sum = NAN};
            if (gp_st_rollups_push(ru, &z))
                return GP_ENOMEM;
            /* keep the order: move the new minute to k */
            struct gp_rollup nw = ru->r[ru->n - 1];
            memmove(&ru->r[k + 1], &ru->r[k], (ru->n - 1 - k) * sizeof *ru->r);
            ru->r[k] = nw;
        }
        double v = x->v[i];
        if (f == 0)
            ru->r[k].count = v >= 1 && v < 1e15 ? (uint64_t)llround(v) : 0; /* NaN: 0 */
        else if (f == 1)
            ru->r[k].sum = v;
        else if (f == 2)
            ru->r[k].min = v;
        else
            ru->r[k].max = v;
    }
    return GP_OK;
}

/* F_over_time({__name__="NAME"}[1m] offset 1ms): one minute at the
 * minute's end. */
static void window_fn(struct gp_buf *q, const char *f, const char *name)
{
    gp_buf_printf(q, "%s_over_time({__name__=", f);
    gp_storage_put_quoted(q, name, strlen(name));
    gp_buf_puts(q, "}[1m] offset 1ms)");
}

int gp_storage_rollups_answer(const struct gp_store_selection *sel, const size_t *idx, size_t n,
                              const struct gp_promapi_result *res, int means, struct gp_rollups *out)
{
    struct keyed *kd = malloc((n ? n : 1) * sizeof *kd);
    struct gp_buf keys, k;
    gp_buf_init(&keys, 0);
    gp_buf_init(&k, 0);
    int rc = kd ? GP_OK : GP_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        const struct gp_store_series *x = &sel->series[idx[i]];
        kd[i].idx = idx[i];
        kd[i].off = keys.len;
        rc = key_of(x->labels, x->labels_len, &keys);
        kd[i].len = keys.len - kd[i].off;
    }
    if (!rc) { /* the buffer no longer moves */
        for (size_t i = 0; i < n; i++)
            kd[i].p = keys.data ? keys.data + kd[i].off : "";
        if (n)
            qsort(kd, n, sizeof *kd, keyed_cmp);
    }
    for (size_t i = 0; !rc && i < res->n; i++) {
        int f = fig_of(&res->s[i]);
        if (f < 0)
            continue; /* not a figure asked for */
        k.len = 0;
        if ((rc = key_of(res->s[i].labels, res->s[i].labels_len, &k)))
            break;
        struct keyed want = {.p = k.data ? k.data : "", .len = k.len};
        struct keyed *hit = n ? bsearch(&want, kd, n, sizeof *kd, keyed_cmp) : NULL;
        if (hit) /* else a series the selection does not hold */
            rc = merge(&out[hit->idx], &res->s[i], f);
    }
    /* A minute without a count was not whole in the answer; one without
     * min and max straddles no cut: its mean stands for both. */
    for (size_t i = 0; !rc && i < n; i++) {
        struct gp_rollups *ru = &out[idx[i]];
        size_t m = 0;
        for (size_t j = 0; j < ru->n; j++) {
            struct gp_rollup *r = &ru->r[j];
            if (!r->count)
                continue;
            if (means && isnan(r->min) && isnan(r->max))
                r->min = r->max = r->sum / (double)r->count;
            ru->r[m++] = *r;
        }
        ru->n = m;
    }
    free(kd);
    gp_buf_free(&keys);
    gp_buf_free(&k);
    return rc;
}

/* One metric name's minutes from the cluster, for the selection's series
 * of that name (idx[0..n)). */
static int ask_name(struct gp_storage *s, const char *name, int64_t from, int64_t to,
                    const double *cuts, size_t ncuts, const struct gp_store_selection *sel,
                    const size_t *idx, size_t n, struct gp_rollups *out)
{
    struct gp_buf q;
    gp_buf_init(&q, 0);
    for (int f = 0; f < (cuts && !ncuts ? 2 : 4); f++) {
        gp_buf_puts(&q, f ? " or label_replace(" : "label_replace(");
        window_fn(&q, figs[f], name);
        /* min and max only of the minutes that straddle a cut */
        for (size_t c = 0; f >= 2 && c < ncuts; c++) {
            gp_buf_puts(&q, c ? " or (" : " and ((");
            window_fn(&q, "min", name);
            gp_buf_printf(&q, " < %.17g and ", cuts[c]);
            window_fn(&q, "max", name);
            gp_buf_printf(&q, " >= %.17g)%s", cuts[c], c + 1 == ncuts ? ")" : "");
        }
        gp_buf_printf(&q, ", \"" ROLLUP_LABEL "\", \"%s\", \"\", \"\")", figs[f]);
    }
    int rc = q.err ? GP_ENOMEM : GP_OK;
    struct gp_promapi_result res = {0};
    if (!rc) {
        struct gp_storage_promql pq = {.query = q.data, .range = 1, .start_ms = from + 60000,
                                       .end_ms = to + 60000, .step_ms = 60000, .exact_grid = 1};
        rc = gp_storage_promql_matrix(s, &pq, &res);
    }
    if (!rc)
        rc = gp_storage_rollups_answer(sel, idx, n, &res, cuts != NULL, out);
    gp_promapi_result_free(&res);
    gp_buf_free(&q);
    return rc;
}

int gp_storage_read_rollups_all(struct gp_storage *s, const struct gp_store_selection *sel,
                                int64_t mint, int64_t maxt, const double *cuts, size_t ncuts,
                                struct gp_rollups *out)
{
    memset(out, 0, sel->n * sizeof *out);
    if (mint > maxt || !sel->n)
        return GP_OK;
    size_t *idx = calloc(sel->n, sizeof *idx);
    char *done = calloc(sel->n, 1);
    int rc = idx && done ? GP_OK : GP_ENOMEM;
    int64_t from, to;
    gp_storage_rollup_span(mint, maxt, &from, &to);
    to -= 59999;
    for (size_t i = 0; !rc && i < sel->n; i++) {
        if (done[i])
            continue;
        struct gp_str nm;
        char name[256];
        const struct gp_store_series *x = &sel->series[i];
        gp_labels_get(x->labels, x->labels_len, "__name__", &nm);
        struct gp_matcher m;
        char err[64];
        int push = nm.len && nm.len < sizeof name;
        if (push) {
            memcpy(name, nm.ptr, nm.len);
            name[nm.len] = '\0';
            push = !gp_matcher_init(&m, GP_MATCH_EQ, "__name__", name, err, sizeof err);
            if (push) {
                push = gp_storage_pushdown(s, &m, 1, from) == 1;
                gp_matcher_free(&m);
            }
        }
        if (!push) {
            rc = gp_storage_read_rollups(s, x->id, mint, maxt, &out[i]);
            if (rc == GP_EPARSE)
                rc = GP_OK; /* a damaged chunk: the rest still counts, as a single read */
            done[i] = 1;
            continue;
        }
        /* every series of this name at once */
        size_t n = 0;
        for (size_t j = i; j < sel->n; j++) {
            struct gp_str o;
            if (done[j] || !gp_labels_get(sel->series[j].labels, sel->series[j].labels_len,
                                          "__name__", &o) ||
                o.len != nm.len || memcmp(o.ptr, nm.ptr, nm.len))
                continue;
            idx[n++] = j;
            done[j] = 1;
        }
        rc = ask_name(s, name, from, to, cuts, ncuts, sel, idx, n, out);
    }
    free(idx);
    free(done);
    if (rc) {
        for (size_t i = 0; i < sel->n; i++)
            gp_rollups_free(&out[i]);
    }
    return rc;
}
