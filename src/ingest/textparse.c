/*
 * textparse.c - see textparse.h.
 *
 * One pass over the text, a line at a time (memchr for the newline).
 * Strings are views into the input; only label values with escapes are
 * copied, unescaped, into an arena that is sized once per parse to the
 * input's length (an unescaped value is never longer than its escaped
 * form), so views into it never move. Series and labels live in arrays
 * that grow by doubling and are kept across parses; because they may move
 * while growing, a series records the index of its first label and the
 * pointers are set once at the end.
 *
 * Parts: character classes and small scanners; value and timestamp
 * parsing (an exact integer fast path, then a syntax check and strtod);
 * UTF-8 validation; comment lines (HELP/TYPE); sample lines; the driver.
 */
#include "ingest/textparse.h"

#include "lib/bits.h"
#include "lib/err.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes -------------------------------------------------- */

/* One table lookup per byte in the name scanners (the hot loops). */
enum { C_LABEL_FIRST = 1, C_LABEL_REST = 2, C_METRIC_FIRST = 4, C_METRIC_REST = 8 };
static unsigned char cls[256];
static pthread_once_t cls_once = PTHREAD_ONCE_INIT;

static void cls_init(void)
{
    for (int ch = 0; ch < 256; ch++) {
        int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'), digit = ch >= '0' && ch <= '9';
        if (alpha || ch == '_')
            cls[ch] |= C_LABEL_FIRST | C_LABEL_REST | C_METRIC_FIRST | C_METRIC_REST;
        if (ch == ':')
            cls[ch] |= C_METRIC_FIRST | C_METRIC_REST;
        if (digit)
            cls[ch] |= C_LABEL_REST | C_METRIC_REST;
    }
}

static bool is_blank(char ch) { return ch == ' ' || ch == '\t'; }
static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool is_hex(char ch)
{
    return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}
static bool metric_first(char ch) { return cls[(unsigned char)ch] & C_METRIC_FIRST; }
static bool metric_rest(char ch) { return cls[(unsigned char)ch] & C_METRIC_REST; }
static bool label_first(char ch) { return cls[(unsigned char)ch] & C_LABEL_FIRST; }
static bool label_rest(char ch) { return cls[(unsigned char)ch] & C_LABEL_REST; }

static const char *skip_blanks(const char *q, const char *e)
{
    while (q < e && is_blank(*q))
        q++;
    return q;
}

static bool span_eq(const char *a, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(a, lit, n) == 0;
}

static bool span_eq_nocase(const char *a, size_t n, const char *lit)
{
    if (strlen(lit) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = a[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch != lit[i])
            return false;
    }
    return true;
}

/* ---- UTF-8 -------------------------------------------------------------- */

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static bool valid_utf8(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str, *end = s + n;
    while (s < end) {
        unsigned char b = *s;
        if (b < 0x80) {
            s++;
            continue;
        }
        size_t k;
        unsigned cp, min;
        if ((b & 0xE0) == 0xC0)
            k = 1, cp = b & 0x1Fu, min = 0x80;
        else if ((b & 0xF0) == 0xE0)
            k = 2, cp = b & 0x0Fu, min = 0x800;
        else if ((b & 0xF8) == 0xF0)
            k = 3, cp = b & 0x07u, min = 0x10000;
        else
            return false;
        if ((size_t)(end - s) <= k)
            return false;
        for (size_t i = 1; i <= k; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        s += k + 1;
    }
    return true;
}

/* ---- numbers ------------------------------------------------------------ */

/* Go's ParseFloat decimal syntax: [+-](d+[.d*]|.d+)([eE][+-]d+)? */
static bool decimal_syntax(const char *t, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (t[i] == '+' || t[i] == '-'))
        i++;
    while (i < n && is_digit(t[i]))
        i++, digits++;
    if (i < n && t[i] == '.') {
        i++;
        while (i < n && is_digit(t[i]))
            i++, digits++;
    }
    if (!digits)
        return false;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && is_digit(t[i]))
            i++, ed++;
        if (!ed)
            return false;
    }
    return i == n;
}

/* Go's hexadecimal float: [+-]0x(h+[.h*]|.h+)[pP][+-]d+ (the exponent is required). */
static bool hex_syntax(const char *t, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (t[i] == '+' || t[i] == '-'))
        i++;
    if (n - i < 2 || t[i] != '0' || (t[i + 1] != 'x' && t[i + 1] != 'X'))
        return false;
    i += 2;
    while (i < n && is_hex(t[i]))
        i++, digits++;
    if (i < n && t[i] == '.') {
        i++;
        while (i < n && is_hex(t[i]))
            i++, digits++;
    }
    if (!digits || i >= n || (t[i] != 'p' && t[i] != 'P'))
        return false;
    i++;
    if (i < n && (t[i] == '+' || t[i] == '-'))
        i++;
    size_t ed = 0;
    while (i < n && is_digit(t[i]))
        i++, ed++;
    return ed && i == n;
}

enum { NUM_OK, NUM_SYNTAX, NUM_RANGE };

#define MAX_NUMBER_LEN 256

static int parse_value(const char *t, size_t n, double *out)
{
    /* Fast path: a short integer is exact in a double. */
    size_t i = (t[0] == '-' || t[0] == '+');
    if (n > i && n - i <= 15) {
        uint64_t v = 0;
        size_t k = i;
        while (k < n && is_digit(t[k]))
            v = v * 10 + (uint64_t)(t[k++] - '0');
        if (k == n) {
            *out = t[0] == '-' ? -(double)v : (double)v;
            return NUM_OK;
        }
    }
    /* Clinger's fast path: up to 15 significant digits and a power of
     * ten up to 22 are both exact doubles, so one multiplication or
     * division rounds correctly, exactly as strtod would. */
    {
        uint64_t m = 0;
        int sig = 0, any = 0, scale = 0, exp10 = 0;
        size_t k = i;
        bool dot = false, ok = true;
        for (; k < n; k++) {
            char ch = t[k];
            if (is_digit(ch)) {
                any++;
                if (dot)
                    scale--;
                if (m == 0 && ch == '0')
                    continue; /* leading zeros are not significant */
                if (++sig > 15) {
                    ok = false;
                    break;
                }
                m = m * 10 + (uint64_t)(ch - '0');
            } else if (ch == '.' && !dot) {
                dot = true;
            } else {
                break;
            }
        }
        if (ok && any && k < n && (t[k] == 'e' || t[k] == 'E')) {
            size_t j = k + 1;
            bool eneg = j < n && t[j] == '-';
            j += j < n && (t[j] == '-' || t[j] == '+');
            int ed = 0;
            for (; j < n && is_digit(t[j]) && ed < 4; j++, ed++)
                exp10 = exp10 * 10 + (t[j] - '0');
            ok = ed > 0;
            exp10 = eneg ? -exp10 : exp10;
            k = j;
        }
        int e = scale + exp10;
        if (ok && any && k == n && (m == 0 || (e >= -22 && e <= 22))) {
            static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
            double v = m == 0 ? 0.0 : e >= 0 ? (double)m * p10[e] : (double)m / p10[-e];
            *out = t[0] == '-' ? -v : v;
            return NUM_OK;
        }
    }
    if (span_eq_nocase(t, n, "nan")) {
        *out = gp_bits_f64(GP_TEXT_NORMAL_NAN_BITS);
        return NUM_OK;
    }
    const char *m = t + i;
    size_t mn = n - i;
    if (span_eq_nocase(m, mn, "inf") || span_eq_nocase(m, mn, "infinity")) {
        *out = t[0] == '-' ? -INFINITY : INFINITY;
        return NUM_OK;
    }
    if (n > MAX_NUMBER_LEN || !(decimal_syntax(t, n) || hex_syntax(t, n)))
        return NUM_SYNTAX;
    char buf[MAX_NUMBER_LEN + 1];
    memcpy(buf, t, n);
    buf[n] = '\0';
    errno = 0;
    char *endp;
    double v = strtod(buf, &endp);
    if (endp != buf + n)
        return NUM_SYNTAX;
    if (errno == ERANGE && isinf(v))
        return NUM_RANGE; /* Go: ErrRange for overflow; underflow is fine */
    *out = v;
    return NUM_OK;
}

static int parse_timestamp(const char *t, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (t[0] == '+' || t[0] == '-')
        neg = t[0] == '-', i = 1;
    if (i == n)
        return NUM_SYNTAX;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (!is_digit(t[i]))
            return NUM_SYNTAX;
        unsigned d = (unsigned)(t[i] - '0');
        if (v > (lim - d) / 10)
            return NUM_RANGE;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return NUM_OK;
}

/* ---- parse context ------------------------------------------------------ */

struct ctx {
    struct gp_text_parser *p;
    size_t textlen;
    unsigned line;
    char *err;
    size_t errlen;
    size_t nseries, nlabels, arena_len;
    size_t max_series;
    /* The current metadata group: the last name given by HELP or TYPE. */
    const char *fam;
    size_t famlen;
    bool fam_help, fam_type;
    /* The metric name of the last sample line. */
    const char *last;
    size_t lastlen;
};

/* err = "line N: <what>[ near "<excerpt>"]". at may be NULL. */
static int fail(struct ctx *c, const char *at, const char *end, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(struct ctx *c, const char *at, const char *end, int code, const char *fmt, ...)
{
    char what[160], near[48] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (at && end) {
        size_t k = 0;
        for (; at < end && *at != '\n' && k < 32; at++)
            near[k++] = (*at >= 0x20 && *at < 0x7f) ? *at : '?';
        near[k] = '\0';
        if (at < end && *at != '\n')
            memcpy(near + k, "...", 4);
    }
    if (near[0])
        return gp_seterr(c->err, c->errlen, code, "line %u: %s near \"%s\"", c->line, what, near);
    return gp_seterr(c->err, c->errlen, code, "line %u: %s", c->line, what);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return GP_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*arr, n * elem);
    if (!q)
        return GP_ENOMEM;
    *arr = q;
    *cap = n;
    return GP_OK;
}

static int add_label(struct ctx *c, const char *name, size_t nlen, const char *val, size_t vlen)
{
    struct gp_text_parser *p = c->p;
    if (c->nlabels == p->cap_labels &&
        grow((void **)&p->labels, &p->cap_labels, c->nlabels + 1, sizeof *p->labels))
        return fail(c, NULL, NULL, GP_ENOMEM, "out of memory");
    p->labels[c->nlabels++] = (struct gp_label){{name, nlen}, {val, vlen}};
    return GP_OK;
}

static int cmp_name(const struct gp_str *a, const struct gp_str *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int r = memcmp(a->ptr, b->ptr, n);
    return r ? r : (a->len > b->len) - (a->len < b->len);
}

/* Sorts the labels of the series being built (few: insertion sort) and
 * rejects a name given twice. */
static int sort_labels(struct ctx *c, size_t start, const char *line, const char *end)
{
    struct gp_label *l = c->p->labels + start;
    size_t n = c->nlabels - start;
    for (size_t i = 1; i < n; i++) {
        struct gp_label t = l[i];
        size_t j = i;
        while (j > 0 && cmp_name(&l[j - 1].name, &t.name) > 0) {
            l[j] = l[j - 1];
            j--;
        }
        l[j] = t;
    }
    for (size_t i = 1; i < n; i++)
        if (cmp_name(&l[i - 1].name, &l[i].name) == 0)
            return fail(c, line, end, GP_EPARSE, "duplicate label name \"%.*s\"",
                        (int)(l[i].name.len > 64 ? 64 : l[i].name.len), l[i].name.ptr);
    return GP_OK;
}

/* ---- comment lines ------------------------------------------------------ */

static int parse_comment(struct ctx *c, const char *s, const char *e)
{
    const char *q = skip_blanks(s + 1, e), *t = q;
    while (q < e && !is_blank(*q))
        q++;
    bool help = span_eq(t, (size_t)(q - t), "HELP"), type = span_eq(t, (size_t)(q - t), "TYPE");
    if (!help && !type)
        return GP_OK; /* a plain comment */
    q = skip_blanks(q, e);
    if (q == e)
        return GP_OK; /* "# HELP" alone: a comment, as expfmt reads it */
    const char *name = q;
    if (!metric_first(*q))
        return fail(c, q, e, GP_EPARSE, "invalid metric name in %s line", help ? "HELP" : "TYPE");
    while (q < e && metric_rest(*q))
        q++;
    size_t nlen = (size_t)(q - name);
    if (q < e && !is_blank(*q))
        return fail(c, name, e, GP_EPARSE, "invalid metric name in %s line", help ? "HELP" : "TYPE");
    if (nlen > GP_RW_MAX_LABEL_LEN)
        return fail(c, NULL, NULL, GP_ETOOBIG, "metric name longer than %d bytes", GP_RW_MAX_LABEL_LEN);
    if (!(c->fam && c->famlen == nlen && memcmp(c->fam, name, nlen) == 0)) {
        c->fam = name;
        c->famlen = nlen;
        c->fam_help = c->fam_type = false;
    }
    q = skip_blanks(q, e);
    if (help) {
        if (c->fam_help)
            return fail(c, name, e, GP_EPARSE, "second HELP line for metric name");
        c->fam_help = true;
        for (const char *r = q; r < e; r++)
            if (*r == '\\') {
                if (r + 1 >= e || (r[1] != '\\' && r[1] != 'n'))
                    return fail(c, r, e, GP_EPARSE, "invalid escape sequence in HELP text");
                r++;
            }
        if (!valid_utf8(q, (size_t)(e - q)))
            return fail(c, NULL, NULL, GP_EPARSE, "HELP text is not valid UTF-8");
        return GP_OK;
    }
    if (c->fam_type)
        return fail(c, name, e, GP_EPARSE, "second TYPE line for metric name");
    c->fam_type = true;
    /* A TYPE after the family's samples (the name itself, or a histogram
     * or summary part of it, was the last sample line). */
    if (c->last && c->lastlen >= nlen && memcmp(c->last, name, nlen) == 0) {
        const char *sfx = c->last + nlen;
        size_t sl = c->lastlen - nlen;
        if (sl == 0 || span_eq(sfx, sl, "_bucket") || span_eq(sfx, sl, "_sum") ||
            span_eq(sfx, sl, "_count"))
            return fail(c, name, e, GP_EPARSE, "TYPE line for metric name after its samples");
    }
    const char *w = q;
    while (q < e && !is_blank(*q))
        q++;
    size_t wl = (size_t)(q - w);
    if (!(span_eq(w, wl, "counter") || span_eq(w, wl, "gauge") || span_eq(w, wl, "histogram") ||
          span_eq(w, wl, "summary") || span_eq(w, wl, "untyped")))
        return fail(c, w, e, GP_EPARSE, "unknown metric type");
    if (skip_blanks(q, e) != e)
        return fail(c, q, e, GP_EPARSE, "unexpected text after the metric type");
    return GP_OK;
}

/* ---- sample lines ------------------------------------------------------- */

/* Reads a quoted label value starting after the opening quote at *qp;
 * sets the view (into the text, or unescaped into the arena) and moves
 * *qp past the closing quote. */
static int read_label_value(struct ctx *c, const char **qp, const char *e, const char *line,
                            const char **val, size_t *vlen)
{
    const char *v = *qp, *r = v;
    bool esc = false;
    unsigned char high = 0; /* any byte >= 0x80: then check UTF-8 */
    while (r < e && *r != '"') {
        high |= (unsigned char)*r;
        if (*r == '\\') {
            esc = true;
            if (r + 1 >= e)
                break;
            if (r[1] != '\\' && r[1] != '"' && r[1] != 'n')
                return fail(c, r, e, GP_EPARSE, "invalid escape sequence in label value");
            r++;
        }
        r++;
    }
    if (r >= e)
        return fail(c, line, e, GP_EPARSE, "label value not closed by '\"'");
    *qp = r + 1;
    if (!esc) {
        *val = v;
        *vlen = (size_t)(r - v);
    } else {
        struct gp_text_parser *p = c->p;
        if (c->arena_len == 0 && p->cap_arena < c->textlen) {
            /* Nothing points into the arena yet in this parse: it may move. */
            free(p->arena);
            p->cap_arena = 0;
            p->arena = malloc(c->textlen);
            if (!p->arena)
                return fail(c, NULL, NULL, GP_ENOMEM, "out of memory");
            p->cap_arena = c->textlen;
        }
        char *d = p->arena + c->arena_len, *d0 = d;
        for (const char *x = v; x < r; x++) {
            if (*x == '\\') {
                x++;
                *d++ = *x == 'n' ? '\n' : *x;
            } else {
                *d++ = *x;
            }
        }
        *val = d0;
        *vlen = (size_t)(d - d0);
        c->arena_len += *vlen;
    }
    if (*vlen > GP_RW_MAX_LABEL_LEN)
        return fail(c, NULL, NULL, GP_ETOOBIG, "label value longer than %d bytes", GP_RW_MAX_LABEL_LEN);
    if ((high & 0x80) && !valid_utf8(*val, *vlen))
        return fail(c, v, e, GP_EPARSE, "label value is not valid UTF-8");
    return GP_OK;
}

static int parse_labels(struct ctx *c, const char **qp, const char *e, const char *line,
                        size_t start)
{
    const char *q = *qp;
    for (;;) {
        q = skip_blanks(q, e);
        if (q >= e)
            return fail(c, line, e, GP_EPARSE, "label set not closed by '}'");
        if (*q == '}') {
            q++;
            break;
        }
        const char *name = q;
        if (!label_first(*q))
            return fail(c, q, e, GP_EPARSE, "invalid label name");
        while (q < e && label_rest(*q))
            q++;
        size_t nlen = (size_t)(q - name);
        if (nlen > GP_RW_MAX_LABEL_LEN)
            return fail(c, NULL, NULL, GP_ETOOBIG, "label name longer than %d bytes", GP_RW_MAX_LABEL_LEN);
        if (span_eq(name, nlen, "__name__"))
            return fail(c, name, e, GP_EPARSE, "label name __name__ is reserved");
        q = skip_blanks(q, e);
        if (q >= e || *q != '=')
            return fail(c, name, e, GP_EPARSE, "expected '=' after label name");
        q = skip_blanks(q + 1, e);
        if (q >= e || *q != '"')
            return fail(c, name, e, GP_EPARSE, "expected '\"' to start the label value");
        q++;
        const char *val = NULL;
        size_t vlen = 0;
        int rc = read_label_value(c, &q, e, line, &val, &vlen);
        if (rc)
            return rc;
        if (c->nlabels - start >= GP_RW_MAX_LABELS)
            return fail(c, NULL, NULL, GP_ETOOBIG, "more than %d labels in one series", GP_RW_MAX_LABELS);
        if ((rc = add_label(c, name, nlen, val, vlen)))
            return rc;
        q = skip_blanks(q, e);
        if (q < e && *q == ',') {
            q++;
            continue;
        }
        if (q < e && *q == '}') {
            q++;
            break;
        }
        return fail(c, q < e ? q : line, e, GP_EPARSE, "expected ',' or '}' after a label value");
    }
    *qp = q;
    return GP_OK;
}

static int parse_sample(struct ctx *c, const char *s, const char *e, int64_t default_ts)
{
    struct gp_text_parser *p = c->p;
    if (c->nseries >= c->max_series)
        return fail(c, NULL, NULL, GP_ETOOBIG, "more than %zu samples", c->max_series);
    const char *q = s;
    if (!metric_first(*q))
        return fail(c, q, e, GP_EPARSE, "invalid metric name");
    while (q < e && metric_rest(*q))
        q++;
    size_t nlen = (size_t)(q - s);
    if (q < e && *q != '{' && !is_blank(*q))
        return fail(c, s, e, GP_EPARSE, "invalid character in metric name");
    if (nlen > GP_RW_MAX_LABEL_LEN)
        return fail(c, NULL, NULL, GP_ETOOBIG, "metric name longer than %d bytes", GP_RW_MAX_LABEL_LEN);
    size_t start = c->nlabels;
    int rc = add_label(c, "__name__", 8, s, nlen);
    if (rc)
        return rc;
    q = skip_blanks(q, e); /* expfmt allows blanks before the '{' */
    if (q < e && *q == '{') {
        q++;
        if ((rc = parse_labels(c, &q, e, s, start)))
            return rc;
    }
    if ((rc = sort_labels(c, start, s, e)))
        return rc;

    q = skip_blanks(q, e);
    const char *t = q;
    while (q < e && !is_blank(*q))
        q++;
    if (t == q)
        return fail(c, s, e, GP_EPARSE, "missing value");
    double v;
    rc = parse_value(t, (size_t)(q - t), &v);
    if (rc != NUM_OK)
        return fail(c, t, e, GP_EPARSE, rc == NUM_RANGE ? "value out of range" : "invalid value");
    int64_t ts = default_ts;
    q = skip_blanks(q, e);
    if (q < e) {
        t = q;
        while (q < e && !is_blank(*q))
            q++;
        rc = parse_timestamp(t, (size_t)(q - t), &ts);
        if (rc != NUM_OK)
            return fail(c, t, e, GP_EPARSE,
                        rc == NUM_RANGE ? "timestamp out of range" : "invalid timestamp");
        if (skip_blanks(q, e) != e)
            return fail(c, q, e, GP_EPARSE, "unexpected text after the timestamp");
    }

    if (c->nseries == p->cap_series) {
        /* The three per-series arrays share one capacity; one that grew
         * before another failed is merely larger than recorded. */
        size_t cap = p->cap_series ? p->cap_series * 2 : 64;
        void *a = realloc(p->series, cap * sizeof *p->series);
        if (a)
            p->series = a;
        void *b = a ? realloc(p->samples, cap * sizeof *p->samples) : NULL;
        if (b)
            p->samples = b;
        void *d = b ? realloc(p->label_start, cap * sizeof *p->label_start) : NULL;
        if (!d)
            return fail(c, NULL, NULL, GP_ENOMEM, "out of memory");
        p->label_start = d;
        p->cap_series = cap;
    }
    p->label_start[c->nseries] = start;
    p->series[c->nseries].nlabels = c->nlabels - start;
    p->series[c->nseries].nsamples = 1;
    p->samples[c->nseries] = (struct gp_sample){v, ts};
    c->nseries++;
    c->last = s;
    c->lastlen = nlen;
    return GP_OK;
}

/* ---- driver ------------------------------------------------------------- */

static void clear_result(struct gp_text_parser *p) { memset(&p->req, 0, sizeof p->req); }

int gp_text_parse(struct gp_text_parser *p, const char *text, size_t len, int64_t default_ts_ms,
                  char *err, size_t errlen)
{
    pthread_once(&cls_once, cls_init);
    clear_result(p);
    struct ctx c = {.p = p, .textlen = len, .err = err, .errlen = errlen,
                    .max_series = p->max_series ? p->max_series : GP_RW_MAX_SERIES};
    const char *s = text, *end = text + len;
    int rc = GP_OK;
    while (s < end) {
        c.line++;
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e) {
            rc = fail(&c, s, end, GP_EPARSE, "last line does not end with a newline");
            break;
        }
        const char *q = skip_blanks(s, e);
        if (q < e)
            rc = *q == '#' ? parse_comment(&c, q, e) : parse_sample(&c, q, e, default_ts_ms);
        if (rc)
            break;
        s = e + 1;
    }
    if (rc)
        return rc;
    for (size_t i = 0; i < c.nseries; i++) {
        p->series[i].labels = p->labels + p->label_start[i];
        p->series[i].samples = &p->samples[i];
    }
    p->req.series = p->series;
    p->req.nseries = c.nseries;
    p->req.nlabels_total = c.nlabels;
    p->req.nsamples_total = c.nseries;
    return GP_OK;
}

void gp_text_parser_free(struct gp_text_parser *p)
{
    if (!p)
        return;
    free(p->series);
    free(p->samples);
    free(p->label_start);
    free(p->labels);
    free(p->arena);
    memset(p, 0, sizeof *p);
}
