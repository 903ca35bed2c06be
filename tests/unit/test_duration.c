#include "lib/duration.h"
#include "lib/err.h"
#include "test.h"

#include <stdint.h>

static void test_parses_units(void)
{
    static const struct {
        const char *in;
        int64_t ms;
    } ok[] = {{"100ms", 100}, {"1s", 1000}, {"5m", 300000}, {"1h30m", 5400000},
              {"2d", 172800000}, {"0", 0}, {"1m30s250ms", 90250}, {"60s", 60000}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -1;
        CHECK_INT(gp_parse_duration_ms(ok[i].in, &ms, NULL, 0), GP_OK);
        CHECK_INT(ms, ok[i].ms);
    }
}

static void test_rejects_malformed(void)
{
    const char *bad[] = {"", "s", "10", "10x", "1.5s", "-1s", "1s1m", "1ss", " 1s", "1s ",
                         "99999999999999999999d", "1m1m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 77;
        char err[128] = "";
        int rc = gp_parse_duration_ms(bad[i], &ms, err, sizeof err);
        if (rc == GP_OK)
            gp_test_fail(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
        CHECK(err[0] != '\0');
        CHECK_INT(ms, 77); /* output untouched on error */
    }
}

static void test_formats(void)
{
    char out[32];
    gp_format_duration(90250, out, sizeof out);
    CHECK_STR(out, "1m30s250ms");
    gp_format_duration(100, out, sizeof out);
    CHECK_STR(out, "100ms");
    gp_format_duration(0, out, sizeof out);
    CHECK_STR(out, "0s");
}

const struct gp_test gp_tests_duration[] = {
    {"parses_units", test_parses_units},
    {"rejects_malformed", test_rejects_malformed},
    {"formats", test_formats},
    {0},
};
