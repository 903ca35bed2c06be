/*
 * promql_json.c - a query result as Prometheus 2.42's HTTP API writes it,
 * and the errorType/status of an error code.
 *
 * Numbers follow Prometheus's jsonutil byte for byte:
 *   times   Unix seconds; a millisecond fraction, when there is one, as
 *           three digits: 1700000000.5 s is written 1700000000.500;
 *   values  strings: Go's strconv.FormatFloat(v, 'f', -1, 64), shortest
 *           text that reads back, no exponent, except below 1e-6 and from
 *           1e21 (in magnitude) where it is 'e' (1e-07, 1e+21); "NaN",
 *           "+Inf", "-Inf".
 * count_values' label values use 'f' throughout (no exponent), hence
 * gp_pq_fmt_float's two forms.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "lib/json.h"
#include "storage/storage.h"
#include "store/labels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tmp ("-d.ddde+X", as "%.*e" writes it) moved one unit in its last
 * digit, up or down in magnitude, into out in the same form; 0 when that
 * reaches zero. */
static int step_last_digit(const char *tmp, int up, char *out, size_t outlen)
{
    char d[24];
    size_t n = 0;
    const char *p = tmp;
    int neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e' && n < sizeof d - 1; p++)
        if (*p != '.')
            d[n++] = *p;
    int e = *p == 'e' ? atoi(p + 1) : 0;
    size_t i = n;
    if (up) {
        while (i > 0 && d[i - 1] == '9')
            d[--i] = '0';
        if (i == 0) { /* 9.99 -> 10.0: one more leading digit */
            memmove(d + 1, d, n++);
            d[0] = '1';
            e++;
        } else {
            d[i - 1]++;
        }
    } else {
        while (i > 0 && d[i - 1] == '0')
            d[--i] = '9';
        if (i == 0)
            return 0;
        d[i - 1]--;
        if (d[0] == '0') { /* 1.00 -> 0.99: one leading digit fewer */
            if (n == 1)
                return 0;
            memmove(d, d + 1, --n);
            e--;
        }
    }
    d[n] = '\0';
    snprintf(out, outlen, "%s%c.%se%d", neg ? "-" : "", d[0], d + 1, e);
    return 1;
}

/* The shortest round-trip digits of a finite v != 0: digits (no dot) and
 * the decimal exponent of the first digit. For each length the correctly
 * rounded digits are tried, then their neighbour on v's other side: where
 * v's rounding interval is lopsided (a power of two's mantissa) that one
 * can read back as v when the nearer does not, and Go's shortest
 * formatting (Prometheus's) writes it: 5.282945311356653e+269, not
 * 5.2829453113566525e+269. */
static void shortest_digits(double v, char *digits, int *exp10)
{
    char tmp[48], alt[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        double r = strtod(tmp, NULL);
        if (r == v)
            break;
        if (step_last_digit(tmp, fabs(r) < fabs(v), alt, sizeof alt) && strtod(alt, NULL) == v) {
            memcpy(tmp, alt, sizeof tmp);
            break;
        }
    }
    const char *p = tmp;
    if (*p == '-')
        p++;
    size_t n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    *exp10 = *p == 'e' ? atoi(p + 1) : 0;
}

void gp_pq_fmt_float(double v, int json_form, char *buf, size_t len)
{
    if (isnan(v) || isinf(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
        return;
    }
    double a = fabs(v);
    if (json_form && a != 0 && (a < 1e-6 || a >= 1e21)) {
        char d[24];
        int e;
        shortest_digits(v, d, &e);
        /* Go's 'e' -1: d[.ddd]e±XX, at least two exponent digits. */
        snprintf(buf, len, "%s%c%s%se%c%02d", v < 0 ? "-" : "", d[0], d[1] ? "." : "", d + 1,
                 e < 0 ? '-' : '+', e < 0 ? -e : e);
        return;
    }
    if (a >= 1e-3 && a < 1e15) {
        /* json.c's formatter is exact and fast here, in fixed notation. */
        char tmp[40];
        size_t n = gp_json_format_double(v, tmp);
        if (!memchr(tmp, 'e', n) && n < len) {
            memcpy(buf, tmp, n + 1); /* not snprintf: once per point */
            return;
        }
    }
    if (v == 0) {
        snprintf(buf, len, "%s", signbit(v) ? "-0" : "0");
        return;
    }
    char d[24];
    int e;
    shortest_digits(v, d, &e);
    size_t nd = strlen(d), o = 0;
    if (v < 0 && o + 1 < len)
        buf[o++] = '-';
    if (e >= 0) {
        for (int i = 0; i <= e && o + 1 < len; i++)
            buf[o++] = (size_t)i < nd ? d[i] : '0';
        if ((size_t)e + 1 < nd && o + 1 < len) {
            buf[o++] = '.';
            for (size_t i = (size_t)e + 1; i < nd && o + 1 < len; i++)
                buf[o++] = d[i];
        }
    } else {
        if (o + 2 < len) {
            buf[o++] = '0';
            buf[o++] = '.';
        }
        for (int i = 0; i < -e - 1 && o + 1 < len; i++)
            buf[o++] = '0';
        for (size_t i = 0; i < nd && o + 1 < len; i++)
            buf[o++] = d[i];
    }
    buf[o] = '\0';
}

void gp_pq_fmt_go_v(double v, char *buf, size_t len)
{
    if (isnan(v) || isinf(v) || v == 0) {
        gp_pq_fmt_float(v, 0, buf, len);
        return;
    }
    char d[24];
    int e;
    shortest_digits(v, d, &e);
    if (e < -4 || e >= 6) { /* strconv's 'g' with the shortest digits */
        snprintf(buf, len, "%s%c%s%se%c%02d", v < 0 ? "-" : "", d[0], d[1] ? "." : "", d + 1,
                 e < 0 ? '-' : '+', e < 0 ? -e : e);
        return;
    }
    gp_pq_fmt_float(v, 0, buf, len);
}

/* t in seconds as Prometheus writes it (jsonutil.MarshalTimestamp): the
 * fraction, when there is one, as three digits. Into out (24 bytes):
 * the length. No printf: a range answer writes one per point. */
static size_t fmt_time(int64_t t, char *out)
{
    uint64_t u = t < 0 ? (uint64_t)0 - (uint64_t)t : (uint64_t)t;
    unsigned frac = (unsigned)(u % 1000);
    char tmp[24], *end = tmp + sizeof tmp, *p = end;
    if (frac) {
        *--p = (char)('0' + frac % 10);
        *--p = (char)('0' + frac / 10 % 10);
        *--p = (char)('0' + frac / 100);
        *--p = '.';
    }
    u /= 1000;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (t < 0)
        *--p = '-';
    size_t n = (size_t)(end - p);
    memcpy(out, p, n);
    return n;
}

static void put_time(struct gp_buf *b, int64_t t)
{
    char tmp[24];
    gp_buf_append(b, tmp, fmt_time(t, tmp));
}

/* The most one point takes: [, a time (24), ",", a value (gp_pq_fmt_float
 * writes at most 400), "]" and a separating comma. */
#define POINT_MAX 440

/* A point's value in the JSON form into out (POINT_MAX - 40 bytes):
 * the length. The usual range goes straight to json.c's formatter, which
 * writes fixed notation there (gp_pq_fmt_float's fast path, without its
 * copy and strlen). */
static size_t fmt_value(double v, char *out)
{
    double a = fabs(v);
    if (a >= 1e-3 && a < 1e15)
        return gp_json_format_double(v, out);
    gp_pq_fmt_float(v, 1, out, POINT_MAX - 40);
    return strlen(out);
}

/* The times of a matrix's points, formatted once: the series of a range
 * query share the steps, so point k of every series mostly has the time
 * point k of the first had. A slot is only a cache: a point whose time
 * differs formats its own (and keeps it for the next series). */
struct time_cache {
    size_t cap;
    int64_t *t;
    char (*text)[24];
    uint8_t *len;
};

static void time_cache_init(struct time_cache *c, const struct gp_promql_result *r)
{
    memset(c, 0, sizeof *c);
    size_t cap = 0;
    for (size_t i = 0; r->type == GP_PROMQL_MATRIX && i < r->n; i++)
        if (r->series[i].n > cap)
            cap = r->series[i].n;
    if (!cap)
        return;
    c->t = malloc(cap * sizeof *c->t);
    c->text = malloc(cap * sizeof *c->text);
    c->len = calloc(cap, 1); /* 0: an empty slot */
    if (c->t && c->text && c->len)
        c->cap = cap;
}

static void time_cache_free(struct time_cache *c)
{
    free(c->t);
    free(c->text);
    free(c->len);
}

/* [t,"v"] (after a comma unless first), written straight into b where
 * it has room for any point, else appended as gp_buf_append does (which
 * grows b, or stops at its cap exactly where it would have). */
static void put_point(struct gp_buf *b, struct time_cache *tc, size_t k, int first, int64_t t,
                      double v)
{
    char tmp[POINT_MAX];
    int direct = !b->err && b->data && b->cap - b->len > POINT_MAX;
    char *o = direct ? b->data + b->len : tmp;
    size_t n = 0;
    if (!first)
        o[n++] = ',';
    o[n++] = '[';
    if (k < tc->cap) {
        if (!tc->len[k] || tc->t[k] != t) {
            tc->t[k] = t;
            tc->len[k] = (uint8_t)fmt_time(t, tc->text[k]);
        }
        memcpy(o + n, tc->text[k], tc->len[k]);
        n += tc->len[k];
    } else {
        n += fmt_time(t, o + n);
    }
    o[n++] = ',';
    o[n++] = '"';
    n += fmt_value(v, o + n);
    o[n++] = '"';
    o[n++] = ']';
    if (!direct) {
        gp_buf_append(b, tmp, n);
        return;
    }
    b->len += n;
    b->data[b->len] = '\0';
}

static int put_metric(struct gp_buf *b, const struct gp_promql_series *s)
{
    gp_buf_puts(b, "{\"metric\":");
    if (!s->labels || !s->labels_len) {
        gp_buf_puts(b, "{}");
        return GP_OK;
    }
    return gp_json_labels(b, s->labels, s->labels_len);
}

int gp_promql_render(const struct gp_promql_result *r, struct gp_buf *out)
{
    static const char *types[] = {"scalar", "vector", "matrix", "string"};
    int rc = GP_OK;
    struct time_cache tc;
    time_cache_init(&tc, r);
    gp_buf_printf(out, "{\"status\":\"success\",\"data\":{\"resultType\":\"%s\",\"result\":",
                  types[r->type]);
    switch (r->type) {
    case GP_PROMQL_SCALAR: put_point(out, &tc, 0, 1, r->t, r->scalar); break;
    case GP_PROMQL_STRING:
        gp_buf_putc(out, '[');
        put_time(out, r->t);
        gp_buf_putc(out, ',');
        gp_json_str(out, r->string ? r->string : "", r->string ? strlen(r->string) : 0);
        gp_buf_putc(out, ']');
        break;
    case GP_PROMQL_VECTOR:
    case GP_PROMQL_MATRIX:
        gp_buf_putc(out, '[');
        for (size_t i = 0; i < r->n && rc == GP_OK; i++) {
            const struct gp_promql_series *s = r->series + i;
            if (i)
                gp_buf_putc(out, ',');
            rc = put_metric(out, s);
            if (r->type == GP_PROMQL_VECTOR) {
                gp_buf_puts(out, ",\"value\":");
                if (s->n)
                    put_point(out, &tc, 0, 1, s->t[0], s->v[0]);
                else
                    gp_buf_puts(out, "null");
            } else {
                gp_buf_puts(out, ",\"values\":[");
                for (size_t k = 0; k < s->n; k++)
                    put_point(out, &tc, k, k == 0, s->t[k], s->v[k]);
                gp_buf_putc(out, ']');
            }
            gp_buf_putc(out, '}');
        }
        gp_buf_putc(out, ']');
        break;
    }
    gp_buf_putc(out, '}');
    if (r->warnings && *r->warnings) {
        gp_buf_puts(out, ",\"warnings\":[");
        const char *p = r->warnings;
        for (int first = 1; *p; first = 0) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            if (!first)
                gp_buf_putc(out, ',');
            gp_json_str(out, p, len);
            p += len + (nl ? 1 : 0);
        }
        gp_buf_putc(out, ']');
    }
    gp_buf_putc(out, '}');
    time_cache_free(&tc);
    if (rc != GP_OK)
        return rc;
    return out->err;
}

const char *gp_promql_error_type(int rc, int *http_status)
{
    int st;
    const char *t;
    switch (rc) {
    case GP_PROMQL_ETIMEOUT: st = 503, t = "timeout"; break;
    case GP_ENET: {
        int s = gp_storage_last_error_status();
        st = s ? s : 503, t = "unavailable";
        break;
    }
    case GP_EPARSE:
    case GP_EUSAGE:
    case GP_ETOOBIG: st = 400, t = "bad_data"; break;
    default: st = 422, t = "execution"; break; /* ERANGE, EIO, EUNSUPPORTED, ENOMEM, EINTERNAL */
    }
    if (http_status)
        *http_status = st;
    return t;
}
