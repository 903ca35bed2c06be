/*
 * eval.c - range evaluation over in-memory samples (eval.h has the
 * semantics).
 *
 * Speed is the point of this file: a 1-hour range over 512 series of 1 s
 * samples is 1.8 million samples, and the issue asks for such a query at
 * least twice as fast as Prometheus. So each series is one forward pass:
 * the step windows tile the time axis, so a single index walks the sorted
 * samples once and every window starts where the previous one ended; the
 * newest sample at or before a step (the lookback candidate) is simply the
 * one before that index. NaN tests guard the stale-marker check so a
 * normal value costs one compare. Groups are dense arrays indexed by group
 * number and step, so adding a series is a linear sweep.
 */
#include "query/eval.h"

#include "ingest/remote_write.h"
#include "lib/bits.h"
#include "lib/err.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int gp_eval_range_init(struct gp_eval_range *r, int64_t start_ms, int64_t end_ms, int64_t step_ms,
                       char *err, size_t errlen)
{
    if (step_ms <= 0)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "zero or negative query resolution step widths are not accepted. "
                         "Try a positive integer");
    if (end_ms < start_ms)
        return gp_seterr(err, errlen, GP_EUSAGE, "end timestamp must not be before start time");
    /* Prometheus's check, word for word: (end - start) / step > 11000. The
     * difference cannot overflow for the times gp_parse_time_ms accepts;
     * unsigned arithmetic keeps it defined for any others. */
    uint64_t span = (uint64_t)end_ms - (uint64_t)start_ms;
    if (span / (uint64_t)step_ms > GP_QUERY_MAX_POINTS)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "exceeded maximum resolution of 11,000 points per timeseries. "
                         "Try decreasing the query resolution (?step=XX)");
    r->start_ms = start_ms;
    r->end_ms = end_ms;
    r->step_ms = step_ms;
    r->npoints = (size_t)(span / (uint64_t)step_ms) + 1;
    return GP_OK;
}

enum gp_eval_mode gp_eval_mode_for(enum gp_agg agg)
{
    return agg == GP_AGG_MIN ? GP_EVAL_MIN : agg == GP_AGG_MAX ? GP_EVAL_MAX : GP_EVAL_MEAN;
}

int gp_eval_is_stale(double v)
{
    return gp_f64_bits(v) == GP_STALE_NAN_BITS;
}

/* Stale check for the hot loops: one compare for every non-NaN value. */
#define IS_STALE(x) ((x) != (x) && gp_eval_is_stale(x))

/* min/max that ignore NaN unless every value is NaN (acc starts as NaN). */
#define TAKE_MIN(acc, x)                  \
    do {                                  \
        if ((x) < (acc) || (acc) != (acc)) \
            (acc) = (x);                  \
    } while (0)
#define TAKE_MAX(acc, x)                  \
    do {                                  \
        if ((x) > (acc) || (acc) != (acc)) \
            (acc) = (x);                  \
    } while (0)

size_t gp_eval_raw(const struct gp_eval_range *r, enum gp_eval_mode mode, const int64_t *t,
                   const double *v, size_t n, double *val, uint8_t *has)
{
    const int64_t step = r->step_ms;
    size_t i = 0, found = 0;
    int64_t tk = r->start_ms;
    /* i counts the samples at or before the current bound, so t[i - 1] is
     * always the lookback candidate. The windows tile the axis: only the
     * first one skips anything. */
    for (size_t k = 0; k < r->npoints; k++, tk += step) {
        int64_t lo = tk - step;
        while (i < n && t[i] <= lo)
            i++;
        size_t c = 0;
        double acc;
        switch (mode) {
        case GP_EVAL_MEAN:
            acc = 0;
            for (; i < n && t[i] <= tk; i++) {
                double x = v[i];
                if (IS_STALE(x))
                    continue;
                acc += x;
                c++;
            }
            if (c)
                acc /= (double)c;
            break;
        case GP_EVAL_MIN:
            acc = NAN;
            for (; i < n && t[i] <= tk; i++) {
                double x = v[i];
                if (IS_STALE(x))
                    continue;
                TAKE_MIN(acc, x);
                c++;
            }
            break;
        default:
            acc = NAN;
            for (; i < n && t[i] <= tk; i++) {
                double x = v[i];
                if (IS_STALE(x))
                    continue;
                TAKE_MAX(acc, x);
                c++;
            }
            break;
        }
        if (c) {
            val[k] = acc;
            has[k] = 1;
            found++;
        } else if (i > 0 && t[i - 1] > tk - GP_QUERY_LOOKBACK_MS && !gp_eval_is_stale(v[i - 1])) {
            val[k] = v[i - 1];
            has[k] = 1;
            found++;
        } else {
            val[k] = 0;
            has[k] = 0;
        }
    }
    return found;
}

size_t gp_eval_rollups(const struct gp_eval_range *r, enum gp_eval_mode mode,
                       const struct gp_rollup *ru, size_t n, double *val, uint8_t *has)
{
    const int64_t step = r->step_ms;
    size_t j = 0, found = 0;
    int64_t tk = r->start_ms;
    for (size_t k = 0; k < r->npoints; k++, tk += step) {
        int64_t lo = tk - step; /* minutes m with lo <= m < tk */
        while (j < n && ru[j].t < lo)
            j++;
        uint64_t c = 0;
        double acc = mode == GP_EVAL_MEAN ? 0 : NAN;
        for (; j < n && ru[j].t < tk; j++) {
            const struct gp_rollup *x = &ru[j];
            if (x->count == 0)
                continue;
            c += x->count;
            if (mode == GP_EVAL_MEAN)
                acc += x->sum;
            else if (mode == GP_EVAL_MIN)
                TAKE_MIN(acc, x->min);
            else
                TAKE_MAX(acc, x->max);
        }
        if (c) {
            val[k] = mode == GP_EVAL_MEAN ? acc / (double)c : acc;
            has[k] = 1;
            found++;
            continue;
        }
        /* Lookback: the newest minute before the window, when it starts
         * at or after tk - 5m (some of it lies in the lookback). */
        size_t b = j;
        while (b > 0 && ru[b - 1].count == 0)
            b--;
        if (b > 0 && ru[b - 1].t >= tk - GP_QUERY_LOOKBACK_MS) {
            const struct gp_rollup *x = &ru[b - 1];
            val[k] = mode == GP_EVAL_MEAN  ? x->sum / (double)x->count
                     : mode == GP_EVAL_MIN ? x->min
                                           : x->max;
            has[k] = 1;
            found++;
        } else {
            val[k] = 0;
            has[k] = 0;
        }
    }
    return found;
}

int gp_eval_groups_init(struct gp_eval_groups *g, enum gp_agg agg, size_t ngroups, size_t npoints)
{
    memset(g, 0, sizeof *g);
    g->agg = agg;
    g->ngroups = ngroups;
    g->npoints = npoints;
    size_t cells = ngroups * npoints;
    if ((npoints && cells / npoints != ngroups) || cells > SIZE_MAX / sizeof(double))
        return GP_ENOMEM;
    if (cells == 0)
        return GP_OK;
    g->cnt = malloc(cells * sizeof *g->cnt);
    if (agg != GP_AGG_COUNT)
        g->acc = malloc(cells * sizeof *g->acc);
    if (!g->cnt || (agg != GP_AGG_COUNT && !g->acc)) {
        gp_eval_groups_free(g);
        return GP_ENOMEM;
    }
    for (size_t i = 0; i < ngroups; i++)
        gp_eval_groups_clear(g, i);
    return GP_OK;
}

void gp_eval_groups_clear(struct gp_eval_groups *g, size_t group)
{
    size_t np = g->npoints;
    memset(g->cnt + group * np, 0, np * sizeof *g->cnt);
    if (g->acc) {
        double init = g->agg == GP_AGG_MIN || g->agg == GP_AGG_MAX ? NAN : 0.0;
        double *acc = g->acc + group * np;
        for (size_t k = 0; k < np; k++)
            acc[k] = init;
    }
}

void gp_eval_groups_add(struct gp_eval_groups *g, size_t group, const double *val,
                        const uint8_t *has)
{
    size_t np = g->npoints;
    uint32_t *cnt = g->cnt + group * np;
    double *acc = g->acc ? g->acc + group * np : NULL;
    switch (g->agg) {
    case GP_AGG_AVG:
    case GP_AGG_SUM:
        for (size_t k = 0; k < np; k++)
            if (has[k]) {
                acc[k] += val[k];
                cnt[k]++;
            }
        break;
    case GP_AGG_MIN:
        for (size_t k = 0; k < np; k++)
            if (has[k]) {
                TAKE_MIN(acc[k], val[k]);
                cnt[k]++;
            }
        break;
    case GP_AGG_MAX:
        for (size_t k = 0; k < np; k++)
            if (has[k]) {
                TAKE_MAX(acc[k], val[k]);
                cnt[k]++;
            }
        break;
    default:
        for (size_t k = 0; k < np; k++)
            cnt[k] += has[k];
        break;
    }
}

int gp_eval_groups_get(const struct gp_eval_groups *g, size_t group, size_t k, double *v)
{
    size_t i = group * g->npoints + k;
    uint32_t c = g->cnt[i];
    if (!c)
        return 0;
    switch (g->agg) {
    case GP_AGG_AVG:
        *v = g->acc[i] / (double)c;
        break;
    case GP_AGG_COUNT:
        *v = (double)c;
        break;
    default:
        *v = g->acc[i];
        break;
    }
    return 1;
}

void gp_eval_groups_free(struct gp_eval_groups *g)
{
    if (!g)
        return;
    free(g->acc);
    free(g->cnt);
    g->acc = NULL;
    g->cnt = NULL;
}
