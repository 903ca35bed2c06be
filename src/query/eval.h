/*
 * eval.h - the pure arithmetic of range queries (query-internal): one
 * series' samples or rollups onto the step grid, and the per-group
 * accumulators that combine series. No store, no JSON, no allocation per
 * point: a caller reads a series into a reused buffer, calls gp_eval_raw
 * or gp_eval_rollups into reused val/has arrays, and either renders them
 * or adds them to a group. Callers: query.c for the match= form on
 * rollups (on raw samples that form is PromQL, evaluated by the engine to
 * the same meaning) and jobdoc.c for a job's per-GPU series.
 *
 * Semantics (query.h, docs/api.md). Step times t_k = start + k*step for
 * k < npoints.
 *   raw      window (t_k - step, t_k]: its mean (mode MEAN) or its min or
 *            max (modes MIN, MAX; NaN ignored unless the window holds only
 *            NaN, as min_over_time does). Stale markers are not values:
 *            they are skipped in windows. An empty window falls back to the
 *            newest sample in (t_k - 5m, t_k] (the lookback), and to nothing
 *            when that sample is a stale marker: the series ended.
 *   rollups  minutes m with t_k - step <= m < t_k (a rollup covers
 *            [m, m + 1m), so a window of minutes is [t_k - step, t_k): a
 *            sample exactly on a minute boundary falls one step later than
 *            on the raw path). Mean = sum of sums / sum of counts; min/max
 *            over the minutes' min/max. An empty window falls back to the
 *            newest minute that starts within the lookback (its mean, min
 *            or max): rollups keep no last value and no stale marker.
 */
#ifndef GP_QUERY_EVAL_H
#define GP_QUERY_EVAL_H

#include "query/query.h"

#include <stddef.h>
#include <stdint.h>

struct gp_eval_range {
    int64_t start_ms, end_ms, step_ms;
    size_t npoints;
};

/* Checks a range and fills r: step > 0, end >= start, at most
 * GP_QUERY_MAX_POINTS steps. GP_OK, or GP_EUSAGE with Prometheus's own
 * message in err. */
int gp_eval_range_init(struct gp_eval_range *r, int64_t start_ms, int64_t end_ms, int64_t step_ms,
                       char *err, size_t errlen);

enum gp_eval_mode { GP_EVAL_MEAN, GP_EVAL_MIN, GP_EVAL_MAX };

/* The per-series reduction an aggregation needs: min/max keep peaks. */
enum gp_eval_mode gp_eval_mode_for(enum gp_agg agg);

/* 1 when v is Prometheus's stale marker (bits GP_STALE_NAN_BITS). */
int gp_eval_is_stale(double v);

/*
 * One series from raw samples (t strictly increasing, n of them) onto the
 * grid: val[k], has[k] (1 when the series has a value at step k) for every
 * k < r->npoints (out, caller-sized). Returns how many steps have a value.
 * Samples outside (start - max(step, lookback), end] are ignored.
 */
size_t gp_eval_raw(const struct gp_eval_range *r, enum gp_eval_mode mode, const int64_t *t,
                   const double *v, size_t n, double *val, uint8_t *has);

/* The same from 1-minute rollups (ascending by minute, n of them); r must
 * have a minute-aligned start and a step that is a multiple of 1m. */
size_t gp_eval_rollups(const struct gp_eval_range *r, enum gp_eval_mode mode,
                       const struct gp_rollup *ru, size_t n, double *val, uint8_t *has);

/*
 * Group accumulators: ngroups x npoints cells, each a running sum, min or
 * max and a count of the series that had a value there. NaN as PromQL
 * has it: it propagates through sum and avg; min and max ignore it unless
 * every value was NaN.
 */
struct gp_eval_groups {
    enum gp_agg agg;
    size_t ngroups, npoints;
    double *acc;   /* sum (avg, sum), min or max; unused for count */
    uint32_t *cnt; /* series with a value at the cell */
};

/* Allocates zeroed accumulators (caller frees with gp_eval_groups_free).
 * agg must not be GP_AGG_NONE. GP_OK or GP_ENOMEM. */
int gp_eval_groups_init(struct gp_eval_groups *g, enum gp_agg agg, size_t ngroups, size_t npoints);

/* Adds one series' grid (from gp_eval_raw/gp_eval_rollups) to group. */
void gp_eval_groups_add(struct gp_eval_groups *g, size_t group, const double *val,
                        const uint8_t *has);

/* The aggregate of group at step k: 1 and *v, or 0 when no series of the
 * group had a value there. */
int gp_eval_groups_get(const struct gp_eval_groups *g, size_t group, size_t k, double *v);

/* Empties one group's cells for reuse (query.c evaluates groups one at a
 * time with a single group's worth of cells). */
void gp_eval_groups_clear(struct gp_eval_groups *g, size_t group);

/* Accepts a zeroed or freed g. */
void gp_eval_groups_free(struct gp_eval_groups *g);

#endif
