/*
 * test_promql_select.c - the instant vector selector's step cursor
 * (gp_pq_first_past: a guess that a step moves as many samples as the
 * one before, then a gallop and a binary search) against a plain binary
 * search from the start of the samples, alone and through range queries
 * over a real store: steps shorter and longer than the sample interval,
 * gaps longer than the lookback, bursts of 1 ms, steps landing exactly
 * on the lookback's edge, offsets both ways, Prometheus 3 windows.
 */
/* the test library's tree builders this file does not need */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "promql_testlib.h"
#include "test_rng.h"

#include <math.h>

static struct gp_test_rng rng;

static uint64_t rnd(void) { return gp_test_rnd(&rng); }

static int64_t rnd_in(int64_t lo, int64_t hi) { return gp_test_rnd_in(&rng, lo, hi); }

/* The reference: the first of t[0..n) past at, by bisection of all. */
static size_t upper_bound(const int64_t *t, size_t n, int64_t at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

enum { SHAPES = 5 };

/* n increasing times from t0 in one of the shapes: 1 s exactly, 1 s with
 * jitter, bursts and gaps longer than the lookback, 15 s, random. */
static void make_times(int shape, int64_t t0, size_t n, int64_t *t)
{
    int64_t x = t0;
    for (size_t i = 0; i < n; i++) {
        switch (shape) {
        case 0: x += 1000; break;
        case 1: x += 1000 + rnd_in(-5, 5); break;
        case 2: x += i % 40 == 39 ? 7 * MIN : i % 11 < 3 ? 1 : 1000; break;
        case 3: x += 15000; break;
        default: x += rnd_in(1, 90000); break;
        }
        t[i] = x;
    }
}

/* The cursor as the selector drives it (hint: the last move), and with
 * hints that are wrong in every way, against bisection at every step. */
static void test_cursor_matches_bisection(void)
{
    rng.state = 42;
    enum { NMAX = 700 };
    static const int64_t steps[] = {1, 250, 999, 1000, 1001, 4321, 15000, 61000, 600000};
    int64_t t[NMAX];
    size_t checked = 0, guessed = 0;
    for (int round = 0; round < 400; round++) {
        size_t n = (size_t)rnd_in(0, NMAX);
        make_times(round % SHAPES, T0, n, t);
        int64_t step = steps[(size_t)round % (sizeof steps / sizeof steps[0])];
        int64_t at = T0 - rnd_in(0, 2 * MIN);
        size_t p = 0, moved = 0;
        for (size_t k = 0; k < 3000 && (n == 0 || at <= t[n - 1] + 10 * step); k++, at += step) {
            size_t want = upper_bound(t, n, at);
            size_t q = gp_pq_first_past(t, p, n, at, moved);
            if (q != want)
                gp_test_fail(__FILE__, __LINE__, "shape %d n %zu step %lld at +%lld: %zu, bisection %zu",
                             round % SHAPES, n, (long long)step, (long long)(at - T0), q, want);
            guessed += moved > 0 && q - p == moved;
            /* Any hint gives the same answer. */
            size_t bad[] = {0, 1, moved + 1, moved ? moved - 1 : 2, moved + 4, moved + 5,
                            moved > 4 ? moved - 4 : 3, moved > 5 ? moved - 5 : 4, n - p, n - p + 1,
                            (size_t)rnd_in(0, NMAX)};
            for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                CHECK_INT(gp_pq_first_past(t, p, n, at, bad[i]), want);
            moved = q - p;
            p = q;
            checked++;
        }
    }
    printf("cursor: %zu steps checked, %zu taken by the guess\n", checked, guessed);
    CHECK(checked > 100000 && guessed > 10000);
}

/* What a 2.42 instant selector answers at step time st from the
 * samples t, v: 1 and *out, or 0 for no point. */
static int reference_at(const int64_t *t, const double *v, size_t n, int64_t st, int64_t offset,
                        int64_t lb, int prom3, double *out)
{
    int64_t at = st - offset;
    size_t i = upper_bound(t, n, at);
    if (i == 0)
        return 0;
    int64_t ts = t[i - 1];
    if (prom3 ? ts <= at - lb : ts < at - lb)
        return 0;
    if (gp_f64_bits(v[i - 1]) == GP_STALE_NAN_BITS)
        return 0;
    *out = v[i - 1];
    return 1;
}

/* A range query of sel (offset off) against reference_at at every step. */
static void check_range(struct gp_storage *s, const char *sel, const int64_t *t, const double *v,
                        size_t n, int64_t start, int64_t end, int64_t step, int64_t off,
                        const struct gp_promql_limits *lim)
{
    struct gp_pq_node *e = V(sel);
    if (off)
        e = OFFSET(e, off);
    struct gp_promql_result r;
    char err[256] = "";
    if (gp_promql_range(s, e, start, end, step, lim, &r, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "range %s: %s", sel, err);
    CHECK(r.n <= 1);
    int64_t lb = lim && lim->lookback_ms ? lim->lookback_ms : 5 * MIN;
    int prom3 = lim && lim->prom3_windows;
    size_t k = 0;
    for (int64_t st = start; st <= end; st += step) {
        double want;
        int has = reference_at(t, v, n, st, off, lb, prom3, &want);
        int got = r.n == 1 && k < r.series[0].n && r.series[0].t[k] == st;
        if (has != got || (has && gp_f64_bits(want) != gp_f64_bits(r.series[0].v[k])))
            gp_test_fail(__FILE__, __LINE__,
                         "%s step %lld offset %lld lookback %lld at +%lld ms: got %d %g, want %d %g", sel,
                         (long long)step, (long long)off, (long long)lb, (long long)(st - start), got,
                         got ? r.series[0].v[k] : 0.0, has, has ? want : 0.0);
        k += got;
    }
    CHECK_INT(k, r.n ? r.series[0].n : 0);
    gp_promql_result_free(&r);
    gp_promql_free(e);
}

/* Range queries over series of every shape (stale markers among them)
 * against the reference, with grids that start before the data, end
 * after it, and land on the samples and the lookback's edge. */
static void test_range_selector_matches_bisection(void)
{
    rng.state = 7;
    struct gp_storage *s = pt_open();
    enum { NS = 10, NMAX = 900 };
    static int64_t t[NS][NMAX];
    static double v[NS][NMAX];
    size_t n[NS];
    char sel[NS][32];
    for (int i = 0; i < NS; i++) {
        n[i] = (size_t)rnd_in(1, NMAX);
        make_times(i % SHAPES, T0, n[i], t[i]);
        for (size_t k = 0; k < n[i]; k++)
            v[i][k] = k % 53 == 52 ? STALE : (double)rnd_in(-1000, 1000) / 8;
        snprintf(sel[i], sizeof sel[i], "rs%d", i);
        pt_add(s, sel[i], n[i], t[i], v[i]);
    }
    static const int64_t steps[] = {250, 1000, 1001, 4321, 15000, 61000};
    static const int64_t offs[] = {0, MIN, -30000, 4321};
    const struct gp_promql_limits lims[] = {{0}, {.lookback_ms = 30000}, {.prom3_windows = 1}};
    for (int i = 0; i < NS; i++) {
        int64_t last = t[i][n[i] - 1];
        for (size_t a = 0; a < sizeof steps / sizeof steps[0]; a++)
            for (size_t b = 0; b < sizeof offs / sizeof offs[0]; b++)
                for (size_t c = 0; c < sizeof lims / sizeof lims[0]; c++) {
                    int64_t step = steps[a];
                    /* 1 s steps from T0 land on the 1 s samples and on
                     * their lookback's edge (offsets of whole seconds) */
                    int64_t start = step == 1000 ? T0 - 7 * MIN : T0 - rnd_in(0, 6 * MIN);
                    int64_t end = last + 8 * MIN;
                    if ((end - start) / step > 10000)
                        end = start + 10000 * step;
                    check_range(s, sel[i], t[i], v[i], n[i], start, end, step, offs[b], &lims[c]);
                }
    }
    gp_storage_close(s);
}

const struct gp_test gp_tests_promql_select[] = {
    {"cursor_matches_bisection", test_cursor_matches_bisection},
    {"range_selector_matches_bisection", test_range_selector_matches_bisection},
    {0},
};
