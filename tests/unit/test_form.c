/*
 * test_form.c - form bodies (net/form.h) as Go's url.ParseQuery reads
 * them: '+' and %XX, repeats kept in order, empty pairs skipped, a key
 * without '=', and the refusals (bad escapes, ';', NUL, too many
 * fields) each with its reason; the Content-Type test.
 */
#include "lib/err.h"
#include "net/form.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static void parse_ok(struct gp_form *f, const char *s)
{
    char err[160] = "";
    int rc = gp_form_parse(s, strlen(s), f, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "parse \"%s\": %d %s", s, rc, err);
}

static void parse_bad(int line, const char *s, size_t len, int want_rc, const char *want)
{
    struct gp_form f;
    char err[160] = "";
    int rc = gp_form_parse(s, len, &f, err, sizeof err);
    if (rc != want_rc || !strstr(err, want) || f.n || f.key || f.text)
        gp_test_fail(__FILE__, line, "parse \"%.60s\": rc %d (want %d), err \"%s\" (want \"%s\")", s, rc,
                     want_rc, err, want);
    gp_form_free(&f);
}

static void test_decoding(void)
{
    struct gp_form f;
    /* Grafana's health check, as its form encoder writes it. */
    parse_ok(&f, "query=1%2B1&time=1700000000.123");
    CHECK_INT((int)f.n, 2);
    CHECK_STR(gp_form_get(&f, "query"), "1+1");
    CHECK_STR(gp_form_get(&f, "time"), "1700000000.123");
    CHECK(gp_form_get(&f, "step") == NULL);
    gp_form_free(&f);

    parse_ok(&f, "query=sum+by+(gpu)+(x%7Bjob%3D%22a%22%7D)&match%5B%5D=up&match[]=%7B__name__%3D~%22a.*%22%7D"
                 "&&empty=&bare&match[]=b&x=%e2%82%ac&K=%4a%4A");
    CHECK_STR(gp_form_get(&f, "query"), "sum by (gpu) (x{job=\"a\"})");
    const char *v[4];
    CHECK_INT((int)gp_form_get_all(&f, "match[]", v, 4), 3);
    CHECK_STR(v[0], "up");
    CHECK_STR(v[1], "{__name__=~\"a.*\"}");
    CHECK_STR(v[2], "b");
    /* More values than room: the count is still all of them. */
    CHECK_INT((int)gp_form_get_all(&f, "match[]", v, 1), 3);
    CHECK_STR(v[0], "up");
    CHECK_STR(gp_form_get(&f, "empty"), "");
    CHECK_STR(gp_form_get(&f, "bare"), "");
    CHECK_STR(gp_form_get(&f, "x"), "\xe2\x82\xac");
    CHECK_STR(gp_form_get(&f, "K"), "JJ");
    CHECK(gp_form_get(&f, "k") == NULL); /* keys are case-sensitive */
    gp_form_free(&f);

    /* '=' in a value, empty key, nothing at all. */
    parse_ok(&f, "a=b=c&=v");
    CHECK_STR(gp_form_get(&f, "a"), "b=c");
    CHECK_STR(gp_form_get(&f, ""), "v");
    gp_form_free(&f);
    parse_ok(&f, "");
    CHECK_INT((int)f.n, 0);
    gp_form_free(&f);
    parse_ok(&f, "&&&");
    CHECK_INT((int)f.n, 0);
    gp_form_free(&f);
    /* Not NUL-terminated: only len bytes count. */
    char buf[] = "q=abcXXXX";
    char err[64];
    CHECK_INT(gp_form_parse(buf, 5, &f, err, sizeof err), GP_OK);
    CHECK_STR(gp_form_get(&f, "q"), "abc");
    gp_form_free(&f);
    gp_form_free(NULL);
}

#define BAD(s, rc, want) parse_bad(__LINE__, s, strlen(s), rc, want)

static void test_refusals(void)
{
    BAD("query=%zz", GP_EPARSE, "invalid URL escape \"%zz\" at byte 6");
    BAD("query=abc%4", GP_EPARSE, "invalid URL escape \"%4\" at byte 9");
    BAD("query=abc%", GP_EPARSE, "invalid URL escape \"%\" at byte 9");
    BAD("q%g1=1", GP_EPARSE, "invalid URL escape");
    BAD("a=1;b=2", GP_EPARSE, "invalid semicolon separator at byte 3");
    BAD("a=%00", GP_EPARSE, "a NUL byte");
    parse_bad(__LINE__, "a=b\0c", 5, GP_EPARSE, "a NUL byte at byte 3");
    /* One field too many, and exactly the cap. */
    size_t n = GP_FORM_MAX_FIELDS;
    char *s = malloc(n * 4 + 8);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%sa=1", i ? "&" : "");
    struct gp_form f;
    char err[160];
    CHECK_INT(gp_form_parse(s, k, &f, err, sizeof err), GP_OK);
    CHECK_INT((int)f.n, GP_FORM_MAX_FIELDS);
    gp_form_free(&f);
    strcpy(s + k, "&b=2");
    parse_bad(__LINE__, s, k + 4, GP_ETOOBIG, "more than 10000 form fields");
    free(s);
}

static void test_content_type(void)
{
    CHECK(gp_form_content_type("application/x-www-form-urlencoded"));
    CHECK(gp_form_content_type("Application/X-WWW-Form-Urlencoded; charset=UTF-8"));
    CHECK(gp_form_content_type(" application/x-www-form-urlencoded ;charset=utf-8"));
    CHECK(!gp_form_content_type("application/x-www-form-urlencodedx"));
    CHECK(!gp_form_content_type("application/json"));
    CHECK(!gp_form_content_type("multipart/form-data; boundary=x"));
    CHECK(!gp_form_content_type(""));
    CHECK(!gp_form_content_type(NULL));
}

const struct gp_test gp_tests_form[] = {
    {"decoding", test_decoding},
    {"refusals", test_refusals},
    {"content_type", test_content_type},
    {NULL, NULL},
};
