/*
 * promql_agg.c - aggregation operators (sum, avg, min, max, count,
 * group, stddev, stdvar, count_values, topk, bottomk, quantile, and
 * Prometheus 3's limitk and limit_ratio) with by/without grouping.
 *
 * Each input series' group is found once (its grouping labels hashed
 * into a group id); each step is then a pass over the series adding into
 * per-group accumulators indexed by id. count_values is the exception:
 * its group depends on the value, so it builds labels per point.
 * topk/bottomk keep the series' own labels and, for an instant query,
 * Prometheus's order: groups as they first appear, within a group by
 * value (descending for topk), NaN last, ties by labels; limitk keeps
 * the first k of a group in label order.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "query/promql_fn.h"
#include "store/labels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rank {
    double v;
    size_t i;
};

/* qsort takes no argument: the series being ranked, per thread. Ties
 * are broken by labels, not input position, so a range query picks at
 * each step what the instant query there picks whatever order its input
 * came in (for selectors, label order is Prometheus's input order). */
static __thread const struct gp_pq_val *rank_in;

static int cmp_rank_labels(const struct rank *a, const struct rank *b)
{
    const struct gp_pq_ser *x = rank_in->s + a->i, *y = rank_in->s + b->i;
    return gp_pq_labels_cmp(x->lab, x->lablen, y->lab, y->lablen);
}

static int cmp_rank(const void *pa, const void *pb, int desc)
{
    const struct rank *a = pa, *b = pb;
    int an = a->v != a->v, bn = b->v != b->v;
    if (an != bn)
        return an - bn; /* NaN last */
    if (!an && a->v != b->v)
        return (a->v > b->v) == desc ? -1 : 1;
    return cmp_rank_labels(a, b);
}

static int cmp_rank_desc(const void *a, const void *b)
{
    return cmp_rank(a, b, 1);
}

static int cmp_rank_asc(const void *a, const void *b)
{
    return cmp_rank(a, b, 0);
}

static int cmp_rank_by_labels(const void *a, const void *b)
{
    return cmp_rank_labels(a, b);
}

static int valid_label_name(const char *s)
{
    if (!*s)
        return 0;
    for (size_t i = 0; s[i]; i++) {
        char ch = s[i];
        if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (i > 0 && ch >= '0' && ch <= '9')))
            return 0;
    }
    return 1;
}

static int count_values(struct gp_pq_ctx *c, const struct gp_pq_agg *a, const struct gp_pq_grid *g,
                        const struct gp_pq_val *in, const char *label, struct gp_pq_val *out)
{
    if (!valid_label_name(label))
        return gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "invalid label name \"%s\"", label);
    /* by (...) groups by the value label too (2.42 appends it to the
     * grouping); without (...) keeps it unless listed. */
    struct gp_pq_labels grouping = a->grouping;
    char **names = NULL;
    if (!a->without) {
        names = malloc((a->grouping.n + 1) * sizeof *names);
        if (!names)
            return gp_pq_oom(c);
        if (a->grouping.n)
            memcpy(names, a->grouping.names, a->grouping.n * sizeof *names);
        names[a->grouping.n] = (char *)label;
        grouping = (struct gp_pq_labels){names, a->grouping.n + 1};
    }
    struct gp_pq_lset ls = {0};
    struct gp_buf lab = {0};
    size_t *cnt = NULL, ncap = 0;
    int rc = GP_OK;
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        for (size_t i = 0; i < in->n && rc == GP_OK; i++) {
            const struct gp_pq_ser *s = in->s + i;
            if (!s->has[k])
                continue;
            char num[400];
            gp_pq_fmt_float(s->v[k], 0, num, sizeof num);
            if ((rc = gp_pq_lset_decode(&ls, s->lab, s->lablen)) != GP_OK ||
                (rc = gp_pq_lset_set(&ls, label, strlen(label), num, strlen(num))) != GP_OK) {
                rc = gp_pq_oom(c);
                break;
            }
            gp_pq_lset_encode(&ls, &lab);
            gp_pq_labels_key((const uint8_t *)lab.data, lab.len, &grouping, !a->without,
                             &c->tmp);
            size_t idx;
            if (lab.err || c->tmp.err) {
                rc = gp_pq_oom(c);
                break;
            }
            if ((rc = gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len,
                                       &idx)) != GP_OK)
                break;
            if (idx >= ncap) {
                size_t nc = ncap ? ncap * 2 : 64;
                while (nc <= idx)
                    nc *= 2;
                size_t *t = realloc(cnt, nc * sizeof *t);
                if (!t) {
                    rc = gp_pq_oom(c);
                    break;
                }
                memset(t + ncap, 0, (nc - ncap) * sizeof *t);
                cnt = t;
                ncap = nc;
            }
            cnt[idx]++;
        }
        for (size_t q = 0; q < out->n && q < ncap && rc == GP_OK; q++) {
            if (!cnt[q])
                continue;
            rc = gp_pq_val_put(c, out, q, k, (double)cnt[q]);
            cnt[q] = 0;
        }
    }
    free(cnt);
    free(names);
    gp_buf_free(&lab);
    gp_pq_lset_free(&ls);
    return rc;
}

/* One 64-bit hash of a label set as a fraction in [0, 1): limit_ratio's
 * stable choice of series. */
static double hash_fraction(const struct gp_pq_ser *s)
{
    uint64_t h = gp_labels_hash(s->lab, s->lablen);
    return (double)(h >> 11) / 9007199254740992.0;
}

/* Most cells of a series-major pass: beyond, the step-major loop below
 * (its accumulators are per group, not per group and step). */
#define SERIES_MAJOR_CELLS ((size_t)1 << 18)

/* sum, avg, min, max, count, group, stddev, stdvar into groups grp[] of
 * ng: series by series, each adding into a row of per-step accumulators.
 * Each (group, step) cell takes its series in the same order as step by
 * step, so every value is the same; but the steps of one series are
 * independent, so the divisions of avg overlap instead of waiting on
 * each other, and each series' values are read in order. */
static int agg_series_major(struct gp_pq_ctx *c, enum gp_pq_aggop op, const struct gp_pq_grid *g,
                            const struct gp_pq_val *in, const size_t *grp, size_t ng,
                            struct gp_pq_val *out)
{
    size_t gn = g->n, cells = ng * gn;
    int acc_op = op == GP_PQ_A_SUM || op == GP_PQ_A_AVG || op == GP_PQ_A_STDDEV ||
                 op == GP_PQ_A_STDVAR;
    struct gp_pq_acc *acc = acc_op ? malloc((cells ? cells : 1) * sizeof *acc) : NULL;
    double *gv = acc_op ? NULL : malloc((cells ? cells : 1) * sizeof *gv);
    size_t *cnt = calloc(cells ? cells : 1, sizeof *cnt);
    int rc = GP_OK;
    if ((acc_op ? !acc : !gv) || !cnt) {
        rc = gp_pq_oom(c);
        goto out;
    }
    for (size_t i = 0; i < in->n && rc == GP_OK; i++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        const struct gp_pq_ser *s = in->s + i;
        size_t row = grp[i] * gn;
        for (size_t k = 0; k < gn; k++) {
            if (!s->has[k])
                continue;
            size_t q = row + k;
            double x = s->v[k];
            if (acc_op) {
                if (!cnt[q])
                    gp_pq_acc_init(&acc[q]);
                gp_pq_acc_add(&acc[q], op, x);
            } else if (!cnt[q]) {
                gv[q] = x;
            } else if (op == GP_PQ_A_MIN ? gv[q] > x || gv[q] != gv[q]
                                         : op == GP_PQ_A_MAX && (gv[q] < x || gv[q] != gv[q])) {
                gv[q] = x;
            }
            cnt[q]++;
        }
    }
    for (size_t k = 0; k < gn && rc == GP_OK && (rc = gp_pq_check(c)) == GP_OK; k++)
        for (size_t grp_q = 0; grp_q < ng && rc == GP_OK; grp_q++) {
            size_t q = grp_q * gn + k;
            if (!cnt[q])
                continue;
            double x = acc_op                  ? gp_pq_acc_value(&acc[q], op)
                       : op == GP_PQ_A_COUNT ? (double)cnt[q]
                       : op == GP_PQ_A_GROUP ? 1
                                             : gv[q];
            rc = gp_pq_val_put(c, out, grp_q, k, x);
        }
out:
    free(acc);
    free(gv);
    free(cnt);
    return rc;
}

int gp_pq_eval_agg(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                   struct gp_pq_val *out)
{
    const struct gp_pq_agg *a = &e->u.agg;
    enum gp_pq_aggop op = a->op;
    struct gp_pq_val param, in;
    memset(&param, 0, sizeof param);
    memset(out, 0, sizeof *out);
    out->type = GP_PQ_T_VECTOR;
    int rc = GP_OK;
    if (a->param && (rc = gp_pq_eval(c, a->param, g, &param)) != GP_OK)
        return rc;
    if ((rc = gp_pq_eval(c, a->expr, g, &in)) != GP_OK) {
        gp_pq_val_free(c, &param);
        return rc;
    }
    if (op == GP_PQ_A_COUNT_VALUES) {
        rc = count_values(c, a, g, &in, param.str ? param.str : "", out);
        goto done;
    }
    int keep_labels = op == GP_PQ_A_TOPK || op == GP_PQ_A_BOTTOMK || op == GP_PQ_A_LIMITK ||
                      op == GP_PQ_A_LIMIT_RATIO;
    size_t n = in.n, ng = 0;
    size_t *grp = malloc((n ? n : 1) * sizeof *grp);
    size_t *off = NULL, *fill = NULL, *order = NULL;
    struct gp_pq_acc *acc = NULL;
    double *gv = NULL, *buf = NULL;
    struct rank *rk = NULL;
    struct gp_pq_map gm = {0};
    if (!grp) {
        rc = gp_pq_oom(c);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        gp_pq_labels_key(in.s[i].lab, in.s[i].lablen, &a->grouping, !a->without, &c->tmp);
        if (c->tmp.err || gp_pq_map_get(&gm, c->tmp.data, c->tmp.len, ng, &grp[i], NULL) != GP_OK) {
            rc = gp_pq_oom(c);
            goto free;
        }
        if (grp[i] == ng) {
            ng++;
            if (!keep_labels) {
                size_t idx;
                /* Group keys are distinct: append in first-appearance order. */
                if ((rc = gp_pq_val_series(c, out, g, (const uint8_t *)c->tmp.data, c->tmp.len,
                                           &idx)) != GP_OK)
                    goto free;
            }
        }
    }
    if ((op == GP_PQ_A_SUM || op == GP_PQ_A_AVG || op == GP_PQ_A_MIN || op == GP_PQ_A_MAX ||
         op == GP_PQ_A_COUNT || op == GP_PQ_A_GROUP || op == GP_PQ_A_STDDEV ||
         op == GP_PQ_A_STDVAR) &&
        ng * g->n <= SERIES_MAJOR_CELLS) {
        rc = agg_series_major(c, op, g, &in, grp, ng, out);
        goto free;
    }
    off = calloc(ng + 1, sizeof *off);
    fill = calloc(ng + 1, sizeof *fill);
    order = calloc(ng + 1, sizeof *order);
    acc = calloc(ng + 1, sizeof *acc);
    gv = calloc(ng + 1, sizeof *gv);
    buf = malloc((n ? n : 1) * sizeof *buf);
    rk = malloc((n ? n : 1) * sizeof *rk);
    size_t *sidx = malloc((n ? n : 1) * sizeof *sidx);
    if (!off || !fill || !order || !acc || !gv || !buf || !rk || !sidx) {
        free(sidx);
        rc = gp_pq_oom(c);
        goto free;
    }
    /* off[q]: where group q's values start in buf and rk. */
    for (size_t i = 0; i < n; i++) {
        off[grp[i] + 1]++;
        sidx[i] = (size_t)-1;
    }
    for (size_t q = 1; q <= ng; q++)
        off[q] += off[q - 1];
    for (size_t k = 0; k < g->n && rc == GP_OK; k++) {
        if ((rc = gp_pq_check(c)) != GP_OK)
            break;
        if ((op == GP_PQ_A_TOPK || op == GP_PQ_A_BOTTOMK) &&
            !(param.sc[k] >= -9223372036854775808.0 && param.sc[k] < 9223372036854775808.0)) {
            /* 2.42 checks k at every step, with or without input. */
            char num[64];
            gp_pq_fmt_go_v(param.sc[k], num, sizeof num);
            rc = gp_seterr(c->err, c->errlen, GP_PQ_EEXEC, "Scalar value %s overflows int64", num);
            break;
        }
        memset(fill, 0, (ng + 1) * sizeof *fill);
        size_t nord = 0;
        for (size_t i = 0; i < n; i++) {
            if (!in.s[i].has[k])
                continue;
            size_t q = grp[i];
            double x = in.s[i].v[k];
            if (!fill[q]) {
                order[nord++] = q;
                gp_pq_acc_init(&acc[q]);
                gv[q] = x;
            }
            switch (op) {
            case GP_PQ_A_SUM:
            case GP_PQ_A_AVG:
            case GP_PQ_A_STDDEV:
            case GP_PQ_A_STDVAR: gp_pq_acc_add(&acc[q], op, x); break;
            case GP_PQ_A_MIN:
                if (gv[q] > x || gv[q] != gv[q])
                    gv[q] = x;
                break;
            case GP_PQ_A_MAX:
                if (gv[q] < x || gv[q] != gv[q])
                    gv[q] = x;
                break;
            default: break;
            }
            buf[off[q] + fill[q]] = x;
            rk[off[q] + fill[q]] = (struct rank){x, i};
            fill[q]++;
        }
        for (size_t oi = 0; oi < nord && rc == GP_OK; oi++) {
            size_t q = order[oi], cnt = fill[q];
            double x;
            switch (op) {
            case GP_PQ_A_SUM:
            case GP_PQ_A_AVG:
            case GP_PQ_A_STDDEV:
            case GP_PQ_A_STDVAR: x = gp_pq_acc_value(&acc[q], op); break;
            case GP_PQ_A_MIN:
            case GP_PQ_A_MAX: x = gv[q]; break;
            case GP_PQ_A_COUNT: x = (double)cnt; break;
            case GP_PQ_A_GROUP: x = 1; break;
            case GP_PQ_A_QUANTILE: x = gp_pq_quantile(param.sc[k], buf + off[q], cnt); break;
            default: x = NAN; break;
            }
            if (!keep_labels) {
                rc = gp_pq_val_put(c, out, q, k, x);
                continue;
            }
            /* topk, bottomk, limitk, limit_ratio: some of the group's series. */
            struct rank *r = rk + off[q];
            double p = param.sc[k];
            size_t take = cnt;
            if (op == GP_PQ_A_LIMIT_RATIO) {
                take = 0;
                for (size_t j = 0; j < cnt; j++) {
                    double f = hash_fraction(in.s + r[j].i);
                    if ((p >= 0 && f < p) || (p < 0 && f >= 1 + p))
                        r[take++] = r[j];
                }
            } else {
                if (!(p >= 1))
                    continue; /* k < 1: nothing */
                if (p < (double)cnt)
                    take = (size_t)p;
                rank_in = &in;
                qsort(r, cnt, sizeof *r,
                      op == GP_PQ_A_TOPK      ? cmp_rank_desc
                      : op == GP_PQ_A_BOTTOMK ? cmp_rank_asc
                                              : cmp_rank_by_labels); /* limitk */
                rank_in = NULL;
            }
            for (size_t j = 0; j < take && rc == GP_OK; j++) {
                const struct gp_pq_ser *s = in.s + r[j].i;
                if (sidx[r[j].i] == (size_t)-1 &&
                    (rc = gp_pq_val_series(c, out, g, s->lab, s->lablen, &sidx[r[j].i])) != GP_OK)
                    break;
                rc = gp_pq_val_put(c, out, sidx[r[j].i], k, s->v[k]);
            }
        }
    }
    if (op == GP_PQ_A_TOPK || op == GP_PQ_A_BOTTOMK)
        out->ordered = 1;
    free(sidx);
free:
    free(grp);
    free(off);
    free(fill);
    free(order);
    free(acc);
    free(gv);
    free(buf);
    free(rk);
    gp_pq_map_free(&gm);
done:
    gp_pq_val_free(c, &param);
    gp_pq_val_free(c, &in);
    return rc;
}
