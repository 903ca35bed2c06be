/*
 * promql_format.c - gp_promql_format: an expression tree back to PromQL
 * text, as Prometheus 2.42's String() methods (promql/parser/printer.go)
 * write it, so rule displays and messages read like Prometheus's:
 *
 *   sum by (job) (rate(x{a="b"}[5m] offset 1h))
 *   a + on (l) group_left (m) b       x[1h:1m] @ 1700000000.000 offset 5m
 *
 * Numbers are written as Go's %v writes a float64 (1e+06, 0.0001, NaN,
 * +Inf), strings as Go's %q, durations as Prometheus's model.Duration
 * (1h30m, 1w, 1y), matchers sorted by their text. Parentheses come only
 * from paren nodes, which the parser keeps, so the text parses back to the
 * same tree. Two deliberate differences, where Prometheus's text would
 * parse back as another tree: it drops group_left/right when ignoring()
 * has no labels (this writes "ignoring () group_left (...)"), and writes
 * +Inf before '^' as "+Inf", which reads back as a unary plus over the
 * power (this writes "Inf ^ ...").
 */
#include "query/promql.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/utf8.h"
#include "query/promql_lex.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Go's strconv.FormatFloat(v, 'g', -1, 64) as fmt's %v uses it. */
static void put_go_float(struct gp_buf *b, double v)
{
    if (isnan(v)) {
        gp_buf_puts(b, "NaN");
        return;
    }
    if (isinf(v)) {
        gp_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        gp_buf_puts(b, signbit(v) ? "-0" : "0");
        return;
    }
    /* The shortest digits that read back as v: "d.ddde[+-]x". */
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, v);
        if (strtod(e, NULL) == v)
            break;
    }
    const char *s = e;
    if (*s == '-') {
        gp_buf_putc(b, '-');
        s++;
    }
    char digits[24];
    size_t nd = 0;
    const char *x = strchr(s, 'e');
    for (const char *c = s; c < x; c++)
        if (*c != '.')
            digits[nd++] = *c;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int exp = atoi(x + 1);
    if (exp < -4 || exp >= 6) { /* %e, Go's shortest-%g threshold */
        gp_buf_putc(b, digits[0]);
        if (nd > 1) {
            gp_buf_putc(b, '.');
            gp_buf_append(b, digits + 1, nd - 1);
        }
        gp_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    if (exp < 0) {
        gp_buf_puts(b, "0.");
        for (int i = -1; i > exp; i--)
            gp_buf_putc(b, '0');
        gp_buf_append(b, digits, nd);
        return;
    }
    size_t ip = (size_t)exp + 1; /* digits before the point */
    for (size_t i = 0; i < ip; i++)
        gp_buf_putc(b, i < nd ? digits[i] : '0');
    if (nd > ip) {
        gp_buf_putc(b, '.');
        gp_buf_append(b, digits + ip, nd - ip);
    }
}

/* Go's %q of a string: escapes for quotes, backslashes, controls and
 * invalid UTF-8; printable text as it is. */
static void put_go_quoted(struct gp_buf *b, const char *s, size_t n)
{
    gp_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = gp_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0) {
            gp_buf_printf(b, "\\x%02x", (unsigned char)s[i]);
            i++;
            continue;
        }
        if (k > 1) {
            if (cp < 0xa0 || cp == 0xad || (cp >= 0x2028 && cp <= 0x2029) || cp == 0xfeff)
                gp_buf_printf(b, cp < 0x10000 ? "\\u%04x" : "\\U%08x", (unsigned)cp);
            else
                gp_buf_append(b, s + i, k);
            i += k;
            continue;
        }
        char c = s[i++];
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        default: break;
        }
        if (esc)
            gp_buf_puts(b, esc);
        else if ((unsigned char)c < 0x20 || c == 0x7f)
            gp_buf_printf(b, "\\x%02x", (unsigned char)c);
        else
            gp_buf_putc(b, c);
    }
    gp_buf_putc(b, '"');
}

/* Prometheus's model.Duration: years and weeks only when exact. */
static void put_duration(struct gp_buf *b, int64_t ms)
{
    if (ms == 0) {
        gp_buf_puts(b, "0s");
        return;
    }
    static const struct {
        const char *unit;
        int64_t ms;
        int exact;
    } u[] = {{"y", 31536000000, 1}, {"w", 604800000, 1}, {"d", 86400000, 0},
             {"h", 3600000, 0},     {"m", 60000, 0},     {"s", 1000, 0},
             {"ms", 1, 0}};
    for (size_t k = 0; k < sizeof u / sizeof u[0]; k++) {
        if (u[k].exact && ms % u[k].ms != 0)
            continue;
        int64_t v = ms / u[k].ms;
        if (v > 0) {
            gp_buf_printf(b, "%" PRId64 "%s", v, u[k].unit);
            ms -= v * u[k].ms;
        }
    }
}

static void put_labels(struct gp_buf *b, const struct gp_pq_labels *l)
{
    gp_buf_putc(b, '(');
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            gp_buf_puts(b, ", ");
        gp_buf_puts(b, l->names[i]);
    }
    gp_buf_putc(b, ')');
}

/* " @ t offset d" of a selector or subquery: @ first, as Prometheus. */
static void put_modifiers(struct gp_buf *b, enum gp_pq_at at, int64_t at_ms, int64_t offset_ms)
{
    if (at == GP_PQ_AT_TIME)
        gp_buf_printf(b, " @ %.3f", (double)at_ms / 1000.0);
    else if (at == GP_PQ_AT_START)
        gp_buf_puts(b, " @ start()");
    else if (at == GP_PQ_AT_END)
        gp_buf_puts(b, " @ end()");
    if (offset_ms > 0) {
        gp_buf_puts(b, " offset ");
        put_duration(b, offset_ms);
    } else if (offset_ms < 0) {
        gp_buf_puts(b, " offset -");
        put_duration(b, -offset_ms);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_selector(struct gp_buf *b, const struct gp_pq_sel *s)
{
    static const char *const ops[] = {[GP_MATCH_EQ] = "=", [GP_MATCH_NE] = "!=",
                                      [GP_MATCH_RE] = "=~", [GP_MATCH_NRE] = "!~"};
    const char *name = s->name ? s->name : "";
    gp_buf_puts(b, name);
    char **txt = s->nm ? calloc(s->nm, sizeof *txt) : NULL;
    size_t nt = 0;
    if (s->nm && !txt) {
        b->err = b->err ? b->err : GP_ENOMEM; /* latched, as buf.c does */
        return;
    }
    struct gp_buf one;
    gp_buf_init(&one, 0);
    for (size_t i = 0; i < s->nm; i++) {
        const struct gp_matcher *m = &s->m[i];
        /* The name matcher is written as the name, not inside the braces. */
        if (m->op == GP_MATCH_EQ && strcmp(m->name, "__name__") == 0 && strcmp(m->value, name) == 0)
            continue;
        gp_buf_reset(&one);
        gp_buf_puts(&one, m->name);
        gp_buf_puts(&one, ops[m->op]);
        put_go_quoted(&one, m->value, m->value_len);
        if (one.err || !(txt[nt] = strndup(one.data, one.len))) {
            b->err = b->err ? b->err : GP_ENOMEM;
            break;
        }
        nt++;
    }
    gp_buf_free(&one);
    if (nt) {
        qsort(txt, nt, sizeof *txt, cmp_str);
        gp_buf_putc(b, '{');
        for (size_t i = 0; i < nt; i++) {
            if (i)
                gp_buf_putc(b, ',');
            gp_buf_puts(b, txt[i]);
        }
        gp_buf_putc(b, '}');
    }
    for (size_t i = 0; i < nt; i++)
        free(txt[i]);
    free(txt);
    if (s->range_ms > 0) {
        gp_buf_putc(b, '[');
        put_duration(b, s->range_ms);
        gp_buf_putc(b, ']');
    }
    put_modifiers(b, s->at, s->at_ms, s->offset_ms);
}

void gp_promql_format(const struct gp_pq_node *e, struct gp_buf *b)
{
    switch (e->kind) {
    case GP_PQ_NUMBER:
        put_go_float(b, e->u.number);
        break;
    case GP_PQ_STRING:
        put_go_quoted(b, e->u.string.s, e->u.string.len);
        break;
    case GP_PQ_VECTOR_SEL:
    case GP_PQ_MATRIX_SEL:
        put_selector(b, &e->u.sel);
        break;
    case GP_PQ_SUBQUERY: {
        const struct gp_pq_subquery *s = &e->u.sub;
        gp_promql_format(s->expr, b);
        gp_buf_putc(b, '[');
        put_duration(b, s->range_ms);
        gp_buf_putc(b, ':');
        if (s->step_ms)
            put_duration(b, s->step_ms);
        gp_buf_putc(b, ']');
        put_modifiers(b, s->at, s->at_ms, s->offset_ms);
        break;
    }
    case GP_PQ_CALL:
        gp_buf_puts(b, gp_pq_func_name(e->u.call.func));
        gp_buf_putc(b, '(');
        for (size_t i = 0; i < e->u.call.nargs; i++) {
            if (i)
                gp_buf_puts(b, ", ");
            gp_promql_format(e->u.call.args[i], b);
        }
        gp_buf_putc(b, ')');
        break;
    case GP_PQ_AGG: {
        const struct gp_pq_agg *a = &e->u.agg;
        gp_buf_puts(b, gp_pq_agg_name(a->op));
        if (a->without || a->grouping.n) {
            gp_buf_puts(b, a->without ? " without " : " by ");
            put_labels(b, &a->grouping);
            gp_buf_putc(b, ' ');
        }
        gp_buf_putc(b, '(');
        if (a->param) {
            gp_promql_format(a->param, b);
            gp_buf_puts(b, ", ");
        }
        gp_promql_format(a->expr, b);
        gp_buf_putc(b, ')');
        break;
    }
    case GP_PQ_BINARY: {
        const struct gp_pq_binary *x = &e->u.bin;
        if (x->op == GP_PQ_OP_POW && x->lhs->kind == GP_PQ_NUMBER && isinf(x->lhs->u.number) &&
            x->lhs->u.number > 0)
            gp_buf_puts(b, "Inf"); /* "+Inf ^ 2" would read back as +(Inf ^ 2) */
        else
            gp_promql_format(x->lhs, b);
        gp_buf_putc(b, ' ');
        gp_buf_puts(b, gp_pq_binop_text(x->op));
        if (x->return_bool)
            gp_buf_puts(b, " bool");
        int grouped = x->card == GP_PQ_CARD_MANY_TO_ONE || x->card == GP_PQ_CARD_ONE_TO_MANY;
        if (x->on || x->matching.n || grouped) {
            gp_buf_puts(b, x->on ? " on " : " ignoring ");
            put_labels(b, &x->matching);
            if (grouped) {
                gp_buf_puts(b, x->card == GP_PQ_CARD_MANY_TO_ONE ? " group_left " : " group_right ");
                put_labels(b, &x->include);
            }
        }
        gp_buf_putc(b, ' ');
        gp_promql_format(x->rhs, b);
        break;
    }
    case GP_PQ_UNARY:
        gp_buf_putc(b, e->u.unary.negate ? '-' : '+');
        gp_promql_format(e->u.unary.expr, b);
        break;
    case GP_PQ_PAREN:
        gp_buf_putc(b, '(');
        gp_promql_format(e->u.paren, b);
        gp_buf_putc(b, ')');
        break;
    }
}
