/*
 * test_eval.c - range evaluation (query/eval.h) against a brute-force
 * reading of its definition, on hand-made cases and on random data with a
 * fixed seed; the rollup path against the raw path; group aggregation.
 */
#include "ingest/remote_write.h"
#include "lib/bits.h"
#include "lib/err.h"
#include "query/eval.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define LB GP_QUERY_LOOKBACK_MS

static double stale(void)
{
    return gp_bits_f64(GP_STALE_NAN_BITS);
}

/* Same double, NaN equal to NaN. */
static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    /* xorshift64*: a fixed seed, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}
static int64_t rnd_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* The definition, read literally: one scan of all samples per step. */
static void brute_raw(const struct gp_eval_range *r, enum gp_eval_mode mode, const int64_t *t,
                      const double *v, size_t n, double *val, uint8_t *has)
{
    for (size_t k = 0; k < r->npoints; k++) {
        int64_t tk = r->start_ms + (int64_t)k * r->step_ms;
        double sum = 0, mn = NAN, mx = NAN;
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (t[i] <= tk - r->step_ms || t[i] > tk || gp_eval_is_stale(v[i]))
                continue;
            sum += v[i];
            if (isnan(mn) || v[i] < mn)
                mn = v[i];
            if (isnan(mx) || v[i] > mx)
                mx = v[i];
            c++;
        }
        has[k] = 0;
        val[k] = 0;
        if (c) {
            has[k] = 1;
            val[k] = mode == GP_EVAL_MEAN ? sum / (double)c : mode == GP_EVAL_MIN ? mn : mx;
            continue;
        }
        for (size_t i = n; i-- > 0;) {
            if (t[i] > tk)
                continue;
            if (t[i] > tk - LB && !gp_eval_is_stale(v[i])) {
                has[k] = 1;
                val[k] = v[i];
            }
            break;
        }
    }
}

static void check_grid(const char *what, size_t npoints, const double *va, const uint8_t *ha,
                       const double *vb, const uint8_t *hb, double tol)
{
    for (size_t k = 0; k < npoints; k++) {
        if (ha[k] != hb[k])
            gp_test_fail(__FILE__, __LINE__, "%s: step %zu: has %d vs %d", what, k, ha[k], hb[k]);
        if (!ha[k])
            continue;
        int ok = same(va[k], vb[k]) || fabs(va[k] - vb[k]) <= tol;
        if (!ok)
            gp_test_fail(__FILE__, __LINE__, "%s: step %zu: %.17g vs %.17g", what, k, va[k], vb[k]);
    }
}

static void test_range_checks(void)
{
    struct gp_eval_range r;
    char err[256];
    CHECK_INT(gp_eval_range_init(&r, 0, 3600000, 15000, err, sizeof err), GP_OK);
    CHECK_INT(r.npoints, 241);
    CHECK_INT(gp_eval_range_init(&r, 1000, 1000, 1, err, sizeof err), GP_OK);
    CHECK_INT(r.npoints, 1);
    CHECK_INT(gp_eval_range_init(&r, 0, 10, 3, err, sizeof err), GP_OK);
    CHECK_INT(r.npoints, 4); /* 0, 3, 6, 9 */
    CHECK_INT(gp_eval_range_init(&r, 0, 11000, 1, err, sizeof err), GP_OK);
    CHECK_INT(r.npoints, 11001);
    CHECK_INT(gp_eval_range_init(&r, 0, 11001, 1, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "exceeded maximum resolution of 11,000 points per timeseries");
    CHECK_INT(gp_eval_range_init(&r, 10, 0, 1, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "end timestamp must not be before start time");
    CHECK_INT(gp_eval_range_init(&r, 0, 10, 0, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "zero or negative query resolution step");
    CHECK_INT(gp_eval_range_init(&r, INT64_MIN, INT64_MAX, 1, err, sizeof err), GP_EUSAGE);
}

static void test_window_mean_min_max(void)
{
    /* Samples at 1..10 s, value = second. Steps at 5 s and 10 s, step 5 s. */
    int64_t t[10];
    double v[10];
    for (int i = 0; i < 10; i++) {
        t[i] = (i + 1) * 1000;
        v[i] = i + 1;
    }
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 5000, 10000, 5000, NULL, 0), GP_OK);
    double val[2];
    uint8_t has[2];
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 10, val, has), 2);
    CHECK_DBL(val[0], 3, 0); /* (0, 5]: 1..5 */
    CHECK_DBL(val[1], 8, 0); /* (5, 10]: 6..10 */
    gp_eval_raw(&r, GP_EVAL_MIN, t, v, 10, val, has);
    CHECK_DBL(val[0], 1, 0);
    CHECK_DBL(val[1], 6, 0);
    gp_eval_raw(&r, GP_EVAL_MAX, t, v, 10, val, has);
    CHECK_DBL(val[0], 5, 0);
    CHECK_DBL(val[1], 10, 0);
    /* Empty input: nothing anywhere. */
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 0, val, has), 0);
    CHECK_INT(has[0] + has[1], 0);
}

static void test_lookback(void)
{
    /* One sample at 100 s. Steps every 60 s from 0 to 600 s, step 10 s:
     * windows are empty except at 100 s... none is at 100 s, so every
     * value is the lookback: present in (100, 400], absent after. */
    int64_t t[] = {100000};
    double v[] = {42};
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 0, 600000, 60000, NULL, 0), GP_OK);
    double val[11];
    uint8_t has[11];
    /* step 60 s: the window (60, 120] holds it at 120 s. */
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 1, val, has), 5);
    CHECK_INT(has[0], 0);
    CHECK_INT(has[1], 0);
    for (int k = 2; k <= 6; k++) {
        CHECK_INT(has[k], 1); /* 120 .. 360 s: window, then lookback */
        CHECK_DBL(val[k], 42, 0);
    }
    CHECK_INT(has[7], 0); /* 420 s: 100 s is more than 5 minutes old */
    /* Exactly 5 minutes later is outside (t - 5m, t]. */
    int64_t t2[] = {0};
    CHECK_INT(gp_eval_range_init(&r, 300000, 300000, 1000, NULL, 0), GP_OK);
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t2, v, 1, val, has), 0);
    CHECK_INT(gp_eval_range_init(&r, 299999, 299999, 1000, NULL, 0), GP_OK);
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t2, v, 1, val, has), 1);
    /* A step larger than the lookback still sees its whole window. */
    CHECK_INT(gp_eval_range_init(&r, 3600000, 3600000, 3600000, NULL, 0), GP_OK);
    int64_t t3[] = {1, 1800000};
    double v3[] = {1, 3};
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t3, v3, 2, val, has), 1);
    CHECK_DBL(val[0], 2, 0);
}

static void test_stale_marker(void)
{
    /* 1, 2, 3 at 1..3 s, stale at 4 s, then nothing until 20 s. */
    int64_t t[] = {1000, 2000, 3000, 4000, 20000};
    double v[] = {1, 2, 3, stale(), 7};
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 2000, 22000, 2000, NULL, 0), GP_OK);
    double val[11];
    uint8_t has[11];
    gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 5, val, has);
    CHECK_INT(has[0], 1); /* 2 s: (0, 2] = 1, 2 */
    CHECK_DBL(val[0], 1.5, 0);
    CHECK_INT(has[1], 1); /* 4 s: (2, 4] = 3 and the marker, skipped */
    CHECK_DBL(val[1], 3, 0);
    for (int k = 2; k <= 8; k++)
        CHECK_INT(has[k], 0); /* 6..18 s: newest is the marker: ended */
    CHECK_INT(has[9], 1);     /* 20 s: back */
    CHECK_DBL(val[9], 7, 0);
    CHECK_INT(has[10], 1);    /* 22 s: lookback */
    /* A window holding only the marker: the series ended there. */
    CHECK_INT(gp_eval_range_init(&r, 5000, 5000, 2000, NULL, 0), GP_OK);
    CHECK_INT(gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 5, val, has), 0);
}

static void test_nan_values(void)
{
    int64_t t[] = {1000, 2000, 3000};
    double v[] = {NAN, 5, 1};
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 3000, 3000, 3000, NULL, 0), GP_OK);
    double val[1];
    uint8_t has[1];
    gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 3, val, has);
    CHECK(has[0] && isnan(val[0])); /* NaN propagates through a mean */
    gp_eval_raw(&r, GP_EVAL_MIN, t, v, 3, val, has);
    CHECK_DBL(val[0], 1, 0); /* and is ignored by min/max */
    gp_eval_raw(&r, GP_EVAL_MAX, t, v, 3, val, has);
    CHECK_DBL(val[0], 5, 0);
    double all_nan[] = {NAN, NAN, NAN};
    gp_eval_raw(&r, GP_EVAL_MAX, t, all_nan, 3, val, has);
    CHECK(has[0] && isnan(val[0]));
    double inf[] = {INFINITY, -INFINITY, 1};
    gp_eval_raw(&r, GP_EVAL_MEAN, t, inf, 3, val, has);
    CHECK(isnan(val[0]));
    gp_eval_raw(&r, GP_EVAL_MAX, t, inf, 3, val, has);
    CHECK(isinf(val[0]) && val[0] > 0);
}

/* Random series: gaps of every size (some longer than the lookback),
 * occasional stale markers and NaN, integer and fractional values. */
static size_t random_series(int64_t *t, double *v, size_t cap, int64_t t0, int with_nan)
{
    size_t n = 0;
    int64_t now = t0;
    while (n < cap) {
        uint64_t kind = rnd() % 100;
        now += kind < 80 ? rnd_in(1, 3000) : kind < 95 ? rnd_in(3000, 120000) : rnd_in(120000, 900000);
        t[n] = now;
        uint64_t vk = rnd() % 100;
        if (with_nan && vk < 3)
            v[n] = stale();
        else if (with_nan && vk < 5)
            v[n] = NAN;
        else if (vk < 50)
            v[n] = (double)rnd_in(-1000, 1000);
        else
            v[n] = (double)rnd_in(-1000000, 1000000) / 7.0;
        n++;
    }
    return n;
}

static void test_property_raw(void)
{
    enum { CAP = 3000, MAXP = 2000 };
    int64_t *t = malloc(CAP * sizeof *t);
    double *v = malloc(CAP * sizeof *v), *va = malloc(MAXP * sizeof *va), *vb = malloc(MAXP * sizeof *vb);
    uint8_t *ha = malloc(MAXP), *hb = malloc(MAXP);
    CHECK(t && v && va && vb && ha && hb);
    for (int round = 0; round < 300; round++) {
        size_t n = random_series(t, v, (size_t)rnd_in(0, CAP), rnd_in(-5000000, 5000000), 1);
        int64_t span = n ? t[n - 1] - t[0] : 100000;
        int64_t step = rnd() % 4 == 0 ? rnd_in(1, 1000) : rnd_in(1000, 700000);
        int64_t start = (n ? t[0] : 0) + rnd_in(-1000000, span > 0 ? span : 1);
        int64_t end = start + rnd_in(0, span + 1000000);
        if ((end - start) / step >= MAXP)
            end = start + step * (MAXP - 1);
        struct gp_eval_range r;
        CHECK_INT(gp_eval_range_init(&r, start, end, step, NULL, 0), GP_OK);
        for (int mode = GP_EVAL_MEAN; mode <= GP_EVAL_MAX; mode++) {
            size_t found = gp_eval_raw(&r, (enum gp_eval_mode)mode, t, v, n, va, ha);
            brute_raw(&r, (enum gp_eval_mode)mode, t, v, n, vb, hb);
            size_t want = 0;
            for (size_t k = 0; k < r.npoints; k++)
                want += hb[k];
            CHECK_INT(found, want);
            check_grid("raw vs brute force", r.npoints, va, ha, vb, hb, 0);
        }
    }
    free(t);
    free(v);
    free(va);
    free(vb);
    free(ha);
    free(hb);
}

/* Rollups as the store defines them (minute [m, m+1m), stale markers
 * left out), built from raw samples. */
static size_t make_rollups(const int64_t *t, const double *v, size_t n, struct gp_rollup *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (gp_eval_is_stale(v[i]))
            continue;
        int64_t minute = t[i] - (((t[i] % 60000) + 60000) % 60000);
        if (m == 0 || out[m - 1].t != minute) {
            out[m] = (struct gp_rollup){minute, v[i], v[i], 0, 0};
            m++;
        }
        struct gp_rollup *ru = &out[m - 1];
        if (v[i] < ru->min)
            ru->min = v[i];
        if (v[i] > ru->max)
            ru->max = v[i];
        ru->sum += v[i];
        ru->count++;
    }
    return m;
}

static void test_rollups_equal_raw(void)
{
    enum { CAP = 6000, MAXP = 800 };
    int64_t *t = malloc(CAP * sizeof *t);
    double *v = malloc(CAP * sizeof *v), *va = malloc(MAXP * sizeof *va), *vb = malloc(MAXP * sizeof *vb);
    uint8_t *ha = malloc(MAXP), *hb = malloc(MAXP);
    struct gp_rollup *ru = malloc(CAP * sizeof *ru);
    CHECK(t && v && va && vb && ha && hb && ru);
    for (int round = 0; round < 200; round++) {
        /* Dense (many samples a minute, windows never empty) or sparse (at
         * most one sample a minute, so a minute's mean is its sample and
         * the lookback agrees too); never on a minute boundary. */
        int sparse = round % 2;
        size_t n = 0;
        int64_t now = rnd_in(0, 1000) * 60000 + rnd_in(1, 59999);
        size_t want = (size_t)(sparse ? rnd_in(1, 200) : rnd_in(2000, CAP));
        while (n < want) {
            t[n] = now;
            v[n] = rnd() % 2 ? (double)rnd_in(0, 100) : (double)rnd_in(-100000, 100000) / 3.0;
            n++;
            now += sparse ? rnd_in(61000, 400000) : rnd_in(500, 20000);
            if (now % 60000 == 0)
                now++;
        }
        size_t nr = make_rollups(t, v, n, ru);
        int64_t step = 60000 * rnd_in(1, 10);
        int64_t start = (t[0] / 60000 + rnd_in(-10, 10)) * 60000;
        int64_t end = start + step * rnd_in(0, MAXP - 1);
        /* Dense data: stop while windows still reach the last sample; after
         * it the raw lookback repeats that sample, the rollup one its
         * minute's mean (eval.h). */
        if (!sparse && end >= t[n - 1] + step)
            end = start + (t[n - 1] + step - 1 - start) / step * step;
        struct gp_eval_range r;
        CHECK_INT(gp_eval_range_init(&r, start, end, step, NULL, 0), GP_OK);
        for (int mode = GP_EVAL_MEAN; mode <= GP_EVAL_MAX; mode++) {
            gp_eval_raw(&r, (enum gp_eval_mode)mode, t, v, n, va, ha);
            gp_eval_rollups(&r, (enum gp_eval_mode)mode, ru, nr, vb, hb);
            /* Means are summed in another order: equal up to rounding. */
            check_grid("rollups vs raw", r.npoints, vb, hb, va, ha, mode == GP_EVAL_MEAN ? 1e-7 : 0);
        }
    }
    free(t);
    free(v);
    free(va);
    free(vb);
    free(ha);
    free(hb);
    free(ru);
}

static void test_rollup_boundary(void)
{
    /* A sample exactly on a minute boundary belongs to the minute it
     * starts: the raw window (0, 60s] holds it, the rollup window
     * [0, 60s) does not (eval.h says so). */
    int64_t t[] = {30000, 60000};
    double v[] = {1, 3};
    struct gp_rollup ru[] = {{0, 1, 1, 1, 1}, {60000, 3, 3, 3, 1}};
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 60000, 120000, 60000, NULL, 0), GP_OK);
    double val[2];
    uint8_t has[2];
    gp_eval_raw(&r, GP_EVAL_MEAN, t, v, 2, val, has);
    CHECK_DBL(val[0], 2, 0);
    CHECK_DBL(val[1], 3, 0); /* lookback */
    gp_eval_rollups(&r, GP_EVAL_MEAN, ru, 2, val, has);
    CHECK_DBL(val[0], 1, 0);
    CHECK_DBL(val[1], 3, 0);
    /* Lookback over rollups: a minute that starts 5 minutes back counts,
     * one that starts earlier does not. */
    CHECK_INT(gp_eval_range_init(&r, 360000, 420000, 60000, NULL, 0), GP_OK);
    gp_eval_rollups(&r, GP_EVAL_MAX, ru, 2, val, has);
    CHECK_INT(has[0], 1); /* 360 s: minute 60 s starts at 360 - 300 */
    CHECK_DBL(val[0], 3, 0);
    CHECK_INT(has[1], 0);
}

static void test_groups(void)
{
    /* Three series over four steps; NaN and gaps. */
    const double val[3][4] = {{1, NAN, 5, 0}, {3, 2, NAN, 0}, {-1, 4, NAN, 0}};
    const uint8_t has[3][4] = {{1, 1, 1, 0}, {1, 1, 1, 0}, {1, 0, 1, 0}};
    static const struct {
        enum gp_agg agg;
        double want[4];
        int has[4];
    } cases[] = {
        {GP_AGG_AVG, {1, NAN, NAN, 0}, {1, 1, 1, 0}},
        {GP_AGG_SUM, {3, NAN, NAN, 0}, {1, 1, 1, 0}},
        {GP_AGG_MIN, {-1, 2, 5, 0}, {1, 1, 1, 0}},
        {GP_AGG_MAX, {3, 2, 5, 0}, {1, 1, 1, 0}},
        {GP_AGG_COUNT, {3, 2, 3, 0}, {1, 1, 1, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct gp_eval_groups g;
        CHECK_INT(gp_eval_groups_init(&g, cases[c].agg, 2, 4), GP_OK);
        for (int s = 0; s < 3; s++)
            gp_eval_groups_add(&g, 1, val[s], has[s]); /* group 1; group 0 stays empty */
        for (size_t k = 0; k < 4; k++) {
            double x = -99;
            CHECK_INT(gp_eval_groups_get(&g, 0, k, &x), 0);
            int got = gp_eval_groups_get(&g, 1, k, &x);
            CHECK_INT(got, cases[c].has[k]);
            if (got && !same(x, cases[c].want[k]))
                gp_test_fail(__FILE__, __LINE__, "agg %d step %zu: %g, want %g", cases[c].agg, k, x,
                             cases[c].want[k]);
        }
        gp_eval_groups_free(&g);
        gp_eval_groups_free(&g);
    }
    /* All-NaN min stays NaN. */
    struct gp_eval_groups g;
    const double nanv[1] = {NAN};
    const uint8_t one[1] = {1};
    CHECK_INT(gp_eval_groups_init(&g, GP_AGG_MIN, 1, 1), GP_OK);
    gp_eval_groups_add(&g, 0, nanv, one);
    gp_eval_groups_add(&g, 0, nanv, one);
    double x = 0;
    CHECK_INT(gp_eval_groups_get(&g, 0, 0, &x), 1);
    CHECK(isnan(x));
    gp_eval_groups_free(&g);
    gp_eval_groups_free(NULL);
    CHECK_INT(gp_eval_groups_init(&g, GP_AGG_SUM, (size_t)1 << 62, 16), GP_ENOMEM);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The benchmark shape: 512 series of 1 s samples over an hour,
 * 15 s steps, avg by one of 64 hosts. Under ASan this must stay well
 * below a second (it takes milliseconds in a release build). */
static void test_speed(void)
{
    enum { SERIES = 512, N = 3600 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc((size_t)SERIES * N * sizeof *v);
    CHECK(t && v);
    for (int i = 0; i < N; i++)
        t[i] = (int64_t)i * 1000 + 1000;
    for (size_t i = 0; i < (size_t)SERIES * N; i++)
        v[i] = (double)(rnd() % 1000) / 10.0;
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, 0, 3600000, 15000, NULL, 0), GP_OK);
    double val[241];
    uint8_t has[241];
    struct gp_eval_groups g;
    double t0 = now_s();
    CHECK_INT(gp_eval_groups_init(&g, GP_AGG_AVG, 64, r.npoints), GP_OK);
    for (int s = 0; s < SERIES; s++) {
        gp_eval_raw(&r, GP_EVAL_MEAN, t, v + (size_t)s * N, N, val, has);
        gp_eval_groups_add(&g, (size_t)s % 64, val, has);
    }
    double dt = now_s() - t0;
    double x;
    CHECK_INT(gp_eval_groups_get(&g, 5, 240, &x), 1);
    CHECK(x >= 0 && x <= 99.9);
    gp_eval_groups_free(&g);
    fprintf(stderr, "eval: 512 series x 3600 samples, 241 steps, 64 groups: %.2f ms\n", dt * 1e3);
    CHECK(dt < 1.0);
    free(t);
    free(v);
}

const struct gp_test gp_tests_eval[] = {
    {"range_checks", test_range_checks},
    {"window_mean_min_max", test_window_mean_min_max},
    {"lookback", test_lookback},
    {"stale_marker", test_stale_marker},
    {"nan_values", test_nan_values},
    {"property_raw", test_property_raw},
    {"rollups_equal_raw", test_rollups_equal_raw},
    {"rollup_boundary", test_rollup_boundary},
    {"groups", test_groups},
    {"speed", test_speed},
    {0},
};
