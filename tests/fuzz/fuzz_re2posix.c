/*
 * Fuzz target: RE2 patterns translated to POSIX (src/lib/re2posix.c), as
 * selectors and label_replace give them. Any bytes are a pattern:
 *   - it compiles or the translator refuses it with a reason (regcomp
 *     never refuses a translation; the cost cap may); compiled with and without
 *     submatches, it matches the same values (a few fixed ones and
 *     slices of the input);
 *   - the capture spans lie inside the value, group 0 is all of it, and
 *     every group maps to a POSIX subexpression that exists;
 *   - "(?i)" + pattern (compiled with REG_ICASE) and "(?-i)(?i)" +
 *     pattern (the same, its letters spelled out as [aA]) compile alike
 *     and match alike.
 * abort() on any disagreement.
 */
#include "lib/err.h"
#include "lib/re2posix.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vals[] = {"", "a", "A", "0", "ab", "aB-1", "\n", "x y", "\xc3\xa9",
                                   "node-a:9100", "GPU-0123abcd"};
enum { NVALS = sizeof vals / sizeof vals[0] };

/* Value k: the fixed ones, then four slices of the input; 0 past them. */
static int value_at(const uint8_t *data, size_t size, size_t k, const char **v, size_t *len)
{
    if (k < NVALS) {
        *v = vals[k];
        *len = strlen(vals[k]);
        return 1;
    }
    k -= NVALS;
    if (k >= 4 || size == 0)
        return 0;
    size_t from = (size * k) / 4;
    *v = (const char *)data + from;
    *len = (size - from) < 24 ? size - from : 24;
    return 1;
}

static int compile(struct gp_re2 *re, const char *p, size_t n, int nosub)
{
    char why[160] = "";
    size_t at = 0;
    int rc = gp_re2_compile(re, p, n, nosub, why, sizeof why, &at);
    if (rc == GP_EPARSE && (why[0] == '\0' || at > n))
        abort(); /* a refusal names its reason and a place in the pattern */
    if (rc != GP_OK && rc != GP_EPARSE && rc != GP_ENOMEM)
        abort();
    if (rc != GP_OK && (re->compiled || re->group))
        abort();
    if (rc == GP_EPARSE && !strstr(why, "too costly")) {
        /* Only the translator refuses: regcomp takes all it writes. */
        struct gp_re2 t;
        struct gp_buf b;
        gp_buf_init(&b, 0);
        if (gp_re2_translate(&t, p, n, &b, why, sizeof why, &at) == GP_OK)
            abort();
        gp_buf_free(&b);
    }
    return rc;
}

static void check_icase(const uint8_t *data, size_t size)
{
    char *a = malloc(size + 4), *b = malloc(size + 9);
    if (!a || !b)
        abort();
    memcpy(a, "(?i)", 4);
    memcpy(a + 4, data, size);
    memcpy(b, "(?-i)(?i)", 9);
    memcpy(b + 9, data, size);
    struct gp_re2 ra, rb;
    int ca = compile(&ra, a, size + 4, 1), cb = compile(&rb, b, size + 9, 1);
    if ((ca == GP_OK) != (cb == GP_OK) && ca != GP_ENOMEM && cb != GP_ENOMEM)
        abort(); /* [aA] costs what a costs: only a bug tells them apart */
    if (ca == GP_OK && cb == GP_OK) {
        const char *v;
        size_t len;
        for (size_t k = 0; value_at(data, size, k, &v, &len); k++)
            if (gp_re2_exec(&ra, v, len, NULL, 0) != gp_re2_exec(&rb, v, len, NULL, 0))
                abort();
    }
    gp_re2_free(&ra);
    gp_re2_free(&rb);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    const char *p = (const char *)data;
    struct gp_re2 ns, sub;
    int c1 = compile(&ns, p, size, 1), c2 = compile(&sub, p, size, 0);
    if (c1 == GP_OK && c2 == GP_OK) {
        if (ns.ngroups != sub.ngroups || ns.lazy != sub.lazy)
            abort();
        for (size_t g = 0; g <= sub.ngroups; g++)
            if (sub.group[g] > sub.re.re_nsub || (g > 0 && sub.group[g] == 0))
                abort();
        regmatch_t m[12];
        const char *v;
        size_t len;
        for (size_t k = 0; value_at(data, size, k, &v, &len); k++) {
            int h1 = gp_re2_exec(&ns, v, len, NULL, 0), h2 = gp_re2_exec(&sub, v, len, m, 12);
            if (h1 != h2)
                abort();
            if (!h2)
                continue;
            if (m[0].rm_so != 0 || (size_t)m[0].rm_eo != len)
                abort();
            for (size_t g = 1; g < 12; g++)
                if (m[g].rm_so != -1 &&
                    (m[g].rm_so < 0 || m[g].rm_eo < m[g].rm_so || (size_t)m[g].rm_eo > len ||
                     g > sub.ngroups))
                    abort();
        }
    } else if ((c1 == GP_OK) != (c2 == GP_OK) && c1 != GP_ENOMEM && c2 != GP_ENOMEM) {
        abort();
    }
    gp_re2_free(&ns);
    gp_re2_free(&sub);
    check_icase(data, size);
    return 0;
}
