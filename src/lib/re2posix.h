/*
 * re2posix.h - regular expressions as Prometheus users write them (Go's
 * RE2 syntax), run by glibc's POSIX regexec.
 *
 * A pattern is translated into an equivalent POSIX extended expression,
 * fully anchored as Prometheus anchors selectors and label_replace
 * ("^(?:" pattern ")$"), vetted for cost, and compiled. Translated:
 * (?flags) and (?flags:...) for i and s (a leading (?i) compiles with
 * REG_ICASE, other case-insensitive parts spell both cases), (?:...) and
 * (?P<name>...) groups, \d \D \w \W \s \S inside and outside brackets,
 * [[:class:]] and [[:^class:]], escapes (\. \\ \n \t \x41 \x{263a} \123
 * \Q...\E), {n,m} counts and the literal braces RE2 reads ("a{", "{,3}"),
 * lazy quantifiers (read as greedy: see re2posix.c), \A \z ^ $, and "."
 * and negated classes matching one UTF-8 character, not one byte.
 * Refused with a message naming the construct: what POSIX cannot say
 * (\b \B, \p Unicode classes, (?m) anchors, '^' after text or '$'
 * before it, which glibc would read as line anchors, case-insensitive
 * non-ASCII letters, non-ASCII characters inside [...]) and what RE2
 * refuses itself.
 * Label values are taken to be valid UTF-8, as Prometheus requires.
 */
#ifndef GP_LIB_RE2POSIX_H
#define GP_LIB_RE2POSIX_H

#include "lib/buf.h"

#include <regex.h>
#include <stddef.h>

/* Bounds (RE2's own for counts; the rest keep regcomp and regexec cheap). */
#define GP_RE2_MAX_REPEAT 1000
#define GP_RE2_MAX_DEPTH 100
#define GP_RE2_MAX_GROUPS 1000

struct gp_re2 {
    regex_t re;       /* the compiled translation (gp_re2_compile) */
    int compiled;     /* re holds a compiled expression */
    int icase;        /* compile with REG_ICASE */
    int lazy;         /* the pattern has a lazy quantifier ("*?", or (?U)) */
    size_t ngroups;   /* capture groups of the RE2 pattern */
    size_t *group;    /* [ngroups + 1]: POSIX subexpression of RE2 group i */
    char **name;      /* [ngroups + 1]: (?P<name>) names; NULL where unnamed */
};

/*
 * Translates pat (len bytes, may hold any byte) into ere (appended,
 * NUL-terminated) and fills re's icase, lazy and group map (re is zeroed
 * first; free it with gp_re2_free). Returns GP_OK; GP_EPARSE with a
 * lowercase reason in why and *at the byte offset in pat; GP_ENOMEM.
 */
int gp_re2_translate(struct gp_re2 *re, const char *pat, size_t len, struct gp_buf *ere,
                     char *why, size_t whylen, size_t *at);

/*
 * Translates, vets the cost and compiles pat (REG_NOSUB when nosub).
 * Same returns as gp_re2_translate; regcomp's own errors are GP_EPARSE.
 */
int gp_re2_compile(struct gp_re2 *re, const char *pat, size_t len, int nosub, char *why,
                   size_t whylen, size_t *at);

/*
 * 1 when s (len bytes; may hold NULs) matches the whole pattern, else 0
 * (also when out of memory: no match rather than a wrong one). When sub
 * is not NULL, sub[i] for i < nsub gets RE2 group i's span in s (group 0
 * the whole), rm_so -1 where it did not take part; needs a compile
 * without nosub.
 */
int gp_re2_exec(const struct gp_re2 *re, const char *s, size_t len, regmatch_t *sub, size_t nsub);

/* The first RE2 group from group `from` on called name (len bytes), or -1
 * (RE2, unlike Perl, lets two groups share a name). */
long gp_re2_group_named(const struct gp_re2 *re, const char *name, size_t len, size_t from);

/* Frees what re holds; accepts a zeroed one. */
void gp_re2_free(struct gp_re2 *re);

#endif
