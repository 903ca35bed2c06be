/*
 * promql_fn.h - the arithmetic of PromQL's functions and aggregations
 * (query-internal): pure kernels over plain arrays, no storage, no
 * labels, no allocation. The evaluator (promql_eval.c) selects the
 * samples, walks series and steps, and handles everything that is about
 * labels or structure (label_replace, label_join, sort*, absent, vector,
 * scalar, time, timestamp, the aggregations' grouping); it calls these
 * for the numbers.
 *
 * Each kernel does what Prometheus 2.42 does for float samples, down to
 * its numerics where they change results (extrapolation of rate/
 * increase/delta, the counter-reset correction, Kahan-compensated sums
 * and means in the *_over_time functions and the linear regression of
 * deriv/predict_linear, plain sums and an incremental mean in the
 * aggregations as 2.42's engine has them, histogram_quantile's
 * monotonicity fix-up and bucket interpolation), so answers agree with
 * Prometheus within the differential test's 1e-9 relative tolerance.
 */
#ifndef GP_QUERY_PROMQL_FN_H
#define GP_QUERY_PROMQL_FN_H

#include "query/promql_ast.h"

#include <stddef.h>
#include <stdint.h>

/* One series' samples in a range-vector window: ascending times, stale
 * markers already removed, n >= 1. start_ms/end_ms are the window's
 * bounds (Prometheus's rangeStart/rangeEnd: eval time minus offset, and
 * that minus the range) and eval_ms the step's time (predict_linear
 * predicts from it). */
struct gp_pq_window {
    const int64_t *t;
    const double *v;
    size_t n;
    int64_t start_ms, end_ms, eval_ms;
    int counter_hint;   /* 1: the evaluator knows no value in the window is below the
                         * one before it (no counter reset), so rate and increase
                         * skip their scan for resets; 2: resets lists them;
                         * 0: unknown */
    const double *resets; /* counter_hint 2: the value before each drop in the
                           * window, in order (what the scan would add) */
    size_t nresets;
};

/* 1 when f is a function of a range vector that these kernels compute
 * (rate irate increase delta idelta deriv predict_linear changes resets
 * holt_winters and every *_over_time except absent_over_time). */
int gp_pq_fn_is_range_kernel(enum gp_pq_func f);

/*
 * Computes range function f over w. args: its scalar arguments other
 * than the range vector, in call order (quantile_over_time: phi;
 * predict_linear: t; holt_winters: sf, tf). Returns 1 with *out set, or
 * 0 when Prometheus yields no sample for this series at this step (rate
 * with fewer than 2 samples, and so on), or -1 when Prometheus fails the
 * query: holt_winters' sf or tf outside (0, 1) (gp_pq_fn_check_args
 * words it), else out of memory (quantile_over_time's copy of a window
 * of more than 256 samples).
 */
int gp_pq_fn_range(enum gp_pq_func f, const struct gp_pq_window *w, const double *args,
                   size_t nargs, double *out);

/* avg_over_time of two windows at once, each as gp_pq_fn_range computes
 * it (bit for bit): its running mean is a chain of dependent divisions,
 * and two independent chains overlap in the CPU. */
void gp_pq_fn_avg_over_time2(const struct gp_pq_window *a, const struct gp_pq_window *b,
                             double *oa, double *ob);

/* 0 when f's scalar arguments are acceptable, else -1 with Prometheus's
 * message in err ("invalid smoothing factor. Expected: 0 < sf < 1, got:
 * 2.000000"). Prometheus checks only when a series has samples in the
 * window, so call it when gp_pq_fn_range returned -1. */
int gp_pq_fn_check_args(enum gp_pq_func f, const double *args, size_t nargs, char *err,
                        size_t errlen);

/* 1 when f maps each sample's value on its own (abs ... year, clamp*,
 * round, and the date functions: v is then a Unix time in seconds). */
int gp_pq_fn_is_value_kernel(enum gp_pq_func f);

/* f of v; args: clamp's min, max; clamp_min/max's bound; round's
 * to_nearest (1 when absent). The date functions read v as Unix seconds
 * in UTC (without an argument, pass the step's time in seconds); they
 * answer for NaN and Inf what 2.42 answers (its Go reads them as the
 * year 292277026596). NaN in, NaN out where Prometheus does so. clamp
 * with max < min returns NaN, but Prometheus outputs no sample at all
 * then: the evaluator drops them. pi() is f = PI (v unused). */
double gp_pq_fn_value(enum gp_pq_func f, double v, const double *args, size_t nargs);

/* The phi-quantile of v[0..n) as Prometheus computes it (linear
 * interpolation between closest ranks; phi < 0: -Inf, phi > 1: +Inf,
 * NaN phi: NaN; n 0: NaN). Sorts v in place. */
double gp_pq_quantile(double phi, double *v, size_t n);

/* One classic histogram bucket: its upper bound (the `le` label) and the
 * cumulative count of observations at or below it. */
struct gp_pq_bucket {
    double upper;
    double count;
};

/* histogram_quantile(phi, ...) of one histogram's buckets (any order;
 * sorted, coalesced and made monotonic in place; phi < 0: -Inf, phi > 1:
 * +Inf, NaN phi: NaN). NaN when there are fewer than two buckets, when the
 * highest is not +Inf, or when the count is 0 ... exactly as 2.42. */
double gp_pq_histogram_quantile(double phi, struct gp_pq_bucket *b, size_t n);

/* Running aggregation state of one group for sum, avg, stddev, stdvar
 * (also min, max, count, group), as 2.42's engine keeps it: the first
 * sample sets the value, sum adds plainly, avg keeps an incremental mean
 * (mean += v/n - mean/n, Inf-safe), stddev/stdvar Welford's recurrence.
 * The compensation fields (c, cmean, caux, inf_mean) stay 0: 2.42 does
 * not compensate its aggregations. One op per accumulator. */
struct gp_pq_acc {
    double sum, c;      /* compensated sum */
    double mean, cmean; /* running mean (avg, stddev, stdvar) */
    double aux, caux;   /* stddev/stdvar's second moment */
    double count;
    int inf_mean;       /* avg switched to plain mean after an overflow */
};
void gp_pq_acc_init(struct gp_pq_acc *a);
void gp_pq_acc_add(struct gp_pq_acc *a, enum gp_pq_aggop op, double v);
/* The group's value for op (SUM, AVG, STDDEV, STDVAR, MIN, MAX, COUNT,
 * GROUP); only meaningful after at least one gp_pq_acc_add. */
double gp_pq_acc_value(const struct gp_pq_acc *a, enum gp_pq_aggop op);

#endif
