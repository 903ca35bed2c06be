/*
 * json.c - JSON strings, times and values for the query API (json.h).
 *
 * Two things matter here. Correctness: labels are outside data and may
 * hold any bytes, so every byte is either copied as well-formed UTF-8,
 * escaped, or replaced; clients (and jansson in the tests) must accept
 * every answer. Speed: a range query without aggregation can answer a
 * few hundred thousand points, and snprintf + strtod per value would cost
 * more than evaluating them. Most values are short decimals (means of
 * integers, percentages), so the formatter first looks for the fewest
 * fraction digits f <= 15 with v == m / 10^f for an integer m < 2^53:
 * IEEE division of two exact operands is correctly rounded, exactly what
 * strtod does with the decimal "m/10^f", so that text reads back as v and
 * is the shortest fixed-point text that does. Only the rest goes through
 * %.15g / %.16g / %.17g with a read-back check.
 */
#include "query/json.h"

#include "lib/err.h"
#include "store/labels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at p (2..4), or 0 (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    if (c >= 0xc2 && c <= 0xdf)
        return left >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (left < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if (c == 0xe0 && p[1] < 0xa0)
            return 0; /* overlong */
        if (c == 0xed && p[1] >= 0xa0)
            return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (left < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if (c == 0xf0 && p[1] < 0x90)
            return 0; /* overlong */
        if (c == 0xf4 && p[1] >= 0x90)
            return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

void gp_json_str(struct gp_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    gp_buf_putc(b, '"');
    while (p < end) {
        /* Copy the run of bytes that need nothing. */
        const unsigned char *q = p;
        while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
            q++;
        if (q > p)
            gp_buf_append(b, p, (size_t)(q - p));
        p = q;
        if (p == end)
            break;
        unsigned c = *p;
        if (c >= 0x80) {
            size_t n = utf8_seq(p, (size_t)(end - p));
            if (n) {
                gp_buf_append(b, p, n);
                p += n;
            } else {
                gp_buf_append(b, "\\ufffd", 6);
                p++;
            }
            continue;
        }
        p++;
        switch (c) {
        case '"':
            gp_buf_append(b, "\\\"", 2);
            break;
        case '\\':
            gp_buf_append(b, "\\\\", 2);
            break;
        case '\n':
            gp_buf_append(b, "\\n", 2);
            break;
        case '\r':
            gp_buf_append(b, "\\r", 2);
            break;
        case '\t':
            gp_buf_append(b, "\\t", 2);
            break;
        case '\b':
            gp_buf_append(b, "\\b", 2);
            break;
        case '\f':
            gp_buf_append(b, "\\f", 2);
            break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            gp_buf_append(b, u, sizeof u);
            break;
        }
        }
    }
    gp_buf_putc(b, '"');
}

int gp_json_labels(struct gp_buf *b, const uint8_t *blob, size_t len)
{
    struct gp_labels_iter it;
    struct gp_rw_str name, value;
    int rc, first = 1;
    gp_labels_iter_init(&it, blob, len);
    gp_buf_putc(b, '{');
    while ((rc = gp_labels_next(&it, &name, &value)) == 1) {
        if (!first)
            gp_buf_putc(b, ',');
        first = 0;
        gp_json_str(b, name.ptr, name.len);
        gp_buf_putc(b, ':');
        gp_json_str(b, value.ptr, value.len);
    }
    gp_buf_putc(b, '}');
    return rc < 0 ? GP_EPARSE : GP_OK;
}

/* Decimal digits of v into the end of a buffer; returns the start. */
static char *u64_digits(uint64_t v, char *end)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

size_t gp_json_format_time(int64_t ms, char *out)
{
    char tmp[32], *end = tmp + sizeof tmp;
    uint64_t u = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    unsigned frac = (unsigned)(u % 1000);
    char *p = end;
    if (frac) {
        char f[3] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
        int nf = f[2] != '0' ? 3 : f[1] != '0' ? 2 : 1;
        p -= nf;
        memcpy(p, f, (size_t)nf);
        *--p = '.';
    }
    p = u64_digits(u / 1000, p);
    if (ms < 0)
        *--p = '-';
    size_t n = (size_t)(end - p);
    memcpy(out, p, n);
    out[n] = '\0';
    return n;
}

void gp_json_time(struct gp_buf *b, int64_t ms)
{
    char tmp[32];
    gp_buf_append(b, tmp, gp_json_format_time(ms, tmp));
}

void gp_json_point(struct gp_buf *b, int first, int64_t ms, double v)
{
    char tmp[80];
    size_t n = 0;
    if (!first)
        tmp[n++] = ',';
    tmp[n++] = '[';
    n += gp_json_format_time(ms, tmp + n);
    tmp[n++] = ',';
    tmp[n++] = '"';
    n += gp_json_format_double(v, tmp + n);
    tmp[n++] = '"';
    tmp[n++] = ']';
    gp_buf_append(b, tmp, n);
}

size_t gp_json_format_double(double v, char *out)
{
    static const double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    if (isnan(v)) {
        memcpy(out, "NaN", 4);
        return 3;
    }
    if (isinf(v)) {
        memcpy(out, v > 0 ? "+Inf" : "-Inf", 5);
        return 4;
    }
    const double lim = 9007199254740992.0; /* 2^53: integers exact below it */
    double a = fabs(v);
    if (a < lim && !(v == 0 && signbit(v))) {
        for (int f = 0; f < 16; f++) {
            double x = a * pow10[f];
            if (x >= lim)
                break;
            double m = nearbyint(x);
            if (m / pow10[f] != a)
                continue;
            /* "m" with a decimal point f digits from the right. */
            char tmp[40], *end = tmp + sizeof tmp, *p = end;
            uint64_t um = (uint64_t)m;
            for (int i = 0; i < f; i++) {
                *--p = (char)('0' + um % 10);
                um /= 10;
            }
            if (f)
                *--p = '.';
            p = u64_digits(um, p);
            if (v < 0)
                *--p = '-';
            size_t n = (size_t)(end - p);
            memcpy(out, p, n);
            out[n] = '\0';
            return n;
        }
    }
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return (size_t)n;
}

void gp_json_value(struct gp_buf *b, double v)
{
    char tmp[34];
    tmp[0] = '"';
    size_t n = gp_json_format_double(v, tmp + 1);
    tmp[n + 1] = '"';
    gp_buf_append(b, tmp, n + 2);
}
