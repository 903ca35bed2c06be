/*
 * test_re2posix.c - RE2 patterns run as POSIX: for each pattern, strings
 * that RE2 (Go's regexp, fully anchored as Prometheus anchors) accepts
 * and strings it refuses must get the same answer here; capture groups
 * map through non-capturing and translation-made groups; flags, classes,
 * escapes, lazy quantifiers, anchors and UTF-8; and the refusals, each
 * by name and offset, for what cannot be translated or is not RE2.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/re2posix.h"
#include "test.h"

#include <stdlib.h>

#define MAXS 8

struct mcase {
    const char *pat;
    const char *yes[MAXS]; /* RE2 matches these whole */
    const char *no[MAXS];  /* and not these */
};

static void check_cases(const struct mcase *cs, size_t n, int line)
{
    for (size_t i = 0; i < n; i++) {
        struct gp_re2 re;
        char why[160] = "";
        size_t at = 0;
        int rc = gp_re2_compile(&re, cs[i].pat, strlen(cs[i].pat), (int)(i & 1), why, sizeof why,
                                &at);
        if (rc != GP_OK) {
            gp_test_fail(__FILE__, line, "compile `%s`: %d %s (at %zu)", cs[i].pat, rc, why, at);
            continue;
        }
        for (size_t k = 0; k < MAXS && cs[i].yes[k]; k++)
            if (!gp_re2_exec(&re, cs[i].yes[k], strlen(cs[i].yes[k]), NULL, 0))
                gp_test_fail(__FILE__, line, "`%s` should match \"%s\"", cs[i].pat, cs[i].yes[k]);
        for (size_t k = 0; k < MAXS && cs[i].no[k]; k++)
            if (gp_re2_exec(&re, cs[i].no[k], strlen(cs[i].no[k]), NULL, 0))
                gp_test_fail(__FILE__, line, "`%s` should not match \"%s\"", cs[i].pat,
                             cs[i].no[k]);
        gp_re2_free(&re);
    }
}

#define CASES(a) check_cases(a, sizeof a / sizeof a[0], __LINE__)

static void test_flags_and_groups(void)
{
    static const struct mcase cs[] = {
        {"(?i)node-a.*", {"node-a1", "NODE-A", "Node-aX"}, {"node-b", "xnode-a"}},
        {"(?i)a(?-i)b", {"ab", "Ab"}, {"aB", "AB"}},
        {"a(?i)b", {"ab", "aB"}, {"Ab", "AB"}},
        {"(?i:x)y", {"xy", "Xy"}, {"xY"}},
        {"(?i)[a-c]+", {"ABC", "abc", "aBc"}, {"abd", ""}},
        {"(?i)[[:upper:]]", {"a", "A"}, {"1"}},
        {"x(?i:[^a])", {"xb", "x1"}, {"xa", "xA"}},
        {"(?:a|b)-c", {"a-c", "b-c"}, {"ab-c", "c"}},
        {"(?P<host>[a-z]+):(?P<port>\\d+)", {"node:9100"}, {"node:", ":1", "n:x"}},
        {"(?s).", {"\n", "a"}, {"", "ab"}},
        {"(?s:a.)b", {"a\nb"}, {"a\n"}},
        {"a.b", {"axb", "a\xc3\xa9" "b", "a\xe2\x82\xac" "b"}, {"a\nb", "ab", "axxb"}},
        {".", {"x", "\xc3\xa9", "\xf0\x9f\x98\x80"}, {"\n", "xy", "\xc3\xa9x"}},
        {".{2}", {"ab", "\xc3\xa9\xc3\xa9", "a\xc3\xa9"}, {"a", "abc"}},
        {".*", {"", "anything at all", "\xc3\xa9t\xc3\xa9"}, {"a\nb"}},
        /* A repeated "." never splits a character between repetitions. */
        {".+.+.{2}", {"abcd", "\xc3\xa9\xc3\xa9-b"}, {"\xc3\xa9-b", "abc"}},
        {"(b*.+){2}", {"ab", "\xc3\xa9x"}, {"\xc3\xa9", "\xe2\x82\xac"}},
        {"\\S+\\W", {"a\xc3\xa9", "\xc3\xa9-"}, {"\xc3\xa9", "a"}},
        {"(?s).*", {"a\nb", ""}, {0}},
        {"(?U)a+", {"a", "aaa"}, {"", "b"}},
        {"(?im)x", {"X"}, {"y"}},
    };
    CASES(cs);
}

static void test_classes(void)
{
    static const struct mcase cs[] = {
        {"/api/v\\d", {"/api/v1", "/api/v9"}, {"/api/vx", "/api/v12"}},
        {"\\d+", {"0", "123"}, {"", "12a", "\xd9\xa3"}},
        {"\\D", {"a", "\xc3\xa9", "\n"}, {"1", "ab"}},
        {"\\w+", {"a_Z9"}, {"a-b", "\xc3\xa9"}},
        {"\\W", {"-", "\xc3\xa9"}, {"a", "_"}},
        {"a\\sb", {"a b", "a\tb", "a\nb", "a\rb", "a\fb"}, {"a\vb", "ab", "axb"}},
        {"\\S+", {"ab", "\xc3\xa9"}, {"a b", ""}},
        {"[\\d.]+", {"1.2", "..."}, {"1,2"}},
        {"[^\\d]", {"a", "\xc3\xa9"}, {"1"}},
        {"[\\D5]", {"a", "5"}, {"4"}},
        {"[\\w-]+", {"a-b_c"}, {"a b"}},
        {"[[:alpha:]]+", {"abcXYZ"}, {"a1", "\xc3\xa9"}},
        {"[[:^alpha:]]", {"1", "\xc3\xa9"}, {"a"}},
        {"[[:word:][:space:]]+", {"a b_1"}, {"a-b"}},
        {"[]a]", {"]", "a"}, {"b"}},
        {"[^]a]", {"b", "\xc3\xa9"}, {"]", "a"}},
        {"[a-]", {"a", "-"}, {"b"}},
        {"[-^]", {"-", "^"}, {"a"}},
        {"[\\^]", {"^"}, {"a"}},
        {"[\\]\\[\\\\]+", {"[]\\"}, {"a"}},
        {"[+--]", {"+", ",", "-"}, {"."}},
        {"[^-]+", {"abc", "\xc3\xa9"}, {"a-b"}},
        {"[^a]", {"b", "\n", "\xc3\xa9"}, {"a", "bb"}},
        {"[^a]{2}", {"bc", "\xc3\xa9\xc3\xa9"}, {"b", "bcd"}},
        {"[[:digit:]]", {"5"}, {"x"}},
        {"[.]", {"."}, {"a"}},
        {"[a.[]+", {"a.[", "["}, {"b"}},
        {"[[:a]", {"[", ":", "a"}, {"b"}}, /* "[:" without ":]" is a plain '[' */
        /* An empty class matches nothing (RE2 accepts it). */
        {"a|[^\\x01-\\x7f[:^ascii:][:cntrl:]]", {"a"}, {"", "\x01", "\xc3\xa9"}},
        {"(?P<a>x)|(?P<a>y)", {"x", "y"}, {"xy"}}, /* RE2 lets names repeat */
    };
    CASES(cs);
}

static void test_escapes_counts_anchors(void)
{
    static const struct mcase cs[] = {
        {"10\\.0\\.0\\.1", {"10.0.0.1"}, {"10x0.0.1"}},
        {"a\\\\b", {"a\\b"}, {"ab"}},
        {"a\\tb\\n", {"a\tb\n"}, {"atbn"}},
        {"\\x41\\x{263a}", {"A\xe2\x98\xba"}, {"A"}},
        {"\\101\\12", {"A\n"}, {"A"}},
        {"\\Qa.b*\\E", {"a.b*"}, {"axb", "a.bbb"}},
        {"\\Qab\\E+", {"abb", "ab"}, {"abab"}},
        {"\\Qa.", {"a."}, {"ax"}},
        {"a{2,3}", {"aa", "aaa"}, {"a", "aaaa"}},
        {"a{2,}", {"aa", "aaaaa"}, {"a"}},
        {"a{2}", {"aa"}, {"aaa"}},
        {"a{,2}", {"a{,2}"}, {"aa", "a"}},
        {"a{", {"a{"}, {"a"}},
        {"{", {"{"}, {""}},
        {"a{x}", {"a{x}"}, {"a"}},
        {"a}", {"a}"}, {"a"}},
        {"\xc3\xa9+", {"\xc3\xa9\xc3\xa9"}, {"\xc3\xa9\xa9"}},
        {"x\xc3\xa9{2}", {"x\xc3\xa9\xc3\xa9"}, {"x\xc3\xa9\xa9"}},
        {"a.*?c", {"abc", "ac", "abcbc"}, {"ab", "abcd"}},
        {"a+?b??", {"a", "aab"}, {"b"}},
        {"a{1,2}?", {"a", "aa"}, {"aaa"}},
        {"\\Aab\\z", {"ab"}, {"xab"}},
        {"^ab$", {"ab"}, {"xab", "abx"}},
        {"a|^b", {"a", "b"}, {"xb"}},
        {"(^a|b$)", {"a", "b"}, {"ab"}},
        {"(?:^a)b", {"ab"}, {"b"}},
        {"a(b$)", {"ab"}, {"ab\n"}},
        {"^a$", {"a"}, {"a\n", "\na"}},
        {"^$", {""}, {"\n"}},
        {"\\A\n\\z", {"\n"}, {"\n\n"}},
        {"^\n?a$", {"\na", "a"}, {"a\n"}},
        {"a|", {"a", ""}, {"b"}},
        {"()", {""}, {"a"}},
        {"\\$\\^\\|\\(\\)\\*\\+\\?\\{\\}\\[\\]", {"$^|()*+?{}[]"}, {""}},
        {"a\\-b\\_c\\/", {"a-b_c/"}, {""}},
    };
    CASES(cs);
}

/* Group i of the RE2 pattern holds what RE2 captures. */
static void check_groups(int line, const char *pat, const char *s, const char *const *want,
                         size_t nwant)
{
    struct gp_re2 re;
    char why[160] = "";
    size_t at;
    if (gp_re2_compile(&re, pat, strlen(pat), 0, why, sizeof why, &at) != GP_OK) {
        gp_test_fail(__FILE__, line, "compile `%s`: %s", pat, why);
        return;
    }
    if (re.ngroups + 1 != nwant)
        gp_test_fail(__FILE__, line, "`%s`: %zu groups, want %zu", pat, re.ngroups, nwant - 1);
    regmatch_t sub[8];
    if (!gp_re2_exec(&re, s, strlen(s), sub, 8))
        gp_test_fail(__FILE__, line, "`%s` should match \"%s\"", pat, s);
    for (size_t g = 0; g < nwant; g++) {
        char got[64] = "(none)";
        if (sub[g].rm_so >= 0)
            snprintf(got, sizeof got, "%.*s", (int)(sub[g].rm_eo - sub[g].rm_so), s + sub[g].rm_so);
        if (strcmp(got, want[g]) != 0)
            gp_test_fail(__FILE__, line, "`%s` on \"%s\": group %zu is \"%s\", want \"%s\"", pat,
                         s, g, got, want[g]);
    }
    for (size_t g = nwant; g < 8; g++)
        CHECK(sub[g].rm_so == -1);
    gp_re2_free(&re);
}

#define GROUPS(pat, s, ...)                                                                        \
    do {                                                                                           \
        static const char *const w_[] = {__VA_ARGS__};                                            \
        check_groups(__LINE__, pat, s, w_, sizeof w_ / sizeof w_[0]);                             \
    } while (0)

static void test_capture_groups(void)
{
    GROUPS("(?:a|d)-(.*)", "d-e", "d-e", "e");
    GROUPS("(.)(.)", "\xc3\xa9x", "\xc3\xa9x", "\xc3\xa9", "x");
    GROUPS("(?i)(A)-(.*)", "a-b-c", "a-b-c", "a", "b-c");
    GROUPS("(\\w+)-\\w+", "ab-cd", "ab-cd", "ab");
    GROUPS("a|(d)-e", "a", "a", "(none)");
    GROUPS("(?P<name>[a-z])-(?:x)(\\d)?", "q-x", "q-x", "q", "(none)");
    GROUPS("\xc3\xa9*(b)", "\xc3\xa9\xc3\xa9" "b", "\xc3\xa9\xc3\xa9" "b", "b");
    GROUPS("(?:(?:(a)))", "a", "a", "a");
    /* Overlapping alternatives: glibc captures as RE2's leftmost-first
     * rule does (docs/api.md says what is and is not promised). */
    GROUPS("(a|ab)(.*)", "abc", "abc", "a", "bc");
    GROUPS("(x|xy)(y?)", "xy", "xy", "x", "y");

    struct gp_re2 re;
    char why[160];
    size_t at;
    CHECK_INT(gp_re2_compile(&re, "(?P<x>a)(?P<y_1>b)(c)", 21, 0, why, sizeof why, &at), GP_OK);
    CHECK_INT(gp_re2_group_named(&re, "x", 1, 0), 1);
    CHECK_INT(gp_re2_group_named(&re, "y_1", 3, 1), 2);
    CHECK_INT(gp_re2_group_named(&re, "y_1", 3, 3), -1);
    CHECK_INT(gp_re2_group_named(&re, "c", 1, 0), -1);
    CHECK(!re.lazy);
    gp_re2_free(&re);
    CHECK_INT(gp_re2_compile(&re, "(a*?)b", 6, 0, why, sizeof why, &at), GP_OK);
    CHECK(re.lazy);
    gp_re2_free(&re);
    CHECK_INT(gp_re2_compile(&re, "(?U)a*", 6, 0, why, sizeof why, &at), GP_OK);
    CHECK(re.lazy);
    gp_re2_free(&re);
    CHECK_INT(gp_re2_compile(&re, "(?U)a*?", 7, 0, why, sizeof why, &at), GP_OK);
    CHECK(!re.lazy); /* (?U) swaps: *? is greedy again */
    gp_re2_free(&re);
}

/* The translations themselves: what is cheap stays cheap. */
static void test_translations(void)
{
    static const struct {
        const char *pat, *ere;
        int icase;
    } cs[] = {
        /* "." is a unit: one non-continuation byte, then continuation bytes */
        {"a.*", "^(a([^\n\x80-\xbf][\x80-\xbf]*)*)$", 0},
        {"(?s).+", "^(([^\x80-\xbf][\x80-\xbf]*)+)$", 0},
        {"(?i)gpu-\\d", "^(gpu-[0-9])$", 1},
        {"(?i)x(?-i)y", "^([xX]y)$", 0},
        {"(?:a|b)", "^((a|b))$", 0},
        {"\\.", "^(\\.)$", 0},
        {"[^a]*", "^(([^a\x80-\xbf][\x80-\xbf]*)*)$", 0},
        {"[a-z]*", "^([a-z]*)$", 0},
        {"a{,2}", "^(a\\{,2})$", 0},
        {"a*?", "^(a*)$", 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        struct gp_re2 re;
        struct gp_buf b;
        gp_buf_init(&b, 0);
        char why[160] = "";
        CHECK_INT(gp_re2_translate(&re, cs[i].pat, strlen(cs[i].pat), &b, why, sizeof why, NULL),
                  GP_OK);
        CHECK_STR(b.data ? b.data : "", cs[i].ere);
        CHECK_INT(re.icase, cs[i].icase);
        gp_re2_free(&re);
        gp_buf_free(&b);
    }
}

static void test_refused(void)
{
    static const struct {
        const char *pat;
        size_t at;
        const char *want;
    } cs[] = {
        {"\\bx", 0, "word boundaries"},
        {"x\\B", 1, "word boundaries"},
        {"\\pL", 0, "Unicode classes"},
        {"[\\p{Greek}]", 1, "Unicode classes"},
        {"(?m)^a", 4, "multi-line anchors"},
        {"(?i)caf\xc3\xa9", 7, "case-insensitive matching of non-ASCII"},
        {"[\xc3\xa9]", 1, "non-ASCII characters inside [...]"},
        {"[a-\\x{100}]", 3, "non-ASCII characters inside [...]"},
        {"(?<n>a)", 0, "(?P<name>...)"},
        {"(?P<>a)", 0, "invalid named capture"},
        {"(?x)a", 0, "invalid or unsupported Perl syntax '(?x'"},
        {"(?)", 0, "missing flags"},
        {"(?i-)", 0, "missing flags"},
        {"(?i", 0, "missing closing )"},
        {"(a", 0, "missing closing )"},
        {"a)|(b", 1, "unexpected ')'"},
        {"a**", 2, "invalid nested repetition operator"},
        {"a{2}{3}", 4, "invalid nested repetition operator"},
        {"a*?+", 3, "invalid nested repetition operator"},
        {"*a", 0, "missing argument to repetition operator"},
        {"a|*", 2, "missing argument to repetition operator"},
        {"(?i)*", 4, "missing argument to repetition operator"},
        {"^*", 1, "repeated anchor"},
        /* glibc reads these anchors as line anchors: "[^x]*^b" would match "a\nb" */
        {"a^b", 1, "'^' or '\\A' after text that consumes"},
        {"[^x]*^b", 5, "'^' or '\\A' after text that consumes"},
        {"(a)\\Ab", 3, "'^' or '\\A' after text"},
        {"a$\n", 2, "text after '$' or '\\z'"},
        {"(a$)b", 4, "text after '$'"},
        {"(a$|b)c", 6, "text after '$'"},
        {"(^\n)*", 4, "a repeated group holding an anchor"},
        {"a{1001}", 1, "invalid repeat count"},
        {"a{3,2}", 1, "invalid repeat count"},
        {"[abc", 0, "missing closing ]"},
        {"[z-a]", 1, "invalid character class range"},
        {"[a-\\d]", 1, "invalid character class range"},
        {"[[:nosuch:]]", 1, "invalid character class range '[:nosuch:]'"},
        {"x\\", 1, "trailing backslash"},
        {"\\1", 0, "backreferences"},
        {"(a)\\1", 3, "backreferences"},
        {"\\i", 0, "invalid escape sequence '\\i'"},
        {"\\Z", 0, "invalid escape sequence '\\Z'"},
        {"\\x4", 0, "\\x needs two hex digits"},
        {"\\x{110000}", 0, "past U+10FFFF"},
        {"\\x{}", 0, "\\x{ needs hex digits"},
        {"\\x00", 0, "NUL byte"},
        {"a\xff", 1, "invalid UTF-8"},
        {"((a{1000}){1000})", 0, "too costly"},
        {".{0,1000}", 0, "too costly"},
        {"(a?b?c?){100}", 0, "too costly"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        struct gp_re2 re;
        char why[160] = "";
        size_t at = 99;
        int rc = gp_re2_compile(&re, cs[i].pat, strlen(cs[i].pat), 1, why, sizeof why, &at);
        if (rc != GP_EPARSE || !strstr(why, cs[i].want) || at != cs[i].at)
            gp_test_fail(__FILE__, __LINE__, "`%s`: rc %d, \"%s\" at %zu; want \"%s\" at %zu",
                         cs[i].pat, rc, why, at, cs[i].want, cs[i].at);
        CHECK(!re.compiled && re.group == NULL);
    }
    /* NUL inside the pattern (a selector's \x00) and 5000 nested groups. */
    struct gp_re2 re;
    char why[160] = "";
    size_t at;
    CHECK_INT(gp_re2_compile(&re, "a\0b", 3, 1, why, sizeof why, &at), GP_EPARSE);
    CHECK_CONTAINS(why, "NUL byte");
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (int i = 0; i < 5000; i++)
        gp_buf_putc(&b, '(');
    gp_buf_putc(&b, 'a');
    for (int i = 0; i < 5000; i++)
        gp_buf_putc(&b, ')');
    CHECK_INT(gp_re2_compile(&re, b.data, b.len, 1, why, sizeof why, &at), GP_EPARSE);
    CHECK_CONTAINS(why, "groups nested deeper than 100");
    CHECK_INT(at, 100);
    gp_buf_free(&b);
}

const struct gp_test gp_tests_re2posix[] = {
    {"flags_and_groups", test_flags_and_groups},
    {"classes", test_classes},
    {"escapes_counts_anchors", test_escapes_counts_anchors},
    {"capture_groups", test_capture_groups},
    {"translations", test_translations},
    {"refused", test_refused},
    {0},
};
