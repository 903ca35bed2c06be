/*
 * promql_binop.c - binary operators: scalar/scalar, vector/scalar and
 * vector/vector with Prometheus 2.42's vector matching (on, ignoring,
 * group_left/right and their included labels), comparison filtering and
 * bool, the set operators and, or, unless, and the __name__ rules
 * (+ - * / % ^ and bool comparisons drop it; atan2, filtering
 * comparisons and set operators keep it).
 *
 * Matching works on signatures: every series' matching labels are
 * mapped to a small integer once, so each step is a pass over arrays
 * indexed by signature, with a step stamp instead of clearing them.
 * Each many-side series caches the output series of its last partner,
 * so result labels are built once per pairing, not per step.
 */
#include "query/promql_int.h"

#include "lib/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_cmp(enum gp_pq_binop op)
{
    return op >= GP_PQ_OP_EQL && op <= GP_PQ_OP_LTE;
}

/* 2.42's shouldDropMetricName: atan2 keeps the name. */
static int drops_name(enum gp_pq_binop op)
{
    return op == GP_PQ_OP_ADD || op == GP_PQ_OP_SUB || op == GP_PQ_OP_MUL || op == GP_PQ_OP_DIV ||
           op == GP_PQ_OP_MOD || op == GP_PQ_OP_POW;
}

static int is_set(enum gp_pq_binop op)
{
    return op == GP_PQ_OP_AND || op == GP_PQ_OP_OR || op == GP_PQ_OP_UNLESS;
}

/* l op r; comparisons give l and whether it is kept. */
static double binop(enum gp_pq_binop op, double l, double r, int *keep)
{
    *keep = 1;
    switch (op) {
    case GP_PQ_OP_ADD: return l + r;
    case GP_PQ_OP_SUB: return l - r;
    case GP_PQ_OP_MUL: return l * r;
    case GP_PQ_OP_DIV: return l / r;
    case GP_PQ_OP_MOD: return fmod(l, r);
    case GP_PQ_OP_POW: return pow(l, r);
    case GP_PQ_OP_ATAN2: return atan2(l, r);
    case GP_PQ_OP_EQL: *keep = l == r; return l;
    case GP_PQ_OP_NEQ: *keep = l != r; return l;
    case GP_PQ_OP_GTR: *keep = l > r; return l;
    case GP_PQ_OP_LSS: *keep = l < r; return l;
    case GP_PQ_OP_GTE: *keep = l >= r; return l;
    case GP_PQ_OP_LTE: *keep = l <= r; return l;
    default: return NAN;
    }
}

static int scalar_scalar(struct gp_pq_ctx *c, const struct gp_pq_binary *b,
                         const struct gp_pq_grid *g, struct gp_pq_val *l, struct gp_pq_val *r,
                         struct gp_pq_val *out)
{
    (void)c;
    for (size_t k = 0; k < g->n; k++) {
        int keep;
        double x = binop(b->op, l->sc[k], r->sc[k], &keep);
        l->sc[k] = is_cmp(b->op) ? (double)keep : x;
    }
    *out = *l;
    memset(l, 0, sizeof *l);
    return GP_OK;
}

struct vs_arg {
    const struct gp_pq_binary *b;
    const double *sc;
    int scalar_left;
};

static int vs_point(void *arg, size_t k, double *x)
{
    const struct vs_arg *a = arg;
    int keep;
    double v = *x, r = a->scalar_left ? binop(a->b->op, a->sc[k], v, &keep)
                                      : binop(a->b->op, v, a->sc[k], &keep);
    if (!is_cmp(a->b->op))
        *x = r;
    else if (a->b->return_bool)
        *x = keep;
    else
        return keep; /* the vector's value, whichever side it is on */
    return 1;
}

static int vector_scalar(struct gp_pq_ctx *c, const struct gp_pq_binary *b,
                         const struct gp_pq_grid *g, const struct gp_pq_val *vec,
                         const double *sc, int scalar_left, struct gp_pq_val *out)
{
    struct vs_arg a = {b, sc, scalar_left};
    return gp_pq_map_points(c, vec, g, drops_name(b->op) || b->return_bool, vs_point, &a, out);
}

/* Signature ids of both sides' series: sig[i] for lhs then rhs. */
static int signatures(struct gp_pq_ctx *c, const struct gp_pq_binary *b,
                      const struct gp_pq_val *l, const struct gp_pq_val *r, size_t *sig,
                      size_t *nsig)
{
    struct gp_pq_map m = {0};
    size_t n = 0;
    for (size_t i = 0; i < l->n + r->n; i++) {
        const struct gp_pq_ser *s = i < l->n ? l->s + i : r->s + (i - l->n);
        gp_pq_labels_key(s->lab, s->lablen, &b->matching, b->on, &c->tmp);
        if (c->tmp.err || gp_pq_map_get(&m, c->tmp.data, c->tmp.len, n, &sig[i], NULL) != GP_OK) {
            gp_pq_map_free(&m);
            return gp_pq_oom(c);
        }
        if (sig[i] == n)
            n++;
    }
    gp_pq_map_free(&m);
    *nsig = n;
    return GP_OK;
}

static int set_op(struct gp_pq_ctx *c, const struct gp_pq_binary *b, const struct gp_pq_grid *g,
                  const struct gp_pq_val *l, const struct gp_pq_val *r, const size_t *sig,
                  size_t nsig, struct gp_pq_val *out)
{
    size_t *stamp = malloc((nsig ? nsig : 1) * sizeof *stamp);
    size_t *lidx = malloc((l->n + r->n + 1) * sizeof *lidx);
    if (!stamp || !lidx) {
        free(stamp);
        free(lidx);
        return gp_pq_oom(c);
    }
    for (size_t i = 0; i < nsig; i++)
        stamp[i] = (size_t)-1;
    for (size_t i = 0; i < l->n + r->n; i++)
        lidx[i] = (size_t)-1;
    int rc = GP_OK;
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        /* Mark the signatures of the side that filters the other. */
        const struct gp_pq_val *mark = b->op == GP_PQ_OP_OR ? l : r;
        size_t base = b->op == GP_PQ_OP_OR ? 0 : l->n;
        for (size_t i = 0; i < mark->n; i++)
            if (mark->s[i].has[k])
                stamp[sig[base + i]] = k;
        for (size_t i = 0; i < l->n + r->n && rc == GP_OK; i++) {
            int left = i < l->n;
            const struct gp_pq_ser *s = left ? l->s + i : r->s + (i - l->n);
            if (!s->has[k])
                continue;
            int marked = stamp[sig[i]] == k;
            int emit;
            switch (b->op) {
            case GP_PQ_OP_AND: emit = left && marked; break;
            case GP_PQ_OP_UNLESS: emit = left && !marked; break;
            default: emit = left || !marked; break; /* or */
            }
            if (!emit)
                continue;
            if (lidx[i] == (size_t)-1 &&
                (rc = gp_pq_val_series(c, out, g, s->lab, s->lablen, &lidx[i])) != GP_OK)
                break;
            rc = gp_pq_val_put(c, out, lidx[i], k, s->v[k]);
        }
    }
    free(stamp);
    free(lidx);
    return rc;
}

/* The result labels of a match (2.42's resultMetric) into c->tmp. */
static int result_labels(struct gp_pq_ctx *c, const struct gp_pq_binary *b,
                         const struct gp_pq_ser *many, const struct gp_pq_ser *one)
{
    struct gp_pq_lset ls = {0};
    int rc = gp_pq_lset_decode(&ls, many->lab, many->lablen);
    if (rc == GP_OK && (drops_name(b->op) || b->return_bool))
        gp_pq_lset_del(&ls, "__name__");
    if (rc == GP_OK && b->card == GP_PQ_CARD_ONE_TO_ONE) {
        if (b->on)
            gp_pq_lset_filter(&ls, &b->matching, 1);
        else
            for (size_t i = 0; i < b->matching.n; i++)
                gp_pq_lset_del(&ls, b->matching.names[i]);
    }
    struct gp_pq_lset ones = {0};
    if (rc == GP_OK && b->include.n)
        rc = gp_pq_lset_decode(&ones, one->lab, one->lablen);
    for (size_t i = 0; rc == GP_OK && i < b->include.n; i++) {
        const char *name = b->include.names[i];
        size_t nl = strlen(name);
        const char *v = "";
        size_t vl = 0;
        for (size_t j = 0; j < ones.n; j++)
            if (ones.l[j].name.len == nl && !memcmp(ones.l[j].name.ptr, name, nl)) {
                v = ones.l[j].value.ptr;
                vl = ones.l[j].value.len;
            }
        rc = gp_pq_lset_set(&ls, name, nl, v, vl);
    }
    if (rc == GP_OK)
        gp_pq_lset_encode(&ls, &c->tmp);
    gp_pq_lset_free(&ls);
    gp_pq_lset_free(&ones);
    return rc == GP_OK && !c->tmp.err ? GP_OK : gp_pq_oom(c);
}

static int dup_error(struct gp_pq_ctx *c, const struct gp_pq_binary *b, const struct gp_pq_ser *s,
                     const struct gp_pq_ser *prev)
{
    struct gp_buf m = {0};
    gp_pq_labels_key(s->lab, s->lablen, &b->matching, b->on, &c->tmp);
    gp_pq_labels_str((const uint8_t *)c->tmp.data, c->tmp.len, &m);
    gp_buf_printf(&m, " on the %s hand-side of the operation: [",
                  b->card == GP_PQ_CARD_ONE_TO_MANY ? "left" : "right");
    gp_pq_labels_str(s->lab, s->lablen, &m);
    gp_buf_puts(&m, ", ");
    gp_pq_labels_str(prev->lab, prev->lablen, &m);
    gp_buf_putc(&m, ']');
    int rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                       "found duplicate series for the match group %s;many-to-many matching not "
                       "allowed: matching labels must be unique on one side",
                       m.err ? "" : m.data);
    gp_buf_free(&m);
    return rc;
}

static int vector_vector(struct gp_pq_ctx *c, const struct gp_pq_binary *b,
                         const struct gp_pq_grid *g, const struct gp_pq_val *l,
                         const struct gp_pq_val *r, const size_t *sig, size_t nsig,
                         struct gp_pq_val *out)
{
    int swap = b->card == GP_PQ_CARD_ONE_TO_MANY;
    const struct gp_pq_val *many = swap ? r : l, *one = swap ? l : r;
    const size_t *msig = swap ? sig + l->n : sig, *osig = swap ? sig : sig + l->n;
    size_t *ostamp = malloc((nsig ? nsig : 1) * sizeof *ostamp);
    size_t *opart = malloc((nsig ? nsig : 1) * sizeof *opart);
    size_t *mstamp = malloc((nsig ? nsig : 1) * sizeof *mstamp);
    size_t *cpart = malloc((many->n ? many->n : 1) * sizeof *cpart);
    size_t *cout = malloc((many->n ? many->n : 1) * sizeof *cout);
    int rc = GP_OK;
    if (!ostamp || !opart || !mstamp || !cpart || !cout)
        rc = gp_pq_oom(c);
    for (size_t i = 0; rc == GP_OK && i < nsig; i++)
        ostamp[i] = mstamp[i] = (size_t)-1;
    for (size_t i = 0; rc == GP_OK && i < many->n; i++)
        cpart[i] = (size_t)-1;
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        int lany = 0, rany = 0;
        for (size_t i = 0; i < l->n && !lany; i++)
            lany = l->s[i].has[k];
        for (size_t i = 0; i < r->n && !rany; i++)
            rany = r->s[i].has[k];
        if (!lany || !rany) /* nothing can match at this step */
            continue;
        for (size_t i = 0; i < one->n && rc == GP_OK; i++) {
            if (!one->s[i].has[k])
                continue;
            size_t q = osig[i];
            if (ostamp[q] == k)
                rc = dup_error(c, b, one->s + i, one->s + opart[q]);
            ostamp[q] = k;
            opart[q] = i;
        }
        for (size_t i = 0; i < many->n && rc == GP_OK; i++) {
            const struct gp_pq_ser *ms = many->s + i;
            size_t q = msig[i];
            if (!ms->has[k] || ostamp[q] != k)
                continue;
            size_t j = opart[q];
            double vl = swap ? one->s[j].v[k] : ms->v[k], vr = swap ? ms->v[k] : one->s[j].v[k];
            int keep;
            double x = binop(b->op, vl, vr, &keep);
            if (is_cmp(b->op)) {
                if (b->return_bool)
                    x = keep;
                else if (!keep)
                    continue;
            }
            if (b->card == GP_PQ_CARD_ONE_TO_ONE) {
                if (mstamp[q] == k) {
                    rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                                   "multiple matches for labels: many-to-one matching must be "
                                   "explicit (group_left/group_right)");
                    break;
                }
                mstamp[q] = k;
            }
            if (cpart[i] != j) {
                if ((rc = result_labels(c, b, ms, one->s + j)) != GP_OK ||
                    (rc = gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len,
                                           &cout[i])) != GP_OK)
                    break;
                cpart[i] = j;
            }
            if (out->s[cout[i]].has[k]) {
                rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                               "multiple matches for labels: grouping labels must ensure unique "
                               "matches");
                break;
            }
            rc = gp_pq_val_put(c, out, cout[i], k, x);
        }
    }
    free(ostamp);
    free(opart);
    free(mstamp);
    free(cpart);
    free(cout);
    return rc;
}

int gp_pq_eval_binary(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                      struct gp_pq_val *out)
{
    const struct gp_pq_binary *b = &e->u.bin;
    struct gp_pq_val l, r;
    int rc = gp_pq_eval(c, b->lhs, g, &l);
    if (rc != GP_OK)
        return rc;
    if ((rc = gp_pq_eval(c, b->rhs, g, &r)) != GP_OK) {
        gp_pq_val_free(c, &l);
        return rc;
    }
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_VECTOR;
    if (l.type == GP_PQ_T_SCALAR && r.type == GP_PQ_T_SCALAR) {
        rc = scalar_scalar(c, b, g, &l, &r, out);
    } else if (l.type == GP_PQ_T_SCALAR || r.type == GP_PQ_T_SCALAR) {
        int sl = l.type == GP_PQ_T_SCALAR;
        if (is_set(b->op))
            rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                           "set operator not allowed in binary scalar expression");
        else
            rc = vector_scalar(c, b, g, sl ? &r : &l, sl ? l.sc : r.sc, sl, out);
    } else if (l.type == GP_PQ_T_VECTOR && r.type == GP_PQ_T_VECTOR) {
        size_t nsig = 0, *sig = malloc((l.n + r.n + 1) * sizeof *sig);
        if (!sig)
            rc = gp_pq_oom(c);
        else if ((rc = signatures(c, b, &l, &r, sig, &nsig)) == GP_OK)
            rc = is_set(b->op) ? set_op(c, b, g, &l, &r, sig, nsig, out)
                               : vector_vector(c, b, g, &l, &r, sig, nsig, out);
        free(sig);
    } else {
        rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC,
                       "binary expression must contain only scalar and instant vector types");
    }
    gp_pq_val_free(c, &l);
    gp_pq_val_free(c, &r);
    return rc;
}
