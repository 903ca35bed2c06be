#include "lib/buf.h"
#include "lib/err.h"
#include "test.h"

#include <stdlib.h>

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
    {"large_printf", test_large_printf},
    {0},
};
