/*
 * promql_fn.c - the numbers of PromQL's functions and aggregations, as
 * Prometheus 2.42 computes them for float samples (promql_fn.h).
 *
 * Each kernel follows 2.42's promql/functions.go, quantile.go and
 * engine.go step for step, because the differential test compares our
 * answers with 2.42's within 1e-9 and several of its choices change
 * results visibly:
 *   - rate/increase/delta extrapolate to the window's ends only when the
 *     first/last sample is within 1.1 average intervals of them (else by
 *     half an interval), and a counter's start is clipped at its
 *     extrapolated zero point *before* that threshold test (2.42's order;
 *     later versions swapped it);
 *   - sum_over_time, avg_over_time, stddev/stdvar_over_time and the linear
 *     regression of deriv/predict_linear use Neumaier-compensated sums;
 *     the sum/avg/stddev/stdvar aggregations do not (2.42's engine adds
 *     plainly and keeps avg as an incremental mean, no overflow switch);
 *   - quantile sorts NaN below everything and interpolates with
 *     v[lo]*(1-w) + v[hi]*w, so an Inf neighbour gives NaN as in Go;
 *   - the date functions convert the value with Go's int64() (NaN, +-Inf
 *     and out-of-range values become INT64_MIN on amd64) and then do Go
 *     1.19's calendar arithmetic on uint64, wrap-around included, so even
 *     day_of_month(vector(NaN)) answers 2.42's 4;
 *   - log2/log10 are Go's: log2 from frexp (exact for powers of two),
 *     log10 as log2(x) * log10(2).
 * Transcendental functions come from libm; they may differ from Go's in
 * the last bit, well inside the tolerance.
 */
#include "query/promql_fn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- compensated summation (functions.go's kahanSumInc) ---- */

/* Neumaier's variant: the compensation takes the smaller operand's lost
 * bits, whichever of the two it is. */
static void kahan_inc(double inc, double *sum, double *c)
{
    double t = *sum + inc;
    if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

/* ---- Go's math.Min / math.Max (Inf wins over NaN; signed zeros) ---- */

static double go_max(double x, double y)
{
    if (isinf(x) && x > 0)
        return x;
    if (isinf(y) && y > 0)
        return y;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0 && x == y)
        return signbit(x) ? y : x;
    return x > y ? x : y;
}

static double go_min(double x, double y)
{
    if (isinf(x) && x < 0)
        return x;
    if (isinf(y) && y < 0)
        return y;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0 && x == y)
        return signbit(x) ? x : y;
    return x < y ? x : y;
}

/* ---- range kernels ---- */

/* extrapolatedRate: the change over the window, counter resets added back
 * for counters, scaled up to the window where the samples reach close to
 * its ends. */
static int extrapolated_rate(const struct gp_pq_window *w, int is_counter, int is_rate,
                             double *out)
{
    size_t n = w->n;
    if (n < 2)
        return 0;
    double first = w->v[0];
    double result = w->v[n - 1] - first;
    if (is_counter && w->counter_hint == 2) {
        for (size_t i = 0; i < w->nresets; i++) /* the scan's additions, in its order */
            result += w->resets[i];
    } else if (is_counter && !w->counter_hint) {
        double prev = first;
        for (size_t i = 1; i < n; i++) {
            if (w->v[i] < prev)
                result += prev;
            prev = w->v[i];
        }
    }
    double to_start = (double)(w->t[0] - w->start_ms) / 1000;
    double to_end = (double)(w->end_ms - w->t[n - 1]) / 1000;
    double sampled = (double)(w->t[n - 1] - w->t[0]) / 1000;
    double avg_step = sampled / (double)(n - 1);

    /* A counter cannot have been below 0: don't extrapolate past the time
     * the slope says it was 0. */
    if (is_counter && result > 0 && first >= 0) {
        double to_zero = sampled * (first / result);
        if (to_zero < to_start)
            to_start = to_zero;
    }
    double threshold = avg_step * 1.1;
    double interval = sampled;
    interval += to_start < threshold ? to_start : avg_step / 2;
    interval += to_end < threshold ? to_end : avg_step / 2;

    double factor = interval / sampled;
    if (is_rate)
        factor /= (double)(w->end_ms - w->start_ms) / 1000;
    *out = result * factor;
    return 1;
}

/* instantValue: irate/idelta from the last two samples. */
static int instant_value(const struct gp_pq_window *w, int is_rate, double *out)
{
    size_t n = w->n;
    if (n < 2)
        return 0;
    double last = w->v[n - 1], prev = w->v[n - 2];
    double result = is_rate && last < prev ? last : last - prev; /* a reset restarts at 0 */
    int64_t dt = w->t[n - 1] - w->t[n - 2];
    if (dt == 0)
        return 0;
    if (is_rate)
        result /= (double)dt / 1000;
    *out = result;
    return 1;
}

/* linearRegression: least squares over (seconds since intercept_ms,
 * value); a constant series has slope 0 (NaN when the constant is Inf). */
static void linear_regression(const struct gp_pq_window *w, int64_t intercept_ms, double *slope,
                              double *intercept)
{
    double n = 0, sx = 0, cx = 0, sy = 0, cy = 0, sxy = 0, cxy = 0, sx2 = 0, cx2 = 0;
    double init_y = w->v[0];
    int const_y = 1;
    for (size_t i = 0; i < w->n; i++) {
        double y = w->v[i];
        if (const_y && i > 0 && y != init_y)
            const_y = 0;
        n += 1.0;
        double x = (double)(w->t[i] - intercept_ms) / 1e3;
        kahan_inc(x, &sx, &cx);
        kahan_inc(y, &sy, &cy);
        kahan_inc(x * y, &sxy, &cxy);
        kahan_inc(x * x, &sx2, &cx2);
    }
    if (const_y) {
        if (isinf(init_y)) {
            *slope = NAN;
            *intercept = NAN;
        } else {
            *slope = 0;
            *intercept = init_y;
        }
        return;
    }
    sx += cx;
    sy += cy;
    sxy += cxy;
    sx2 += cx2;
    double cov_xy = sxy - sx * sy / n;
    double var_x = sx2 - sx * sx / n;
    *slope = cov_xy / var_x;
    *intercept = sy / n - *slope * sx / n;
}

/* holt_winters: double exponential smoothing; Prometheus fails the query
 * for factors outside (0, 1) before looking at the samples. */
static int holt_winters(const struct gp_pq_window *w, double sf, double tf, double *out)
{
    if (sf <= 0 || sf >= 1 || tf <= 0 || tf >= 1)
        return -1;
    if (w->n < 2)
        return 0;
    double s0 = 0, s1 = w->v[0], b = w->v[1] - w->v[0];
    for (size_t i = 1; i < w->n; i++) {
        double x = sf * w->v[i];
        if (i > 1) /* calcTrendValue: the first step keeps the initial trend */
            b = tf * (s1 - s0) + (1 - tf) * b;
        double y = (1 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
    }
    *out = s1;
    return 1;
}

/* One sample into avg_over_time's running mean (2.42's loop body). */
static inline void avg_step(double v, double *mean, double *c, double *count)
{
    (*count)++;
    if (isinf(*mean)) {
        /* An infinite mean stays as it is unless v is NaN or the
         * opposite infinity: Inf - Inf would make it NaN. */
        if (isinf(v) && (*mean > 0) == (v > 0))
            return;
        if (!isinf(v) && !isnan(v))
            return;
    }
    kahan_inc(v / *count - *mean / *count, mean, c);
}

static double avg_over_time(const struct gp_pq_window *w)
{
    double mean = 0, count = 0, c = 0;
    for (size_t i = 0; i < w->n; i++)
        avg_step(w->v[i], &mean, &c, &count);
    return isinf(mean) ? mean : mean + c;
}

void gp_pq_fn_avg_over_time2(const struct gp_pq_window *a, const struct gp_pq_window *b,
                             double *oa, double *ob)
{
    double ma = 0, na = 0, ca = 0, mb = 0, nb = 0, cb = 0;
    size_t n = a->n < b->n ? a->n : b->n, i;
    /* Each sample's mean waits for the one before (a division, a
     * subtraction, an addition): two windows' chains overlap. */
    for (i = 0; i < n; i++) {
        avg_step(a->v[i], &ma, &ca, &na);
        avg_step(b->v[i], &mb, &cb, &nb);
    }
    for (size_t k = i; k < a->n; k++)
        avg_step(a->v[k], &ma, &ca, &na);
    for (size_t k = i; k < b->n; k++)
        avg_step(b->v[k], &mb, &cb, &nb);
    *oa = isinf(ma) ? ma : ma + ca;
    *ob = isinf(mb) ? mb : mb + cb;
}

static double sum_over_time(const struct gp_pq_window *w)
{
    double sum = 0, c = 0;
    for (size_t i = 0; i < w->n; i++)
        kahan_inc(w->v[i], &sum, &c);
    return isinf(sum) ? sum : sum + c;
}

/* Welford's running variance with compensated sums. */
static double stdvar_over_time(const struct gp_pq_window *w)
{
    double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;
    for (size_t i = 0; i < w->n; i++) {
        double v = w->v[i];
        count++;
        double delta = v - (mean + cmean);
        kahan_inc(delta / count, &mean, &cmean);
        kahan_inc(delta * (v - (mean + cmean)), &aux, &caux);
    }
    return (aux + caux) / count;
}

static double minmax_over_time(const struct gp_pq_window *w, int want_max)
{
    double m = w->v[0];
    for (size_t i = 0; i < w->n; i++) {
        double v = w->v[i];
        if ((want_max ? v > m : v < m) || isnan(m))
            m = v;
    }
    return m;
}

/* quantile_over_time sorts a copy: the window is the caller's. */
static int quantile_over_time(const struct gp_pq_window *w, double phi, double *out)
{
    double small[256];
    double *v = w->n <= sizeof small / sizeof small[0] ? small : malloc(w->n * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, w->v, w->n * sizeof *v);
    *out = gp_pq_quantile(phi, v, w->n);
    if (v != small)
        free(v);
    return 1;
}

int gp_pq_fn_is_range_kernel(enum gp_pq_func f)
{
    switch (f) {
    case GP_PQ_F_RATE: case GP_PQ_F_IRATE: case GP_PQ_F_INCREASE: case GP_PQ_F_DELTA:
    case GP_PQ_F_IDELTA: case GP_PQ_F_DERIV: case GP_PQ_F_PREDICT_LINEAR: case GP_PQ_F_CHANGES:
    case GP_PQ_F_RESETS: case GP_PQ_F_HOLT_WINTERS: case GP_PQ_F_AVG_OVER_TIME:
    case GP_PQ_F_SUM_OVER_TIME: case GP_PQ_F_MIN_OVER_TIME: case GP_PQ_F_MAX_OVER_TIME:
    case GP_PQ_F_COUNT_OVER_TIME: case GP_PQ_F_LAST_OVER_TIME: case GP_PQ_F_PRESENT_OVER_TIME:
    case GP_PQ_F_STDDEV_OVER_TIME: case GP_PQ_F_STDVAR_OVER_TIME:
    case GP_PQ_F_QUANTILE_OVER_TIME:
        return 1;
    default:
        return 0;
    }
}

static double arg_or(const double *args, size_t nargs, size_t i, double dflt)
{
    return args && i < nargs ? args[i] : dflt;
}

int gp_pq_fn_range(enum gp_pq_func f, const struct gp_pq_window *w, const double *args,
                   size_t nargs, double *out)
{
    if (!w || w->n == 0)
        return 0;
    switch (f) {
    case GP_PQ_F_RATE:
        return extrapolated_rate(w, 1, 1, out);
    case GP_PQ_F_INCREASE:
        return extrapolated_rate(w, 1, 0, out);
    case GP_PQ_F_DELTA:
        return extrapolated_rate(w, 0, 0, out);
    case GP_PQ_F_IRATE:
        return instant_value(w, 1, out);
    case GP_PQ_F_IDELTA:
        return instant_value(w, 0, out);
    case GP_PQ_F_DERIV: {
        if (w->n < 2)
            return 0;
        double slope, icpt;
        /* Regress around the first sample: large x loses precision. */
        linear_regression(w, w->t[0], &slope, &icpt);
        *out = slope;
        return 1;
    }
    case GP_PQ_F_PREDICT_LINEAR: {
        if (w->n < 2)
            return 0;
        double slope, icpt;
        linear_regression(w, w->eval_ms, &slope, &icpt);
        *out = slope * arg_or(args, nargs, 0, NAN) + icpt;
        return 1;
    }
    case GP_PQ_F_CHANGES:
    case GP_PQ_F_RESETS: {
        size_t k = 0;
        for (size_t i = 1; i < w->n; i++) {
            double prev = w->v[i - 1], cur = w->v[i];
            if (f == GP_PQ_F_RESETS ? cur < prev : cur != prev && !(isnan(cur) && isnan(prev)))
                k++;
        }
        *out = (double)k;
        return 1;
    }
    case GP_PQ_F_HOLT_WINTERS:
        return holt_winters(w, arg_or(args, nargs, 0, NAN), arg_or(args, nargs, 1, NAN), out);
    case GP_PQ_F_AVG_OVER_TIME:
        *out = avg_over_time(w);
        return 1;
    case GP_PQ_F_SUM_OVER_TIME:
        *out = sum_over_time(w);
        return 1;
    case GP_PQ_F_MIN_OVER_TIME:
        *out = minmax_over_time(w, 0);
        return 1;
    case GP_PQ_F_MAX_OVER_TIME:
        *out = minmax_over_time(w, 1);
        return 1;
    case GP_PQ_F_COUNT_OVER_TIME:
        *out = (double)w->n;
        return 1;
    case GP_PQ_F_LAST_OVER_TIME:
        *out = w->v[w->n - 1];
        return 1;
    case GP_PQ_F_PRESENT_OVER_TIME:
        *out = 1;
        return 1;
    case GP_PQ_F_STDDEV_OVER_TIME:
        *out = sqrt(stdvar_over_time(w));
        return 1;
    case GP_PQ_F_STDVAR_OVER_TIME:
        *out = stdvar_over_time(w);
        return 1;
    case GP_PQ_F_QUANTILE_OVER_TIME:
        return quantile_over_time(w, arg_or(args, nargs, 0, NAN), out);
    default:
        return 0;
    }
}

/* Go's %f, which spells infinities +Inf/-Inf and NaN as NaN. */
static void go_fmt_f(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
    else
        snprintf(buf, len, "%f", v);
}

int gp_pq_fn_check_args(enum gp_pq_func f, const double *args, size_t nargs, char *err,
                        size_t errlen)
{
    if (f != GP_PQ_F_HOLT_WINTERS)
        return 0;
    static const char *const what[] = {"smoothing factor. Expected: 0 < sf < 1",
                                       "trend factor. Expected: 0 < tf < 1"};
    for (size_t i = 0; i < 2; i++) {
        double x = arg_or(args, nargs, i, NAN);
        if (x <= 0 || x >= 1) {
            char num[400];
            go_fmt_f(num, sizeof num, x);
            if (err && errlen)
                snprintf(err, errlen, "invalid %s, got: %s", what[i], num);
            return -1;
        }
    }
    return 0;
}

/* ---- value kernels ---- */

/*
 * Go 1.19's time arithmetic, which Prometheus's date functions run on
 * time.Unix(int64(v), 0).UTC(). Times are seconds since Go's "absolute"
 * zero (year -292277022399) in uint64; everything wraps like Go's does.
 */
#define GO_SECS_PER_DAY 86400ULL
#define GO_DAYS_400Y (365ULL * 400 + 97)
#define GO_DAYS_100Y (365ULL * 100 + 24)
#define GO_DAYS_4Y (365ULL * 4 + 1)
#define GO_ABS_ZERO_YEAR (-292277022399LL)
/* unixToInternal + internalToAbsolute, as Go computes the constants. */
#define GO_UNIX_TO_ABS (62135596800LL + 9223371966579724800LL)

static const int go_days_before[13] = {0,   31,  59,  90,  120, 151, 181,
                                       212, 243, 273, 304, 334, 365};

struct go_date {
    int64_t year;
    int month, day, yday; /* yday from 0 */
};

static int go_is_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/* Go's int64(float64) on amd64: out of range and NaN give INT64_MIN. */
static int64_t go_int64(double v)
{
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)v;
}

static uint64_t go_abs_of_unix(double v)
{
    return (uint64_t)go_int64(v) + (uint64_t)GO_UNIX_TO_ABS;
}

/* absDate */
static struct go_date go_abs_date(uint64_t abs)
{
    struct go_date r;
    uint64_t d = abs / GO_SECS_PER_DAY;
    uint64_t n = d / GO_DAYS_400Y;
    uint64_t y = 400 * n;
    d -= GO_DAYS_400Y * n;
    n = d / GO_DAYS_100Y;
    n -= n >> 2;
    y += 100 * n;
    d -= GO_DAYS_100Y * n;
    n = d / GO_DAYS_4Y;
    y += 4 * n;
    d -= GO_DAYS_4Y * n;
    n = d / 365;
    n -= n >> 2;
    y += n;
    d -= 365 * n;
    r.year = (int64_t)(y + (uint64_t)GO_ABS_ZERO_YEAR);
    r.yday = (int)d;
    int day = r.yday;
    if (go_is_leap(r.year)) {
        if (day > 31 + 29 - 1) {
            day--; /* after the leap day: count as a common year */
        } else if (day == 31 + 29 - 1) {
            r.month = 2;
            r.day = 29;
            return r;
        }
    }
    int month = day / 31; /* may be one too low */
    int begin;
    if (day >= go_days_before[month + 1]) {
        month++;
        begin = go_days_before[month];
    } else {
        begin = go_days_before[month];
    }
    r.month = month + 1;
    r.day = day - begin + 1;
    return r;
}

/* 32 - time.Date(year, month, 32).Day(): Go's daysSinceEpoch and the day
 * normalisation, in the same wrapping arithmetic. */
static int go_days_in_month(int64_t year, int month)
{
    uint64_t y = (uint64_t)year - (uint64_t)GO_ABS_ZERO_YEAR;
    uint64_t n = y / 400;
    y -= 400 * n;
    uint64_t d = GO_DAYS_400Y * n;
    n = y / 100;
    y -= 100 * n;
    d += GO_DAYS_100Y * n;
    n = y / 4;
    y -= 4 * n;
    d += GO_DAYS_4Y * n;
    d += 365 * y;
    d += (uint64_t)go_days_before[month - 1];
    if (go_is_leap(year) && month >= 3)
        d++;
    d += 32 - 1;
    return 32 - go_abs_date(d * GO_SECS_PER_DAY).day;
}

static double date_fn(enum gp_pq_func f, double v)
{
    uint64_t abs = go_abs_of_unix(v);
    switch (f) {
    case GP_PQ_F_HOUR:
        return (double)((abs % GO_SECS_PER_DAY) / 3600);
    case GP_PQ_F_MINUTE:
        return (double)((abs % 3600) / 60);
    case GP_PQ_F_DAY_OF_WEEK: /* day 0 of the absolute epoch was a Monday */
        return (double)(((abs + GO_SECS_PER_DAY) % (7 * GO_SECS_PER_DAY)) / GO_SECS_PER_DAY);
    default:
        break;
    }
    struct go_date d = go_abs_date(abs);
    switch (f) {
    case GP_PQ_F_DAY_OF_MONTH:
        return d.day;
    case GP_PQ_F_DAY_OF_YEAR:
        return d.yday + 1;
    case GP_PQ_F_MONTH:
        return d.month;
    case GP_PQ_F_YEAR:
        return (double)d.year;
    case GP_PQ_F_DAYS_IN_MONTH:
        return go_days_in_month(d.year, d.month);
    default:
        return NAN;
    }
}

int gp_pq_fn_is_value_kernel(enum gp_pq_func f)
{
    switch (f) {
    case GP_PQ_F_ABS: case GP_PQ_F_CEIL: case GP_PQ_F_FLOOR: case GP_PQ_F_ROUND:
    case GP_PQ_F_CLAMP: case GP_PQ_F_CLAMP_MIN: case GP_PQ_F_CLAMP_MAX: case GP_PQ_F_SQRT:
    case GP_PQ_F_EXP: case GP_PQ_F_LN: case GP_PQ_F_LOG2: case GP_PQ_F_LOG10: case GP_PQ_F_SGN:
    case GP_PQ_F_ACOS: case GP_PQ_F_ACOSH: case GP_PQ_F_ASIN: case GP_PQ_F_ASINH:
    case GP_PQ_F_ATAN: case GP_PQ_F_ATANH: case GP_PQ_F_COS: case GP_PQ_F_COSH:
    case GP_PQ_F_SIN: case GP_PQ_F_SINH: case GP_PQ_F_TAN: case GP_PQ_F_TANH:
    case GP_PQ_F_DEG: case GP_PQ_F_RAD:
    case GP_PQ_F_DAY_OF_MONTH: case GP_PQ_F_DAY_OF_WEEK: case GP_PQ_F_DAY_OF_YEAR:
    case GP_PQ_F_DAYS_IN_MONTH: case GP_PQ_F_HOUR: case GP_PQ_F_MINUTE: case GP_PQ_F_MONTH:
    case GP_PQ_F_YEAR:
        return 1;
    default:
        return 0;
    }
}

/* Go's math.Log2: exact for powers of two. */
static double go_log2(double v)
{
    int e;
    double frac = frexp(v, &e);
    if (frac == 0.5)
        return (double)(e - 1);
    return log(frac) * M_LOG2E + (double)e;
}

/* Go's math.Log10: log2(v) * (ln 2 / ln 10), the constant rounded once. */
static double go_log10(double v)
{
    return go_log2(v) * 0.30102999566398119521373889472449302676818988146211;
}

/* Go's math.Exp on amd64 (Prometheus's builds): its assembly rounds
 * x * log2(e) to the power of two and overflows when that passes 1023,
 * so exp(x) is +Inf from x = 1023.5 * ln 2 (709.436...) on, where the C
 * library stays finite up to 709.78. 2.42 answers +Inf there. */
static double go_exp(double v)
{
    return v * 1.4426950408889634073599246810018920 >= 1023.5 ? INFINITY : exp(v);
}

/* Go's math.Sinh and Cosh beyond |v| > 21: Exp(|v|) / 2, so they reach
 * +Inf where go_exp does. Nearer 0 the C functions agree within the
 * differential test's 1e-9. */
static double go_sinh(double v)
{
    double a = fabs(v);
    if (a > 21)
        return v < 0 ? -go_exp(a) * 0.5 : go_exp(a) * 0.5;
    return sinh(v);
}

static double go_cosh(double v)
{
    double a = fabs(v);
    return a > 21 ? go_exp(a) * 0.5 : cosh(v);
}

double gp_pq_fn_value(enum gp_pq_func f, double v, const double *args, size_t nargs)
{
    switch (f) {
    case GP_PQ_F_ABS: return fabs(v);
    case GP_PQ_F_CEIL: return ceil(v);
    case GP_PQ_F_FLOOR: return floor(v);
    case GP_PQ_F_SQRT: return sqrt(v);
    case GP_PQ_F_EXP: return go_exp(v);
    case GP_PQ_F_LN: return log(v);
    case GP_PQ_F_LOG2: return go_log2(v);
    case GP_PQ_F_LOG10: return go_log10(v);
    case GP_PQ_F_SGN: return v < 0 ? -1 : v > 0 ? 1 : v; /* keeps NaN and signed zeros */
    case GP_PQ_F_ACOS: return acos(v);
    case GP_PQ_F_ACOSH: return acosh(v);
    case GP_PQ_F_ASIN: return asin(v);
    case GP_PQ_F_ASINH: return asinh(v);
    case GP_PQ_F_ATAN: return atan(v);
    case GP_PQ_F_ATANH: return atanh(v);
    case GP_PQ_F_COS: return cos(v);
    case GP_PQ_F_COSH: return go_cosh(v);
    case GP_PQ_F_SIN: return sin(v);
    case GP_PQ_F_SINH: return go_sinh(v);
    case GP_PQ_F_TAN: return tan(v);
    case GP_PQ_F_TANH: return tanh(v);
    case GP_PQ_F_DEG: return v * 180 / M_PI;
    case GP_PQ_F_RAD: return v * M_PI / 180;
    case GP_PQ_F_PI: return M_PI;
    case GP_PQ_F_ROUND: {
        /* Multiplying by the inverse loses less than dividing; ties go up. */
        double inv = 1.0 / arg_or(args, nargs, 0, 1);
        return floor(v * inv + 0.5) / inv;
    }
    case GP_PQ_F_CLAMP: {
        double lo = arg_or(args, nargs, 0, NAN), hi = arg_or(args, nargs, 1, NAN);
        if (hi < lo)
            return NAN; /* Prometheus outputs nothing: the evaluator drops it */
        return go_max(lo, go_min(hi, v));
    }
    case GP_PQ_F_CLAMP_MIN: return go_max(arg_or(args, nargs, 0, NAN), v);
    case GP_PQ_F_CLAMP_MAX: return go_min(arg_or(args, nargs, 0, NAN), v);
    case GP_PQ_F_DAY_OF_MONTH: case GP_PQ_F_DAY_OF_WEEK: case GP_PQ_F_DAY_OF_YEAR:
    case GP_PQ_F_DAYS_IN_MONTH: case GP_PQ_F_HOUR: case GP_PQ_F_MINUTE: case GP_PQ_F_MONTH:
    case GP_PQ_F_YEAR:
        return date_fn(f, v);
    default:
        return NAN;
    }
}

/* ---- quantiles ---- */

/* vectorByValueHeap's order: NaN below everything. */
static int cmp_nan_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x))
        return isnan(y) ? 0 : -1;
    if (isnan(y))
        return 1;
    return x < y ? -1 : x > y;
}

double gp_pq_quantile(double phi, double *v, size_t n)
{
    if (n == 0 || isnan(phi))
        return NAN;
    if (phi < 0)
        return -INFINITY;
    if (phi > 1)
        return INFINITY;
    qsort(v, n, sizeof *v, cmp_nan_first);
    double cnt = (double)n;
    double rank = phi * (cnt - 1);
    double lo = go_max(0, floor(rank));
    double hi = go_min(cnt - 1, lo + 1);
    double weight = rank - floor(rank);
    return v[(size_t)lo] * (1 - weight) + v[(size_t)hi] * weight;
}

static int cmp_bucket(const void *a, const void *b)
{
    double x = ((const struct gp_pq_bucket *)a)->upper, y = ((const struct gp_pq_bucket *)b)->upper;
    return x < y ? -1 : x > y;
}

double gp_pq_histogram_quantile(double phi, struct gp_pq_bucket *b, size_t n)
{
    if (isnan(phi))
        return NAN;
    if (phi < 0)
        return -INFINITY;
    if (phi > 1)
        return INFINITY;
    if (n == 0)
        return NAN;
    qsort(b, n, sizeof *b, cmp_bucket);
    if (!(isinf(b[n - 1].upper) && b[n - 1].upper > 0))
        return NAN;

    /* coalesceBuckets: one bucket per bound, counts added. */
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (b[i].upper == b[m].upper) {
            b[m].count += b[i].count;
        } else {
            b[++m] = b[i];
        }
    }
    n = m + 1;
    /* ensureMonotonic: a bucket never counts less than the one below it
     * (partial scrapes and rate() break that). */
    double max = b[0].count;
    for (size_t i = 1; i < n; i++) {
        if (b[i].count > max)
            max = b[i].count;
        else if (b[i].count < max)
            b[i].count = max;
    }
    if (n < 2)
        return NAN;
    double observations = b[n - 1].count;
    if (observations == 0)
        return NAN;
    double rank = phi * observations;
    /* sort.Search over all but +Inf: the first bucket holding rank. */
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (!(b[mid].count >= rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    if (k == n - 1)
        return b[n - 2].upper;
    if (k == 0 && b[0].upper <= 0)
        return b[0].upper;
    double start = 0, end = b[k].upper, count = b[k].count;
    if (k > 0) { /* the lowest bucket interpolates from 0 */
        start = b[k - 1].upper;
        count -= b[k - 1].count;
        rank -= b[k - 1].count;
    }
    return start + (end - start) * (rank / count);
}

/* ---- aggregation accumulators (engine.go's aggregation) ---- */

void gp_pq_acc_init(struct gp_pq_acc *a)
{
    memset(a, 0, sizeof *a);
}

void gp_pq_acc_add(struct gp_pq_acc *a, enum gp_pq_aggop op, double v)
{
    if (a->count == 0) {
        /* The group's first sample sets every field directly: folding it
         * into zeros would turn -0 into 0 and Inf into NaN. */
        a->count = 1;
        a->sum = v;
        a->mean = v;
        a->aux = 0;
        return;
    }
    a->count++;
    switch (op) {
    case GP_PQ_A_SUM:
        a->sum += v;
        break;
    case GP_PQ_A_AVG:
        if (isinf(a->mean)) {
            if (isinf(v) && (a->mean > 0) == (v > 0))
                break;
            if (!isinf(v) && !isnan(v))
                break;
        }
        /* Dividing each term keeps the running mean from overflowing. */
        a->mean += v / a->count - a->mean / a->count;
        break;
    case GP_PQ_A_STDDEV:
    case GP_PQ_A_STDVAR: {
        double delta = v - a->mean;
        a->mean += delta / a->count;
        a->aux += delta * (v - a->mean);
        break;
    }
    case GP_PQ_A_MAX:
        if (a->sum < v || isnan(a->sum))
            a->sum = v;
        break;
    case GP_PQ_A_MIN:
        if (a->sum > v || isnan(a->sum))
            a->sum = v;
        break;
    default:
        break;
    }
}

double gp_pq_acc_value(const struct gp_pq_acc *a, enum gp_pq_aggop op)
{
    switch (op) {
    case GP_PQ_A_SUM:
    case GP_PQ_A_MIN:
    case GP_PQ_A_MAX:
        return a->sum;
    case GP_PQ_A_AVG:
        return a->mean;
    case GP_PQ_A_STDVAR:
        return a->aux / a->count;
    case GP_PQ_A_STDDEV:
        return sqrt(a->aux / a->count);
    case GP_PQ_A_COUNT:
        return a->count;
    case GP_PQ_A_GROUP:
        return 1;
    default:
        return NAN;
    }
}
