/*
 * matcher.c - see matcher.h.
 *
 * Parts:
 *  - regex vetting: Prometheus compiles matchers with RE2, this store with
 *    glibc's POSIX regcomp. Most patterns mean the same in both; the ones
 *    that do not are refused with a message that names the construct,
 *    never silently read the other way:
 *      (?flags)              RE2 only
 *      \d \w \s \b \pN ...   RE2 classes (glibc reads \d as "d", \w as a
 *                            GNU class): any backslash before a letter or
 *                            digit (backreferences included)
 *      \< \> \` \'           GNU anchors in glibc, plain characters in RE2
 *      \ inside [...]        POSIX reads it literally, RE2 as an escape
 *      *? +? ?? {n}?         RE2 lazy quantifiers; stacked quantifiers too
 *      {,n}  lone {          RE2 reads them literally, glibc as counts
 *    Unbalanced parentheses are refused as well: "a)|(b" would otherwise
 *    escape the ^(...)$ anchoring. Counted repetitions are capped at 1000
 *    (RE2's limit), and the pattern's size and optional parts once counts
 *    are expanded (regex_vet), so regcomp's and regexec's work stays
 *    bounded for any input.
 *  - matcher build and match: values are compared with their length (a
 *    value decoded from \x00 may hold NUL bytes); regexec gets a
 *    NUL-terminated copy of the value (sanitizers' regexec interceptor
 *    reads up to the NUL) and REG_STARTEND so embedded NULs do not end it;
 *  - the selector lexer/parser: metric name, {matchers}, the three string
 *    forms with Go/PromQL escapes, whitespace and # comments. Errors give
 *    the byte offset (from 0) of what was wrong.
 */
#include "store/matcher.h"

#include "lib/err.h"
#include "lib/hex.h"
#include "lib/utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what regcomp is asked to build. */
#define GP_RE_MAX_REPEAT 1000
#define GP_RE_MAX_SIZE 20000
#define GP_RE_MAX_OPTIONAL 256
#define GP_RE_MAX_DEPTH 100

/* ---- regex vetting -------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Parses "{n}", "{n,}" or "{n,m}" at p[i]; sets *end after '}', *lo = n
 * and *hi = m (n for "{n}", UNBOUNDED for "{n,}"). 1 when it is one, 0
 * when it is not an interval, -1 with *why when it is a bad one. */
#define UNBOUNDED ((unsigned long)-1)
static int parse_interval(const char *p, size_t len, size_t i, size_t *end, unsigned long *lo,
                          unsigned long *hi, const char **why)
{
    size_t j = i + 1;
    unsigned long n = 0, m = 0;
    bool has_m = false, comma = false;
    if (j < len && p[j] == ',') {
        *why = "'{,n}' is a literal in RE2 but a count in POSIX; escape the brace as \\{";
        return -1;
    }
    if (j >= len || !is_digit(p[j]))
        return 0;
    while (j < len && is_digit(p[j])) {
        if (n <= GP_RE_MAX_REPEAT)
            n = n * 10 + (unsigned long)(p[j] - '0');
        j++;
    }
    if (j < len && p[j] == ',') {
        comma = true;
        j++;
        while (j < len && is_digit(p[j])) {
            if (m <= GP_RE_MAX_REPEAT)
                m = m * 10 + (unsigned long)(p[j] - '0');
            has_m = true;
            j++;
        }
    }
    if (j >= len || p[j] != '}')
        return 0;
    if (n > GP_RE_MAX_REPEAT || m > GP_RE_MAX_REPEAT) {
        *why = "repetition count over 1000";
        return -1;
    }
    if (has_m && m < n) {
        *why = "repetition range {n,m} with m < n";
        return -1;
    }
    *end = j + 1;
    *lo = n;
    *hi = has_m ? m : comma ? UNBOUNDED : n;
    return 1;
}

static const char *escape_why(char c)
{
    switch (c) {
    case 'd':
    case 'D':
        return "'\\d' is RE2 syntax, not POSIX; use [0-9]";
    case 'w':
    case 'W':
        return "'\\w' is RE2 syntax, not POSIX; use [a-zA-Z0-9_]";
    case 's':
    case 'S':
        return "'\\s' is RE2 syntax, not POSIX; use [[:space:]]";
    case 'b':
    case 'B':
        return "'\\b' word boundaries are not POSIX";
    case 'p':
    case 'P':
        return "'\\p' Unicode classes are RE2 syntax, not POSIX";
    case '<':
    case '>':
    case '`':
    case '\'':
        return "'\\<', '\\>', '\\`' and '\\'' are GNU anchors, not plain characters; drop the "
               "backslash";
    default:
        if (is_digit(c))
            return "backreferences ('\\1') are not supported";
        return "a backslash before a letter is an RE2 escape, not POSIX";
    }
}

/*
 * Checks a pattern as described at the top. Returns NULL when it is fine,
 * else a static reason; *at is the offset in the pattern.
 *
 * Cost model: glibc expands counted repetitions into copies, and its
 * matcher's work per input byte grows with the parts that may be skipped
 * or repeated (x?, x*, x+, the optional copies of x{n,m}). So each atom
 * carries its expanded size and its optional size, multiplied out through
 * nesting, and the totals are capped (GP_RE_MAX_SIZE, GP_RE_MAX_OPTIONAL):
 * alternations of thousands of literals pass, ".{0,1000}" does not.
 */
static const char *regex_vet(const char *p, size_t len, size_t *at)
{
    static const char *const too_big =
        "regular expression too costly once its counts are expanded";
    /* Per open group (depth d): expanded and optional size of its atoms. */
    uint64_t size[GP_RE_MAX_DEPTH + 1], opt[GP_RE_MAX_DEPTH + 1];
    size_t depth = 0, next;
    uint64_t tsize = 0, topt = 0;         /* of the whole pattern */
    uint64_t lsize = 0, lopt = 0;         /* of the previous atom; lsize 0: none */
    bool after_quant = false;
    size[0] = opt[0] = 0;
    for (size_t i = 0; i < len; i = next) {
        char c = p[i];
        *at = i;
        next = i + 1;
        if (c == '\0')
            return "NUL byte in a regular expression";
        unsigned long lo = 0, hi = 0;
        bool quant = true;
        if (c == '*')
            lo = 0, hi = UNBOUNDED;
        else if (c == '+')
            lo = 1, hi = UNBOUNDED;
        else if (c == '?')
            lo = 0, hi = 1;
        else if (c == '{') {
            const char *why = NULL;
            int r = parse_interval(p, len, i, &next, &lo, &hi, &why);
            if (r < 0)
                return why;
            if (r == 0)
                return "a '{' that does not start a count {n}, {n,} or {n,m}; escape it as \\{";
        } else
            quant = false;
        if (quant) {
            if (after_quant)
                return c == '?' ? "lazy quantifiers ('*?', '+?', '?\?') are RE2 syntax, not POSIX"
                                : "stacked quantifiers ('a**', 'a{2}{3}')";
            after_quant = true;
            if (lsize == 0)
                continue; /* nothing to repeat: regcomp says so */
            /* lo required copies keep their own optional parts; the rest
             * (hi - lo copies, or one starred copy) are optional whole. */
            uint64_t copies = hi == UNBOUNDED ? lo + 1 : hi;
            uint64_t extra = hi == UNBOUNDED ? 1 : hi - lo;
            if (copies == 0)
                copies = 1;
            uint64_t nsize = lsize * copies, nopt = lopt * lo + lsize * extra;
            if (lo == 0 && nopt < lsize)
                nopt = lsize;
            size[depth] += nsize - lsize;
            tsize += nsize - lsize;
            opt[depth] += nopt - lopt;
            topt += nopt - lopt;
            lsize = nsize;
            lopt = nopt;
        } else {
            after_quant = false;
            lopt = 0;
            switch (c) {
            case '\\': {
                if (i + 1 >= len)
                    return "trailing backslash";
                char e = p[i + 1];
                if (e == '\0')
                    return "NUL byte in a regular expression";
                if ((unsigned char)e >= 0x80 || is_alpha(e) || is_digit(e) || e == '<' ||
                    e == '>' || e == '`' || e == '\'')
                    return escape_why(e);
                next = i + 2;
                lsize = 1;
                break;
            }
            case '[': {
                size_t j = i + 1;
                if (j < len && p[j] == '^')
                    j++;
                if (j < len && p[j] == ']')
                    j++; /* a leading ']' is a member */
                for (;;) {
                    *at = j;
                    if (j >= len)
                        return "unterminated bracket expression '['";
                    if (p[j] == '\0')
                        return "NUL byte in a regular expression";
                    if (p[j] == '\\')
                        return "backslash inside [...]: POSIX reads it literally, RE2 as an escape";
                    if (p[j] == ']')
                        break;
                    if (p[j] == '[' && j + 1 < len &&
                        (p[j + 1] == ':' || p[j + 1] == '=' || p[j + 1] == '.')) {
                        char d = p[j + 1];
                        size_t q = j + 2;
                        while (q + 1 < len && !(p[q] == d && p[q + 1] == ']'))
                            q++;
                        if (q + 1 >= len)
                            return "unterminated class '[:', '[=' or '[.' in a bracket expression";
                        j = q + 2;
                        continue;
                    }
                    j++;
                }
                next = j + 1;
                lsize = 1;
                break;
            }
            case '(':
                if (i + 1 < len && p[i + 1] == '?')
                    return "'(?' groups and flags are RE2 syntax, not POSIX";
                if (depth == GP_RE_MAX_DEPTH)
                    return "groups nested deeper than 100";
                depth++;
                size[depth] = opt[depth] = 0;
                lsize = 0;
                continue;
            case ')':
                if (depth == 0)
                    return "unbalanced ')'";
                lsize = size[depth] + 1; /* the group node itself */
                lopt = opt[depth];
                depth--;
                size[depth] += lsize;
                opt[depth] += lopt;
                tsize++;
                break;
            case '|':
            case '^':
            case '$':
                size[depth]++;
                tsize++;
                lsize = 0;
                break;
            default:
                lsize = 1;
                break;
            }
            if (c != ')' && c != '|' && c != '^' && c != '$') { /* a one-node atom */
                size[depth] += lsize;
                tsize += lsize;
            }
        }
        if (tsize > GP_RE_MAX_SIZE || topt > GP_RE_MAX_OPTIONAL)
            return too_big;
    }
    *at = len;
    if (depth > 0)
        return "unbalanced '('";
    return NULL;
}

/* ---- matchers ------------------------------------------------------------- */

static bool valid_label_name(const char *s, size_t n)
{
    if (n == 0 || is_digit(s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '_')
            return false;
    return true;
}

/*
 * Fills m (zeroed first) from name/value (copied; value may hold NULs for
 * = and !=). On a bad regex returns GP_EPARSE with *why (static) or
 * regerror's text in rebuf, and *at the offset in the pattern.
 */
static int matcher_build(struct gp_matcher *m, enum gp_match_op op, const char *name, size_t nlen,
                         const char *value, size_t vlen, const char **why, size_t *at,
                         char *rebuf, size_t rebuflen)
{
    memset(m, 0, sizeof *m);
    *why = NULL;
    *at = 0;
    if (op != GP_MATCH_EQ && op != GP_MATCH_NE && op != GP_MATCH_RE && op != GP_MATCH_NRE)
        return GP_EUSAGE;
    m->op = op;
    m->name = malloc(nlen + 1);
    m->value = malloc(vlen + 1);
    if (!m->name || !m->value) {
        gp_matcher_free(m);
        return GP_ENOMEM;
    }
    memcpy(m->name, name, nlen);
    m->name[nlen] = '\0';
    if (vlen)
        memcpy(m->value, value, vlen);
    m->value[vlen] = '\0';
    m->value_len = vlen;
    if (op == GP_MATCH_EQ || op == GP_MATCH_NE)
        return GP_OK;
    if ((*why = regex_vet(value, vlen, at)) != NULL) {
        gp_matcher_free(m);
        return GP_EPARSE;
    }
    char *full = malloc(vlen + 5);
    if (!full) {
        gp_matcher_free(m);
        return GP_ENOMEM;
    }
    memcpy(full, "^(", 2);
    memcpy(full + 2, value, vlen);
    memcpy(full + 2 + vlen, ")$", 3);
    int rc = regcomp(&m->re, full, REG_EXTENDED | REG_NOSUB);
    free(full);
    if (rc != 0) {
        if (rc == REG_ESPACE) {
            gp_matcher_free(m);
            return GP_ENOMEM;
        }
        regerror(rc, &m->re, rebuf, rebuflen);
        *why = rebuf;
        *at = 0;
        gp_matcher_free(m);
        return GP_EPARSE;
    }
    m->has_re = 1;
    return GP_OK;
}

int gp_matcher_init(struct gp_matcher *m, enum gp_match_op op, const char *name, const char *value,
                    char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (!name || !value)
        return gp_seterr(err, errlen, GP_EUSAGE, "matcher: missing name or value");
    size_t nlen = strlen(name);
    if (!valid_label_name(name, nlen))
        return gp_seterr(err, errlen, GP_EPARSE, "matcher: invalid label name \"%.64s\"", name);
    const char *why;
    size_t at;
    char rebuf[128];
    int rc = matcher_build(m, op, name, nlen, value, strlen(value), &why, &at, rebuf, sizeof rebuf);
    if (rc == GP_EPARSE)
        return gp_seterr(err, errlen, rc, "matcher: invalid regex \"%.64s\": %s (at %zu)", value,
                         why, at);
    if (rc == GP_EUSAGE)
        return gp_seterr(err, errlen, rc, "matcher: unknown operator %d", (int)op);
    if (rc)
        return gp_seterr(err, errlen, rc, "matcher: out of memory");
    return GP_OK;
}

int gp_matcher_matches(const struct gp_matcher *m, const char *value, size_t len)
{
    bool hit;
    switch (m->op) {
    case GP_MATCH_EQ:
        return len == m->value_len && (len == 0 || memcmp(value, m->value, len) == 0);
    case GP_MATCH_NE:
        return !(len == m->value_len && (len == 0 || memcmp(value, m->value, len) == 0));
    case GP_MATCH_RE:
    case GP_MATCH_NRE:
        break;
    default:
        return 0;
    }
    if (!m->has_re)
        return 0;
    char stack[512];
    char *copy = len < sizeof stack ? stack : malloc(len + 1);
    if (!copy)
        return 0; /* out of memory: no match rather than a wrong one */
    if (len)
        memcpy(copy, value, len);
    copy[len] = '\0';
    regmatch_t rm = {.rm_so = 0, .rm_eo = (regoff_t)len};
    hit = regexec(&m->re, copy, 1, &rm, REG_STARTEND) == 0;
    if (copy != stack)
        free(copy);
    return m->op == GP_MATCH_RE ? hit : !hit;
}

void gp_matcher_free(struct gp_matcher *m)
{
    if (!m)
        return;
    if (m->has_re)
        regfree(&m->re);
    free(m->name);
    free(m->value);
    memset(m, 0, sizeof *m);
}

void gp_matchers_free(struct gp_matcher *m, size_t n)
{
    if (!m)
        return;
    for (size_t i = 0; i < n; i++)
        gp_matcher_free(&m[i]);
    free(m);
}

/* ---- selector parser ------------------------------------------------------ */

struct lx {
    const char *s;
    size_t len, i;
    char *err;
    size_t errlen;
};

/* What is at offset i, for messages: 'c', "end of input" or a byte value. */
static const char *what_at(const struct lx *l, size_t i, char *buf, size_t n)
{
    if (i >= l->len)
        return "end of input";
    unsigned char c = (unsigned char)l->s[i];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static int unexpected(struct lx *l, size_t i, const char *expected)
{
    char b[16];
    return gp_seterr(l->err, l->errlen, GP_EPARSE, "selector: unexpected %s at %zu%s%s",
                     what_at(l, i, b, sizeof b), i, expected ? ", expected " : "",
                     expected ? expected : "");
}

static void skip_ws(struct lx *l)
{
    while (l->i < l->len) {
        char c = l->s[l->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            l->i++;
        else if (c == '#') /* a PromQL comment runs to the end of the line */
            while (l->i < l->len && l->s[l->i] != '\n')
                l->i++;
        else
            break;
    }
}

/* One escape after the backslash at l->i - 1; appends to o. */
static int lex_escape(struct lx *l, char *o, size_t *olen, size_t at)
{
    if (l->i >= l->len)
        return gp_seterr(l->err, l->errlen, GP_EPARSE,
                         "selector: unterminated string (escape at end of input) at %zu", at);
    char c = l->s[l->i++];
    static const char simple[] = "abfnrtv\\'\"";
    static const char actual[] = "\a\b\f\n\r\t\v\\'\"";
    const char *sp = c ? strchr(simple, c) : NULL;
    if (sp) {
        o[(*olen)++] = actual[sp - simple];
        return GP_OK;
    }
    if (c >= '0' && c <= '7') {
        unsigned v = (unsigned)(c - '0');
        for (int k = 0; k < 2; k++) {
            if (l->i >= l->len || l->s[l->i] < '0' || l->s[l->i] > '7')
                return gp_seterr(l->err, l->errlen, GP_EPARSE,
                                 "selector: octal escape needs three digits at %zu", at);
            v = v * 8 + (unsigned)(l->s[l->i++] - '0');
        }
        if (v > 255)
            return gp_seterr(l->err, l->errlen, GP_EPARSE,
                             "selector: octal escape above \\377 at %zu", at);
        o[(*olen)++] = (char)v;
        return GP_OK;
    }
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (!digits) {
        char b[16];
        return gp_seterr(l->err, l->errlen, GP_EPARSE, "selector: unknown escape \\%s at %zu",
                         what_at(l, l->i - 1, b, sizeof b), at);
    }
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        int h = l->i < l->len ? gp_hex_digit(l->s[l->i]) : -1;
        if (h < 0)
            return gp_seterr(l->err, l->errlen, GP_EPARSE,
                             "selector: \\%c escape needs %d hex digits at %zu", c, digits, at);
        v = (v << 4) | (uint32_t)h;
        l->i++;
    }
    if (c == 'x') {
        o[(*olen)++] = (char)v;
        return GP_OK;
    }
    if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return gp_seterr(l->err, l->errlen, GP_EPARSE,
                         "selector: \\%c escape is not a Unicode code point at %zu", c, at);
    *olen += gp_utf8_encode(v, o + *olen);
    return GP_OK;
}

/* A quoted string at l->i into a new buffer (*out, *outlen; caller frees). */
static int lex_string(struct lx *l, char **out, size_t *outlen)
{
    size_t start = l->i;
    char q = l->s[l->i++];
    /* Decoded text is never longer than the literal. */
    char *o = malloc(l->len - start + 1);
    if (!o)
        return gp_seterr(l->err, l->errlen, GP_ENOMEM, "selector: out of memory");
    size_t n = 0;
    for (;;) {
        if (l->i >= l->len) {
            free(o);
            return gp_seterr(l->err, l->errlen, GP_EPARSE,
                             "selector: unterminated string starting at %zu", start);
        }
        char c = l->s[l->i++];
        if (c == q)
            break;
        if (q == '`') {
            o[n++] = c;
            continue;
        }
        if (c == '\n') {
            free(o);
            return gp_seterr(l->err, l->errlen, GP_EPARSE,
                             "selector: newline in string starting at %zu", start);
        }
        if (c == '\\') {
            int rc = lex_escape(l, o, &n, l->i - 1);
            if (rc) {
                free(o);
                return rc;
            }
            continue;
        }
        o[n++] = c;
    }
    o[n] = '\0';
    *out = o;
    *outlen = n;
    return GP_OK;
}

static bool name_char(char c, bool first, bool colon)
{
    return is_alpha(c) || c == '_' || (colon && c == ':') || (!first && is_digit(c));
}

/* A name at l->i: its length (0 when none is there). */
static size_t lex_name(struct lx *l, bool colon)
{
    size_t j = l->i;
    while (j < l->len && name_char(l->s[j], j == l->i, colon))
        j++;
    return j - l->i;
}

static int add_matcher(struct lx *l, struct gp_matcher *arr, size_t *n, enum gp_match_op op,
                       const char *name, size_t nlen, const char *value, size_t vlen, size_t at)
{
    if (*n == GP_SELECTOR_MAX_MATCHERS)
        return gp_seterr(l->err, l->errlen, GP_ETOOBIG,
                         "selector: more than %d matchers at %zu", GP_SELECTOR_MAX_MATCHERS, at);
    const char *why;
    size_t reat;
    char rebuf[128];
    int rc = matcher_build(&arr[*n], op, name, nlen, value, vlen, &why, &reat, rebuf,
                           sizeof rebuf);
    if (rc == GP_EPARSE)
        return gp_seterr(l->err, l->errlen, rc,
                         "selector: invalid regex in string at %zu: %s (pattern offset %zu)", at,
                         why, reat);
    if (rc)
        return gp_seterr(l->err, l->errlen, rc, "selector: out of memory");
    (*n)++;
    return GP_OK;
}

static int parse_matchers(struct lx *l, struct gp_matcher *arr, size_t *n, bool has_metric)
{
    l->i++; /* '{' */
    for (;;) {
        skip_ws(l);
        if (l->i < l->len && l->s[l->i] == '}') {
            l->i++;
            return GP_OK;
        }
        size_t nstart = l->i, nlen = lex_name(l, false);
        if (nlen == 0)
            return unexpected(l, l->i, "a label name or '}'");
        l->i += nlen;
        const char *name = l->s + nstart;
        if (has_metric && nlen == 8 && memcmp(name, "__name__", 8) == 0)
            return gp_seterr(l->err, l->errlen, GP_EPARSE,
                             "selector: metric name set twice (name and __name__) at %zu", nstart);
        skip_ws(l);
        enum gp_match_op op;
        size_t opat = l->i;
        char c0 = l->i < l->len ? l->s[l->i] : 0, c1 = l->i + 1 < l->len ? l->s[l->i + 1] : 0;
        if (c0 == '=' && c1 == '~')
            op = GP_MATCH_RE, l->i += 2;
        else if (c0 == '=')
            op = GP_MATCH_EQ, l->i += 1;
        else if (c0 == '!' && c1 == '=')
            op = GP_MATCH_NE, l->i += 2;
        else if (c0 == '!' && c1 == '~')
            op = GP_MATCH_NRE, l->i += 2;
        else
            return unexpected(l, opat, "one of = != =~ !~");
        skip_ws(l);
        if (l->i >= l->len || (l->s[l->i] != '"' && l->s[l->i] != '\'' && l->s[l->i] != '`'))
            return unexpected(l, l->i, "a quoted string");
        size_t vat = l->i;
        char *value = NULL;
        size_t vlen = 0;
        int rc = lex_string(l, &value, &vlen);
        if (rc)
            return rc;
        rc = add_matcher(l, arr, n, op, name, nlen, value, vlen, vat);
        free(value);
        if (rc)
            return rc;
        skip_ws(l);
        if (l->i < l->len && l->s[l->i] == ',') {
            l->i++;
            continue; /* "{a="b",}" is allowed, as in PromQL */
        }
        if (l->i < l->len && l->s[l->i] == '}') {
            l->i++;
            return GP_OK;
        }
        return unexpected(l, l->i, "',' or '}'");
    }
}

int gp_selector_parse(const char *s, size_t len, struct gp_matcher **out, size_t *n, char *err,
                      size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (len > GP_SELECTOR_MAX_LEN)
        return gp_seterr(err, errlen, GP_ETOOBIG, "selector: longer than %d bytes",
                         GP_SELECTOR_MAX_LEN);
    struct lx l = {.s = s, .len = len, .i = 0, .err = err, .errlen = errlen};
    struct gp_matcher *arr = calloc(GP_SELECTOR_MAX_MATCHERS, sizeof *arr);
    if (!arr)
        return gp_seterr(err, errlen, GP_ENOMEM, "selector: out of memory");
    size_t cnt = 0;
    int rc = GP_OK;
    skip_ws(&l);
    if (l.i >= l.len) {
        rc = gp_seterr(err, errlen, GP_EPARSE, "selector: empty");
        goto fail;
    }
    bool has_metric = false;
    size_t mlen = lex_name(&l, true);
    if (mlen > 0) {
        if ((rc = add_matcher(&l, arr, &cnt, GP_MATCH_EQ, "__name__", 8, s + l.i, mlen, l.i)))
            goto fail;
        l.i += mlen;
        has_metric = true;
        skip_ws(&l);
    }
    if (l.i < l.len && s[l.i] == '{') {
        if ((rc = parse_matchers(&l, arr, &cnt, has_metric)))
            goto fail;
        skip_ws(&l);
    } else if (!has_metric) {
        rc = unexpected(&l, l.i, "a metric name or '{'");
        goto fail;
    }
    if (l.i < l.len) {
        rc = unexpected(&l, l.i, NULL);
        goto fail;
    }
    bool any = false;
    for (size_t i = 0; i < cnt && !any; i++)
        any = !gp_matcher_matches(&arr[i], "", 0);
    if (!any) {
        rc = gp_seterr(err, errlen, GP_EPARSE,
                       "selector: needs at least one matcher that does not match the empty "
                       "string (this one would select every series)");
        goto fail;
    }
    *out = arr;
    *n = cnt;
    return GP_OK;
fail:
    gp_matchers_free(arr, cnt);
    return rc;
}
