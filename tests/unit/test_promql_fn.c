/*
 * test_promql_fn.c - the PromQL function kernels (promql_fn.h) against
 * values worked out by hand from Prometheus 2.42's definitions. Where a
 * result depends on 2.42's exact numerics (the incremental mean, the
 * compensated sums, Go's calendar on NaN), the expected value is what
 * Debian's Prometheus 2.42 answered for the same input (promtool test
 * rules), noted beside it.
 */
#include "query/promql_fn.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define S 1000 /* ms per second */

/* Runs range function f over the samples (t[i] seconds, v[i]) in the
 * window [start_s, end_s] evaluated at end_s; 1/0/-1 as gp_pq_fn_range. */
static int run_range(enum gp_pq_func f, const double *ts, const double *v, size_t n,
                     double start_s, double end_s, const double *args, size_t nargs, double *out)
{
    int64_t t[64];
    if (n > 64)
        gp_test_fail(__FILE__, __LINE__, "window too long for the helper");
    for (size_t i = 0; i < n; i++)
        t[i] = (int64_t)(ts[i] * S);
    struct gp_pq_window w = {t, v, n, (int64_t)(start_s * S), (int64_t)(end_s * S),
                             (int64_t)(end_s * S), 0, NULL, 0};
    *out = -12345;
    return gp_pq_fn_range(f, &w, args, nargs, out);
}

static double range1(enum gp_pq_func f, const double *ts, const double *v, size_t n,
                     double start_s, double end_s)
{
    double out;
    int rc = run_range(f, ts, v, n, start_s, end_s, NULL, 0, &out);
    if (rc != 1)
        gp_test_fail(__FILE__, __LINE__, "no sample from function %d (rc %d)", (int)f, rc);
    return out;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_rate_samples_cover_window(void)
{
    /* Samples at both ends: no extrapolation; 60 over 60 s. */
    double t[] = {0, 15, 30, 45, 60}, v[] = {0, 15, 30, 45, 60};
    CHECK_DBL(range1(GP_PQ_F_INCREASE, t, v, N(t), 0, 60), 60, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_RATE, t, v, N(t), 0, 60), 1, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_DELTA, t, v, N(t), 0, 60), 60, 1e-12);
}

static void test_rate_extrapolates_to_near_ends(void)
{
    /* Samples 10 s after the start and 5 s before the end, 15 s apart:
     * both gaps are under 1.1 intervals, so 45 over 45 s becomes 60 over
     * the 60 s window (the zero point, 10 s before the first sample, does
     * not clip: 10 is not < 10). */
    double t[] = {10, 25, 40, 55}, v[] = {10, 25, 40, 55};
    CHECK_DBL(range1(GP_PQ_F_INCREASE, t, v, N(t), 0, 60), 60, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_RATE, t, v, N(t), 0, 60), 1, 1e-12);
}

static void test_rate_far_ends_get_half_an_interval(void)
{
    /* Gauge sampled 100..120 s in a 300 s window: 100 s and 180 s gaps
     * exceed 1.1 x 10 s, so each side gets 5 s: 2 x 30/20 = 3. */
    double t[] = {100, 110, 120}, v[] = {1, 2, 3};
    CHECK_DBL(range1(GP_PQ_F_DELTA, t, v, N(t), 0, 300), 3, 1e-12);
    /* As a counter, its zero point (10 s before the first sample) is
     * near enough to extrapolate to: 2 x (20 + 10 + 5) / 20 over 300 s. */
    CHECK_DBL(range1(GP_PQ_F_RATE, t, v, N(t), 0, 300), 3.5 / 300, 1e-12);
}

static void test_rate_counter_clipped_at_zero(void)
{
    /* 5 then 15, 10 s apart, 10 s after the window start: the slope says
     * the counter was 0 five seconds before the first sample, so it
     * extrapolates 5 s back, not 10: 10 x (10 + 5) / 10 = 15. delta is not
     * a counter and goes the whole 10 s: 20. */
    double t[] = {10, 20}, v[] = {5, 15};
    CHECK_DBL(range1(GP_PQ_F_INCREASE, t, v, N(t), 0, 20), 15, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_DELTA, t, v, N(t), 0, 20), 20, 1e-12);
}

static void test_rate_zero_point_before_threshold(void)
{
    /* 2.42 clips at the zero point before the 1.1-interval test: 40, 80,
     * 120 at 180/240/300 s in [60, 360]: the start gap (120 s) exceeds
     * 66 s, but the zero point (60 s back) does not, so 60 s is added:
     * 80 x (120 + 60 + 60) / 120 = 160 (2.42 answers 160; later versions,
     * which test the threshold first, 140). */
    double t[] = {180, 240, 300}, v[] = {40, 80, 120};
    CHECK_DBL(range1(GP_PQ_F_INCREASE, t, v, N(t), 60, 360), 160, 1e-12);
}

static void test_rate_counter_resets(void)
{
    /* 10 20 | 5 15: the drop adds back 20; 25 over the covered 30 s. */
    double t[] = {0, 10, 20, 30}, v[] = {10, 20, 5, 15};
    CHECK_DBL(range1(GP_PQ_F_INCREASE, t, v, N(t), 0, 30), 25, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_RATE, t, v, N(t), 0, 30), 25.0 / 30, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_DELTA, t, v, N(t), 0, 30), 5, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_RESETS, t, v, N(t), 0, 30), 1, 0);
}

static void test_rate_needs_two_samples(void)
{
    double t[] = {10}, v[] = {5}, out;
    CHECK_INT(run_range(GP_PQ_F_RATE, t, v, 1, 0, 60, NULL, 0, &out), 0);
    CHECK_INT(run_range(GP_PQ_F_INCREASE, t, v, 1, 0, 60, NULL, 0, &out), 0);
    CHECK_INT(run_range(GP_PQ_F_DELTA, t, v, 1, 0, 60, NULL, 0, &out), 0);
    CHECK_INT(run_range(GP_PQ_F_IRATE, t, v, 1, 0, 60, NULL, 0, &out), 0);
    CHECK_INT(run_range(GP_PQ_F_IDELTA, t, v, 1, 0, 60, NULL, 0, &out), 0);
    CHECK_INT(run_range(GP_PQ_F_DERIV, t, v, 1, 0, 60, NULL, 0, &out), 0);
    double k = 60;
    CHECK_INT(run_range(GP_PQ_F_PREDICT_LINEAR, t, v, 1, 0, 60, &k, 1, &out), 0);
    /* ... while the *_over_time functions answer for one sample. */
    CHECK_DBL(range1(GP_PQ_F_AVG_OVER_TIME, t, v, 1, 0, 60), 5, 0);
    CHECK_DBL(range1(GP_PQ_F_STDDEV_OVER_TIME, t, v, 1, 0, 60), 0, 0);
    CHECK_DBL(range1(GP_PQ_F_CHANGES, t, v, 1, 0, 60), 0, 0);
    /* An empty window is no sample, whatever the function. */
    struct gp_pq_window w = {NULL, NULL, 0, 0, 60000, 60000, 0, NULL, 0};
    CHECK_INT(gp_pq_fn_range(GP_PQ_F_COUNT_OVER_TIME, &w, NULL, 0, &out), 0);
}

static void test_rate_nan_and_inf(void)
{
    double t[] = {0, 10, 20}, nan_v[] = {1, NAN, 3}, inf_v[] = {1, 2, INFINITY};
    /* A NaN in the middle is no reset (NaN < x is false): 2 over 20 s. */
    CHECK_DBL(range1(GP_PQ_F_RATE, t, nan_v, N(t), 0, 20), 0.1, 1e-12);
    CHECK(isinf(range1(GP_PQ_F_INCREASE, t, inf_v, N(t), 0, 20)));
    double nan_last[] = {1, 2, NAN};
    CHECK(isnan(range1(GP_PQ_F_DELTA, t, nan_last, N(t), 0, 20)));
}

static void test_irate_idelta(void)
{
    double t[] = {0, 10, 20}, v[] = {10, 30, 50};
    CHECK_DBL(range1(GP_PQ_F_IRATE, t, v, N(t), 0, 20), 2, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_IDELTA, t, v, N(t), 0, 20), 20, 1e-12);
    /* A reset: irate takes the new value as the increase; idelta does not. */
    double r[] = {10, 20, 5};
    CHECK_DBL(range1(GP_PQ_F_IRATE, t, r, N(t), 0, 20), 0.5, 1e-12);
    CHECK_DBL(range1(GP_PQ_F_IDELTA, t, r, N(t), 0, 20), -15, 1e-12);
    /* Milliseconds count: 1 over 250 ms is 4/s. */
    double t2[] = {1, 1.25}, v2[] = {3, 4};
    CHECK_DBL(range1(GP_PQ_F_IRATE, t2, v2, N(t2), 0, 2), 4, 1e-12);
}

static void test_deriv_predict_linear(void)
{
    double t[] = {0, 10, 20}, v[] = {1, 3, 5};
    CHECK_DBL(range1(GP_PQ_F_DERIV, t, v, N(t), 0, 20), 0.2, 1e-12);
    /* Predicted from the evaluation time (20 s, value 5): 10 s on, 7. */
    double k = 10, out;
    CHECK_INT(run_range(GP_PQ_F_PREDICT_LINEAR, t, v, N(t), 0, 20, &k, 1, &out), 1);
    CHECK_DBL(out, 7, 1e-9);
    /* Scattered points: least squares, slope 0.1 / s, line through the
     * mean (10 s, 2.5): at 40 s, 4.5. */
    double v2[] = {1.5, 3.5, 2.5};
    CHECK_DBL(range1(GP_PQ_F_DERIV, t, v2, N(t), 0, 20), 0.05, 1e-12);
    k = 20;
    CHECK_INT(run_range(GP_PQ_F_PREDICT_LINEAR, t, v2, N(t), 0, 20, &k, 1, &out), 1);
    CHECK_DBL(out, 2.5 + 0.05 * 30, 1e-9);
    /* A constant has slope 0 exactly; a constant Inf gives NaN. */
    double c[] = {7.25, 7.25, 7.25}, ci[] = {INFINITY, INFINITY, INFINITY};
    CHECK_DBL(range1(GP_PQ_F_DERIV, t, c, N(t), 0, 20), 0, 0);
    CHECK(isnan(range1(GP_PQ_F_DERIV, t, ci, N(t), 0, 20)));
    CHECK_INT(run_range(GP_PQ_F_PREDICT_LINEAR, t, ci, N(t), 0, 20, &k, 1, &out), 1);
    CHECK(isnan(out));
}

static void test_changes_resets_nan(void)
{
    /* NaN to NaN is no change; 2 -> NaN and NaN -> 3 are. */
    double t[] = {0, 1, 2, 3, 4, 5, 6}, v[] = {1, 1, 2, NAN, NAN, 3, 2};
    CHECK_DBL(range1(GP_PQ_F_CHANGES, t, v, N(t), 0, 6), 4, 0);
    CHECK_DBL(range1(GP_PQ_F_RESETS, t, v, N(t), 0, 6), 1, 0);
}

static void test_holt_winters(void)
{
    /* 1 2 4, sf = tf = 0.5: s=1 b=1; s=0.5*2+0.5*(1+1)=2; b=0.5*(2-1)+0.5*1=1,
     * s=0.5*4+0.5*(2+1)=3.5. */
    double t[] = {0, 10, 20}, v[] = {1, 2, 4}, args[] = {0.5, 0.5}, out;
    CHECK_INT(run_range(GP_PQ_F_HOLT_WINTERS, t, v, N(t), 0, 20, args, 2, &out), 1);
    CHECK_DBL(out, 3.5, 1e-12);
    CHECK_INT(run_range(GP_PQ_F_HOLT_WINTERS, t, v, 1, 0, 20, args, 2, &out), 0);
    /* Factors outside (0, 1) fail the query, in 2.42's words. */
    double bad_sf[] = {2, 0.5}, bad_tf[] = {0.5, 0}, inf_sf[] = {INFINITY, 0.5};
    char err[128];
    CHECK_INT(run_range(GP_PQ_F_HOLT_WINTERS, t, v, N(t), 0, 20, bad_sf, 2, &out), -1);
    CHECK_INT(gp_pq_fn_check_args(GP_PQ_F_HOLT_WINTERS, bad_sf, 2, err, sizeof err), -1);
    CHECK_STR(err, "invalid smoothing factor. Expected: 0 < sf < 1, got: 2.000000");
    CHECK_INT(run_range(GP_PQ_F_HOLT_WINTERS, t, v, 1, 0, 20, bad_tf, 2, &out), -1);
    CHECK_INT(gp_pq_fn_check_args(GP_PQ_F_HOLT_WINTERS, bad_tf, 2, err, sizeof err), -1);
    CHECK_STR(err, "invalid trend factor. Expected: 0 < tf < 1, got: 0.000000");
    CHECK_INT(gp_pq_fn_check_args(GP_PQ_F_HOLT_WINTERS, inf_sf, 2, err, sizeof err), -1);
    CHECK_STR(err, "invalid smoothing factor. Expected: 0 < sf < 1, got: +Inf");
    CHECK_INT(gp_pq_fn_check_args(GP_PQ_F_HOLT_WINTERS, args, 2, err, sizeof err), 0);
    CHECK_INT(gp_pq_fn_check_args(GP_PQ_F_RATE, NULL, 0, err, sizeof err), 0);
}

static void test_over_time(void)
{
    double t[] = {0, 1, 2, 3}, v[] = {1, 2, 3, 4};
    CHECK_DBL(range1(GP_PQ_F_AVG_OVER_TIME, t, v, 4, 0, 3), 2.5, 1e-15);
    CHECK_DBL(range1(GP_PQ_F_SUM_OVER_TIME, t, v, 4, 0, 3), 10, 0);
    CHECK_DBL(range1(GP_PQ_F_MIN_OVER_TIME, t, v, 4, 0, 3), 1, 0);
    CHECK_DBL(range1(GP_PQ_F_MAX_OVER_TIME, t, v, 4, 0, 3), 4, 0);
    CHECK_DBL(range1(GP_PQ_F_COUNT_OVER_TIME, t, v, 4, 0, 3), 4, 0);
    CHECK_DBL(range1(GP_PQ_F_LAST_OVER_TIME, t, v, 4, 0, 3), 4, 0);
    CHECK_DBL(range1(GP_PQ_F_PRESENT_OVER_TIME, t, v, 4, 0, 3), 1, 0);
    CHECK_DBL(range1(GP_PQ_F_STDVAR_OVER_TIME, t, v, 4, 0, 3), 1.25, 1e-15);
    CHECK_DBL(range1(GP_PQ_F_STDDEV_OVER_TIME, t, v, 4, 0, 3), sqrt(1.25), 1e-15);
    double phi = 0.5, out;
    CHECK_INT(run_range(GP_PQ_F_QUANTILE_OVER_TIME, t, v, 4, 0, 3, &phi, 1, &out), 1);
    CHECK_DBL(out, 2.5, 1e-15);
    phi = 2;
    CHECK_INT(run_range(GP_PQ_F_QUANTILE_OVER_TIME, t, v, 4, 0, 3, &phi, 1, &out), 1);
    CHECK(isinf(out) && out > 0);
    phi = -1;
    CHECK_INT(run_range(GP_PQ_F_QUANTILE_OVER_TIME, t, v, 4, 0, 3, &phi, 1, &out), 1);
    CHECK(isinf(out) && out < 0);
    /* The window is the caller's: quantile_over_time sorts a copy. */
    double unsorted[] = {4, 1, 3, 2};
    phi = 0;
    CHECK_INT(run_range(GP_PQ_F_QUANTILE_OVER_TIME, t, unsorted, 4, 0, 3, &phi, 1, &out), 1);
    CHECK_DBL(out, 1, 0);
    CHECK_DBL(unsorted[0], 4, 0);
}

static void test_over_time_long_window(void)
{
    /* 1000 samples: past quantile_over_time's stack copy. */
    size_t n = 1000;
    int64_t *t = malloc(n * sizeof *t);
    double *v = malloc(n * sizeof *v);
    CHECK(t && v);
    for (size_t i = 0; i < n; i++) {
        t[i] = (int64_t)i * 1000;
        v[i] = (double)(n - 1 - i);
    }
    struct gp_pq_window w = {t, v, n, 0, 999000, 999000, 0, NULL, 0};
    double phi = 0.5, out = 0;
    CHECK_INT(gp_pq_fn_range(GP_PQ_F_QUANTILE_OVER_TIME, &w, &phi, 1, &out), 1);
    CHECK_DBL(out, 499.5, 1e-12);
    CHECK_INT(gp_pq_fn_range(GP_PQ_F_SUM_OVER_TIME, &w, NULL, 0, &out), 1);
    CHECK_DBL(out, 499500, 0);
    free(t);
    free(v);
}

static void test_over_time_numerics(void)
{
    double t[] = {0, 1, 2};
    /* Compensated: 1e100 + 1 - 1e100 is 1, as 2.42 answers (a plain sum 0). */
    double big[] = {1e100, 1, -1e100};
    CHECK_DBL(range1(GP_PQ_F_SUM_OVER_TIME, t, big, 3, 0, 2), 1, 0);
    /* An infinite mean survives finite values, not the opposite Inf. */
    double inf1[] = {INFINITY, 1, 2}, infm[] = {INFINITY, -INFINITY, 1}, nanv[] = {1, NAN, 2};
    double r = range1(GP_PQ_F_AVG_OVER_TIME, t, inf1, 3, 0, 2);
    CHECK(isinf(r) && r > 0);
    CHECK(isnan(range1(GP_PQ_F_AVG_OVER_TIME, t, infm, 3, 0, 2)));
    CHECK(isnan(range1(GP_PQ_F_AVG_OVER_TIME, t, nanv, 3, 0, 2)));
    /* Big values do not overflow the mean. */
    double huge[] = {1.7e308, 1.7e308, 1.7e308};
    CHECK_DBL(range1(GP_PQ_F_AVG_OVER_TIME, t, huge, 3, 0, 2), 1.7e308, 1e294);
    /* min/max skip NaN after the first value, and replace a NaN first. */
    double nfirst[] = {NAN, 3, 1}, nmid[] = {1, NAN, 3};
    CHECK_DBL(range1(GP_PQ_F_MIN_OVER_TIME, t, nfirst, 3, 0, 2), 1, 0);
    CHECK_DBL(range1(GP_PQ_F_MAX_OVER_TIME, t, nfirst, 3, 0, 2), 3, 0);
    CHECK_DBL(range1(GP_PQ_F_MAX_OVER_TIME, t, nmid, 3, 0, 2), 3, 0);
    CHECK(isnan(range1(GP_PQ_F_MIN_OVER_TIME, t, nfirst, 1, 0, 2)));
    CHECK(isnan(range1(GP_PQ_F_STDDEV_OVER_TIME, t, nmid, 3, 0, 2)));
}

/* Two windows at once give each window's avg_over_time bit for bit:
 * windows of every length pair up to 40 (either longer), values with
 * long fractions, NaN, both infinities and huge ones. */
static void test_avg_over_time_pairs(void)
{
    enum { N = 40 };
    int64_t t[N];
    double v[3][N];
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        t[i] = (int64_t)i * 1000;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        v[0][i] = (double)(x >> 11) / 3.0 - 1e15;
        v[1][i] = i % 7 == 3 ? INFINITY : i % 11 == 5 ? NAN : (double)(x >> 40) * 0.1;
        v[2][i] = i % 13 == 2 ? -INFINITY : i % 2 ? 1.7e308 : -1.1e308 / 3;
    }
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (size_t na = 1; na <= N; na += 3)
                for (size_t nb = 1; nb <= N; nb += 5) {
                    struct gp_pq_window wa = {t, v[a], na, 0, 60000, 60000, 0, NULL, 0};
                    struct gp_pq_window wb = {t + N - nb, v[b] + N - nb, nb, 0, 60000, 60000, 0, NULL, 0};
                    double ra, rb, oa, ob;
                    CHECK_INT(gp_pq_fn_range(GP_PQ_F_AVG_OVER_TIME, &wa, NULL, 0, &ra), 1);
                    CHECK_INT(gp_pq_fn_range(GP_PQ_F_AVG_OVER_TIME, &wb, NULL, 0, &rb), 1);
                    gp_pq_fn_avg_over_time2(&wa, &wb, &oa, &ob);
                    if (memcmp(&ra, &oa, sizeof ra) || memcmp(&rb, &ob, sizeof rb))
                        gp_test_fail(__FILE__, __LINE__, "%d/%zu %d/%zu: %.17g %.17g, pair %.17g %.17g",
                                     a, na, b, nb, ra, rb, oa, ob);
                }
}

static void test_kernel_classes(void)
{
    CHECK(gp_pq_fn_is_range_kernel(GP_PQ_F_RATE));
    CHECK(gp_pq_fn_is_range_kernel(GP_PQ_F_QUANTILE_OVER_TIME));
    CHECK(gp_pq_fn_is_range_kernel(GP_PQ_F_HOLT_WINTERS));
    CHECK(!gp_pq_fn_is_range_kernel(GP_PQ_F_ABSENT_OVER_TIME));
    CHECK(!gp_pq_fn_is_range_kernel(GP_PQ_F_ABS));
    CHECK(gp_pq_fn_is_value_kernel(GP_PQ_F_ABS));
    CHECK(gp_pq_fn_is_value_kernel(GP_PQ_F_YEAR));
    CHECK(gp_pq_fn_is_value_kernel(GP_PQ_F_CLAMP));
    CHECK(!gp_pq_fn_is_value_kernel(GP_PQ_F_PI));
    CHECK(!gp_pq_fn_is_value_kernel(GP_PQ_F_RATE));
    CHECK(!gp_pq_fn_is_value_kernel(GP_PQ_F_LABEL_REPLACE));
    /* Every function is at most one kind. */
    for (int f = 0; f < GP_PQ_F_COUNT_; f++)
        CHECK(!(gp_pq_fn_is_range_kernel((enum gp_pq_func)f) &&
                gp_pq_fn_is_value_kernel((enum gp_pq_func)f)));
}

static double val(enum gp_pq_func f, double v)
{
    return gp_pq_fn_value(f, v, NULL, 0);
}

static double val1(enum gp_pq_func f, double v, double a)
{
    return gp_pq_fn_value(f, v, &a, 1);
}

static void test_value_math(void)
{
    CHECK_DBL(val(GP_PQ_F_ABS, -2.5), 2.5, 0);
    CHECK_DBL(val(GP_PQ_F_CEIL, 1.2), 2, 0);
    CHECK_DBL(val(GP_PQ_F_FLOOR, -1.2), -2, 0);
    CHECK_DBL(val(GP_PQ_F_SQRT, 9), 3, 0);
    CHECK(isnan(val(GP_PQ_F_SQRT, -1)));
    CHECK_DBL(val(GP_PQ_F_EXP, 0), 1, 0);
    CHECK_DBL(val(GP_PQ_F_LN, M_E), 1, 1e-15);
    CHECK(isinf(val(GP_PQ_F_LN, 0)) && val(GP_PQ_F_LN, 0) < 0);
    CHECK_DBL(val(GP_PQ_F_LOG2, 8), 3, 0);
    CHECK_DBL(val(GP_PQ_F_LOG2, 10), 3.321928094887362, 1e-15);
    CHECK_DBL(val(GP_PQ_F_LOG10, 1000), 3, 0); /* 2.42: exactly 3 */
    CHECK_DBL(val(GP_PQ_F_LOG10, 0.5), -0.3010299956639812, 0);
    CHECK_DBL(val(GP_PQ_F_SGN, -3), -1, 0);
    CHECK_DBL(val(GP_PQ_F_SGN, 3), 1, 0);
    CHECK(val(GP_PQ_F_SGN, -0.0) == 0 && signbit(val(GP_PQ_F_SGN, -0.0)));
    CHECK(isnan(val(GP_PQ_F_SGN, NAN)));
    CHECK_DBL(val(GP_PQ_F_DEG, M_PI), 180, 0);
    CHECK_DBL(val(GP_PQ_F_RAD, 180), M_PI, 0);
    CHECK_DBL(gp_pq_fn_value(GP_PQ_F_PI, 0, NULL, 0), M_PI, 0);
    CHECK_DBL(val(GP_PQ_F_SIN, 0), 0, 0);
    CHECK_DBL(val(GP_PQ_F_COS, 0), 1, 0);
    CHECK_DBL(val(GP_PQ_F_TAN, M_PI / 4), 1, 1e-15);
    CHECK_DBL(val(GP_PQ_F_ASIN, 1), M_PI / 2, 1e-15);
    CHECK_DBL(val(GP_PQ_F_ACOS, 1), 0, 0);
    CHECK_DBL(val(GP_PQ_F_ATAN, 1), M_PI / 4, 1e-15);
    CHECK_DBL(val(GP_PQ_F_SINH, 0), 0, 0);
    CHECK_DBL(val(GP_PQ_F_COSH, 0), 1, 0);
    /* Go's amd64 Exp overflows from 1023.5 * ln 2 = 709.436139303104 on
     * (values read from Prometheus 2.42), Sinh/Cosh with it; the C
     * library's exp(709.5) is 1.35e308. */
    CHECK_DBL(val(GP_PQ_F_EXP, 709.4361393031039), 1.2711610061535065e+308, 1e293);
    CHECK(isinf(val(GP_PQ_F_EXP, 709.436139303104)));
    CHECK(isinf(val(GP_PQ_F_EXP, 709.5)));
    CHECK_DBL(val(GP_PQ_F_EXP, -709.5), 7.38014831401258e-309, 1e-323);
    CHECK(isinf(val(GP_PQ_F_SINH, 709.5)) && val(GP_PQ_F_SINH, 709.5) > 0);
    CHECK(isinf(val(GP_PQ_F_SINH, -709.5)) && val(GP_PQ_F_SINH, -709.5) < 0);
    CHECK(isinf(val(GP_PQ_F_COSH, -709.5)) && val(GP_PQ_F_COSH, -709.5) > 0);
    CHECK_DBL(val(GP_PQ_F_SINH, 709), 4.109203730777486e+307, 1e292);
    CHECK_DBL(val(GP_PQ_F_COSH, 30), exp(30.0) / 2, 0);
    CHECK_DBL(val(GP_PQ_F_TANH, INFINITY), 1, 0);
    CHECK_DBL(val(GP_PQ_F_ASINH, 0), 0, 0);
    CHECK_DBL(val(GP_PQ_F_ACOSH, 1), 0, 0);
    CHECK(isinf(val(GP_PQ_F_ATANH, 1)));
    CHECK(isnan(val(GP_PQ_F_ACOS, 2)));
    CHECK(isnan(val(GP_PQ_F_ABS, NAN)));
}

static void test_value_round_clamp(void)
{
    CHECK_DBL(val(GP_PQ_F_ROUND, 2.5), 3, 0); /* ties go up */
    CHECK_DBL(val(GP_PQ_F_ROUND, -2.5), -2, 0);
    CHECK_DBL(val1(GP_PQ_F_ROUND, 1.234, 0.1), 1.2, 0);
    CHECK_DBL(val1(GP_PQ_F_ROUND, 17, 5), 15, 0);
    CHECK_DBL(val1(GP_PQ_F_ROUND, 17.5, 5), 20, 0);
    CHECK(isnan(val(GP_PQ_F_ROUND, NAN)));

    double lim[] = {0, 10};
    CHECK_DBL(gp_pq_fn_value(GP_PQ_F_CLAMP, -5, lim, 2), 0, 0);
    CHECK_DBL(gp_pq_fn_value(GP_PQ_F_CLAMP, 15, lim, 2), 10, 0);
    CHECK_DBL(gp_pq_fn_value(GP_PQ_F_CLAMP, 5, lim, 2), 5, 0);
    CHECK(isnan(gp_pq_fn_value(GP_PQ_F_CLAMP, NAN, lim, 2)));
    double inverted[] = {10, 0};
    CHECK(isnan(gp_pq_fn_value(GP_PQ_F_CLAMP, 5, inverted, 2)));
    CHECK_DBL(val1(GP_PQ_F_CLAMP_MIN, -5, 0), 0, 0);
    CHECK_DBL(val1(GP_PQ_F_CLAMP_MAX, 15, 10), 10, 0);
    /* Go's Min/Max: an infinity beats NaN (2.42: clamp_max(NaN, -Inf) = -Inf). */
    CHECK(isinf(val1(GP_PQ_F_CLAMP_MAX, NAN, -INFINITY)));
    CHECK(isinf(val1(GP_PQ_F_CLAMP_MIN, NAN, INFINITY)));
    CHECK(isnan(val1(GP_PQ_F_CLAMP_MIN, NAN, 0)));
    CHECK(isnan(val1(GP_PQ_F_CLAMP_MAX, 3, NAN)));
    /* ... and +0 is above -0. */
    CHECK(!signbit(val1(GP_PQ_F_CLAMP_MIN, -0.0, 0.0)));
    CHECK(signbit(val1(GP_PQ_F_CLAMP_MAX, 0.0, -0.0)));
}

static void test_value_dates(void)
{
    /* 2000-02-29 00:00:00 UTC, a Tuesday in a leap year. */
    double leap = 951782400;
    CHECK_DBL(val(GP_PQ_F_YEAR, leap), 2000, 0);
    CHECK_DBL(val(GP_PQ_F_MONTH, leap), 2, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_MONTH, leap), 29, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_YEAR, leap), 60, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_WEEK, leap), 2, 0);
    CHECK_DBL(val(GP_PQ_F_DAYS_IN_MONTH, leap), 29, 0);
    CHECK_DBL(val(GP_PQ_F_HOUR, leap), 0, 0);
    /* Its last second; then 2100-02-01, not a leap year. */
    CHECK_DBL(val(GP_PQ_F_HOUR, 951868799), 23, 0);
    CHECK_DBL(val(GP_PQ_F_MINUTE, 951868799), 59, 0);
    CHECK_DBL(val(GP_PQ_F_DAYS_IN_MONTH, 4105123200.0), 28, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_YEAR, 4102444799.0), 365, 0); /* 2099-12-31 */
    CHECK_DBL(val(GP_PQ_F_DAYS_IN_MONTH, 0), 31, 0);
    /* Fractions truncate toward zero: -0.5 s is the epoch, -1 s is
     * 1969-12-31 23:59:59, a Wednesday. */
    CHECK_DBL(val(GP_PQ_F_YEAR, -0.5), 1970, 0);
    CHECK_DBL(val(GP_PQ_F_YEAR, -1), 1969, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_WEEK, -1), 3, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_MONTH, -1), 31, 0);
    /* Far past, as 2.42 answers. */
    CHECK_DBL(val(GP_PQ_F_YEAR, -62135596800.0 * 3), -3937, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_MONTH, -62135596800.0 * 300), 25, 0);
    /* NaN, Inf and out-of-range values: Go reads them as INT64_MIN
     * seconds, and 2.42 answers these (promtool test rules). */
    CHECK_DBL(val(GP_PQ_F_DAY_OF_MONTH, NAN), 4, 0);
    CHECK_DBL(val(GP_PQ_F_HOUR, INFINITY), 15, 0);
    CHECK_DBL(val(GP_PQ_F_MINUTE, NAN), 30, 0);
    CHECK_DBL(val(GP_PQ_F_DAY_OF_WEEK, NAN), 0, 0);
    CHECK_DBL(val(GP_PQ_F_DAYS_IN_MONTH, NAN), 31, 0);
    CHECK_DBL(val(GP_PQ_F_YEAR, -INFINITY), 292277026596.0, 0);
    CHECK_DBL(val(GP_PQ_F_YEAR, 1e300), 292277026596.0, 0);
    CHECK_DBL(val(GP_PQ_F_MONTH, -1e18), 3, 0);
}

static void test_quantile(void)
{
    double v[] = {4, 1, 3, 2};
    CHECK_DBL(gp_pq_quantile(0.5, v, 4), 2.5, 0);
    CHECK_DBL(v[0], 1, 0); /* sorted in place */
    CHECK_DBL(gp_pq_quantile(0, v, 4), 1, 0);
    CHECK_DBL(gp_pq_quantile(1, v, 4), 4, 0);
    CHECK_DBL(gp_pq_quantile(0.9, v, 4), 3.7, 1e-15);
    CHECK(isinf(gp_pq_quantile(-0.1, v, 4)) && gp_pq_quantile(-0.1, v, 4) < 0);
    CHECK(isinf(gp_pq_quantile(1.1, v, 4)) && gp_pq_quantile(1.1, v, 4) > 0);
    CHECK(isnan(gp_pq_quantile(NAN, v, 4)));
    CHECK(isnan(gp_pq_quantile(0.5, v, 0)));
    CHECK(isnan(gp_pq_quantile(-1, v, 0)));
    double one[] = {7};
    CHECK_DBL(gp_pq_quantile(0.3, one, 1), 7, 0);
    /* NaN sorts below everything. */
    double n[] = {2, NAN, 1};
    CHECK(isnan(gp_pq_quantile(0, n, 3)));
    CHECK_DBL(gp_pq_quantile(1, n, 3), 2, 0);
    CHECK_DBL(gp_pq_quantile(0.75, n, 3), 1.5, 0);
    /* v[lo]*(1-w) + v[hi]*w: an infinite neighbour at weight 0 is NaN in
     * 2.42 (quantile(0.5, {1, 2, +Inf}) answers NaN). */
    double inf[] = {1, INFINITY, 2};
    CHECK(isnan(gp_pq_quantile(0.5, inf, 3)));
    CHECK(isnan(gp_pq_quantile(1, inf, 3))); /* Inf x 1 + Inf x 0; 2.42: NaN */
    CHECK_DBL(gp_pq_quantile(0.25, inf, 3), 1.5, 0);
}

static double hq(double phi, struct gp_pq_bucket *b, size_t n)
{
    return gp_pq_histogram_quantile(phi, b, n);
}

static void test_histogram_quantile(void)
{
    /* 10 observations: 4 <= 1, 4 in (1, 2], 1 in (2, 4], 1 above. */
    struct gp_pq_bucket b[] = {{1, 4}, {2, 8}, {4, 9}, {INFINITY, 10}};
    CHECK_DBL(hq(0.5, b, 4), 1.25, 1e-15);          /* rank 5: 1 + 1 x (1/4) */
    CHECK_DBL(hq(0.2, b, 4), 0.5, 1e-15);           /* lowest bucket from 0 */
    CHECK_DBL(hq(0.85, b, 4), 2 + 2 * 0.5, 1e-15);  /* rank 8.5 in (2, 4] */
    CHECK_DBL(hq(0.95, b, 4), 4, 0);                /* in +Inf: the bound below */
    CHECK_DBL(hq(1, b, 4), 4, 0);
    CHECK_DBL(hq(0, b, 4), 0, 0);
    CHECK(isinf(hq(-1, b, 4)) && hq(-1, b, 4) < 0);
    CHECK(isinf(hq(2, b, 4)) && hq(2, b, 4) > 0);
    CHECK(isnan(hq(NAN, b, 4)));
}

static void test_histogram_quantile_disorder(void)
{
    /* Any order in; sorted by bound. */
    struct gp_pq_bucket b[] = {{INFINITY, 10}, {4, 9}, {1, 4}, {2, 8}};
    CHECK_DBL(hq(0.5, b, 4), 1.25, 1e-15);
    CHECK_DBL(b[0].upper, 1, 0);
    /* Non-monotonic counts: le=2 counted 3 < 5, raised to 5 (2.42: 0.9). */
    struct gp_pq_bucket m[] = {{1, 5}, {2, 3}, {4, 9}, {INFINITY, 10}};
    CHECK_DBL(hq(0.45, m, 4), 0.9, 1e-15);
    /* The same bound twice: counts added. */
    struct gp_pq_bucket d[] = {{1, 2}, {INFINITY, 10}, {1, 3}};
    CHECK_DBL(hq(0.2, d, 3), 0.4, 1e-15);
}

static void test_histogram_quantile_degenerate(void)
{
    struct gp_pq_bucket no_inf[] = {{1, 4}, {2, 8}};
    CHECK(isnan(hq(0.5, no_inf, 2)));
    struct gp_pq_bucket only_inf[] = {{INFINITY, 8}};
    CHECK(isnan(hq(0.5, only_inf, 1)));
    struct gp_pq_bucket empty[] = {{1, 0}, {2, 0}, {INFINITY, 0}};
    CHECK(isnan(hq(0.5, empty, 3)));
    CHECK(isnan(hq(0.5, empty, 0)));
    /* phi outside [0, 1] answers before the buckets are looked at. */
    CHECK(isinf(hq(-0.5, no_inf, 2)));
    /* A lowest bound at or below 0 is returned, not interpolated. */
    struct gp_pq_bucket neg[] = {{-1, 2}, {0, 4}, {INFINITY, 4}};
    CHECK_DBL(hq(0.25, neg, 3), -1, 0);
    CHECK_DBL(hq(0.75, neg, 3), -0.5, 1e-15); /* rank 3 in (-1, 0] */
    /* NaN counts: no bucket holds rank NaN, so it lands in +Inf and the
     * bound below is returned (2.42 answers 1 here too). */
    struct gp_pq_bucket nanb[] = {{1, NAN}, {INFINITY, NAN}};
    CHECK_DBL(hq(0.5, nanb, 2), 1, 0);
}

static double acc(enum gp_pq_aggop op, const double *v, size_t n)
{
    struct gp_pq_acc a;
    gp_pq_acc_init(&a);
    for (size_t i = 0; i < n; i++)
        gp_pq_acc_add(&a, op, v[i]);
    return gp_pq_acc_value(&a, op);
}

static void test_aggregations(void)
{
    double v[] = {1, 2, 4.1};
    CHECK_DBL(acc(GP_PQ_A_SUM, v, 3), 7.1, 1e-15);
    /* 2.42's incremental mean: 2.3666666666666663, not 7.1/3's ...67. */
    CHECK(acc(GP_PQ_A_AVG, v, 3) == 2.3666666666666663);
    CHECK(acc(GP_PQ_A_STDDEV, v, 3) == 1.2918548250050732); /* 2.42's answer */
    CHECK_DBL(acc(GP_PQ_A_STDVAR, v, 3), 1.2918548250050732 * 1.2918548250050732, 1e-14);
    CHECK_DBL(acc(GP_PQ_A_MIN, v, 3), 1, 0);
    CHECK_DBL(acc(GP_PQ_A_MAX, v, 3), 4.1, 0);
    CHECK_DBL(acc(GP_PQ_A_COUNT, v, 3), 3, 0);
    CHECK_DBL(acc(GP_PQ_A_GROUP, v, 3), 1, 0);
    /* A plain sum, uncompensated, as 2.42's engine adds. */
    double big[] = {1e100, 1, -1e100};
    CHECK_DBL(acc(GP_PQ_A_SUM, big, 3), 0, 0);
    /* One sample: its value, -0 kept; spread 0 even for Inf. */
    double nz[] = {-0.0}, inf[] = {INFINITY};
    CHECK(signbit(acc(GP_PQ_A_SUM, nz, 1)));
    CHECK_DBL(acc(GP_PQ_A_STDVAR, inf, 1), 0, 0);
    CHECK(isinf(acc(GP_PQ_A_AVG, inf, 1)));
}

static void test_aggregations_inf_nan(void)
{
    double inf_fin[] = {INFINITY, 1, 2}, inf_opp[] = {INFINITY, -INFINITY},
           fin_inf[] = {1, INFINITY}, nanv[] = {1, NAN, 3};
    CHECK(isinf(acc(GP_PQ_A_AVG, inf_fin, 3)) && acc(GP_PQ_A_AVG, inf_fin, 3) > 0);
    CHECK(isnan(acc(GP_PQ_A_AVG, inf_opp, 2)));
    CHECK(isinf(acc(GP_PQ_A_AVG, fin_inf, 2)));
    CHECK(isnan(acc(GP_PQ_A_AVG, nanv, 3)));
    CHECK(isnan(acc(GP_PQ_A_SUM, nanv, 3)));
    CHECK(isnan(acc(GP_PQ_A_STDDEV, nanv, 3)));
    /* The mean of huge values does not overflow, though their sum does. */
    double huge[] = {1.5e308, 1.5e308, 1.5e308};
    CHECK_DBL(acc(GP_PQ_A_AVG, huge, 3), 1.5e308, 1e294);
    CHECK(isinf(acc(GP_PQ_A_SUM, huge, 3)));
    /* min/max: a NaN first is replaced, a later NaN ignored. */
    double nfirst[] = {NAN, 3, 1};
    CHECK_DBL(acc(GP_PQ_A_MIN, nfirst, 3), 1, 0);
    CHECK_DBL(acc(GP_PQ_A_MAX, nfirst, 3), 3, 0);
    CHECK_DBL(acc(GP_PQ_A_MAX, nanv, 3), 3, 0);
}

const struct gp_test gp_tests_promql_fn[] = {
    {"rate_samples_cover_window", test_rate_samples_cover_window},
    {"rate_extrapolates_to_near_ends", test_rate_extrapolates_to_near_ends},
    {"rate_far_ends_get_half_an_interval", test_rate_far_ends_get_half_an_interval},
    {"rate_counter_clipped_at_zero", test_rate_counter_clipped_at_zero},
    {"rate_zero_point_before_threshold", test_rate_zero_point_before_threshold},
    {"rate_counter_resets", test_rate_counter_resets},
    {"rate_needs_two_samples", test_rate_needs_two_samples},
    {"rate_nan_and_inf", test_rate_nan_and_inf},
    {"irate_idelta", test_irate_idelta},
    {"deriv_predict_linear", test_deriv_predict_linear},
    {"changes_resets_nan", test_changes_resets_nan},
    {"holt_winters", test_holt_winters},
    {"over_time", test_over_time},
    {"over_time_long_window", test_over_time_long_window},
    {"over_time_numerics", test_over_time_numerics},
    {"avg_over_time_pairs", test_avg_over_time_pairs},
    {"kernel_classes", test_kernel_classes},
    {"value_math", test_value_math},
    {"value_round_clamp", test_value_round_clamp},
    {"value_dates", test_value_dates},
    {"quantile", test_quantile},
    {"histogram_quantile", test_histogram_quantile},
    {"histogram_quantile_disorder", test_histogram_quantile_disorder},
    {"histogram_quantile_degenerate", test_histogram_quantile_degenerate},
    {"aggregations", test_aggregations},
    {"aggregations_inf_nan", test_aggregations_inf_nan},
    {0},
};
