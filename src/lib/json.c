/*
 * json.c - JSON strings, times and values (json.h).
 *
 * Two things matter here. Correctness: labels are outside data and may
 * hold any bytes, so every byte is either copied as well-formed UTF-8,
 * escaped, or replaced; clients (and jansson in the tests) must accept
 * every answer. Speed: a range query without aggregation can answer a
 * few hundred thousand points, and averages need 16 or 17 digits, for
 * which snprintf + strtod (as gp_buf_put_double does) cost ~400 ns a
 * value, more than evaluating them. So values are formatted in integer
 * arithmetic: integers below 2^53 directly; values in [1e-3, 1e15) by
 * computing the correctly rounded 15-, 16- and 17-digit decimals with
 * 128-bit integers and taking the first that provably reads back (an
 * exact comparison against half the gap to the neighbouring double) -
 * the same text "%.15g"/"%.16g"/"%.17g" + strtod would choose, in
 * ~60 ns; other values by the fewest fraction digits f with
 * v == m / 10^f (one correctly rounded IEEE division, which is what
 * strtod computes), and the rest through snprintf with a read-back check.
 */
#include "lib/json.h"

#include "lib/err.h"

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

/*
 * The shortest of the correctly rounded 15-, 16- and 17-significant-digit
 * decimals of a that reads back as a, in fixed notation: exactly what
 * "%.15g", "%.16g", "%.17g" + strtod would choose, in integer arithmetic.
 * a = M * 2^-sh exactly; for 1e-3 <= a < 1e15 every quantity below fits
 * in 128 bits: M * 10^k < 2^53 * 10^19 < 2^117, q * 2^sh < 10^17 * 2^62.
 * Returns the length, or 0 when a is outside that range (the caller
 * falls back to snprintf).
 */
static size_t format_exact(double a, int neg, char *out)
{
    static const uint64_t p10[] = {1u,
                                   10u,
                                   100u,
                                   1000u,
                                   10000u,
                                   100000u,
                                   1000000u,
                                   10000000u,
                                   100000000u,
                                   1000000000u,
                                   10000000000u,
                                   100000000000u,
                                   1000000000000u,
                                   10000000000000u,
                                   100000000000000u,
                                   1000000000000000u,
                                   10000000000000000u,
                                   100000000000000000u,
                                   1000000000000000000u,
                                   10000000000000000000u};
    if (!(a >= 1e-3 && a < 1e15))
        return 0;
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    unsigned sh = (unsigned)(1075 - (int)(bits >> 52)); /* 2..62 in this range */
    /* e10 = floor(log10 a), exactly: the largest j with M >= 10^j 2^sh. */
    int e10 = -3;
    for (int j = 14; j > -3; j--) {
        int ge = j >= 0 ? (unsigned __int128)m >= ((unsigned __int128)p10[j] << sh)
                        : (unsigned __int128)m * p10[-j] >= (unsigned __int128)1 << sh;
        if (ge) {
            e10 = j;
            break;
        }
    }
    unsigned __int128 q = 0;
    int k = 0;
    for (int d = 15; d <= 17; d++) {
        /* q = a * 10^k rounded half-even to an integer of d digits (or
         * 10^d when it rounds up: the same value, one more zero). */
        k = d - 1 - e10;
        unsigned __int128 n = (unsigned __int128)m * p10[k];
        q = n >> sh;
        unsigned __int128 rem = n - (q << sh), half = (unsigned __int128)1 << (sh - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        if (d == 17)
            break; /* 17 digits always read back */
        /* Does q / 10^k read back as a? |q 2^sh - M 10^k| against half the
         * gap to the neighbour on that side (a quarter below a power of 2);
         * a tie goes to the even mantissa, as strtod rounds. */
        unsigned __int128 x = q << sh;
        unsigned __int128 diff = x > n ? x - n : n - x;
        int quarter = x < n && m == (UINT64_C(1) << 52);
        unsigned __int128 lhs = diff * (quarter ? 4u : 2u);
        if (lhs < p10[k] || (lhs == p10[k] && !(m & 1)))
            break;
    }
    /* q has d digits (or is 10^d after rounding up: one more, all zeros)
     * with the decimal point after e10 + 1 of them. */
    char dig[24];
    int nd = 0;
    for (uint64_t t = (uint64_t)q; t; t /= 10) /* q <= 10^17 */
        dig[nd++] = (char)('0' + t % 10);
    int point = nd - k; /* digits before the decimal point */
    int lo = 0;
    while (lo < nd && lo < k && dig[lo] == '0')
        lo++; /* trailing zeros of the fraction */
    size_t n = 0;
    if (neg)
        out[n++] = '-';
    if (point <= 0) {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -point; i++)
            out[n++] = '0';
        for (int i = nd - 1; i >= lo; i--)
            out[n++] = dig[i];
    } else {
        for (int i = nd - 1; i >= nd - point; i--)
            out[n++] = dig[i];
        if (lo < nd - point) {
            out[n++] = '.';
            for (int i = nd - point - 1; i >= lo; i--)
                out[n++] = dig[i];
        }
    }
    out[n] = '\0';
    return n;
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
    if (a < lim && a == floor(a) && !(v == 0 && signbit(v))) {
        char tmp[24], *end = tmp + sizeof tmp, *p = u64_digits((uint64_t)a, end);
        if (v < 0)
            *--p = '-';
        size_t n = (size_t)(end - p);
        memcpy(out, p, n);
        out[n] = '\0';
        return n;
    }
    /* A fraction of 256ths below 1e7 (averages of a few integers, as GPU
     * utilization is): at most 15 significant digits, so its exact
     * decimal is what format_exact prints, without 128-bit arithmetic. */
    double s = a * 256.0;
    if (a >= 1e-3 && a < 1e7 && s == floor(s)) {
        /* k/256 = m/2^(8-z) with m = k >> z odd (k != 0: the integers
         * returned above) = m*5^(8-z) / 10^(8-z): exactly 8 - z
         * fraction digits, the last not 0 (m*5^j is odd). */
        static const uint32_t pow5[] = {1, 5, 25, 125, 625, 3125, 15625, 78125, 390625};
        uint64_t u = (uint64_t)s;
        unsigned k = (unsigned)(u & 255), z = (unsigned)__builtin_ctz(k);
        int nf = 8 - (int)z;
        uint64_t fr = (uint64_t)(k >> z) * pow5[nf];
        char tmp[24], *end = tmp + sizeof tmp, *p = end;
        for (int i = 0; i < nf; i++, fr /= 10)
            *--p = (char)('0' + fr % 10);
        *--p = '.';
        p = u64_digits(u >> 8, p);
        if (v < 0)
            *--p = '-';
        size_t n = (size_t)(end - p);
        memcpy(out, p, n);
        out[n] = '\0';
        return n;
    }
    size_t fast = format_exact(a, v < 0, out);
    if (fast)
        return fast;
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
