/*
 * test_query_json.c - the query API's JSON writers: string escaping for
 * any bytes (checked through jansson), times, and the value formatter
 * against snprintf's shortest round-trip choice on many doubles.
 */
#include "lib/buf.h"
#include "lib/json.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *str_json(struct gp_buf *b, const char *s, size_t len)
{
    gp_buf_reset(b);
    gp_json_str(b, s, len);
    CHECK_INT(b->err, 0);
    return b->data;
}

static void test_strings(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_STR(str_json(&b, "", 0), "\"\"");
    CHECK_STR(str_json(&b, "plain", 5), "\"plain\"");
    CHECK_STR(str_json(&b, "a\"b\\c/d", 7), "\"a\\\"b\\\\c/d\"");
    CHECK_STR(str_json(&b, "\n\r\t\b\f\x01\x1f\x7f", 8), "\"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\"");
    CHECK_STR(str_json(&b, "nul\0x", 5), "\"nul\\u0000x\"");
    CHECK_STR(str_json(&b, "caf\xc3\xa9 \xf0\x9f\x98\x80", 10), "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    /* Not UTF-8: truncated, stray continuation, overlong, surrogate, > U+10FFFF. */
    CHECK_STR(str_json(&b, "\xc3", 1), "\"\\ufffd\"");
    CHECK_STR(str_json(&b, "\x80x", 2), "\"\\ufffdx\"");
    CHECK_STR(str_json(&b, "\xc0\xaf", 2), "\"\\ufffd\\ufffd\"");
    CHECK_STR(str_json(&b, "\xe0\x80\xaf", 3), "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK_STR(str_json(&b, "\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK_STR(str_json(&b, "\xf4\x90\x80\x80", 4), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    CHECK_STR(str_json(&b, "\xe2\x82", 2), "\"\\ufffd\\ufffd\"");
    /* Every byte value alone, and random byte strings: always valid JSON. */
    uint64_t x = 7;
    for (int round = 0; round < 3000; round++) {
        char s[64];
        size_t n = round < 256 ? 1 : (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            s[i] = round < 256 ? (char)round : (char)(x >> 56);
        }
        str_json(&b, s, n);
        json_error_t je;
        json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!j)
            gp_test_fail(__FILE__, __LINE__, "not JSON: %s (%s)", b.data, je.text);
        json_decref(j);
    }
    gp_buf_free(&b);
}

static void test_times(void)
{
    static const struct {
        int64_t ms;
        const char *s;
    } t[] = {{0, "0"},          {1000, "1"},           {1500, "1.5"},
             {1250, "1.25"},    {1001, "1.001"},       {10, "0.01"},
             {-1500, "-1.5"},   {-1, "-0.001"},        {1700000000000, "1700000000"},
             {1700000000120, "1700000000.12"}, {INT64_MAX, "9223372036854775.807"},
             {INT64_MIN, "-9223372036854775.808"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char out[32];
        size_t n = gp_json_format_time(t[i].ms, out);
        CHECK_STR(out, t[i].s);
        CHECK_INT(n, strlen(t[i].s));
    }
}

/* What gp_buf_put_double and Prometheus-minded code did: the first of
 * %.15g, %.16g, %.17g that reads back. */
static void reference(double v, char *out)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(out, 40, "%.*g", p, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static void test_values(void)
{
    static const struct {
        double v;
        const char *s;
    } t[] = {{0, "0"},
             {-0.0, "-0"},
             {1, "1"},
             {-42, "-42"},
             {0.1, "0.1"},
             {1.5, "1.5"},
             {2.0 / 3.0, "0.6666666666666666"},
             {100.0 / 3.0, "33.333333333333336"},
             {1e15, "1000000000000000"},
             {9007199254740993.0, "9007199254740992"},
             {1e300, "1e+300"},
             {-1e-300, "-1e-300"},
             {5e-324, "4.94065645841247e-324"},
             {1e-5, "0.00001"},
             {123456.789, "123456.789"},
             {0.001, "0.001"},
             {NAN, "NaN"},
             {INFINITY, "+Inf"},
             {-INFINITY, "-Inf"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char out[40];
        size_t n = gp_json_format_double(t[i].v, out);
        CHECK_STR(out, t[i].s);
        CHECK_INT(n, strlen(out));
    }
    /* Many doubles of every kind: bit-exact read-back, and never longer
     * than the reference's (identical wherever it writes fixed notation). */
    uint64_t x = 88172645463325252u;
    for (long i = 0; i < 300000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        switch (i % 6) {
        case 5: /* 256ths around the fast path's bounds */
            v = ldexp((double)(x % 5000000000u), -8) * ((x >> 40) & 1 ? -1 : 1) /
                (double)(1u << ((x >> 41) % 12));
            break;
        case 0:
            memcpy(&v, &x, sizeof v);
            break;
        case 1:
            v = (double)(x % 100000000) / (double)(1 + (x >> 40) % 999);
            break;
        case 2:
            v = ldexp((double)(x >> 11), -(int)((x >> 3) % 70));
            break;
        case 3:
            v = ldexp(1.0, (int)(x % 120) - 60); /* powers of two: the uneven gap */
            break;
        default:
            v = (double)(x % 100000) / 100.0;
            break;
        }
        if (!isfinite(v))
            continue;
        char a[40], b[40];
        gp_json_format_double(v, a);
        reference(v, b);
        double back = strtod(a, NULL);
        if (memcmp(&back, &v, sizeof v) != 0)
            gp_test_fail(__FILE__, __LINE__, "%.17g -> \"%s\" reads back as %.17g", v, a, back);
        if (!strchr(b, 'e') && strcmp(a, b) != 0)
            gp_test_fail(__FILE__, __LINE__, "%.17g -> \"%s\", reference \"%s\"", v, a, b);
        if (strlen(a) > strlen(b) + 6) /* fixed notation for tiny values is longer */
            gp_test_fail(__FILE__, __LINE__, "%.17g -> \"%s\", reference \"%s\"", v, a, b);
    }
}

static void test_points(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_json_point(&b, 1, 1500, 0.25);
    gp_json_point(&b, 0, 2000, NAN);
    CHECK_STR(b.data, "[1.5,\"0.25\"],[2,\"NaN\"]");
    gp_buf_reset(&b);
    gp_json_value(&b, -INFINITY);
    gp_json_time(&b, 7);
    CHECK_STR(b.data, "\"-Inf\"0.007");
    gp_buf_free(&b);
}

const struct gp_test gp_tests_query_json[] = {
    {"strings", test_strings},
    {"times", test_times},
    {"values", test_values},
    {"points", test_points},
    {0},
};
