/* test_timeparse.c - times, steps and aggregations of the query API. */
#include "lib/err.h"
#include "query/query.h"
#include "test.h"

#include <stdint.h>

static void test_times(void)
{
    static const struct {
        const char *in;
        int64_t ms;
    } ok[] = {
        {"0", 0},
        {"1700000000", INT64_C(1700000000000)},
        {"1700000000.5", INT64_C(1700000000500)},
        {"1700000000.123456789", INT64_C(1700000000123)},
        {"1700000000.", INT64_C(1700000000000)},
        {".25", 250},
        {"-1.5", -1500},
        {"+12", 12000},
        {"1.7e9", INT64_C(1700000000000)},
        {"1.7E+09", INT64_C(1700000000000)},
        {"2026-11-22T10:00:00Z", INT64_C(1795341600000)},
        {"2026-11-22t10:00:00z", INT64_C(1795341600000)},
        {"2026-11-22T10:00:00.5+01:00", INT64_C(1795338000500)},
        {"2026-11-22T10:00:00.500000000+01:00", INT64_C(1795338000500)},
        {"1970-01-01T00:00:00Z", 0},
        {"2000-02-29T23:59:59.999Z", INT64_C(951868799999)},
        {"2000-02-29T23:59:59.9999Z", INT64_C(951868799999)}, /* truncated to ms */
        {"0001-01-01T00:00:00Z", INT64_C(-62135596800000)},
        {"9999-12-31T23:59:59.999Z", INT64_C(253402300799999)},
        {"1969-12-31T23:59:59.5Z", -500},
        {"2024-03-10T05:30:00-07:30", INT64_C(1710075600000)},
        {"253402300799.999", INT64_C(253402300799999)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -7;
        char err[256] = "";
        int rc = gp_parse_time_ms(ok[i].in, &ms, err, sizeof err);
        if (rc != GP_OK)
            gp_test_fail(__FILE__, __LINE__, "rejected \"%s\": %s", ok[i].in, err);
        if (ms != ok[i].ms)
            gp_test_fail(__FILE__, __LINE__, "\"%s\" -> %lld, want %lld", ok[i].in, (long long)ms,
                         (long long)ok[i].ms);
    }
}

static void test_bad_times(void)
{
    const char *bad[] = {
        "",
        " ",
        "-",
        ".",
        "abc",
        "12abc",
        "1 ",
        " 1",
        "1e",
        "inf",
        "nan",
        "NaN",
        "+Inf",
        "0x10",
        "1e400",
        "1e20",
        "-1e20",
        "253402300800",                   /* year 10000 */
        "99999999999999999999999999999", /* overflow */
        "2026-11-22",
        "2026-11-22T10:00:00",            /* no zone */
        "2026-11-22 10:00:00Z",
        "2026-11-22T10:00Z",
        "2026-11-22T10:00:00.Z",
        "2026-11-22T10:00:00.1234567890Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-02-29T00:00:00Z",           /* not a leap year */
        "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-01-00T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01T00:00:00+24:00",
        "2026-01-01T00:00:00+01:60",
        "2026-01-01T00:00:00+0100",
        "2026-01-01T00:00:00+01",
        "2026-01-01T00:00:00Zjunk",
        "0000-01-01T00:00:00Z",
        "0001-01-01T00:00:00+00:01",      /* before year 1 in UTC */
        "9999-12-31T23:59:59-00:01",      /* after year 9999 in UTC */
        "2026-1-01T00:00:00Z",
        "20261-01-01T00:00:00Z",
        "1111111111111111111111111111111111111111111111111111111111111111111111",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 77;
        char err[256] = "";
        int rc = gp_parse_time_ms(bad[i], &ms, err, sizeof err);
        if (rc == GP_OK)
            gp_test_fail(__FILE__, __LINE__, "accepted \"%s\" as %lld", bad[i], (long long)ms);
        CHECK(rc == GP_EPARSE || rc == GP_ERANGE);
        CHECK(err[0] != '\0');
        CHECK_INT(ms, 77);
    }
    int64_t ms;
    CHECK_INT(gp_parse_time_ms(NULL, &ms, NULL, 0), GP_EPARSE);
    char err[256];
    CHECK(gp_parse_time_ms("2026-02-30T00:00:00Z", &ms, err, sizeof err) != GP_OK);
    CHECK_CONTAINS(err, "2026-02-30T00:00:00Z");
}

static void test_steps(void)
{
    static const struct {
        const char *in;
        int64_t ms;
    } ok[] = {
        {"15s", 15000},   {"1m30s", 90000},  {"100ms", 100},   {"1h", 3600000},
        {"1d", 86400000}, {"1w", 604800000}, {"15", 15000},    {"0.5", 500},
        {"1.001", 1001},  {"60", 60000},     {"0.001", 1},     {"1e3", 1000000},
        {"2h30m", 9000000}, {"1y", INT64_C(31536000000)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -7;
        char err[256] = "";
        int rc = gp_parse_step_ms(ok[i].in, &ms, err, sizeof err);
        if (rc != GP_OK)
            gp_test_fail(__FILE__, __LINE__, "rejected \"%s\": %s", ok[i].in, err);
        if (ms != ok[i].ms)
            gp_test_fail(__FILE__, __LINE__, "\"%s\" -> %lld, want %lld", ok[i].in, (long long)ms,
                         (long long)ok[i].ms);
    }
}

static void test_bad_steps(void)
{
    const char *bad[] = {"",    "0",     "0s",    "-1",  "-15s", "0.0001", "s",    "15x",
                         "1s1m", "1.5s", " 15s",  "15s ", "abc", "inf",    "nan",  "1e30",
                         "99999999999999999999", "11y", "0x10", "1e-9", "+", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 77;
        char err[256] = "";
        int rc = gp_parse_step_ms(bad[i], &ms, err, sizeof err);
        if (rc == GP_OK)
            gp_test_fail(__FILE__, __LINE__, "accepted step \"%s\" as %lld", bad[i], (long long)ms);
        CHECK(err[0] != '\0');
        CHECK_INT(ms, 77);
    }
    int64_t ms;
    CHECK_INT(gp_parse_step_ms(NULL, &ms, NULL, 0), GP_EPARSE);
}

static void test_agg(void)
{
    enum gp_agg a = GP_AGG_AVG;
    CHECK_INT(gp_parse_agg(NULL, &a), GP_OK);
    CHECK_INT(a, GP_AGG_NONE);
    a = GP_AGG_AVG;
    CHECK_INT(gp_parse_agg("", &a), GP_OK);
    CHECK_INT(a, GP_AGG_NONE);
    CHECK_INT(gp_parse_agg("avg", &a), GP_OK);
    CHECK_INT(a, GP_AGG_AVG);
    CHECK_INT(gp_parse_agg("min", &a), GP_OK);
    CHECK_INT(a, GP_AGG_MIN);
    CHECK_INT(gp_parse_agg("max", &a), GP_OK);
    CHECK_INT(a, GP_AGG_MAX);
    CHECK_INT(gp_parse_agg("sum", &a), GP_OK);
    CHECK_INT(a, GP_AGG_SUM);
    CHECK_INT(gp_parse_agg("count", &a), GP_OK);
    CHECK_INT(a, GP_AGG_COUNT);
    const char *bad[] = {"AVG", "mean", "avg ", "stddev", "counts", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = GP_AGG_SUM;
        CHECK_INT(gp_parse_agg(bad[i], &a), GP_EPARSE);
        CHECK_INT(a, GP_AGG_SUM);
    }
}

const struct gp_test gp_tests_timeparse[] = {
    {"times", test_times},
    {"bad_times", test_bad_times},
    {"steps", test_steps},
    {"bad_steps", test_bad_steps},
    {"agg", test_agg},
    {0},
};
