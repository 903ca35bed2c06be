/*
 * promql_cse.c - subexpressions written more than once in a query are
 * evaluated once.
 *
 * Alerting rules repeat themselves by design: the hysteresis form
 *     avg_over_time(X[15m]) > 0.95
 *       or (avg_over_time(X[15m]) > 0.90 and on (...) ALERTS{...})
 * reads and averages X twice. Before evaluation, the calls,
 * aggregations, selectors and binary expressions of a query are written
 * back as text (gp_promql_format, the canonical form); those whose text
 * appears more than once share one cache slot. The first evaluation of
 * such a node keeps a copy of its value (counted against max_samples like
 * any value held); later ones on the same grid take a copy of that.
 * Evaluation is a pure function of the node's text and grid within one
 * query (@ start()/end() are the query's), so the answer is unchanged.
 *
 * A range function's selector and an instant selector of the same series
 * (the API's agg form: avg_over_time(X[1m]) or X * 1) are twins: the
 * range function's read computes the instant selector's value from the
 * same samples (gp_pq_rsrc_open) and keeps it in the instant selector's
 * slot, so X is read once.
 *
 * Only short queries are scanned (the text of every subtree is built,
 * which costs the query's length times its depth), and at most
 * CSE_MAX_NODES nodes: rules and dashboard queries, not generated
 * megabyte expressions.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "query/promql_fn.h"

#include <stdlib.h>
#include <string.h>

#define CSE_MAX_TEXT 4096
#define CSE_MAX_NODES 256
#define CSE_MAX_TWINS 16

struct gp_pq_cse {
    const struct gp_pq_node *node[CSE_MAX_NODES];
    size_t canon[CSE_MAX_NODES]; /* the first node with the same text */
    size_t n;
    struct gp_pq_val val[CSE_MAX_NODES]; /* by canon */
    struct gp_pq_grid g[CSE_MAX_NODES];
    uint8_t have[CSE_MAX_NODES];
    /* twins: range selector, the slot of its instant selector */
    const struct gp_pq_node *twin_m[CSE_MAX_TWINS];
    const struct gp_pq_sel *twin_v[CSE_MAX_TWINS];
    size_t twin_slot[CSE_MAX_TWINS], ntwin;
};

static int eligible(const struct gp_pq_node *e)
{
    return e->kind == GP_PQ_CALL || e->kind == GP_PQ_AGG || e->kind == GP_PQ_VECTOR_SEL ||
           e->kind == GP_PQ_BINARY;
}

struct scan {
    const struct gp_pq_node *node[CSE_MAX_NODES];
    size_t off[CSE_MAX_NODES], len[CSE_MAX_NODES];
    size_t n;
    struct gp_buf text;
};

static void walk(struct scan *s, const struct gp_pq_node *e)
{
    if (!e)
        return;
    if (eligible(e) && s->n < CSE_MAX_NODES) {
        size_t off = s->text.len;
        gp_promql_format(e, &s->text);
        s->node[s->n] = e;
        s->off[s->n] = off;
        s->len[s->n] = s->text.len - off;
        s->n++;
    }
    switch (e->kind) {
    case GP_PQ_SUBQUERY: walk(s, e->u.sub.expr); break;
    case GP_PQ_CALL:
        for (size_t i = 0; i < e->u.call.nargs; i++)
            walk(s, e->u.call.args[i]);
        break;
    case GP_PQ_AGG:
        walk(s, e->u.agg.param);
        walk(s, e->u.agg.expr);
        break;
    case GP_PQ_BINARY:
        walk(s, e->u.bin.lhs);
        walk(s, e->u.bin.rhs);
        break;
    case GP_PQ_UNARY: walk(s, e->u.unary.expr); break;
    case GP_PQ_PAREN: walk(s, e->u.paren); break;
    default: break;
    }
}

/* The range selector a call of a range function reads, else NULL. */
static const struct gp_pq_node *range_arg(const struct gp_pq_node *e)
{
    if (e->kind != GP_PQ_CALL)
        return NULL;
    const struct gp_pq_call *call = &e->u.call;
    if (!gp_pq_fn_is_range_kernel(call->func) && call->func != GP_PQ_F_ABSENT_OVER_TIME)
        return NULL;
    for (size_t i = 0; i < call->nargs; i++) {
        const struct gp_pq_node *a = gp_pq_unparen(call->args[i]);
        if (a->kind == GP_PQ_MATRIX_SEL)
            return a;
    }
    return NULL;
}

/* timestamp() reads its selector itself (the samples' times), never
 * through the cache: a twin there would be computed for nothing. */
static int under_timestamp(const struct scan *s, const struct gp_pq_node *v)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct gp_pq_node *e = s->node[i];
        if (e->kind == GP_PQ_CALL && e->u.call.func == GP_PQ_F_TIMESTAMP && e->u.call.nargs == 1 &&
            gp_pq_unparen(e->u.call.args[0]) == v)
            return 1;
    }
    return 0;
}

/* Pairs each range function's selector with an instant selector of the
 * same text but for the range; x may be NULL (created when needed). */
static struct gp_pq_cse *find_twins(struct scan *s, struct gp_pq_cse *x)
{
    struct gp_buf t;
    gp_buf_init(&t, 0);
    for (size_t i = 0; i < s->n; i++) {
        const struct gp_pq_node *m = range_arg(s->node[i]);
        if (!m || (x && x->ntwin == CSE_MAX_TWINS))
            continue;
        struct gp_pq_node inst = *m;
        inst.kind = GP_PQ_VECTOR_SEL;
        inst.type = GP_PQ_T_VECTOR;
        inst.u.sel.range_ms = 0;
        t.len = 0;
        gp_promql_format(&inst, &t);
        if (t.err)
            break;
        for (size_t j = 0; j < s->n; j++) {
            if (s->node[j]->kind != GP_PQ_VECTOR_SEL || s->len[j] != t.len ||
                memcmp(s->text.data + s->off[j], t.data, t.len) != 0 ||
                under_timestamp(s, s->node[j]))
                continue;
            if (!x && !(x = calloc(1, sizeof *x)))
                goto out;
            size_t q = 0;
            while (q < x->n && x->node[q] != s->node[j])
                q++;
            if (q == x->n) { /* not repeated: a slot of its own */
                x->node[x->n] = s->node[j];
                x->canon[x->n++] = j;
            }
            x->twin_m[x->ntwin] = m;
            x->twin_v[x->ntwin] = &s->node[j]->u.sel;
            x->twin_slot[x->ntwin++] = x->canon[q];
            break;
        }
    }
out:
    gp_buf_free(&t);
    return x;
}

void gp_pq_cse_scan(struct gp_pq_ctx *c, const struct gp_pq_node *root)
{
    struct gp_buf whole;
    gp_buf_init(&whole, CSE_MAX_TEXT);
    gp_promql_format(root, &whole);
    int small = !whole.err;
    gp_buf_free(&whole);
    if (!small)
        return; /* long or unformattable: evaluate as written */
    struct scan *s = calloc(1, sizeof *s);
    if (!s)
        return; /* the cache is an optimisation: without it, no harm */
    gp_buf_init(&s->text, 0);
    walk(s, root);
    struct gp_pq_cse *x = NULL;
    for (size_t i = 0; i < s->n && !s->text.err; i++) {
        for (size_t j = 0; j < i; j++) {
            if (s->len[j] != s->len[i] ||
                memcmp(s->text.data + s->off[j], s->text.data + s->off[i], s->len[i]) != 0)
                continue;
            if (!x && !(x = calloc(1, sizeof *x)))
                goto out;
            /* Both nodes join the cache under j's canon. */
            size_t canon = j;
            for (size_t q = 0; q < x->n; q++)
                if (x->node[q] == s->node[j])
                    canon = x->canon[q];
            int listed = 0;
            for (size_t q = 0; q < x->n; q++)
                listed |= x->node[q] == s->node[j];
            if (!listed) {
                x->node[x->n] = s->node[j];
                x->canon[x->n++] = canon;
            }
            x->node[x->n] = s->node[i];
            x->canon[x->n++] = canon;
            break;
        }
    }
    if (!s->text.err)
        x = find_twins(s, x);
out:
    gp_buf_free(&s->text);
    free(s);
    c->cse = x;
}

int gp_pq_cse_get(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                  struct gp_pq_val *out, size_t *slot)
{
    struct gp_pq_cse *x = c->cse;
    *slot = (size_t)-1;
    for (size_t i = 0; x && i < x->n; i++) {
        if (x->node[i] != e)
            continue;
        size_t k = x->canon[i];
        *slot = k;
        if (x->have[k] && x->g[k].start == g->start && x->g[k].step == g->step &&
            x->g[k].n == g->n) {
            int rc = gp_pq_val_copy(c, &x->val[k], g, out);
            return rc == GP_OK ? 1 : rc;
        }
        return 0;
    }
    return 0;
}

void gp_pq_cse_put(struct gp_pq_ctx *c, size_t slot, const struct gp_pq_val *v,
                   const struct gp_pq_grid *g)
{
    struct gp_pq_cse *x = c->cse;
    if (!x || slot >= CSE_MAX_NODES)
        return;
    if (x->have[slot]) /* another grid (inside a subquery): keep the first */
        return;
    if (gp_pq_val_copy(c, v, g, &x->val[slot]) != GP_OK) {
        gp_pq_val_free(c, &x->val[slot]);
        if (c->err && c->errlen)
            c->err[0] = '\0'; /* no room to cache is not an error of the query */
        return;
    }
    x->g[slot] = *g;
    x->have[slot] = 1;
}

void gp_pq_cse_free(struct gp_pq_ctx *c)
{
    struct gp_pq_cse *x = c->cse;
    if (!x)
        return;
    for (size_t i = 0; i < CSE_MAX_NODES; i++)
        if (x->have[i])
            gp_pq_val_free(c, &x->val[i]);
    free(x);
    c->cse = NULL;
}

size_t gp_pq_cse_twin(const struct gp_pq_ctx *c, const struct gp_pq_node *m,
                      const struct gp_pq_sel **vsel)
{
    const struct gp_pq_cse *x = c->cse;
    m = gp_pq_unparen(m);
    for (size_t i = 0; x && i < x->ntwin; i++) {
        if (x->twin_m[i] != m || x->have[x->twin_slot[i]])
            continue;
        *vsel = x->twin_v[i];
        return x->twin_slot[i];
    }
    return (size_t)-1;
}

void gp_pq_cse_keep(struct gp_pq_ctx *c, size_t slot, struct gp_pq_val *v,
                    const struct gp_pq_grid *g)
{
    struct gp_pq_cse *x = c->cse;
    if (!x || slot >= CSE_MAX_NODES || x->have[slot]) {
        gp_pq_val_free(c, v);
        return;
    }
    x->val[slot] = *v;
    memset(v, 0, sizeof *v);
    x->g[slot] = *g;
    x->have[slot] = 1;
}
