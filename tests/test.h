/*
 * test.h - the unit-test harness.
 *
 * Each test is a plain function; each runs in its own process with a
 * timeout (runner.c), so a crash or a hang fails one test, not the run.
 * A test file ends with its table:
 *
 *     const struct gp_test gp_tests_duration[] = {
 *         {"parses_units", test_parses_units},
 *         {0},
 *     };
 *
 * and the group is named once in tests/test-list.h.
 */
#ifndef GP_TEST_H
#define GP_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

struct gp_test {
    const char *name;
    void (*fn)(void);
};

void gp_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* A fresh directory for this test (removed by the runner afterwards). */
const char *gp_test_tmpdir(void);
/* Absolute path of tests/data/<rel> (static buffer, valid until next call). */
const char *gp_test_data(const char *rel);
/* The text of a file of the repository (e.g. "docs/config.md"), at most
 * 1 MiB, in a static buffer valid until the next call; fails the test when
 * it cannot be read. */
const char *gp_test_repo_text(const char *rel);
/* Writes a file below dir, creating parent directories; fails the test on error. */
void gp_test_write_file(const char *dir, const char *rel, const char *content);

#define CHECK(c)                                                   \
    do {                                                           \
        if (!(c))                                                  \
            gp_test_fail(__FILE__, __LINE__, "check failed: %s", #c); \
    } while (0)

#define CHECK_INT(a, b)                                                                   \
    do {                                                                                  \
        long long a_ = (long long)(a), b_ = (long long)(b);                               \
        if (a_ != b_)                                                                     \
            gp_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);   \
    } while (0)

#define CHECK_DBL(a, b, eps)                                                              \
    do {                                                                                  \
        double a_ = (a), b_ = (b);                                                        \
        if (!(fabs(a_ - b_) <= (eps)))                                                    \
            gp_test_fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", #a, #b, a_, b_); \
    } while (0)

#define CHECK_STR(a, b)                                                                   \
    do {                                                                                  \
        const char *a_ = (a), *b_ = (b);                                                  \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                            \
            gp_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,        \
                         a_ ? a_ : "(null)", b_ ? b_ : "(null)");                         \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                       \
    do {                                                                                  \
        const char *h_ = (hay), *n_ = (needle);                                           \
        if (!h_ || !strstr(h_, n_))                                                       \
            gp_test_fail(__FILE__, __LINE__, "%s does not contain \"%s\"", #hay, n_);     \
    } while (0)

#endif
