/*
 * promql_call.c - function calls: range functions over range sources
 * (rate, *_over_time, ... computed by promql_fn.c's kernels window by
 * window), value functions mapped over a vector (abs, clamp, the date
 * functions with vector(time()) as default argument, ...), and the
 * functions about labels and structure that the kernels leave to the
 * evaluator: label_replace (Go's $1/${1}/$name expansion over an RE2 regex that
 * lib/re2posix runs as POSIX),
 * label_join, absent and absent_over_time (labels from the selector's
 * equality matchers), scalar, vector, time, timestamp, sort, sort_desc,
 * sort_by_label(_desc), histogram_quantile's bucket grouping.
 *
 * __name__: every function drops it except last_over_time and the label
 * and sort functions, as 2.42 does; two series that become one are
 * "vector cannot contain metrics with the same labelset".
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "lib/re2posix.h"
#include "query/promql_fn.h"
#include "store/labels.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The labels absent() and absent_over_time() give, as 2.42 derives
 * them: in matcher order, an equality matcher sets its label unless the
 * label is already set; every other matcher (and such a repeat) marks
 * its label, and marked labels are removed at the end. __name__ never
 * counts. */
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
        struct gp_str have = {"", 0};
        if (strcmp(m->name, "__name__") == 0 || m->op != GP_MATCH_EQ)
            continue;
        for (size_t j = 0; j < ls.n; j++)
            if (strlen(m->name) == ls.l[j].name.len && !memcmp(m->name, ls.l[j].name.ptr, ls.l[j].name.len))
                have = ls.l[j].value;
        if (!have.len) /* a repeat is marked below */
            rc = gp_pq_lset_set(&ls, m->name, strlen(m->name), m->value, m->value_len);
    }
    /* The marks: every matcher that did not set its label. */
    for (size_t i = 0; i < sel->nm && rc == GP_OK; i++) {
        const struct gp_matcher *m = sel->m + i;
        if (strcmp(m->name, "__name__") == 0)
            continue;
        int set_it = 0;
        if (m->op == GP_MATCH_EQ) {
            /* It set its label when no earlier equality matcher had. */
            set_it = 1;
            for (size_t j = 0; j < i; j++)
                if (!strcmp(sel->m[j].name, m->name) && sel->m[j].op == GP_MATCH_EQ &&
                    sel->m[j].value_len)
                    set_it = 0;
        }
        if (!set_it)
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
    gp_pq_vector_new(out);
    int rc = absent_labels(c, arg, &c->tmp);
    size_t idx = (size_t)-1;
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if (present[k])
            continue;
        if (idx == (size_t)-1)
            rc = gp_pq_val_append(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len, &idx);
        if (rc == GP_OK)
            rc = gp_pq_val_put(c, out, idx, k, 1);
    }
    return rc;
}

/* A range function over one series: its value at every step with a
 * non-empty window into ov/oh (absent_over_time: just the presence).
 * Thread-safe: reads c, writes only its arguments. */
struct range_job {
    const struct gp_pq_ctx *c;
    const struct gp_pq_call *call;
    const struct gp_pq_grid *g;
    struct gp_pq_when w;
    int64_t range;
    const struct gp_pq_val *args;
    size_t nargs;
    /* per series (parallel path), by place in label order */
    double **v;
    uint8_t **has;
    size_t *np;
    atomic_size_t cells; /* step slots allocated (parallel path), against max_samples */
};

/* Step k's value x into the series' arrays (allocated at its first). */
static int range_put(struct range_job *j, size_t k, double x, double **ov, uint8_t **oh,
                     size_t *np, char *err, size_t errlen)
{
    const struct gp_pq_grid *g = j->g;
    if (!*ov) {
        if (j->v && j->c->cells + atomic_fetch_add(&j->cells, g->n) + g->n > j->c->lim.max_samples)
            return gp_seterr(err, errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
        *ov = malloc(g->n * sizeof **ov);
        *oh = calloc(g->n, 1);
        if (!*ov || !*oh)
            return gp_seterr(err, errlen, GP_ENOMEM, "query: out of memory");
    }
    (*ov)[k] = x;
    (*oh)[k] = 1;
    (*np)++;
    return GP_OK;
}

/* The series' largest window is what Prometheus holds for it. */
static int range_held(const struct range_job *j, size_t most, char *err, size_t errlen)
{
    if (j->c->samples + most > j->c->lim.max_samples)
        return gp_seterr(err, errlen, GP_ERANGE, GP_PQ_TOO_MANY_SAMPLES);
    return GP_OK;
}

static int range_steps(struct range_job *j, int64_t *t, double *v, size_t n, double **ov,
                       uint8_t **oh, size_t *np, char *err, size_t errlen)
{
    const struct gp_pq_grid *g = j->g;
    const struct gp_pq_call *call = j->call;
    int absent = call->func == GP_PQ_F_ABSENT_OVER_TIME, rc = GP_OK;
    int pair = call->func == GP_PQ_F_AVG_OVER_TIME;
    n = gp_pq_drop_stale(t, v, n);
    size_t lo = 0, hi = 0, most = 0, *resets = NULL;
    double *prevs = NULL;
    *np = 0;
    int no_resets = 0;
    if ((call->func == GP_PQ_F_RATE || call->func == GP_PQ_F_INCREASE) && g->n > 1 && n) {
        /* A counter that never drops (the common case) needs no reset
         * scan in any window; else resets[i] counts the drops among
         * samples 1..i and prevs lists the value before each drop, so a
         * window finds its own drops without a scan (counter_hint 2):
         * windows overlap, and a gauge given to rate drops often. */
        size_t first = 1;
        while (first < n && !(v[first] < v[first - 1]))
            first++;
        no_resets = first == n;
        if (!no_resets) {
            resets = malloc(n * sizeof *resets);
            prevs = malloc(n * sizeof *prevs);
            if (!resets || !prevs) {
                free(resets);
                free(prevs);
                return gp_seterr(err, errlen, GP_ENOMEM, "query: out of memory");
            }
            for (size_t i = 0; i < first; i++)
                resets[i] = 0;
            for (size_t i = first; i < n; i++) {
                resets[i] = resets[i - 1];
                if (v[i] < v[i - 1])
                    prevs[resets[i]++] = v[i - 1];
            }
        }
    }
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        struct gp_pq_window win;
        memset(&win, 0, sizeof win);
        gp_pq_window_at(j->c, &j->w, j->range, g, k, t, n, &lo, &hi, &win.start_ms, &win.end_ms);
        if (hi == lo)
            continue;
        if (hi - lo > most)
            most = hi - lo;
        double x = 1;
        if (!absent) {
            win.t = t + lo;
            win.v = v + lo;
            win.n = hi - lo;
            win.eval_ms = gp_pq_grid_t(g, k);
            win.counter_hint = no_resets ? 1 : resets ? 2 : 0;
            if (resets) { /* drops at lo + 1 .. hi - 1 */
                win.resets = prevs + resets[lo];
                win.nresets = resets[hi - 1] - resets[lo];
            }
            if (pair && k + 1 < g->n) {
                /* The next step's window beside this one. */
                struct gp_pq_window w2 = win;
                gp_pq_window_at(j->c, &j->w, j->range, g, k + 1, t, n, &lo, &hi, &w2.start_ms,
                                &w2.end_ms);
                if (hi > lo) {
                    w2.t = t + lo;
                    w2.v = v + lo;
                    w2.n = hi - lo;
                    if (hi - lo > most)
                        most = hi - lo;
                    double x2;
                    gp_pq_fn_avg_over_time2(&win, &w2, &x, &x2);
                    if ((rc = range_put(j, k, x, ov, oh, np, err, errlen)) == GP_OK)
                        rc = range_put(j, k + 1, x2, ov, oh, np, err, errlen);
                    k++;
                    continue;
                }
            }
            double a[4];
            for (size_t i = 0; i < j->nargs; i++)
                a[i] = j->args[i].sc[k];
            int got = gp_pq_fn_range(call->func, &win, a, j->nargs, &x);
            if (got < 0) {
                rc = gp_pq_fn_check_args(call->func, a, j->nargs, err, errlen) == 0
                         ? gp_seterr(err, errlen, GP_ENOMEM, "query: out of memory")
                         : GP_PQ_EEXEC;
                break;
            }
            if (!got)
                continue;
        }
        rc = range_put(j, k, x, ov, oh, np, err, errlen);
    }
    free(resets);
    free(prevs);
    return rc == GP_OK ? range_held(j, most, err, errlen) : rc;
}

/* avg_over_time of two series at one step (an instant query), their
 * chains of divisions overlapping (gp_pq_fn_avg_over_time2). */
static int range_pair(void *arg, size_t i, int64_t *t[2], double *v[2], size_t n[2], char *err,
                      size_t errlen)
{
    struct range_job *j = arg;
    struct gp_pq_window w[2];
    memset(w, 0, sizeof w);
    size_t most = 0;
    for (int s = 0; s < 2; s++) {
        size_t m = gp_pq_drop_stale(t[s], v[s], n[s]), lo = 0, hi = 0;
        j->np[i + s] = 0;
        gp_pq_window_at(j->c, &j->w, j->range, j->g, 0, t[s], m, &lo, &hi, &w[s].start_ms,
                        &w[s].end_ms);
        w[s].t = t[s] + lo;
        w[s].v = v[s] + lo;
        w[s].n = hi - lo;
        if (hi - lo > most)
            most = hi - lo;
    }
    double x[2];
    int rc = GP_OK;
    if (w[0].n && w[1].n)
        gp_pq_fn_avg_over_time2(&w[0], &w[1], &x[0], &x[1]);
    for (int s = 0; s < 2 && rc == GP_OK; s++) {
        if (!w[s].n)
            continue;
        if (!w[1 - s].n)
            gp_pq_fn_range(GP_PQ_F_AVG_OVER_TIME, &w[s], NULL, 0, &x[s]);
        rc = range_put(j, 0, x[s], &j->v[i + s], &j->has[i + s], &j->np[i + s], err, errlen);
    }
    return rc == GP_OK ? range_held(j, most, err, errlen) : rc;
}

static int range_series(void *arg, size_t i, const struct gp_store_series *ser, int64_t *t,
                        double *v, size_t n, char *err, size_t errlen)
{
    (void)ser;
    struct range_job *j = arg;
    return range_steps(j, t, v, n, &j->v[i], &j->has[i], &j->np[i], err, errlen);
}

/* One series' results into out, under its labels (without __name__ but
 * for last_over_time, which acts like offset), or into present[]. */
static int range_emit(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                      const struct gp_pq_grid *g, const uint8_t *lab, size_t len, const double *ov,
                      const uint8_t *oh, uint8_t *present, struct gp_pq_val *out)
{
    if (present) {
        for (size_t k = 0; k < g->n; k++)
            present[k] |= oh[k];
        return GP_OK;
    }
    if (call->func != GP_PQ_F_LAST_OVER_TIME) {
        gp_pq_labels_drop_name(lab, len, &c->tmp);
        if (c->tmp.err)
            return gp_pq_oom(c);
        lab = (const uint8_t *)c->tmp.data;
        len = c->tmp.len;
    }
    size_t idx;
    int rc = gp_pq_val_series(c, out, g, lab, len, &idx);
    for (size_t k = 0; k < g->n && rc == GP_OK; k++)
        if (oh[k])
            rc = gp_pq_val_put(c, out, idx, k, ov[k]);
    return rc;
}

static int call_range(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                      const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    size_t mi = 0;
    while (mi < call->nargs && call->args[mi]->type != GP_PQ_T_MATRIX)
        mi++;
    if (mi == call->nargs || call->nargs > 4)
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "expected a range vector argument");
    struct gp_pq_val args[4];
    size_t nargs = 0;
    memset(args, 0, sizeof args);
    gp_pq_vector_new(out);
    int rc = eval_scalar_args(c, call, g, mi, args, &nargs);
    int absent = call->func == GP_PQ_F_ABSENT_OVER_TIME;
    uint8_t *present = absent ? calloc(g->n ? g->n : 1, 1) : NULL;
    if (absent && !present)
        rc = gp_pq_oom(c);
    struct range_job j;
    memset(&j, 0, sizeof j);
    j.c = c;
    j.call = call;
    j.g = g;
    j.args = args;
    j.nargs = nargs;
    atomic_init(&j.cells, 0);
    struct gp_pq_rsrc rs;
    memset(&rs, 0, sizeof rs);
    rs.sub = 1;
    /* An instant selector of the same series elsewhere in the query is
     * computed from this read (promql_cse.c's twins). */
    const struct gp_pq_sel *twin = NULL;
    size_t tslot = c->cse ? gp_pq_cse_twin(c, call->args[mi], &twin) : (size_t)-1;
    if (rc == GP_OK)
        rc = gp_pq_rsrc_open(c, &rs, call->args[mi], g, tslot == (size_t)-1 ? NULL : twin);
    j.w = rs.w;
    j.range = rs.range;
    size_t n = rs.sub ? 0 : rs.r.sel.n;
    if (rc == GP_OK && !rs.sub) {
        /* A range selector: series read and computed on both cores, then
         * put in label order. */
        j.v = calloc(n ? n : 1, sizeof *j.v);
        j.has = calloc(n ? n : 1, sizeof *j.has);
        j.np = calloc(n ? n : 1, sizeof *j.np);
        /* An instant avg_over_time takes its series two at a time. */
        gp_pq_pair_fn pair = g->n == 1 && call->func == GP_PQ_F_AVG_OVER_TIME ? range_pair : NULL;
        rc = j.v && j.has && j.np ? gp_pq_sel_each(c, &rs.r, range_series, pair, &j)
                                  : gp_pq_oom(c);
        struct gp_pq_val tv;
        if (rc == GP_OK && gp_pq_rsrc_twin(c, &rs, &tv) == 1)
            gp_pq_cse_keep(c, tslot, &tv, g);
        for (size_t i = 0; rc == GP_OK && i < n; i++) {
            const struct gp_store_series *s = rs.r.sel.series + rs.r.order[i];
            if (j.np[i])
                rc = range_emit(c, call, g, s->labels, s->labels_len, j.v[i], j.has[i], present,
                                out);
        }
        for (size_t i = 0; j.v && i < n; i++) {
            free(j.v[i]);
            free(j.has[i]);
        }
    } else if (rc == GP_OK) {
        /* A subquery: its series are already in memory. */
        double *ov = NULL;
        uint8_t *oh = NULL;
        while (rc == GP_OK && (rc = gp_pq_rsrc_next(c, &rs)) == 1) {
            size_t np;
            if (oh)
                memset(oh, 0, g->n);
            rc = range_steps(&j, (int64_t *)rs.ct, (double *)rs.cv, rs.n, &ov, &oh, &np, c->err,
                             c->errlen);
            if (rc == GP_OK && np)
                rc = range_emit(c, call, g, rs.lab, rs.lablen, ov, oh, present, out);
        }
        free(ov);
        free(oh);
    }
    free(j.v);
    free(j.has);
    free(j.np);
    gp_pq_rsrc_close(c, &rs);
    if (rc == GP_OK && absent)
        rc = absent_result(c, call->args[mi], g, present, out);
    free(present);
    for (size_t i = 0; i < nargs; i++)
        gp_pq_val_free(c, &args[i]);
    return rc;
}

/* Maps each sample of the vector argument (or of vector(time()) for the
 * date functions without one) through a value kernel; drops __name__. */
struct value_arg {
    enum gp_pq_func f;
    const struct gp_pq_val *args;
    size_t nargs;
};

static int value_point(void *arg, size_t k, double *x)
{
    const struct value_arg *v = arg;
    double a[3];
    for (size_t j = 0; j < v->nargs; j++)
        a[j] = v->args[j].sc[k];
    if (v->f == GP_PQ_F_CLAMP && a[1] < a[0])
        return 0; /* 2.42 outputs nothing when max < min */
    *x = gp_pq_fn_value(v->f, *x, a, v->nargs);
    return 1;
}

static int call_value(struct gp_pq_ctx *c, const struct gp_pq_call *call,
                      const struct gp_pq_grid *g, struct gp_pq_val *out)
{
    struct gp_pq_val in, args[3];
    size_t nargs = 0;
    memset(args, 0, sizeof args);
    gp_pq_vector_new(out);
    int rc = GP_OK;
    if (call->nargs == 0) { /* vector(time()) */
        gp_pq_vector_new(&in);
        size_t idx;
        rc = gp_pq_val_append(c, &in, g, NULL, 0, &idx);
        for (size_t k = 0; k < g->n && rc == GP_OK; k++)
            rc = gp_pq_val_put(c, &in, idx, k, (double)gp_pq_grid_t(g, k) / 1000.0);
    } else {
        rc = gp_pq_eval(c, call->args[0], g, &in);
    }
    if (rc == GP_OK && call->nargs <= 4)
        rc = eval_scalar_args(c, call, g, 0, args, &nargs);
    struct value_arg va = {call->func, args, nargs};
    if (rc == GP_OK)
        rc = gp_pq_map_points(c, &in, g, 1, value_point, &va, out);
    gp_pq_val_free(c, &in);
    for (size_t j = 0; j < nargs; j++)
        gp_pq_val_free(c, &args[j]);
    return rc;
}

/* Go's Regexp.Expand: $1 or ${1} is RE2 group 1 (sub[1]), $name a
 * (?P<name>) group; groups that are missing or did not take part expand
 * to "". */
static void expand(struct gp_buf *out, const char *tmpl, size_t tlen, const char *src,
                   const struct gp_re2 *re, const regmatch_t *sub)
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
        long g = numeric ? (num <= re->ngroups ? (long)num : -1)
                         : gp_re2_group_named(re, tmpl + ns, ne - ns, 1);
        /* Go takes the first group of that name that took part. */
        while (!numeric && g > 0 && sub[g].rm_so < 0)
            g = gp_re2_group_named(re, tmpl + ns, ne - ns, (size_t)g + 1);
        if (g >= 0 && sub[g].rm_so >= 0)
            gp_buf_append(out, src + sub[g].rm_so, (size_t)(sub[g].rm_eo - sub[g].rm_so));
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
    gp_pq_vector_new(out);
    if (!valid_label_name(dst, dlen))
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                         "invalid destination label name in %s(): %.*s", fname, (int)dlen, dst);
    struct gp_re2 re = {0};
    if (replace) {
        size_t rlen, at;
        const char *rs = str_arg(call, 4, &rlen);
        char why[160];
        int rrc = gp_re2_compile(&re, rs, rlen, 0, why, sizeof why, &at);
        if (rrc == GP_ENOMEM)
            return gp_pq_oom(c);
        if (rrc != GP_OK)
            return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                             "invalid regular expression in label_replace(): %s (at %zu)", why,
                             at);
        /* POSIX has only greedy submatches: with a lazy quantifier a group
         * could capture other text than Prometheus's (re2posix.c). */
        if (re.lazy && re.ngroups > 0) {
            gp_re2_free(&re);
            return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                             "invalid regular expression in label_replace(): lazy quantifiers "
                             "('*?', '+?') with capture groups are not supported; use a negated "
                             "class such as [^:]* instead");
        }
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
    regmatch_t *sub = NULL;
    size_t nsub = 0;
    for (size_t i = 0; i < in.n && rc == GP_OK; i++) {
        const struct gp_pq_ser *s = in.s + i;
        gp_buf_reset(&val);
        int change = 1;
        if (replace) {
            struct gp_str sv = {"", 0};
            char an[256];
            snprintf(an, sizeof an, "%.*s", (int)l3, a3);
            gp_labels_get(s->lab, s->lablen, an, &sv);
            size_t np = re.ngroups + 1;
            if (np > nsub) {
                free(sub);
                if (!(sub = malloc(np * sizeof *sub))) {
                    rc = gp_pq_oom(c);
                    break;
                }
                nsub = np;
            }
            if (!gp_re2_exec(&re, sv.ptr, sv.len, sub, np))
                change = 0;
            else
                expand(&val, a2, l2, sv.ptr, &re, sub);
        } else {
            for (size_t j = 3; j < call->nargs; j++) {
                size_t sl;
                const char *sn = str_arg(call, j, &sl);
                char an[256];
                snprintf(an, sizeof an, "%.*s", (int)sl, sn);
                struct gp_str sv = {"", 0};
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
    free(sub);
    gp_buf_free(&val);
    gp_buf_free(&lab);
    gp_pq_lset_free(&ls);
    gp_re2_free(&re);
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
/* Natural order, as Prometheus 3's sort_by_label compares values
 * (natsort): runs of digits compare as numbers, so "node-2" sorts before
 * "node-10"; everything else byte by byte. */
static int natural_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    while (i < an && j < bn) {
        int da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            size_t si = i, sj = j;
            while (si < an && a[si] == '0')
                si++;
            while (sj < bn && b[sj] == '0')
                sj++;
            size_t ei = si, ej = sj;
            while (ei < an && a[ei] >= '0' && a[ei] <= '9')
                ei++;
            while (ej < bn && b[ej] >= '0' && b[ej] <= '9')
                ej++;
            if (ei - si != ej - sj) /* more significant digits: larger */
                return ei - si < ej - sj ? -1 : 1;
            int c = memcmp(a + si, b + sj, ei - si);
            if (c)
                return c < 0 ? -1 : 1;
            i = ei;
            j = ej;
            continue;
        }
        if (a[i] != b[j])
            return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
        i++;
        j++;
    }
    return (i < an) - (j < bn);
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
        struct gp_str x, y;
        gp_labels_get(a->s->lab, a->s->lablen, name, &x);
        gp_labels_get(b->s->lab, b->s->lablen, name, &y);
        int cmp = natural_cmp(x.ptr, x.len, y.ptr, y.len);
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
    if (out->n)
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
    gp_pq_vector_new(out);
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
        struct gp_str v;
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
            rc = gp_pq_val_append(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len, &idx);
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

static int keep_point(void *arg, size_t k, double *x)
{
    (void)arg;
    (void)k;
    (void)x;
    return 1;
}

static int step_time(void *arg, size_t k, double *x)
{
    *x = (double)gp_pq_grid_t(arg, k) / 1000.0;
    return 1;
}

int gp_pq_eval_call(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                     struct gp_pq_val *out)
{
    const struct gp_pq_call *call = &e->u.call;
    int rc;
    switch (call->func) {
    case GP_PQ_F_TIME:
    case GP_PQ_F_PI:
        if ((rc = gp_pq_scalar_new(c, out, g)) != GP_OK)
            return rc;
        for (size_t k = 0; k < g->n; k++)
            out->sc[k] = call->func == GP_PQ_F_PI ? M_PI : (double)gp_pq_grid_t(g, k) / 1000.0;
        return GP_OK;
    case GP_PQ_F_VECTOR: {
        struct gp_pq_val a;
        if ((rc = gp_pq_eval(c, call->args[0], g, &a)) != GP_OK)
            return rc;
        gp_pq_vector_new(out);
        size_t idx;
        rc = gp_pq_val_append(c, out, g, NULL, 0, &idx);
        for (size_t k = 0; k < g->n && rc == GP_OK; k++)
            rc = gp_pq_val_put(c, out, idx, k, a.sc[k]);
        gp_pq_val_free(c, &a);
        return rc;
    }
    case GP_PQ_F_SCALAR: {
        struct gp_pq_val a;
        if ((rc = gp_pq_eval(c, call->args[0], g, &a)) != GP_OK)
            return rc;
        if ((rc = gp_pq_scalar_new(c, out, g)) == GP_OK) {
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
        /* Of a selector: the sample's own time (the selector reads it so);
         * else the step's. */
        int sel = a->kind == GP_PQ_VECTOR_SEL;
        rc = sel ? gp_pq_eval_vsel(c, &a->u.sel, g, 1, &in) : gp_pq_eval(c, a, g, &in);
        if (rc == GP_OK)
            rc = gp_pq_map_points(c, &in, g, 1, sel ? keep_point : step_time, (void *)g, out);
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
        gp_pq_vector_new(out);
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
