/*
 * promql_testlib.h - a store of small hand-written series for the PromQL
 * evaluator's tests, syntax trees built by hand (so the evaluator is
 * tested apart from the parser), and results printed as one line to
 * compare with what Prometheus 2.42 answers.
 *
 * Static functions in a header included by one test file, as
 * store_testlib.h does. Trees are freed with gp_promql_free, as the
 * parser's are.
 */
#ifndef GP_TESTS_PROMQL_TESTLIB_H
#define GP_TESTS_PROMQL_TESTLIB_H

#include "lib/bits.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "query/promql.h"
#include "query/promql_int.h"
#include "storage/storage.h"
#include "store/matcher.h"
#include "store/store.h"
#include "test.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hour-aligned; the store's clock stands six hours later. */
#define T0 1699999200000LL
#define MIN 60000LL
#define STALE gp_bits_f64(GP_STALE_NAN_BITS)

static int64_t pt_clock(void)
{
    return T0 + 6 * 3600 * 1000LL;
}

/* A store in the test's directory, or in its subdirectory sub. */
static struct gp_storage *pt_open_in(const char *sub)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s%s%s", gp_test_tmpdir(), sub ? "/" : "", sub ? sub : "");
    struct gp_store_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.no_sync = 1;
    o.no_background = 1;
    o.max_future_ms = -1;
    o.clock_ms = pt_clock;
    struct gp_storage *s = NULL;
    char err[256] = "";
    if (gp_storage_open(&s, &(struct gp_storage_options){.store = o}, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "storage open: %s", err);
    return s;
}

static struct gp_storage *pt_open(void)
{
    return pt_open_in(NULL);
}

static int pt_label_cmp(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (int)x->name.len - (int)y->name.len;
}

/* Writes the series named by sel (name{l="v",...}) with samples at
 * t[i], v[i]. */
static void pt_add(struct gp_storage *s, const char *sel, size_t n, const int64_t *t,
                   const double *v)
{
    struct gp_matcher *m = NULL;
    size_t nm = 0;
    char err[256] = "";
    if (gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "selector %s: %s", sel, err);
    struct gp_label l[16];
    CHECK(nm <= 16);
    for (size_t i = 0; i < nm; i++)
        l[i] = (struct gp_label){{m[i].name, strlen(m[i].name)}, {m[i].value, m[i].value_len}};
    qsort(l, nm, sizeof *l, pt_label_cmp);
    struct gp_sample *smp = calloc(n, sizeof *smp);
    CHECK(smp);
    for (size_t i = 0; i < n; i++)
        smp[i] = (struct gp_sample){v[i], t[i]};
    struct gp_series ser = {l, nm, smp, n};
    struct gp_batch req = {&ser, 1, nm, n, NULL};
    struct gp_append_result res;
    memset(&res, 0, sizeof res);
    if (gp_storage_append(s, &req, &res, err, sizeof err) != GP_OK || res.accepted != n)
        gp_test_fail(__FILE__, __LINE__, "append %s: %s (%llu accepted)", sel, err,
                     (unsigned long long)res.accepted);
    free(smp);
    gp_matchers_free(m, nm);
}

/* n samples every step from t0 with values v0, v0 + dv, ... */
static void pt_line(struct gp_storage *s, const char *sel, int64_t t0, int64_t step, size_t n,
                    double v0, double dv)
{
    int64_t *t = calloc(n, sizeof *t);
    double *v = calloc(n, sizeof *v);
    CHECK(t && v);
    for (size_t i = 0; i < n; i++) {
        t[i] = t0 + (int64_t)i * step;
        v[i] = v0 + dv * (double)i;
    }
    pt_add(s, sel, n, t, v);
    free(t);
    free(v);
}

/* ---- trees ---- */

static struct gp_pq_node *pt_node(enum gp_pq_kind k, enum gp_pq_type t)
{
    struct gp_pq_node *e = calloc(1, sizeof *e);
    CHECK(e);
    e->kind = k;
    e->type = t;
    return e;
}

static struct gp_pq_node *N(double v)
{
    struct gp_pq_node *e = pt_node(GP_PQ_NUMBER, GP_PQ_T_SCALAR);
    e->u.number = v;
    return e;
}

static struct gp_pq_node *S(const char *s)
{
    struct gp_pq_node *e = pt_node(GP_PQ_STRING, GP_PQ_T_STRING);
    e->u.string.s = strdup(s);
    e->u.string.len = strlen(s);
    return e;
}

static struct gp_pq_node *V(const char *sel)
{
    struct gp_pq_node *e = pt_node(GP_PQ_VECTOR_SEL, GP_PQ_T_VECTOR);
    char err[256] = "";
    if (gp_selector_parse(sel, strlen(sel), &e->u.sel.m, &e->u.sel.nm, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "selector %s: %s", sel, err);
    return e;
}

static struct gp_pq_node *M(const char *sel, int64_t range)
{
    struct gp_pq_node *e = V(sel);
    e->kind = GP_PQ_MATRIX_SEL;
    e->type = GP_PQ_T_MATRIX;
    e->u.sel.range_ms = range;
    return e;
}

static struct gp_pq_node *OFFSET(struct gp_pq_node *e, int64_t off)
{
    if (e->kind == GP_PQ_SUBQUERY)
        e->u.sub.offset_ms = off;
    else
        e->u.sel.offset_ms = off;
    return e;
}

static struct gp_pq_node *AT(struct gp_pq_node *e, enum gp_pq_at at, int64_t t)
{
    if (e->kind == GP_PQ_SUBQUERY) {
        e->u.sub.at = at;
        e->u.sub.at_ms = t;
    } else {
        e->u.sel.at = at;
        e->u.sel.at_ms = t;
    }
    return e;
}

static struct gp_pq_node *SUB(struct gp_pq_node *x, int64_t range, int64_t step)
{
    struct gp_pq_node *e = pt_node(GP_PQ_SUBQUERY, GP_PQ_T_MATRIX);
    e->u.sub.expr = x;
    e->u.sub.range_ms = range;
    e->u.sub.step_ms = step;
    return e;
}

/* "a,b" into a label list. */
static void pt_names(struct gp_pq_labels *l, const char *csv)
{
    memset(l, 0, sizeof *l);
    if (!csv)
        return;
    l->names = calloc(16, sizeof *l->names);
    CHECK(l->names);
    char *dup = strdup(csv), *save = NULL;
    for (char *p = strtok_r(dup, ",", &save); p; p = strtok_r(NULL, ",", &save))
        l->names[l->n++] = strdup(p);
    free(dup);
}

static struct gp_pq_node *B(enum gp_pq_binop op, struct gp_pq_node *l, struct gp_pq_node *r)
{
    int vec = l->type == GP_PQ_T_VECTOR || r->type == GP_PQ_T_VECTOR;
    struct gp_pq_node *e = pt_node(GP_PQ_BINARY, vec ? GP_PQ_T_VECTOR : GP_PQ_T_SCALAR);
    e->u.bin.op = op;
    e->u.bin.lhs = l;
    e->u.bin.rhs = r;
    if (op == GP_PQ_OP_AND || op == GP_PQ_OP_OR || op == GP_PQ_OP_UNLESS)
        e->u.bin.card = GP_PQ_CARD_MANY_TO_MANY;
    return e;
}

static struct gp_pq_node *BOOL(struct gp_pq_node *e)
{
    e->u.bin.return_bool = 1;
    return e;
}

/* Vector matching: on (1) or ignoring (0) the labels in csv, with card
 * and group_x's labels. */
static struct gp_pq_node *MATCH(struct gp_pq_node *e, int on, const char *csv,
                                enum gp_pq_card card, const char *include)
{
    e->u.bin.on = on;
    pt_names(&e->u.bin.matching, csv);
    if (card != GP_PQ_CARD_ONE_TO_ONE || e->u.bin.card != GP_PQ_CARD_MANY_TO_MANY)
        e->u.bin.card = card;
    pt_names(&e->u.bin.include, include);
    return e;
}

static struct gp_pq_node *A(enum gp_pq_aggop op, struct gp_pq_node *x, struct gp_pq_node *param,
                            int without, const char *csv)
{
    struct gp_pq_node *e = pt_node(GP_PQ_AGG, GP_PQ_T_VECTOR);
    e->u.agg.op = op;
    e->u.agg.expr = x;
    e->u.agg.param = param;
    e->u.agg.without = without;
    pt_names(&e->u.agg.grouping, csv);
    return e;
}

static struct gp_pq_node *F(enum gp_pq_func f, size_t n, ...)
{
    enum gp_pq_type t = f == GP_PQ_F_TIME || f == GP_PQ_F_PI || f == GP_PQ_F_SCALAR
                            ? GP_PQ_T_SCALAR
                            : GP_PQ_T_VECTOR;
    struct gp_pq_node *e = pt_node(GP_PQ_CALL, t);
    e->u.call.func = f;
    e->u.call.nargs = n;
    e->u.call.args = calloc(n ? n : 1, sizeof *e->u.call.args);
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        e->u.call.args[i] = va_arg(ap, struct gp_pq_node *);
    va_end(ap);
    return e;
}

static struct gp_pq_node *NEG(struct gp_pq_node *x)
{
    struct gp_pq_node *e = pt_node(GP_PQ_UNARY, x->type);
    e->u.unary.negate = 1;
    e->u.unary.expr = x;
    return e;
}

/* ---- results as text ---- */

/* A result as one line: vectors "{l="v"} 1; {..} 2", matrices
 * "{..} 1@60 2@120; ..." (times in seconds after T0), scalars "s 1". */
static const char *pt_str(const struct gp_promql_result *r)
{
    static char out[8192];
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (r->type == GP_PROMQL_SCALAR) {
        gp_buf_puts(&b, "s ");
        gp_buf_put_double(&b, r->scalar);
    } else if (r->type == GP_PROMQL_STRING) {
        gp_buf_printf(&b, "str %s", r->string);
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct gp_promql_series *s = r->series + i;
        if (i)
            gp_buf_puts(&b, "; ");
        gp_pq_labels_str(s->labels, s->labels_len, &b);
        for (size_t k = 0; k < s->n; k++) {
            gp_buf_putc(&b, ' ');
            gp_buf_put_double(&b, s->v[k]);
            if (r->type == GP_PROMQL_MATRIX)
                gp_buf_printf(&b, "@%lld", (long long)((s->t[k] - T0) / 1000));
        }
    }
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    gp_buf_free(&b);
    return out;
}

/* Instant (step 0) or range query of e (freed): its text, or "error: ...". */
static const char *pt_query(struct gp_storage *s, struct gp_pq_node *e, int64_t start, int64_t end,
                            int64_t step, const struct gp_promql_limits *lim)
{
    static char out[8300];
    struct gp_promql_result r;
    char err[512] = "";
    int rc = step ? gp_promql_range(s, e, start, end, step, lim, &r, err, sizeof err)
                  : gp_promql_instant(s, e, start, lim, &r, err, sizeof err);
    if (rc != GP_OK)
        snprintf(out, sizeof out, "error: %s", err);
    else
        snprintf(out, sizeof out, "%s", pt_str(&r));
    gp_promql_result_free(&r);
    gp_promql_free(e);
    return out;
}

static const char *pt_inst_lim(struct gp_storage *s, struct gp_pq_node *e, int64_t t,
                               const struct gp_promql_limits *lim)
{
    return pt_query(s, e, t, t, 0, lim);
}

static const char *pt_inst(struct gp_storage *s, struct gp_pq_node *e, int64_t t)
{
    return pt_query(s, e, t, t, 0, NULL);
}

static const char *pt_range(struct gp_storage *s, struct gp_pq_node *e, int64_t start, int64_t end,
                            int64_t step)
{
    return pt_query(s, e, start, end, step, NULL);
}

#endif
