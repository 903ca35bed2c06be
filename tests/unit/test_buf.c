#include "lib/buf.h"
#include "lib/err.h"
#include "test.h"
#include "test_rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_append_and_cap(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 10);
    gp_buf_puts(&b, "hello");
    CHECK_STR(b.data, "hello");
    gp_buf_puts(&b, " world!");
    CHECK_INT(b.err, GP_ETOOBIG);
    CHECK_INT(b.len, 5); /* nothing past the cap, nothing half-written */
    gp_buf_reset(&b);
    CHECK_INT(b.err, GP_OK);
    gp_buf_printf(&b, "%d-%s", 42, "x");
    CHECK_STR(b.data, "42-x");
    gp_buf_free(&b);
}

static void test_doubles_round_trip(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    const double vals[] = {0, 1, -1, 0.1, 1e-300, 123456789012345.0, 3.141592653589793, 1e300};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        gp_buf_reset(&b);
        gp_buf_put_double(&b, vals[i]);
        CHECK(strtod(b.data, NULL) == vals[i]);
    }
    gp_buf_reset(&b);
    gp_buf_put_double(&b, NAN);
    gp_buf_putc(&b, ' ');
    gp_buf_put_double(&b, -INFINITY);
    gp_buf_putc(&b, ' ');
    gp_buf_put_double(&b, 81559.0);
    CHECK_STR(b.data, "NaN -Inf 81559");
    gp_buf_free(&b);
}

/* The reference: the shortest of %.15g, %.16g, %.17g that reads back. */
static void reference_double(char *out, size_t len, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* The short-decimal path writes exactly what printf would: readings of
 * few digits, their neighbours one ulp away, the edges of the path's
 * range, and arbitrary doubles. */
static void test_doubles_as_printf(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char want[40];
    struct gp_test_rng rng = {20261127};
#define rnd() gp_test_rnd(&rng)
    for (int i = 0; i < 400000; i++) {
        double v;
        uint64_t r = rnd();
        switch (i % 4) {
        case 0: /* m / 10^k: a reading */
            v = (double)(rnd() % 10000000000ULL >> (r % 34)) / pow(10, (double)(r % 17));
            break;
        case 1: /* one ulp off a reading */
            v = nextafter((double)(rnd() % 1000000) / pow(10, (double)(r % 8)), (r & 1) ? INFINITY : 0);
            break;
        case 2: { /* any finite double */
            uint64_t u = rnd();
            memcpy(&v, &u, sizeof v);
            if (!isfinite(v))
                v = 0.5;
            break;
        }
        default: { /* near the path's limits */
            const double edge[] = {1e-4, 1e15, 999999999999999.9, 0.00099999, 0.1 + 0.2, 1.0 / 3};
            v = edge[r % 6];
            for (int s = (int)(rnd() % 5); s > 0; s--)
                v = nextafter(v, (r & 64) ? INFINITY : 0);
            break;
        }
        }
        if (r & 128)
            v = -v;
        gp_buf_reset(&b);
        gp_buf_put_double(&b, v);
        if (v == (double)(long long)v && fabs(v) < 9.007199254740992e15)
            continue; /* the integer path: not printf's */
        reference_double(want, sizeof want, v);
        if (strcmp(b.data, want))
            gp_test_fail(__FILE__, __LINE__, "%.17g: wrote %s, printf %s", v, b.data, want);
    }
#undef rnd
    const struct {
        double v;
        const char *s;
    } fixed[] = {{0.91, "0.91"}, {612.5, "612.5"}, {-0.0001, "-0.0001"}, {0.00012, "0.00012"},
                 {0.1 + 0.2, "0.30000000000000004"}, {1e-5, "1e-05"},
                 {123456.000001, "123456.000001"}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        gp_buf_reset(&b);
        gp_buf_put_double(&b, fixed[i].v);
        CHECK_STR(b.data, fixed[i].s);
    }
    gp_buf_free(&b);
}

static void test_large_printf(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char big[1000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gp_buf_printf(&b, "<%s>", big);
    CHECK_INT(b.len, 1001);
    CHECK(b.data[0] == '<' && b.data[1000] == '>');
    size_t n;
    char *p = gp_buf_steal(&b, &n);
    CHECK_INT(n, 1001);
    free(p);
    gp_buf_free(&b);
}

const struct gp_test gp_tests_buf[] = {
    {"append_and_cap", test_append_and_cap},
    {"doubles_round_trip", test_doubles_round_trip},
    {"doubles_as_printf", test_doubles_as_printf},
    {"large_printf", test_large_printf},
    {0},
};
