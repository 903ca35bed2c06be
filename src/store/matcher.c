/*
 * matcher.c - see matcher.h.
 *
 * Parts:
 *  - regular expressions are RE2 syntax, as in Prometheus: lib/re2posix
 *    translates them to POSIX ERE, caps their cost and compiles them, and
 *    refuses by name what it cannot translate, never reading it the
 *    other way;
 *  - matcher build and match: values are compared with their length (a
 *    value decoded from \x00 may hold NUL bytes);
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

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

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
    int rc = gp_re2_compile(&m->re, value, vlen, 1, rebuf, rebuflen, at);
    if (rc != GP_OK) {
        *why = rebuf;
        gp_matcher_free(m);
        return rc;
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
    char rebuf[160];
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
    hit = m->has_re && gp_re2_exec(&m->re, value, len, NULL, 0);
    return m->op == GP_MATCH_RE ? hit : !hit;
}

void gp_matcher_free(struct gp_matcher *m)
{
    if (!m)
        return;
    gp_re2_free(&m->re);
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
    char rebuf[160];
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
