/*
 * test_matcher.c - selectors as PromQL writes them: names, the four
 * operators, the three string forms and their escapes, whitespace and
 * comments; the errors (each with its byte offset) for malformed input of
 * every kind, caps, the all-match-empty rule; regex anchoring; RE2
 * syntax accepted, and what cannot be translated to POSIX refused by name.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "store/matcher.h"
#include "test.h"

#include <stdlib.h>
#include <time.h>

static struct gp_matcher *parse_ok(const char *s, size_t *n)
{
    struct gp_matcher *m = NULL;
    char err[256] = "";
    int rc = gp_selector_parse(s, strlen(s), &m, n, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "parse %s: %d %s", s, rc, err);
    return m;
}

/* Parses s expecting rc and a message containing want. */
static void parse_bad(int line, const char *s, size_t len, int want_rc, const char *want)
{
    struct gp_matcher *m = (struct gp_matcher *)1;
    size_t n = 99;
    char err[256] = "";
    int rc = gp_selector_parse(s, len, &m, &n, err, sizeof err);
    if (rc != want_rc || !strstr(err, want) || m != NULL || n != 0)
        gp_test_fail(__FILE__, line, "parse \"%.60s\": rc %d (want %d), err \"%s\" (want \"%s\")",
                     s, rc, want_rc, err, want);
    if (strncmp(err, "selector: ", 10) != 0)
        gp_test_fail(__FILE__, line, "message lacks its prefix: %s", err);
}

#define BAD(s, want) parse_bad(__LINE__, s, strlen(s), GP_EPARSE, want)

static int matches(const struct gp_matcher *m, const char *v)
{
    return gp_matcher_matches(m, v, strlen(v));
}

static void test_metric_name_only(void)
{
    size_t n;
    struct gp_matcher *m = parse_ok("DCGM_FI_DEV_GPU_UTIL", &n);
    CHECK_INT(n, 1);
    CHECK_STR(m[0].name, "__name__");
    CHECK_INT(m[0].op, GP_MATCH_EQ);
    CHECK_STR(m[0].value, "DCGM_FI_DEV_GPU_UTIL");
    CHECK(matches(&m[0], "DCGM_FI_DEV_GPU_UTIL"));
    CHECK(!matches(&m[0], "DCGM_FI_DEV_GPU_UTI"));
    gp_matchers_free(m, n);

    m = parse_ok("  job:rate5m:sum \n", &n); /* recording-rule names have ':' */
    CHECK_INT(n, 1);
    CHECK_STR(m[0].value, "job:rate5m:sum");
    gp_matchers_free(m, n);
    m = parse_ok("up{}", &n);
    CHECK_INT(n, 1);
    gp_matchers_free(m, n);
}

static void test_all_operators(void)
{
    size_t n;
    struct gp_matcher *m = parse_ok("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\", Hostname!=\"n1\", "
                                    "modelName=~\"NVIDIA H100.*\",UUID!~'GPU-1.*'}",
                                    &n);
    CHECK_INT(n, 5);
    CHECK_STR(m[1].name, "gpu");
    CHECK_INT(m[1].op, GP_MATCH_EQ);
    CHECK_STR(m[1].value, "0");
    CHECK_INT(m[2].op, GP_MATCH_NE);
    CHECK_STR(m[2].name, "Hostname");
    CHECK_INT(m[3].op, GP_MATCH_RE);
    CHECK_STR(m[3].value, "NVIDIA H100.*");
    CHECK_INT(m[3].has_re, 1);
    CHECK_INT(m[4].op, GP_MATCH_NRE);
    CHECK_STR(m[4].value, "GPU-1.*");
    CHECK(matches(&m[2], "n2"));
    CHECK(!matches(&m[2], "n1"));
    CHECK(matches(&m[2], "")); /* absent label */
    CHECK(matches(&m[3], "NVIDIA H100 80GB HBM3"));
    CHECK(!matches(&m[3], "NVIDIA A100"));
    CHECK(matches(&m[4], "GPU-2abc"));
    CHECK(!matches(&m[4], "GPU-1abc"));
    CHECK(matches(&m[4], ""));
    gp_matchers_free(m, n);
}

static void test_whitespace_comments_trailing_comma(void)
{
    size_t n;
    struct gp_matcher *m = parse_ok(" \t{ # a comment\n a = \"1\" ,\r\n b=~`x|y` , } # end", &n);
    CHECK_INT(n, 2);
    CHECK_STR(m[0].name, "a");
    CHECK_STR(m[1].value, "x|y");
    gp_matchers_free(m, n);
    m = parse_ok("up { job = 'a' }", &n);
    CHECK_INT(n, 2);
    CHECK_STR(m[1].value, "a");
    gp_matchers_free(m, n);
}

static void test_string_escapes(void)
{
    size_t n;
    struct gp_matcher *m =
        parse_ok("{a=\"\\n\\t\\r\\\\\\\"\\'\\a\\b\\f\\v\", b='\\'x\\\"', c=\"\\x41\\101\\u00e9\\U0001F600\"}",
                 &n);
    CHECK_INT(n, 3);
    CHECK_STR(m[0].value, "\n\t\r\\\"'\a\b\f\v");
    CHECK_STR(m[1].value, "'x\"");
    CHECK_STR(m[2].value, "AA\xc3\xa9\xf0\x9f\x98\x80");
    gp_matchers_free(m, n);

    /* Raw strings keep backslashes and may hold newlines. */
    m = parse_ok("{a=`\\d\n\\`}", &n);
    CHECK_INT(m[0].value_len, 4);
    CHECK(memcmp(m[0].value, "\\d\n\\", 4) == 0);
    gp_matchers_free(m, n);

    /* A NUL byte from an escape is part of the value. */
    m = parse_ok("{a=\"x\\x00y\"}", &n);
    CHECK_INT(m[0].value_len, 3);
    CHECK(gp_matcher_matches(&m[0], "x\0y", 3));
    CHECK(!gp_matcher_matches(&m[0], "x", 1));
    gp_matchers_free(m, n);
}

static void test_malformed_selectors(void)
{
    BAD("", "selector: empty");
    BAD("  \n\t", "selector: empty");
    BAD("# only a comment", "selector: empty");
    BAD("up{gpu=\"0\",  ,}", "selector: unexpected ',' at 13, expected a label name or '}'");
    BAD("{a=\"b\",,}", "unexpected ',' at 7");
    BAD("{,}", "unexpected ',' at 1");
    BAD("{a=\"b\"", "unexpected end of input at 6");
    BAD("{a=\"b}", "unterminated string starting at 3");
    BAD("{a='b}", "unterminated string starting at 3");
    BAD("{a=`b}", "unterminated string starting at 3");
    BAD("{a=\"b\\", "unterminated string (escape at end of input) at 5");
    BAD("{a=\"x\ny\"}", "newline in string starting at 3");
    BAD("{a=\"\\q\"}", "unknown escape \\'q' at 4");
    BAD("{a=\"\\x4\"}", "\\x escape needs 2 hex digits at 4");
    BAD("{a=\"\\u12\"}", "\\u escape needs 4 hex digits");
    BAD("{a=\"\\U0011ffff\"}", "not a Unicode code point");
    BAD("{a=\"\\ud800\"}", "not a Unicode code point");
    BAD("{a=\"\\400\"}", "octal escape above \\377");
    BAD("{a=\"\\12\"}", "octal escape needs three digits");
    BAD("{1a=\"b\"}", "unexpected '1' at 1");
    BAD("{a.b=\"c\"}", "unexpected '.' at 2, expected one of = != =~ !~");
    BAD("{a:b=\"c\"}", "unexpected ':' at 2"); /* ':' only in metric names */
    BAD("{a==\"b\"}", "unexpected '=' at 3, expected a quoted string");
    BAD("{a~\"b\"}", "unexpected '~' at 2");
    BAD("{a!\"b\"}", "unexpected '!' at 2");
    BAD("{a=b}", "unexpected 'b' at 3, expected a quoted string");
    BAD("{a=}", "unexpected '}' at 3");
    BAD("{a}", "unexpected '}' at 2");
    BAD("{a=\"1\" b=\"2\"}", "unexpected 'b' at 7, expected ',' or '}'");
    BAD("up[5m]", "unexpected '[' at 2");
    BAD("up{a=\"b\"} offset 5m", "unexpected 'o' at 10");
    BAD("up{a=\"b\"}}", "unexpected '}' at 9");
    BAD("up up", "unexpected 'u' at 3");
    BAD("'up'", "unexpected ''' at 0, expected a metric name or '{'");
    BAD("1up", "unexpected '1' at 0");
    BAD("\x01", "unexpected byte 0x01 at 0");
    BAD("{a=\"b\"\xff}", "byte 0xff at 6");
    BAD("up{__name__=\"x\"}", "metric name set twice");
    BAD("{", "unexpected end of input at 1");
    BAD("}", "unexpected '}' at 0");
}

static void test_all_empty_matchers_refused(void)
{
    static const char *const empty[] = {
        "{}", "{a=\"\"}", "{a=~\".*\"}", "{a!~\"x\"}", "{a!=\"x\"}", "{a=~\"x|\"}",
        "{a=\"\", b!=\"1\", c=~\".*\"}", "{a=~\"\"}",
    };
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++)
        parse_bad(__LINE__, empty[i], strlen(empty[i]), GP_EPARSE,
                  "at least one matcher that does not match the empty string");
    size_t n;
    struct gp_matcher *m = parse_ok("{a=~\".*\", b=~\".+\"}", &n); /* .+ needs b */
    gp_matchers_free(m, n);
    m = parse_ok("{a!=\"\"}", &n);
    CHECK(!matches(&m[0], ""));
    CHECK(matches(&m[0], "x"));
    gp_matchers_free(m, n);
}

static void test_caps(void)
{
    size_t big = GP_SELECTOR_MAX_LEN + 1;
    char *s = malloc(big + 1);
    memset(s, ' ', big);
    memcpy(s, "up", 2);
    s[big] = '\0';
    parse_bad(__LINE__, s, big, GP_ETOOBIG, "longer than 16384 bytes");
    size_t n;
    struct gp_matcher *m = NULL;
    char err[256];
    CHECK_INT(gp_selector_parse(s, big - 1, &m, &n, err, sizeof err), GP_OK); /* at the cap */
    gp_matchers_free(m, n);

    /* 64 matchers pass, 65 do not. */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "{");
    for (int i = 0; i < 64; i++)
        gp_buf_printf(&b, "l%d=\"v\",", i);
    gp_buf_puts(&b, "}");
    CHECK_INT(gp_selector_parse(b.data, b.len, &m, &n, err, sizeof err), GP_OK);
    CHECK_INT(n, 64);
    gp_matchers_free(m, n);
    b.len -= 1;
    gp_buf_puts(&b, "x=\"y\"}");
    parse_bad(__LINE__, b.data, b.len, GP_ETOOBIG, "more than 64 matchers");
    gp_buf_free(&b);

    /* A huge value inside the cap is fine. */
    memset(s, 'v', big);
    memcpy(s, "{a=\"", 4);
    memcpy(s + big - 3, "\"}", 2);
    CHECK_INT(gp_selector_parse(s, big - 1, &m, &n, err, sizeof err), GP_OK);
    CHECK_INT(m[0].value_len, big - 1 - 6);
    CHECK(gp_matcher_matches(&m[0], m[0].value, m[0].value_len));
    gp_matchers_free(m, n);
    free(s);
}

static void test_regex_anchored(void)
{
    size_t n;
    struct gp_matcher *m = parse_ok("{gpu=~\"1\", b=~\"1|2\", c=~\"a.*\", d!~\"1\", e=~`10\\.0\\.0\\.1`}", &n);
    CHECK(matches(&m[0], "1"));
    CHECK(!matches(&m[0], "10"));
    CHECK(!matches(&m[0], "01"));
    CHECK(!matches(&m[0], ""));
    CHECK(matches(&m[1], "2"));
    CHECK(!matches(&m[1], "12"));
    CHECK(!matches(&m[1], "21"));
    CHECK(matches(&m[2], "abc"));
    CHECK(!matches(&m[2], "cab"));
    CHECK(matches(&m[3], "10"));
    CHECK(!matches(&m[3], "1"));
    CHECK(matches(&m[4], "10.0.0.1"));
    CHECK(!matches(&m[4], "10x0.0.1"));
    /* A value with a newline or NUL is matched whole, not up to it; RE2's
     * "." stops at a newline unless (?s). */
    CHECK(!gp_matcher_matches(&m[2], "a\nb", 3));
    CHECK(gp_matcher_matches(&m[2], "a\tb", 3));
    CHECK(!gp_matcher_matches(&m[0], "1\0" "0", 3));
    gp_matchers_free(m, n);
    /* Alternation cannot escape the anchoring. */
    BAD("{a=~\"a)|(b\"}", "unexpected ')'");
    BAD("{a=~\"(a\"}", "missing closing )");
}

static void test_regex_untranslatable_refused(void)
{
    static const struct {
        const char *sel;
        const char *want;
    } cases[] = {
        {"{a=~`\\bx`}", "word boundaries ('\\b', '\\B') cannot be translated to POSIX (pattern offset 0)"},
        {"{a=~`\\pL`}", "Unicode classes"},
        {"{a=~`(?m)^x`}", "multi-line anchors"},
        {"{a=~`(a)\\1`}", "backreferences"},
        {"{a=~`\\x4`}", "\\x needs two hex digits"},
        {"{a=~`[\\p{Greek}]`}", "Unicode classes"},
        {"{a=~`(?<x>a)`}", "(?P<name>...)"},
        {"{a=~`a**`}", "invalid nested repetition operator (pattern offset 2)"},
        {"{a=~`a{1001}`}", "invalid repeat count"},
        {"{a=~`a{3,2}`}", "invalid repeat count"},
        {"{a=~`((a{1000}){1000})`}", "too costly once its counts are expanded"},
        {"{a=~`.{0,1000}`}", "too costly"},
        {"{a=~`(a?b?c?){100}`}", "too costly"},
        {"{a=~`[abc`}", "missing closing ] of a character class"},
        {"{a=~`x\\`}", "trailing backslash"},
        {"{a=~\"x\\x00\"}", "NUL byte"},
        {"{a=~`[[:nosuch:]]`}", "invalid character class range '[:nosuch:]'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        parse_bad(__LINE__, cases[i].sel, strlen(cases[i].sel), GP_EPARSE, cases[i].want);
    /* The error names where the string starts. */
    BAD("up{gpu=~`\\b`}", "invalid regex in string at 8");

    /* Deep nesting is refused before regcomp can recurse on it. */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "{a=~\"");
    for (int i = 0; i < 5000; i++)
        gp_buf_putc(&b, '(');
    gp_buf_puts(&b, "a");
    for (int i = 0; i < 5000; i++)
        gp_buf_putc(&b, ')');
    gp_buf_puts(&b, "\"}");
    parse_bad(__LINE__, b.data, b.len, GP_EPARSE, "groups nested deeper than 100");
    gp_buf_free(&b);
}

/* RE2 syntax, as Grafana users write it, and the POSIX-looking patterns
 * that mean the same in RE2 (lib/re2posix's tests cover the rest). */
static void test_regex_re2_accepted(void)
{
    static const struct {
        const char *sel;
        const char *yes, *no;
    } cases[] = {
        {"{a=~`[[:digit:]]+`}", "123", "12a"},
        {"{a=~`a{2,3}`}", "aaa", "a"},
        {"{a=~`a{2,}`}", "aaaaaa", "a"},
        {"{a=~`[a-z]{0,200}x`}", "abcx", "abc"},
        {"{a=~`.{0,40}x`}", "abcx", "abc"},
        {"{a=~`x{1000}|y`}", "y", "x"},
        {"{a=~`x\\.y`}", "x.y", "xzy"},
        {"{a=~`[]a]+`}", "]a]", "b"},
        {"{a=~`[^]a]`}", "b", "]"},
        {"{a=~`^gpu$`}", "gpu", "gpu0"},
        {"{a=~`(H100|A100)-.*`}", "A100-SXM", "V100-SXM"},
        {"{b=\"1\", a=~`x|y|`}", "y", "xy"},
        {"{a=~`a}b`}", "a}b", "ab"},
        {"{a=~`\\(x\\)`}", "(x)", "x"},
        {"{a=~`.`}", "x", "\n"}, /* . stops at a newline, as in RE2 */
        {"{a=~`(?s).`}", "\n", ""},
        {"{instance=~\"(?i)node-a.*\"}", "NODE-A:9100", "node-b"},
        {"{a=~`(?:a|b)-\\d+`}", "b-12", "c-12"},
        {"{a=~`\\w+\\s\\S`}", "ab_1 x", "ab_1 "},
        {"{a=~`[\\d\\-]+`}", "1-2", "1+2"},
        {"{a=~`[^\\]]`}", "a", "]"},
        {"{a=~`a.*?c`}", "abcc", "abcd"},
        {"{a=~`a{,3}`}", "a{,3}", "aaa"},
        {"{a=~`a{`}", "a{", "a"},
        {"{a=~`\\<x\\>`}", "<x>", "x"},
        {"{a=~`\\Aab\\z`}", "ab", "b"},
        {"{a=~`caf\\x{e9}`}", "caf\xc3\xa9", "cafe"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        struct gp_matcher *m = parse_ok(cases[i].sel, &n);
        if (!matches(&m[n - 1], cases[i].yes) || matches(&m[n - 1], cases[i].no))
            gp_test_fail(__FILE__, __LINE__, "%s: yes %s no %s", cases[i].sel, cases[i].yes,
                         cases[i].no);
        gp_matchers_free(m, n);
    }
}

static void test_matcher_init(void)
{
    struct gp_matcher m;
    char err[256];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "gpu", "0|1", err, sizeof err), GP_OK);
    CHECK(matches(&m, "1"));
    CHECK(!matches(&m, "10"));
    gp_matcher_free(&m);
    CHECK(m.name == NULL); /* freed and zeroed */
    gp_matcher_free(&m);   /* twice is fine */

    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "a", ".*", err, sizeof err), GP_OK); /* allowed here */
    CHECK(matches(&m, ""));
    gp_matcher_free(&m);
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "a", "", err, sizeof err), GP_OK);
    CHECK(matches(&m, ""));
    CHECK(!matches(&m, "x"));
    gp_matcher_free(&m);
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_NE, "a", "", err, sizeof err), GP_OK);
    CHECK(!matches(&m, ""));
    CHECK(matches(&m, "x"));
    gp_matcher_free(&m);

    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "1a", "x", err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "matcher: invalid label name \"1a\"");
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "", "x", err, sizeof err), GP_EPARSE);
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "a-b", "x", err, sizeof err), GP_EPARSE);
    CHECK_INT(gp_matcher_init(&m, (enum gp_match_op)7, "a", "x", err, sizeof err), GP_EUSAGE);
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_NRE, "a", "\\b", err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "matcher: invalid regex \"\\b\": word boundaries");
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, NULL, "x", err, sizeof err), GP_EUSAGE);
    CHECK(m.name == NULL && m.has_re == 0);
    gp_matcher_free(NULL);
    gp_matchers_free(NULL, 0);
}

/* Every prefix and every one-byte damage of a rich selector parses or
 * fails cleanly (ASan checks the rest). */
static void test_truncations_and_damage(void)
{
    const char *full = "DCGM_FI_DEV_FB_USED{Hostname=~\"dgx-(0[1-9]|1[0-2])\", gpu!=\"7\", "
                       "UUID!~'GPU-[0-9a-f]{8}', modelName=\"NVIDIA \\u0048100\", x=`a|b`,}";
    size_t len = strlen(full);
    static const char subst[] = "\"'`{}=!~,\\ (|*x\0";
    for (size_t cut = 0; cut <= len; cut++) {
        char *s = malloc(cut ? cut : 1);
        memcpy(s, full, cut);
        struct gp_matcher *m;
        size_t n;
        char err[256];
        int rc = gp_selector_parse(s, cut, &m, &n, err, sizeof err);
        CHECK(rc == GP_OK || rc == GP_EPARSE);
        if (rc == GP_OK)
            gp_matchers_free(m, n);
        free(s);
    }
    char *s = malloc(len);
    for (size_t at = 0; at < len; at++)
        for (size_t k = 0; k < sizeof subst - 1; k++) {
            memcpy(s, full, len);
            s[at] = subst[k];
            struct gp_matcher *m;
            size_t n;
            char err[256];
            int rc = gp_selector_parse(s, len, &m, &n, err, sizeof err);
            CHECK(rc == GP_OK || rc == GP_EPARSE);
            if (rc == GP_OK)
                gp_matchers_free(m, n);
        }
    free(s);
    size_t n;
    struct gp_matcher *m = parse_ok(full, &n);
    CHECK_INT(n, 6);
    CHECK_STR(m[4].value, "NVIDIA H100");
    gp_matchers_free(m, n);
}

/* The costliest regexes the caps allow compile and match quickly, on a
 * value as long as a label value may be. */
static void test_regex_worst_case_bounded(void)
{
    static const struct {
        const char *atom;
        int reps;
        int ok;
    } shapes[] = {
        {".*", 256, 1},          {".*", 257, 0},       {"x?", 256, 1},
        {"[a-z]{0,250}", 1, 1},  {"[a-z]{0,250}", 2, 0}, {"(a|b){99}", 50, 1},
        {"(a|b){99}", 51, 0},   {"abcdefg|", 2000, 1}, {"(.*a){3}", 80, 1},
    };
    char *value = malloc(4097);
    memset(value, 'a', 4096);
    value[4096] = '\0';
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct gp_buf b;
        gp_buf_init(&b, 0);
        gp_buf_puts(&b, "{a=~\"");
        for (int k = 0; k < shapes[i].reps; k++)
            gp_buf_puts(&b, shapes[i].atom);
        gp_buf_puts(&b, "z\"}");
        CHECK(b.len <= GP_SELECTOR_MAX_LEN);
        struct gp_matcher *m;
        size_t n;
        char err[256];
        int rc = gp_selector_parse(b.data, b.len, &m, &n, err, sizeof err);
        if (rc != (shapes[i].ok ? GP_OK : GP_EPARSE))
            gp_test_fail(__FILE__, __LINE__, "%s x%d: %d %s", shapes[i].atom, shapes[i].reps, rc,
                         err);
        if (rc == GP_OK) {
            CHECK(!matches(&m[0], value));
            gp_matchers_free(m, n);
        } else {
            CHECK_CONTAINS(err, "too costly");
        }
        gp_buf_free(&b);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (s > 10)
        gp_test_fail(__FILE__, __LINE__, "worst-case regexes took %.1f s", s);
    free(value);
}

const struct gp_test gp_tests_matcher[] = {
    {"metric_name_only", test_metric_name_only},
    {"all_operators", test_all_operators},
    {"whitespace_comments_trailing_comma", test_whitespace_comments_trailing_comma},
    {"string_escapes", test_string_escapes},
    {"malformed_selectors", test_malformed_selectors},
    {"all_empty_matchers_refused", test_all_empty_matchers_refused},
    {"caps", test_caps},
    {"regex_anchored", test_regex_anchored},
    {"regex_untranslatable_refused", test_regex_untranslatable_refused},
    {"regex_re2_accepted", test_regex_re2_accepted},
    {"matcher_init", test_matcher_init},
    {"truncations_and_damage", test_truncations_and_damage},
    {"regex_worst_case_bounded", test_regex_worst_case_bounded},
    {0},
};
