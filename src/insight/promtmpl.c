/*
 * promtmpl.c - Prometheus alert templates (promtmpl.h): a small
 * interpreter of Go's text/template for the pipelines alert texts use,
 * with Prometheus's humanize functions and Go's float and printf
 * formatting.
 *
 * One pass: text is copied, each action {{ ... }} is cut into tokens,
 * split at '|' into commands, and each command is evaluated with the
 * previous one's value as its last argument, as Go does. Values are a
 * number (float64), a string or nothing (a missing label, which prints
 * "<no value>"). gp_ptmpl_check runs the same pass in a mode that only
 * reports what would not parse, so loading and rendering cannot
 * disagree on what is valid.
 */
#include "insight/promtmpl.h"

#include "lib/err.h"
#include "store/labels.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TOKENS 32
#define VAL_LEN 1024

enum tok { T_PIPE, T_VAR, T_FIELD, T_IDENT, T_STR, T_NUM, T_OTHER };

struct token {
    enum tok t;
    const char *p; /* source text */
    size_t n;
    char s[VAL_LEN]; /* T_STR: decoded */
    size_t slen;
    double num;
};

enum vkind { V_NONE, V_STR, V_NUM };

struct val {
    enum vkind k;
    double num;
    char s[VAL_LEN];
    size_t len;
};

struct ctx {
    const struct gp_ptmpl_data *d;
    bool check; /* only parse errors matter */
    char *err;
    size_t errlen;
};

/* ---- Go's float formatting ---- */

/* The shortest digits of v (finite, != 0) that read back as v: digits
 * into d (no point), decimal exponent of the first digit into *exp. */
static int shortest(double v, char *d, int *exp)
{
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    int n = 0;
    const char *s = tmp + (tmp[0] == '-');
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            d[n++] = *s;
    while (n > 1 && d[n - 1] == '0')
        n--;
    d[n] = '\0';
    *exp = atoi(s + 1);
    return n;
}

void gp_go_float(double v, char verb, char *out, size_t len)
{
    if (isnan(v)) {
        snprintf(out, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, len, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    const char *sign = signbit(v) ? "-" : "";
    if (v == 0) {
        snprintf(out, len, "%s%s", sign, verb == 'e' ? "0e+00" : "0");
        return;
    }
    char d[24];
    int exp;
    int n = shortest(fabs(v), d, &exp);
    if (verb == 'e' || exp < -4 || exp >= 6) {
        snprintf(out, len, "%s%c%s%.*s%se%c%02d", sign, d[0], n > 1 ? "." : "", n - 1, d + 1, "",
                 exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    char b[48];
    size_t k = 0;
    if (exp < 0) {
        b[k++] = '0';
        b[k++] = '.';
        for (int i = -1; i > exp; i--)
            b[k++] = '0';
        for (int i = 0; i < n; i++)
            b[k++] = d[i];
    } else {
        for (int i = 0; i <= exp; i++)
            b[k++] = i < n ? d[i] : '0';
        if (n > exp + 1) {
            b[k++] = '.';
            for (int i = exp + 1; i < n; i++)
                b[k++] = d[i];
        }
    }
    b[k] = '\0';
    snprintf(out, len, "%s%s", sign, b);
}

/* Go's fmt.Sprintf("%.4g", v): C's %.4g but for NaN and the infinities. */
static void g4(double v, const char *suffix, struct val *r)
{
    r->k = V_STR;
    if (isnan(v) || isinf(v))
        gp_go_float(v, 'v', r->s, sizeof r->s);
    else
        snprintf(r->s, sizeof r->s, "%.4g", v);
    r->len = strlen(r->s);
    snprintf(r->s + r->len, sizeof r->s - r->len, "%s", suffix);
    r->len = strlen(r->s);
}

/* ---- errors ---- */

static int fail(struct ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, int code, const char *fmt, ...)
{
    if (c->check && code == GP_EUSAGE)
        return GP_OK; /* an execution error: Prometheus's check only parses */
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- values ---- */

static void set_str(struct val *r, const char *s, size_t n)
{
    if (n >= sizeof r->s)
        n = sizeof r->s - 1;
    memcpy(r->s, s, n);
    r->s[n] = '\0';
    r->len = n;
    r->k = V_STR;
}

static void print_val(const struct val *v, struct gp_buf *out)
{
    char t[40];
    switch (v->k) {
    case V_NONE:
        gp_buf_puts(out, "<no value>");
        break;
    case V_STR:
        gp_buf_append(out, v->s, v->len);
        break;
    case V_NUM:
        gp_go_float(v->num, 'v', t, sizeof t);
        gp_buf_puts(out, t);
        break;
    }
}

/* Prometheus's convertToFloat: a number, or a string that parses as one. */
static int to_float(struct ctx *c, const struct val *v, const char *fn, double *out)
{
    if (v->k == V_NUM) {
        *out = v->num;
        return GP_OK;
    }
    if (v->k == V_STR) {
        char *end;
        errno = 0;
        double x = strtod(v->s, &end);
        if (end != v->s && !*end) {
            *out = x;
            return GP_OK;
        }
        return fail(c, GP_EUSAGE, "error calling %s: strconv.ParseFloat: parsing \"%.64s\": invalid syntax", fn,
                    v->s);
    }
    return fail(c, GP_EUSAGE, "error calling %s: can't convert <nil> to float", fn);
}

/* ---- Prometheus's functions ---- */

static void humanize(double v, struct val *r)
{
    static const char *const big[] = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
    static const char *const small[] = {"m", "u", "n", "p", "f", "a", "z", "y"};
    const char *prefix = "";
    if (v == 0 || isnan(v) || isinf(v)) {
        g4(v, "", r);
        return;
    }
    if (fabs(v) >= 1) {
        for (size_t i = 0; i < 8 && fabs(v) >= 1000; i++) {
            prefix = big[i];
            v /= 1000;
        }
    } else {
        for (size_t i = 0; i < 8 && fabs(v) < 1; i++) {
            prefix = small[i];
            v *= 1000;
        }
    }
    g4(v, prefix, r);
}

static void humanize1024(double v, struct val *r)
{
    static const char *const p[] = {"ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
    const char *prefix = "";
    if (fabs(v) <= 1) {
        g4(v, "", r);
        return;
    }
    /* as Go's loop: NaN is never below 1024, so it ends as "NaNYi" there too */
    for (size_t i = 0; i < 8; i++) {
        if (fabs(v) < 1024)
            break;
        prefix = p[i];
        v /= 1024;
    }
    g4(v, prefix, r);
}

static void humanize_duration(double v, struct val *r)
{
    if (isnan(v) || isinf(v)) {
        g4(v, "", r);
        return;
    }
    if (v == 0) {
        g4(v, "s", r);
        return;
    }
    if (fabs(v) >= 1) {
        const char *sign = v < 0 ? "-" : "";
        v = fabs(v);
        long long d = (long long)v;
        long long sec = d % 60, min = d / 60 % 60, hours = d / 3600 % 24, days = d / 86400;
        r->k = V_STR;
        if (days)
            snprintf(r->s, sizeof r->s, "%s%lldd %lldh %lldm %llds", sign, days, hours, min, sec);
        else if (hours)
            snprintf(r->s, sizeof r->s, "%s%lldh %lldm %llds", sign, hours, min, sec);
        else if (min)
            snprintf(r->s, sizeof r->s, "%s%lldm %llds", sign, min, sec);
        else
            snprintf(r->s, sizeof r->s, "%s%.4gs", sign, v);
        r->len = strlen(r->s);
        return;
    }
    static const char *const small[] = {"ms", "us", "ns", "ps", "fs", "as", "zs", "ys"};
    const char *suffix = "s";
    for (size_t i = 0; i < 8 && fabs(v) < 1; i++) {
        suffix = small[i];
        v *= 1000;
    }
    g4(v, suffix, r);
}

/* fmt.Sprint of a time.Time in UTC: "2006-01-02 15:04:05.5 +0000 UTC". */
static void humanize_timestamp(double v, struct val *r)
{
    if (isnan(v) || isinf(v) || fabs(v) > 9e12) {
        g4(v, "", r);
        return;
    }
    long long ns = (long long)(v * 1e9);
    long long s = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0)
        frac += 1000000000, s--;
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[64], f[16] = "";
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    if (frac) {
        snprintf(f, sizeof f, ".%09lld", frac);
        size_t n = strlen(f);
        while (f[n - 1] == '0')
            f[--n] = '\0';
    }
    r->k = V_STR;
    snprintf(r->s, sizeof r->s, "%s%s +0000 UTC", date, f);
    r->len = strlen(r->s);
}

static void fold_case(const struct val *a, int how, struct val *r)
{
    set_str(r, a->s, a->len);
    bool word_start = true;
    for (size_t i = 0; i < r->len; i++) {
        char ch = r->s[i];
        if (how == 'u' && ch >= 'a' && ch <= 'z')
            r->s[i] = (char)(ch - 32);
        else if (how == 'l' && ch >= 'A' && ch <= 'Z')
            r->s[i] = (char)(ch + 32);
        else if (how == 't' && word_start && ch >= 'a' && ch <= 'z')
            r->s[i] = (char)(ch - 32);
        word_start = !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                       ch == '_' || (unsigned char)ch >= 0x80);
    }
}

/* Go's fmt.Sprintf for the verbs alert texts use, with Go's words for
 * a wrong or missing argument. */
static void go_printf(const struct val *args, size_t nargs, struct val *r)
{
    struct gp_buf b;
    gp_buf_init(&b, VAL_LEN - 1);
    const char *f = args[0].s;
    size_t ai = 1;
    for (size_t i = 0; i < args[0].len;) {
        if (f[i] != '%') {
            gp_buf_putc(&b, f[i++]);
            continue;
        }
        size_t start = i++;
        while (i < args[0].len && strchr("+-# 0", f[i]))
            i++;
        while (i < args[0].len && f[i] >= '0' && f[i] <= '9')
            i++;
        bool prec = false;
        if (i < args[0].len && f[i] == '.') {
            prec = true;
            i++;
            while (i < args[0].len && f[i] >= '0' && f[i] <= '9')
                i++;
        }
        if (i >= args[0].len) {
            gp_buf_puts(&b, "%!(NOVERB)");
            break;
        }
        char verb = f[i++];
        if (verb == '%') {
            gp_buf_putc(&b, '%');
            continue;
        }
        char spec[32];
        size_t sl = i - start < sizeof spec - 1 ? i - start : sizeof spec - 1;
        memcpy(spec, f + start, sl);
        spec[sl] = '\0';
        if (ai >= nargs) {
            gp_buf_printf(&b, "%%!%c(MISSING)", verb);
            continue;
        }
        const struct val *a = &args[ai++];
        char t[64];
        if (a->k == V_NUM && strchr("eEfFgG", verb) && !isnan(a->num) && !isinf(a->num)) {
            if ((verb == 'g' || verb == 'G') && !prec) {
                gp_go_float(a->num, 'v', t, sizeof t);
                gp_buf_puts(&b, t);
            } else {
                gp_buf_printf(&b, spec, a->num);
            }
        } else if (a->k == V_NUM && strchr("eEfFgGv", verb)) {
            gp_go_float(a->num, 'v', t, sizeof t);
            gp_buf_puts(&b, t);
        } else if (a->k == V_STR && (verb == 's' || verb == 'v')) {
            spec[sl - 1] = 's';
            gp_buf_printf(&b, spec, a->s);
        } else if (a->k == V_NUM) {
            gp_go_float(a->num, 'v', t, sizeof t);
            gp_buf_printf(&b, "%%!%c(float64=%s)", verb, t);
        } else if (a->k == V_STR) {
            gp_buf_printf(&b, "%%!%c(string=%s)", verb, a->s);
        } else {
            gp_buf_printf(&b, "%%!%c(<nil>)", verb);
        }
    }
    for (const char *sep = "%!(EXTRA "; ai < nargs; ai++, sep = ", ") {
        gp_buf_puts(&b, sep);
        if (args[ai].k == V_STR) {
            gp_buf_printf(&b, "string=%s", args[ai].s);
        } else if (args[ai].k == V_NUM) {
            char t[40];
            gp_go_float(args[ai].num, 'v', t, sizeof t);
            gp_buf_printf(&b, "float64=%s", t);
        } else {
            gp_buf_puts(&b, "<nil>");
        }
        if (ai + 1 == nargs)
            gp_buf_putc(&b, ')');
    }
    set_str(r, b.data ? b.data : "", b.data ? b.len : 0);
    gp_buf_free(&b);
}

/* ---- tokens ---- */

static bool is_ident(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Decodes a Go string literal body (escapes of interpreted strings). */
static int decode_str(struct ctx *c, const char *p, size_t n, bool raw, struct token *t)
{
    t->slen = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!raw && ch == '\\') {
            if (++i >= n)
                return fail(c, GP_EPARSE, "unterminated quoted string");
            switch (p[i]) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '\\': ch = '\\'; break;
            case '"': ch = '"'; break;
            case '\'': ch = '\''; break;
            default:
                return fail(c, GP_EPARSE, "invalid syntax in quoted string");
            }
        }
        if (t->slen + 1 < sizeof t->s)
            t->s[t->slen++] = ch;
    }
    t->s[t->slen] = '\0';
    return GP_OK;
}

/* Cuts an action's body [p, p + n) into tokens. */
static int lex(struct ctx *c, const char *p, size_t n, struct token *toks, size_t *nt)
{
    *nt = 0;
    size_t i = 0;
    while (i < n) {
        char ch = p[i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            i++;
            continue;
        }
        if (*nt >= MAX_TOKENS)
            return fail(c, GP_EUNSUPPORTED, "more than %d words in one action", MAX_TOKENS);
        struct token *t = &toks[(*nt)++];
        memset(t, 0, offsetof(struct token, s));
        t->p = p + i;
        size_t s = i;
        if (ch == '|') {
            t->t = T_PIPE;
            i++;
        } else if (ch == '$' || ch == '.') {
            i++;
            while (i < n && (is_ident(p[i]) || p[i] == '.'))
                i++;
            t->t = ch == '$' ? T_VAR : T_FIELD;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
            while (i < n && is_ident(p[i]))
                i++;
            t->t = T_IDENT;
        } else if (ch == '"' || ch == '`') {
            size_t j = i + 1;
            while (j < n && p[j] != ch) {
                if (ch == '"' && p[j] == '\\')
                    j++;
                j++;
            }
            if (j >= n)
                return fail(c, GP_EPARSE, "unterminated %s string", ch == '"' ? "quoted" : "raw");
            int rc = decode_str(c, p + i + 1, j - i - 1, ch == '`', t);
            if (rc)
                return rc;
            t->t = T_STR;
            i = j + 1;
        } else if ((ch >= '0' && ch <= '9') || ch == '-' || ch == '+') {
            char buf[64], *end;
            size_t k = i + 1;
            while (k < n && (is_ident(p[k]) || p[k] == '.' || ((p[k] == '-' || p[k] == '+') &&
                                                                (p[k - 1] == 'e' || p[k - 1] == 'E'))))
                k++;
            size_t len = k - i < sizeof buf - 1 ? k - i : sizeof buf - 1;
            memcpy(buf, p + i, len);
            buf[len] = '\0';
            errno = 0;
            t->num = strtod(buf, &end);
            if (end == buf || *end)
                return fail(c, GP_EPARSE, "bad number syntax: \"%s\"", buf);
            t->t = T_NUM;
            i = k;
        } else {
            t->t = T_OTHER;
            i++;
            if (ch == ':' && i < n && p[i] == '=')
                i++;
        }
        t->n = i - s;
    }
    return GP_OK;
}

/* ---- evaluation ---- */

static const char *const keywords[] = {"if", "else", "end", "range", "with", "define", "template",
                                       "block", "break", "continue", "nil", "true", "false"};
/* Prometheus's and Go's functions this interpreter does not run. */
static const char *const unsupported_fns[] = {
    "query", "first", "label", "value", "strvalue", "args", "tmpl", "safeHtml", "match",
    "reReplaceAll", "graphLink", "tableLink", "sortByLabel", "externalURL", "pathPrefix",
    "stripPort", "stripDomain", "parseDuration", "toTime", "toDuration", "now", "print",
    "println", "len", "index", "slice", "html", "js", "urlquery", "and", "or", "not", "eq",
    "ne", "lt", "le", "gt", "ge", "call"};

static bool word_is(const struct token *t, const char *w)
{
    return t->n == strlen(w) && !memcmp(t->p, w, t->n);
}

/* An operand: $labels.x, .Labels.x, $value, .Value, strings, numbers. */
static int operand(struct ctx *c, const struct token *t, struct val *r)
{
    memset(r, 0, offsetof(struct val, s));
    r->s[0] = '\0';
    switch (t->t) {
    case T_STR:
        set_str(r, t->s, t->slen);
        return GP_OK;
    case T_NUM:
        r->k = V_NUM;
        r->num = t->num;
        return GP_OK;
    case T_VAR:
    case T_FIELD: {
        /* the root and the one field after it */
        const char *p = t->p + 1, *end = t->p + t->n;
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t rl = (size_t)((dot ? dot : end) - p);
        const char *field = dot ? dot + 1 : NULL;
        size_t fl = dot ? (size_t)(end - field) : 0;
        if (field && memchr(field, '.', fl))
            return fail(c, GP_EUSAGE, "can't evaluate field %.*s of a string", (int)fl, field);
        bool var = t->t == T_VAR;
        int which = -1; /* 0 labels, 1 value, 2 external labels, 3 external url */
        static const char *const vars[] = {"labels", "value", "externalLabels", "externalURL"};
        static const char *const fields[] = {"Labels", "Value", "ExternalLabels", "ExternalURL"};
        for (int i = 0; i < 4; i++)
            if (rl == strlen(var ? vars[i] : fields[i]) && !memcmp(p, var ? vars[i] : fields[i], rl))
                which = i;
        if (which < 0) {
            if (var)
                return fail(c, GP_EPARSE, "undefined variable \"$%.*s\"", (int)rl, p);
            if (!rl)
                return fail(c, GP_EUNSUPPORTED, "the template's data '.' is not supported (use $labels or $value)");
            return fail(c, GP_EUSAGE, "can't evaluate field %.*s", (int)rl, p);
        }
        if ((which == 0 || which == 2) && !field)
            return fail(c, GP_EUNSUPPORTED, "printing all of %s%.*s is not supported (name one label)",
                        var ? "$" : ".", (int)rl, p);
        if ((which == 1 || which == 3) && field)
            return fail(c, GP_EUSAGE, "can't evaluate field %.*s of %s", (int)fl, field,
                        which == 1 ? "a float64" : "a string");
        if (which == 1) {
            r->k = V_NUM;
            r->num = c->d ? c->d->value : 0;
        } else if (which == 3) {
            set_str(r, "", 0);
        } else if (which == 0 && c->d && c->d->labels) {
            char name[256];
            if (fl >= sizeof name)
                return GP_OK; /* no label name that long: none */
            memcpy(name, field, fl);
            name[fl] = '\0';
            struct gp_str v;
            if (gp_labels_get(c->d->labels, c->d->labels_len, name, &v) == 1)
                set_str(r, v.ptr, v.len);
        }
        return GP_OK; /* V_NONE: a label the alert lacks */
    }
    default:
        return fail(c, GP_EPARSE, "unexpected \"%.*s\" in command", (int)(t->n > 32 ? 32 : t->n), t->p);
    }
}

/* One command of a pipeline: toks[0..n), with the piped value (NULL for
 * the first command). */
static int command(struct ctx *c, const struct token *toks, size_t n, const struct val *piped,
                   struct val *r)
{
    if (!n)
        return fail(c, GP_EPARSE, "missing command");
    const struct token *f = &toks[0];
    if (f->t != T_IDENT) {
        if (n > 1)
            return fail(c, GP_EPARSE, "can't give argument to non-function %.*s", (int)f->n, f->p);
        if (piped)
            return fail(c, GP_EPARSE, "non executable command in pipeline stage 2");
        return operand(c, f, r);
    }
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (word_is(f, keywords[i]))
            return fail(c, GP_EUNSUPPORTED, "template action \"%s\" is not supported", keywords[i]);
    for (size_t i = 0; i < sizeof unsupported_fns / sizeof unsupported_fns[0]; i++)
        if (word_is(f, unsupported_fns[i]))
            return fail(c, GP_EUNSUPPORTED, "template function \"%s\" is not supported",
                        unsupported_fns[i]);
    static const char *const fns[] = {"humanize", "humanize1024", "humanizePercentage",
                                      "humanizeDuration", "humanizeTimestamp", "toUpper",
                                      "toLower", "title", "printf"};
    int fn = -1;
    for (int i = 0; i < 9; i++)
        if (word_is(f, fns[i]))
            fn = i;
    if (fn < 0)
        return fail(c, GP_EPARSE, "function \"%.*s\" not defined", (int)(f->n > 64 ? 64 : f->n), f->p);
    struct val *args = calloc(MAX_TOKENS + 1, sizeof *args);
    if (!args)
        return fail(c, GP_ENOMEM, "out of memory");
    size_t na = 0;
    int rc = GP_OK;
    for (size_t i = 1; i < n && !rc; i++)
        rc = operand(c, &toks[i], &args[na++]);
    if (!rc && piped)
        args[na++] = *piped;
    if (rc)
        goto done;
    if (fn == 8) {
        if (!na || args[0].k != V_STR)
            rc = fail(c, na ? GP_EUSAGE : GP_EPARSE, "wrong number of args for printf: want at least 1 got 0");
        else if (!c->check)
            go_printf(args, na, r);
        goto done;
    }
    if (na != 1) {
        rc = fail(c, GP_EPARSE, "wrong number of args for %s: want 1 got %zu", fns[fn], na);
        goto done;
    }
    if (c->check)
        goto done;
    if (fn >= 5) {
        if (args[0].k != V_STR) {
            rc = fail(c, GP_EUSAGE, "wrong type for value; expected string; got %s",
                      args[0].k == V_NUM ? "float64" : "<nil>");
            goto done;
        }
        fold_case(&args[0], fn == 5 ? 'u' : fn == 6 ? 'l' : 't', r);
        goto done;
    }
    double v;
    if ((rc = to_float(c, &args[0], fns[fn], &v)))
        goto done;
    switch (fn) {
    case 0: humanize(v, r); break;
    case 1: humanize1024(v, r); break;
    case 2: g4(v * 100, "%", r); break;
    case 3: humanize_duration(v, r); break;
    default: humanize_timestamp(v, r); break;
    }
done:
    free(args);
    return rc;
}

/* Runs one action's body: a pipeline of commands separated by '|'. */
static int action(struct ctx *c, const char *p, size_t n, struct gp_buf *out)
{
    struct token *toks = malloc(MAX_TOKENS * sizeof *toks);
    struct val *cur = malloc(2 * sizeof *cur);
    if (!toks || !cur) {
        free(toks);
        free(cur);
        return fail(c, GP_ENOMEM, "out of memory");
    }
    size_t nt;
    int rc = lex(c, p, n, toks, &nt);
    if (!rc && !nt)
        rc = fail(c, GP_EPARSE, "missing value for command");
    for (size_t i = 0; !rc && i < nt; i++)
        if (toks[i].t == T_OTHER)
            rc = *toks[i].p == ':' || *toks[i].p == '=' || *toks[i].p == '('
                     ? fail(c, GP_EUNSUPPORTED, "'%.*s' in templates is not supported", (int)toks[i].n,
                            toks[i].p)
                     : fail(c, GP_EPARSE, "unexpected \"%.*s\" in command", (int)toks[i].n, toks[i].p);
    size_t s = 0, stage = 0;
    while (!rc && s <= nt) {
        size_t e = s;
        while (e < nt && toks[e].t != T_PIPE)
            e++;
        rc = command(c, toks + s, e - s, stage ? &cur[(stage - 1) & 1] : NULL, &cur[stage & 1]);
        stage++;
        s = e + 1;
    }
    if (!rc && !c->check)
        print_val(&cur[(stage - 1) & 1], out);
    free(toks);
    free(cur);
    return rc;
}

static int run(struct ctx *c, const char *tmpl, struct gp_buf *out)
{
    const char *p = tmpl;
    bool trim_next = false;
    while (*p) {
        const char *open = strstr(p, "{{");
        const char *text_end = open ? open : p + strlen(p);
        const char *ts = p;
        if (trim_next)
            while (ts < text_end && strchr(" \t\r\n", *ts))
                ts++;
        const char *te = text_end;
        bool trim_left = open && open[2] == '-' && open[3] && strchr(" \t\r\n", open[3]);
        if (trim_left)
            while (te > ts && strchr(" \t\r\n", te[-1]))
                te--;
        if (!c->check)
            gp_buf_append(out, ts, (size_t)(te - ts));
        if (!open)
            break;
        const char *body = open + 2 + (trim_left ? 2 : 0);
        /* the closing delimiter, outside quotes */
        const char *q = body, *close = NULL;
        while (*q && !close) {
            if (*q == '"' || *q == '`' || *q == '\'') {
                char quote = *q++;
                while (*q && *q != quote) {
                    if (quote != '`' && *q == '\\' && q[1])
                        q++;
                    q++;
                }
                if (!*q)
                    return fail(c, GP_EPARSE, "unterminated quoted string in action");
                q++;
            } else if (q[0] == '}' && q[1] == '}') {
                close = q;
            } else {
                q++;
            }
        }
        if (!close)
            return fail(c, GP_EPARSE, "unclosed action");
        const char *be = close;
        trim_next = be - body >= 2 && be[-1] == '-' && strchr(" \t\r\n", be[-2]);
        if (trim_next)
            be -= 2;
        while (body < be && strchr(" \t\r\n", *body))
            body++;
        if (be - body >= 2 && body[0] == '/' && body[1] == '*') {
            if (be - body < 4 || be[-1] != '/' || be[-2] != '*')
                return fail(c, GP_EPARSE, "comment ends before closing delimiter");
        } else {
            int rc = action(c, body, (size_t)(be - body), out);
            if (rc)
                return rc;
        }
        p = close + 2;
    }
    return GP_OK;
}

int gp_ptmpl_expand(const char *tmpl, const struct gp_ptmpl_data *d, struct gp_buf *out, char *err,
                    size_t errlen)
{
    struct ctx c = {d, false, err, errlen};
    return run(&c, tmpl, out);
}

int gp_ptmpl_check(const char *tmpl, char *err, size_t errlen)
{
    struct ctx c = {NULL, true, err, errlen};
    int rc = run(&c, tmpl, NULL);
    return rc == GP_EPARSE || rc == GP_EUNSUPPORTED || rc == GP_ENOMEM ? rc : GP_OK;
}
