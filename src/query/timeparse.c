/*
 * timeparse.c - the query API's parsers of times, steps and aggregations
 * (query.h), kept apart from evaluation so the fuzz target and the tests
 * call them without a store.
 *
 * Times come from HTTP query strings, i.e. from anyone, so the parsers
 * are strict: the whole string must be consumed, every field is range
 * checked, and an error names the input and what was wrong with it.
 *
 *   Unix seconds   "1700000000", "1700000000.123", "-5", "1.7e9"
 *   RFC 3339       "2026-11-22T10:00:00Z", "2026-11-22T10:00:00.5+01:00"
 *
 * Both are limited to years 0001..9999, which keeps every millisecond
 * count far inside int64 and any later arithmetic (start - lookback,
 * end + step) free of overflow. Digits below a millisecond are dropped
 * (truncated), as Prometheus does for RFC 3339.
 *
 * Steps are Prometheus durations ("15s", "1m30s", "100ms", "1h", "1d",
 * "1w"; lib/duration.c) or plain seconds with an optional fraction
 * ("15", "0.5"), and must be at least 1 ms.
 */
#include "query/query.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in Unix ms. */
#define MIN_TIME_MS INT64_C(-62135596800000)
#define MAX_TIME_MS INT64_C(253402300799999)
/* Longest input worth looking at; a time or step is never near this. */
#define MAX_INPUT_LEN 64

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), exact for every year we accept. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dm[m - 1];
}

/* Reads exactly n digits at *p into *out; 0 when they are not all digits. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 1;
}

static int parse_rfc3339(const char *s, int64_t *ms, char *err, size_t errlen)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d))
        return gp_seterr(err, errlen, GP_EPARSE,
                         "invalid time '%s': expected Unix seconds or RFC 3339 "
                         "(2006-01-02T15:04:05Z)", s);
    if (*p != 'T' && *p != 't')
        return gp_seterr(err, errlen, GP_EPARSE, "invalid time '%s': expected 'T' after the date", s);
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
        !digits(&p, 2, &sec))
        return gp_seterr(err, errlen, GP_EPARSE,
                         "invalid time '%s': expected hh:mm:ss after 'T'", s);
    int frac_ms = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0 || nd > 9)
            return gp_seterr(err, errlen, GP_EPARSE,
                             "invalid time '%s': a fraction of a second needs 1 to 9 digits", s);
        for (; nd < 3; nd++)
            frac_ms *= 10;
    }
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
            return gp_seterr(err, errlen, GP_EPARSE,
                             "invalid time '%s': a UTC offset is written +hh:mm", s);
    } else {
        return gp_seterr(err, errlen, GP_EPARSE,
                         "invalid time '%s': expected 'Z' or a UTC offset (+01:00)", s);
    }
    if (*p)
        return gp_seterr(err, errlen, GP_EPARSE, "invalid time '%s': unexpected text at '%s'", s, p);
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return gp_seterr(err, errlen, GP_ERANGE, "invalid time '%s': no such date", s);
    if (h > 23 || mi > 59 || sec > 59)
        return gp_seterr(err, errlen, GP_ERANGE, "invalid time '%s': no such time of day", s);
    if (oh > 23 || om > 59)
        return gp_seterr(err, errlen, GP_ERANGE, "invalid time '%s': UTC offset out of range", s);
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    t -= sign * (oh * 3600 + om * 60);
    t = t * 1000 + frac_ms;
    if (t < MIN_TIME_MS || t > MAX_TIME_MS)
        return gp_seterr(err, errlen, GP_ERANGE,
                         "time '%s' is out of range (years 0001 to 9999 in UTC)", s);
    *ms = t;
    return GP_OK;
}

/*
 * Decimal seconds, "-"? digits ("." digits)?, into ms (fraction truncated
 * to ms) with an overflow check. *what names the thing for messages.
 * GP_OK, GP_EPARSE (not such a number) or GP_ERANGE (|ms| > limit).
 */
static int parse_decimal_seconds(const char *s, int allow_negative, int64_t limit, int64_t *ms,
                                 const char *what, char *err, size_t errlen)
{
    const char *p = s;
    int neg = 0;
    if (*p == '-' && allow_negative) {
        neg = 1;
        p++;
    } else if (*p == '+') {
        p++;
    }
    int64_t whole = 0;
    int nd = 0, nf = 0;
    while (*p >= '0' && *p <= '9') {
        if (whole > limit / 1000)
            return gp_seterr(err, errlen, GP_ERANGE, "%s '%s' is out of range", what, s);
        whole = whole * 10 + (*p++ - '0');
        nd++;
    }
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (nf < 3)
                frac = frac * 10 + (*p - '0');
            nf++;
            p++;
        }
        for (int k = nf; k < 3; k++)
            frac *= 10;
    }
    if ((nd == 0 && nf == 0) || *p)
        return GP_EPARSE;
    if (whole > limit / 1000 || whole * 1000 + frac > limit)
        return gp_seterr(err, errlen, GP_ERANGE, "%s '%s' is out of range", what, s);
    *ms = neg ? -(whole * 1000 + frac) : whole * 1000 + frac;
    return GP_OK;
}

/* The rest of Go's ParseFloat syntax that clients produce ("1.7e+09"):
 * through strtod, finite and in range. Truncated towards zero to ms. */
static int parse_float_seconds(const char *s, int64_t limit, int64_t *ms)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!(*p >= '0' && *p <= '9') && !(*p == '.' && p[1] >= '0' && p[1] <= '9'))
        return GP_EPARSE; /* strtod would take "inf", "nan", "0x1p3" */
    for (const char *q = p; *q; q++)
        if (!strchr("0123456789.eE+-", *q))
            return GP_EPARSE;
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s)
        return GP_EPARSE;
    double x = v * 1000.0;
    if (!isfinite(x) || fabs(x) > (double)limit)
        return GP_ERANGE;
    *ms = (int64_t)x;
    return GP_OK;
}

int gp_parse_time_ms(const char *s, int64_t *ms, char *err, size_t errlen)
{
    if (!s || !*s)
        return gp_seterr(err, errlen, GP_EPARSE, "empty time");
    size_t len = strnlen(s, MAX_INPUT_LEN + 1);
    if (len > MAX_INPUT_LEN)
        return gp_seterr(err, errlen, GP_EPARSE, "invalid time: longer than %d bytes",
                         MAX_INPUT_LEN);
    /* An RFC 3339 time has '-' at [4]; a number never does. */
    if (len >= 5 && s[4] == '-' && isdigit((unsigned char)s[0]))
        return parse_rfc3339(s, ms, err, errlen);
    int64_t t;
    int rc = parse_decimal_seconds(s, 1, MAX_TIME_MS, &t, "time", err, errlen);
    if (rc == GP_EPARSE) {
        rc = parse_float_seconds(s, MAX_TIME_MS, &t);
        if (rc == GP_EPARSE)
            return gp_seterr(err, errlen, GP_EPARSE,
                             "invalid time '%s': expected Unix seconds or RFC 3339 "
                             "(2006-01-02T15:04:05Z)", s);
        if (rc == GP_ERANGE)
            return gp_seterr(err, errlen, GP_ERANGE,
                             "time '%s' is out of range (years 0001 to 9999 in UTC)", s);
    }
    if (rc != GP_OK)
        return rc;
    if (t < MIN_TIME_MS || t > MAX_TIME_MS)
        return gp_seterr(err, errlen, GP_ERANGE,
                         "time '%s' is out of range (years 0001 to 9999 in UTC)", s);
    *ms = t;
    return GP_OK;
}

int gp_parse_step_ms(const char *s, int64_t *ms, char *err, size_t errlen)
{
    /* Ten years: the most lib/duration.c gives, and plenty for a step. */
    const int64_t limit = INT64_C(10) * 365 * 86400 * 1000;
    if (!s || !*s)
        return gp_seterr(err, errlen, GP_EPARSE, "empty step");
    size_t len = strnlen(s, MAX_INPUT_LEN + 1);
    if (len > MAX_INPUT_LEN)
        return gp_seterr(err, errlen, GP_EPARSE, "invalid step: longer than %d bytes",
                         MAX_INPUT_LEN);
    int64_t v;
    int rc = parse_decimal_seconds(s, 0, limit, &v, "step", err, errlen);
    if (rc == GP_EPARSE) {
        rc = parse_float_seconds(s, limit, &v);
        if (rc == GP_ERANGE)
            return gp_seterr(err, errlen, GP_ERANGE, "step '%s' is out of range", s);
    }
    if (rc == GP_EPARSE) {
        char detail[160];
        rc = gp_parse_duration_ms(s, &v, detail, sizeof detail);
        if (rc == GP_ERANGE)
            return gp_seterr(err, errlen, rc, "step '%s' is out of range (at most 10y)", s);
        if (rc != GP_OK)
            return gp_seterr(err, errlen, rc,
                             "invalid step '%s': expected a duration (15s, 1m30s, 100ms) or "
                             "seconds (15, 0.5)", s);
    }
    if (rc != GP_OK)
        return rc;
    if (v <= 0)
        return gp_seterr(err, errlen, GP_ERANGE,
                         "invalid step '%s': zero or negative, must be at least 1ms", s);
    *ms = v;
    return GP_OK;
}

int gp_parse_agg(const char *s, enum gp_agg *agg)
{
    static const struct {
        const char *name;
        enum gp_agg agg;
    } t[] = {{"avg", GP_AGG_AVG}, {"min", GP_AGG_MIN},     {"max", GP_AGG_MAX},
             {"sum", GP_AGG_SUM}, {"count", GP_AGG_COUNT}};
    if (!s || !*s) {
        *agg = GP_AGG_NONE;
        return GP_OK;
    }
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(s, t[i].name) == 0) {
            *agg = t[i].agg;
            return GP_OK;
        }
    return GP_EPARSE;
}
