/*
 * promql_parse.c - the PromQL parser: gp_promql_parse (promql.h). The
 * function table and freeing are promql_ast.c's, the tokens
 * promql_lex.c's, the text back promql_format.c's.
 *
 * It accepts what Prometheus 2.42's yacc grammar (generated_parser.y)
 * accepts and reports errors where it reports them, in two passes as
 * Prometheus does:
 *  1. syntax: a precedence-climbing parser over promql_lex.c's tokens,
 *     with one token of lookahead (two where the grammar needs them: a
 *     name followed by '(' is a call, an aggregation keyword not followed
 *     by '(', by or without is a metric name). Checks that Prometheus makes
 *     while it reduces (unknown function, offset and @ placement, ranges
 *     on selectors only, durations, numbers, matchers) happen here, at the
 *     point the grammar reduces them. Postfix [range], [range:step],
 *     offset and @ bind tightest; unary minus binds like '*' but its
 *     operand takes a '^' (so -2^2 is -4); '^' is right-associative.
 *  2. types (only when 1. found nothing): checkAST's rules, in its order
 *     (argument counts and types, aggregation parameters, binary operand
 *     types, bool and set-operator rules, vector matching, non-empty
 *     selectors).
 * The first error is reported, as "line:col: parse error: message".
 *
 * Bounds: queries longer than GP_PROMQL_MAX_QUERY_LEN and trees deeper
 * than GP_PROMQL_MAX_DEPTH are GP_ETOOBIG. Recursion only follows nesting
 * (parentheses, arguments, operands of higher precedence), and is cut at
 * the same depth, so 10,000 '(' fail fast without using the stack; the
 * tree's depth is tracked too, so the recursive check, format and free
 * passes stay bounded even for long left-leaning chains like 1+1+...+1.
 * A selector holds at most GP_SELECTOR_MAX_MATCHERS matchers and a query
 * at most GP_PQ_MAX_REGEX regexes, so compiling them (each within the
 * store's regex cost cap) stays within tens of milliseconds and MB.
 */
#include "query/promql.h"
#include "query/promql_lex.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Regular expression matchers in one query, at most. */
#define GP_PQ_MAX_REGEX 256

/* 1 for the aggregations that take a parameter (topk's k, ...). */
static const unsigned char agg_param[] = {
#define GP_PQ_AGG_PARAM_(id, name, param) [GP_PQ_A_##id] = param,
    GP_PQ_AGGS(GP_PQ_AGG_PARAM_)
#undef GP_PQ_AGG_PARAM_
};

/* ---- parser state and errors ---------------------------------------------- */

struct parser {
    struct gp_pq_lexer lx;
    const char *q;
    size_t len;
    struct gp_pq_token tok;  /* the lookahead */
    struct gp_pq_token next; /* the second lookahead, when has_next */
    int has_next;
    size_t prev_end;         /* end of the last token consumed */
    unsigned rec;            /* parse_expr recursion */
    unsigned nregex;         /* regular expression matchers so far */
    unsigned in_agg;         /* inside an aggregation's modifiers and arguments */
    int rc;                  /* the first error */
    char *err;
    size_t errlen;
};

/* Records the first error: "line:col: parse error: msg" (col counted in
 * bytes from 1, as Prometheus). Returns NULL for the callers' convenience. */
static void *perr(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void *perr(struct parser *p, size_t pos, const char *fmt, ...)
{
    if (p->rc)
        return NULL;
    p->rc = GP_EPARSE;
    size_t line = 1, last_nl = 0;
    int seen_nl = 0;
    for (size_t i = 0; i < pos && i < p->len; i++)
        if (p->q[i] == '\n')
            line++, last_nl = i, seen_nl = 1;
    size_t col = seen_nl ? pos - last_nl : pos + 1;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->errlen)
        snprintf(p->err, p->errlen, "%zu:%zu: parse error: %s", line, col, msg);
    return NULL;
}

static void *oom(struct parser *p)
{
    if (!p->rc) {
        p->rc = GP_ENOMEM;
        gp_seterr(p->err, p->errlen, GP_ENOMEM, "promql: out of memory while parsing");
    }
    return NULL;
}

static void *too_deep(struct parser *p, size_t pos)
{
    if (!p->rc) {
        p->rc = GP_ETOOBIG;
        gp_seterr(p->err, p->errlen, GP_ETOOBIG,
                  "promql: expression nested deeper than %d levels (at byte %zu)",
                  GP_PROMQL_MAX_DEPTH, pos);
    }
    return NULL;
}

static void advance(struct parser *p)
{
    p->prev_end = p->tok.pos + p->tok.len;
    if (p->has_next) {
        p->tok = p->next;
        p->has_next = 0;
    } else {
        gp_pq_lex_next(&p->lx, &p->tok);
    }
}

static const struct gp_pq_token *peek2(struct parser *p)
{
    if (!p->has_next) {
        gp_pq_lex_next(&p->lx, &p->next);
        p->has_next = 1;
    }
    return &p->next;
}

/* "unexpected <token>[ in context][, expected what]"; a lexer error is
 * reported as itself. */
static void *unexpected(struct parser *p, const char *context, const char *expected)
{
    if (p->tok.type == GP_PQ_TK_ERROR)
        return perr(p, p->tok.pos, "%s", p->tok.msg);
    char d[64];
    gp_pq_tok_desc(p->q, &p->tok, d, sizeof d);
    /* Prometheus's grammar catches errors inside an aggregation as its own. */
    if (!context && p->in_agg)
        context = "aggregation";
    return perr(p, p->tok.pos, "unexpected %s%s%s%s%s", d, context ? " in " : "",
                context ? context : "", expected ? ", expected " : "", expected ? expected : "");
}

static struct gp_pq_node *node_new(struct parser *p, enum gp_pq_kind kind, size_t pos, size_t end)
{
    struct gp_pq_node *n = calloc(1, sizeof *n);
    if (!n)
        return oom(p);
    n->kind = kind;
    n->pos = (uint32_t)pos;
    n->end = (uint32_t)end;
    return n;
}

static size_t tok_end(const struct gp_pq_token *t) { return t->pos + t->len; }

/* ---- literals -------------------------------------------------------------- */

/* A number token's value as Prometheus reads it: Go's ParseInt with base
 * 0 first (so 0x1f is hex and 017 octal), then ParseFloat. */
static int number_value(const char *s, size_t n, double *out)
{
    char buf[128];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcasecmp(buf, "inf") == 0) {
        *out = INFINITY;
        return 0;
    }
    if (strcasecmp(buf, "nan") == 0) {
        *out = NAN;
        return 0;
    }
    char *end;
    if (n > 1 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
        if (n == 2)
            return -1;
        for (size_t i = 2; i < n; i++)
            if (!strchr("0123456789abcdefABCDEF", buf[i]))
                return -1; /* Go has no hex float without a p exponent */
        errno = 0;
        unsigned long long v = strtoull(buf + 2, &end, 16);
        if (errno || v > INT64_MAX)
            return -1;
        *out = (double)v;
        return 0;
    }
    int all_digits = 1;
    for (size_t i = 0; i < n; i++)
        all_digits &= buf[i] >= '0' && buf[i] <= '9';
    if (all_digits && buf[0] == '0' && n > 1 && strspn(buf, "01234567") == n) {
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 8);
        if (!errno && v <= INT64_MAX) {
            *out = (double)v;
            return 0;
        }
    }
    /* Decimal (and a leading-0 number with an 8 or 9, which ParseInt
     * refuses and ParseFloat reads as decimal). */
    errno = 0;
    double v = strtod(buf, &end);
    if (*end != '\0')
        return -1;
    if (errno == ERANGE && isinf(v))
        return -2; /* Go's ParseFloat refuses overflow; underflow is 0 */
    *out = v;
    return 0;
}

/* Prometheus's words for a number token that does not read. */
static void *bad_number(struct parser *p, const struct gp_pq_token *t, int why)
{
    return perr(p, t->pos, "error parsing number: strconv.ParseFloat: parsing \"%.*s\": %s",
                (int)(t->len > 64 ? 64 : t->len), p->q + t->pos,
                why == -2 ? "value out of range" : "invalid syntax");
}

/* The duration at the lookahead; advances past it. -1 after an error. */
static int duration(struct parser *p, int64_t *ms)
{
    const struct gp_pq_token *t = &p->tok;
    char buf[64], e[128];
    if (t->len >= sizeof buf)
        return perr(p, t->pos, "not a valid duration string: \"%.40s...\"", p->q + t->pos), -1;
    memcpy(buf, p->q + t->pos, t->len);
    buf[t->len] = '\0';
    int rc = gp_parse_duration_ms(buf, ms, e, sizeof e);
    if (rc == GP_ERANGE)
        return perr(p, t->pos, "duration out of range: \"%s\" (at most 10 years)", buf), -1;
    if (rc)
        return perr(p, t->pos, "not a valid duration string: \"%s\"", buf), -1;
    if (*ms == 0)
        return perr(p, t->pos, "duration must be greater than 0"), -1;
    advance(p);
    return 0;
}

/* ---- labels and selectors -------------------------------------------------- */

static int labels_add(struct parser *p, struct gp_pq_labels *l, const char *s, size_t n)
{
    char **grown = realloc(l->names, (l->n + 1) * sizeof *grown);
    if (!grown)
        return oom(p), -1;
    l->names = grown;
    if (!(l->names[l->n] = strndup(s, n)))
        return oom(p), -1;
    l->n++;
    return 0;
}

/* A word that may name a label in by/without/on/ignoring/group_x lists
 * (Prometheus's maybe_label: identifiers and keywords, but not without). */
static int maybe_label(const struct gp_pq_token *t)
{
    switch (t->type) {
    case GP_PQ_TK_IDENT:
    case GP_PQ_TK_METRIC:
    case GP_PQ_TK_AGG:
    case GP_PQ_TK_BY:
    case GP_PQ_TK_ON:
    case GP_PQ_TK_IGNORING:
    case GP_PQ_TK_GROUP_LEFT:
    case GP_PQ_TK_GROUP_RIGHT:
    case GP_PQ_TK_BOOL:
    case GP_PQ_TK_OFFSET:
    case GP_PQ_TK_START:
    case GP_PQ_TK_END:
        return 1;
    case GP_PQ_TK_BINOP:
        return t->binop == GP_PQ_OP_AND || t->binop == GP_PQ_OP_OR ||
               t->binop == GP_PQ_OP_UNLESS || t->binop == GP_PQ_OP_ATAN2;
    default:
        return 0;
    }
}

/* "(a, b)" at the lookahead into l. -1 after an error. */
static int grouping_labels(struct parser *p, struct gp_pq_labels *l)
{
    if (p->tok.type != GP_PQ_TK_LPAREN)
        return unexpected(p, "grouping opts", "\"(\""), -1;
    advance(p);
    for (;;) {
        if (p->tok.type == GP_PQ_TK_RPAREN)
            break;
        if (!maybe_label(&p->tok) || p->tok.type == GP_PQ_TK_METRIC)
            return unexpected(p, "grouping opts", "label"), -1;
        if (labels_add(p, l, p->q + p->tok.pos, p->tok.len) < 0)
            return -1;
        advance(p);
        if (p->tok.type == GP_PQ_TK_COMMA) {
            advance(p);
            continue;
        }
        if (p->tok.type != GP_PQ_TK_RPAREN)
            return unexpected(p, "grouping opts", "\",\" or \")\""), -1;
    }
    advance(p);
    return 0;
}

static void *too_big(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *too_big(struct parser *p, const char *fmt, ...)
{
    if (!p->rc) {
        p->rc = GP_ETOOBIG;
        va_list ap;
        va_start(ap, fmt);
        if (p->err && p->errlen)
            vsnprintf(p->err, p->errlen, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static int sel_add(struct parser *p, struct gp_pq_sel *sel, size_t *cap, enum gp_match_op op,
                   const char *name, const char *value, size_t at)
{
    /* Each regex costs up to the matcher's cap to compile and to hold:
     * bound their number, per selector as the store's selectors do. */
    if (sel->nm == GP_SELECTOR_MAX_MATCHERS)
        return too_big(p, "promql: selector at byte %zu has more than %d matchers", at,
                       GP_SELECTOR_MAX_MATCHERS), -1;
    if ((op == GP_MATCH_RE || op == GP_MATCH_NRE) && ++p->nregex > GP_PQ_MAX_REGEX)
        return too_big(p, "promql: query has more than %d regular expression matchers",
                       GP_PQ_MAX_REGEX), -1;
    if (sel->nm == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        struct gp_matcher *m = realloc(sel->m, ncap * sizeof *m);
        if (!m)
            return oom(p), -1;
        sel->m = m;
        *cap = ncap;
    }
    char e[256];
    int rc = gp_matcher_init(&sel->m[sel->nm], op, name, value, e, sizeof e);
    if (rc == GP_ENOMEM)
        return oom(p), -1;
    if (rc) {
        /* gp_matcher_init says "matcher: ..."; the position says where. */
        const char *why = strncmp(e, "matcher: ", 9) == 0 ? e + 9 : e;
        return perr(p, at, "%s", why), -1;
    }
    sel->nm++;
    return 0;
}

/* {l="v", ...} at the lookahead. -1 after an error. */
static int matchers(struct parser *p, struct gp_pq_sel *sel, size_t *cap)
{
    advance(p); /* '{' */
    for (;;) {
        if (p->tok.type == GP_PQ_TK_RBRACE)
            break;
        if (p->tok.type != GP_PQ_TK_IDENT)
            return unexpected(p, "label matching", "identifier or \"}\""), -1;
        size_t at = p->tok.pos, name_len = p->tok.len;
        advance(p);
        enum gp_match_op op;
        switch (p->tok.type) {
        case GP_PQ_TK_ASSIGN: op = GP_MATCH_EQ; break;
        case GP_PQ_TK_NEQ: op = GP_MATCH_NE; break;
        case GP_PQ_TK_EQL_REGEX: op = GP_MATCH_RE; break;
        case GP_PQ_TK_NEQ_REGEX: op = GP_MATCH_NRE; break;
        default:
            return unexpected(p, "label matching", "label matching operator"), -1;
        }
        advance(p);
        if (p->tok.type != GP_PQ_TK_STRING)
            return unexpected(p, "label matching", "string"), -1;
        char *value;
        size_t vlen;
        if (gp_pq_unquote(p->q + p->tok.pos, p->tok.len, &value, &vlen))
            return oom(p), -1;
        if (memchr(value, '\0', vlen)) {
            free(value);
            return perr(p, at, "label value with a NUL byte is not supported"), -1;
        }
        char *name = strndup(p->q + at, name_len);
        int rc = name ? sel_add(p, sel, cap, op, name, value, at) : (oom(p), -1);
        free(name);
        free(value);
        if (rc)
            return -1;
        advance(p);
        if (p->tok.type == GP_PQ_TK_COMMA) {
            advance(p);
            continue;
        }
        if (p->tok.type != GP_PQ_TK_RBRACE)
            return unexpected(p, "label matching", "\",\" or \"}\""), -1;
    }
    return 0;
}

/* A vector selector: an optional name at the lookahead (named != 0), then
 * optional {matchers}. The name's matcher comes last, as in Prometheus. */
static struct gp_pq_node *selector(struct parser *p, int named)
{
    struct gp_pq_node *n = node_new(p, GP_PQ_VECTOR_SEL, p->tok.pos, tok_end(&p->tok));
    if (!n)
        return NULL;
    n->type = GP_PQ_T_VECTOR;
    struct gp_pq_sel *sel = &n->u.sel;
    size_t cap = 0;
    if (named) {
        if (!(sel->name = strndup(p->q + p->tok.pos, p->tok.len))) {
            gp_promql_free(n);
            return oom(p);
        }
        advance(p);
    }
    if (p->tok.type == GP_PQ_TK_LBRACE) {
        if (matchers(p, sel, &cap) < 0) {
            gp_promql_free(n);
            return NULL;
        }
        n->end = (uint32_t)tok_end(&p->tok);
        advance(p); /* '}' */
    }
    if (named && sel_add(p, sel, &cap, GP_MATCH_EQ, "__name__", sel->name, n->pos) < 0) {
        gp_promql_free(n);
        return NULL;
    }
    return n;
}

/* ---- expressions ------------------------------------------------------------ */

static struct gp_pq_node *parse_expr(struct parser *p, int min_prec, unsigned *depth);

static int prec_of(enum gp_pq_binop op)
{
    switch (op) {
    case GP_PQ_OP_OR: return 1;
    case GP_PQ_OP_AND:
    case GP_PQ_OP_UNLESS: return 2;
    case GP_PQ_OP_EQL:
    case GP_PQ_OP_NEQ:
    case GP_PQ_OP_GTR:
    case GP_PQ_OP_LSS:
    case GP_PQ_OP_GTE:
    case GP_PQ_OP_LTE: return 3;
    case GP_PQ_OP_ADD:
    case GP_PQ_OP_SUB: return 4;
    case GP_PQ_OP_MUL:
    case GP_PQ_OP_DIV:
    case GP_PQ_OP_MOD:
    case GP_PQ_OP_ATAN2: return 5;
    case GP_PQ_OP_POW: return 6;
    }
    return 0;
}

/* Grows the tree's depth by one level over a child of depth d. */
static int deeper(struct parser *p, unsigned *depth, unsigned d, size_t pos)
{
    if (d + 1 > GP_PROMQL_MAX_DEPTH)
        return too_deep(p, pos), -1;
    if (d + 1 > *depth)
        *depth = d + 1;
    return 0;
}

/* 1 when t can begin an expression. */
static int starts_expr(const struct gp_pq_token *t)
{
    switch (t->type) {
    case GP_PQ_TK_NUMBER:
    case GP_PQ_TK_STRING:
    case GP_PQ_TK_LPAREN:
    case GP_PQ_TK_LBRACE:
    case GP_PQ_TK_IDENT:
    case GP_PQ_TK_METRIC:
    case GP_PQ_TK_AGG:
    case GP_PQ_TK_BY:
    case GP_PQ_TK_WITHOUT:
    case GP_PQ_TK_OFFSET:
    case GP_PQ_TK_START:
    case GP_PQ_TK_END:
        return 1;
    case GP_PQ_TK_BINOP:
        return t->binop == GP_PQ_OP_ADD || t->binop == GP_PQ_OP_SUB || t->binop == GP_PQ_OP_AND ||
               t->binop == GP_PQ_OP_OR || t->binop == GP_PQ_OP_UNLESS;
    default:
        return 0;
    }
}

/* "(a, b, ...)" at the lookahead: the arguments of a call or an
 * aggregation. *depth: the deepest argument's. -1 after an error. */
static int call_body(struct parser *p, const char *context, struct gp_pq_node ***args, size_t *nargs,
                     unsigned *depth)
{
    *args = NULL;
    *nargs = 0;
    *depth = 0;
    advance(p); /* '(' */
    if (p->tok.type == GP_PQ_TK_RPAREN) {
        advance(p);
        return 0;
    }
    for (;;) {
        unsigned d = 0;
        struct gp_pq_node *a = parse_expr(p, 0, &d);
        if (!a)
            return -1;
        struct gp_pq_node **grown = realloc(*args, (*nargs + 1) * sizeof *grown);
        if (!grown) {
            gp_promql_free(a);
            return oom(p), -1;
        }
        *args = grown;
        (*args)[(*nargs)++] = a;
        if (d > *depth)
            *depth = d;
        if (p->tok.type == GP_PQ_TK_COMMA) {
            size_t comma = p->tok.pos;
            advance(p);
            /* Prometheus's grammar reduces "args ," when no expression
             * follows, whatever comes instead. */
            if (p->tok.type != GP_PQ_TK_ERROR && !starts_expr(&p->tok))
                return perr(p, comma, "trailing commas not allowed in function call args"), -1;
            continue;
        }
        if (p->tok.type != GP_PQ_TK_RPAREN)
            return unexpected(p, context, NULL), -1;
        advance(p);
        return 0;
    }
}

static void args_free(struct gp_pq_node **args, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gp_promql_free(args[i]);
    free(args);
}

static struct gp_pq_node *call(struct parser *p, unsigned *depth)
{
    struct gp_pq_token name = p->tok;
    advance(p); /* the name; the lookahead is '(' */
    struct gp_pq_node **args;
    size_t nargs;
    unsigned d;
    if (call_body(p, NULL, &args, &nargs, &d) < 0) {
        args_free(args, nargs);
        return NULL;
    }
    /* Prometheus looks the name up once the call is complete. */
    int f = gp_pq_func_lookup(p->q + name.pos, name.len);
    struct gp_pq_node *n = NULL;
    if (f < 0) {
        perr(p, name.pos, "unknown function with name \"%.*s\"", (int)(name.len > 64 ? 64 : name.len),
             p->q + name.pos);
    } else if (deeper(p, depth, d, name.pos) == 0 &&
               (n = node_new(p, GP_PQ_CALL, name.pos, p->prev_end)) != NULL) {
        n->u.call.func = (enum gp_pq_func)f;
        n->u.call.args = args;
        n->u.call.nargs = nargs;
        n->type = gp_pq_func_info((enum gp_pq_func)f)->ret;
        return n;
    }
    args_free(args, nargs);
    return NULL;
}

static struct gp_pq_node *aggregation(struct parser *p, unsigned *depth)
{
    struct gp_pq_token op = p->tok;
    advance(p);
    struct gp_pq_node *n = node_new(p, GP_PQ_AGG, op.pos, op.pos);
    if (!n)
        return NULL;
    n->type = GP_PQ_T_VECTOR;
    struct gp_pq_agg *a = &n->u.agg;
    a->op = op.agg;
    int grouped = 0;
    p->in_agg++;
    if (p->tok.type == GP_PQ_TK_BY || p->tok.type == GP_PQ_TK_WITHOUT) {
        a->without = p->tok.type == GP_PQ_TK_WITHOUT;
        advance(p);
        if (grouping_labels(p, &a->grouping) < 0)
            goto fail;
        grouped = 1;
        if (p->tok.type != GP_PQ_TK_LPAREN) {
            unexpected(p, "aggregation", NULL);
            goto fail;
        }
    }
    struct gp_pq_node **args;
    size_t nargs;
    unsigned d;
    if (call_body(p, "aggregation", &args, &nargs, &d) < 0) {
        args_free(args, nargs);
        goto fail;
    }
    n->end = (uint32_t)p->prev_end;
    /* Prometheus reads the next token to see whether by/without follows
     * before it checks the arguments: a lexer error there comes first. */
    if (!grouped && p->tok.type == GP_PQ_TK_ERROR) {
        args_free(args, nargs);
        unexpected(p, NULL, NULL);
        goto fail;
    }
    if (!grouped && (p->tok.type == GP_PQ_TK_BY || p->tok.type == GP_PQ_TK_WITHOUT)) {
        a->without = p->tok.type == GP_PQ_TK_WITHOUT;
        advance(p);
        if (grouping_labels(p, &a->grouping) < 0) {
            args_free(args, nargs);
            goto fail;
        }
        n->end = (uint32_t)p->prev_end;
    }
    size_t want = agg_param[a->op] ? 2 : 1;
    if (nargs == 0) {
        perr(p, op.pos, "no arguments for aggregate expression provided");
    } else if (nargs != want) {
        perr(p, op.pos,
             "wrong number of arguments for aggregate expression provided, expected %zu, got %zu",
             want, nargs);
    } else if (deeper(p, depth, d, op.pos) == 0) {
        a->param = want == 2 ? args[0] : NULL;
        a->expr = args[want - 1];
        free(args);
        p->in_agg--;
        return n;
    }
    args_free(args, nargs);
fail:
    p->in_agg--;
    gp_promql_free(n);
    return NULL;
}

/* offset [-]duration after e. NULL after an error (e freed). */
static struct gp_pq_node *offset(struct parser *p, struct gp_pq_node *e)
{
    advance(p); /* offset */
    int neg = 0;
    if (p->tok.type == GP_PQ_TK_BINOP && p->tok.binop == GP_PQ_OP_SUB) {
        neg = 1;
        advance(p);
    }
    if (p->tok.type != GP_PQ_TK_DURATION)
        goto bad_syntax;
    size_t end = tok_end(&p->tok);
    int64_t ms;
    if (duration(p, &ms) < 0)
        goto fail;
    int64_t *slot = e->kind == GP_PQ_VECTOR_SEL || e->kind == GP_PQ_MATRIX_SEL ? &e->u.sel.offset_ms
                    : e->kind == GP_PQ_SUBQUERY                                 ? &e->u.sub.offset_ms
                                                                                : NULL;
    if (!slot) {
        perr(p, e->pos,
             "offset modifier must be preceded by an instant vector selector or range vector "
             "selector or a subquery");
        goto fail;
    }
    if (*slot != 0) {
        perr(p, e->pos, "offset may not be set multiple times");
        goto fail;
    }
    *slot = neg ? -ms : ms;
    e->end = (uint32_t)end;
    return e;
bad_syntax:
    unexpected(p, "offset", "duration");
fail:
    gp_promql_free(e);
    return NULL;
}

/* @ time | @ start() | @ end() after e. NULL after an error (e freed). */
static struct gp_pq_node *at(struct parser *p, struct gp_pq_node *e)
{
    advance(p); /* @ */
    enum gp_pq_at kind = GP_PQ_AT_TIME;
    double ts = 0;
    size_t end;
    if (p->tok.type == GP_PQ_TK_START || p->tok.type == GP_PQ_TK_END) {
        kind = p->tok.type == GP_PQ_TK_START ? GP_PQ_AT_START : GP_PQ_AT_END;
        advance(p);
        if (p->tok.type != GP_PQ_TK_LPAREN)
            goto bad_syntax;
        advance(p);
        if (p->tok.type != GP_PQ_TK_RPAREN)
            goto bad_syntax;
        end = tok_end(&p->tok);
        advance(p);
    } else {
        int neg = 0;
        if (p->tok.type == GP_PQ_TK_BINOP &&
            (p->tok.binop == GP_PQ_OP_ADD || p->tok.binop == GP_PQ_OP_SUB)) {
            neg = p->tok.binop == GP_PQ_OP_SUB;
            advance(p);
        }
        if (p->tok.type != GP_PQ_TK_NUMBER)
            goto bad_syntax;
        int why = number_value(p->q + p->tok.pos, p->tok.len, &ts);
        if (why < 0) {
            bad_number(p, &p->tok, why);
            goto fail;
        }
        if (neg)
            ts = -ts;
        end = tok_end(&p->tok);
        advance(p);
        /* Prometheus's bound is int64 milliseconds' range; a finite
         * timestamp whose milliseconds overflow is refused too. */
        if (!isfinite(ts) || fabs(ts) >= 9.2e15) {
            if (isfinite(ts))
                perr(p, e->pos, "timestamp out of bounds for @ modifier: %f", ts);
            else /* Go's %f words */
                perr(p, e->pos, "timestamp out of bounds for @ modifier: %s",
                     isnan(ts) ? "NaN" : ts > 0 ? "+Inf" : "-Inf");
            goto fail;
        }
    }
    struct gp_pq_sel *sel =
        e->kind == GP_PQ_VECTOR_SEL || e->kind == GP_PQ_MATRIX_SEL ? &e->u.sel : NULL;
    enum gp_pq_at *slot = sel                            ? &sel->at
                          : e->kind == GP_PQ_SUBQUERY    ? &e->u.sub.at
                                                         : NULL;
    if (!slot) {
        perr(p, e->pos,
             "@ modifier must be preceded by an instant vector selector or range vector selector "
             "or a subquery");
        goto fail;
    }
    if (*slot != GP_PQ_AT_NONE) {
        perr(p, e->pos, "@ <timestamp> may not be set multiple times");
        goto fail;
    }
    *slot = kind;
    if (kind == GP_PQ_AT_TIME) {
        int64_t ms = (int64_t)llround(ts * 1000.0);
        if (sel)
            sel->at_ms = ms;
        else
            e->u.sub.at_ms = ms;
    }
    e->end = (uint32_t)end;
    return e;
bad_syntax:
    unexpected(p, "@", "timestamp");
fail:
    gp_promql_free(e);
    return NULL;
}

/* [range] or [range:step] after e. NULL after an error (e freed). */
static struct gp_pq_node *bracket(struct parser *p, struct gp_pq_node *e, unsigned *depth)
{
    size_t lb = p->tok.pos;
    advance(p); /* '[' */
    if (p->tok.type != GP_PQ_TK_DURATION) {
        unexpected(p, "subquery selector", "duration");
        goto fail;
    }
    int64_t range, step = 0;
    if (duration(p, &range) < 0)
        goto fail;
    if (p->tok.type == GP_PQ_TK_RBRACKET) {
        const char *why = NULL;
        if (e->kind != GP_PQ_VECTOR_SEL)
            why = "ranges only allowed for vector selectors";
        else if (e->u.sel.offset_ms != 0)
            why = "no offset modifiers allowed before range";
        else if (e->u.sel.at == GP_PQ_AT_TIME)
            why = "no @ modifiers allowed before range";
        if (why) {
            perr(p, lb, "%s", why);
            goto fail;
        }
        e->kind = GP_PQ_MATRIX_SEL;
        e->type = GP_PQ_T_MATRIX;
        e->u.sel.range_ms = range;
        e->end = (uint32_t)tok_end(&p->tok);
        advance(p);
        return e;
    }
    if (p->tok.type != GP_PQ_TK_COLON) {
        unexpected(p, "subquery or range", "\":\" or \"]\"");
        goto fail;
    }
    advance(p);
    if (p->tok.type == GP_PQ_TK_DURATION) {
        if (duration(p, &step) < 0)
            goto fail;
        if (p->tok.type != GP_PQ_TK_RBRACKET) {
            unexpected(p, "subquery selector", "\"]\"");
            goto fail;
        }
    } else if (p->tok.type != GP_PQ_TK_RBRACKET) {
        unexpected(p, "subquery selector", "duration or \"]\"");
        goto fail;
    }
    struct gp_pq_node *s = NULL;
    unsigned d = *depth;
    if (deeper(p, depth, d, e->pos) < 0 ||
        !(s = node_new(p, GP_PQ_SUBQUERY, e->pos, tok_end(&p->tok))))
        goto fail;
    advance(p);
    s->type = GP_PQ_T_MATRIX;
    s->u.sub.expr = e;
    s->u.sub.range_ms = range;
    s->u.sub.step_ms = step;
    return s;
fail:
    gp_promql_free(e);
    return NULL;
}

/* A primary expression and its postfix modifiers. */
static struct gp_pq_node *primary(struct parser *p, unsigned *depth)
{
    struct gp_pq_node *e = NULL;
    *depth = 1;
    const struct gp_pq_token *t = &p->tok;
    switch (t->type) {
    case GP_PQ_TK_NUMBER: {
        double v;
        int why = number_value(p->q + t->pos, t->len, &v);
        if (why < 0)
            return bad_number(p, t, why);
        if (!(e = node_new(p, GP_PQ_NUMBER, t->pos, tok_end(t))))
            return NULL;
        e->type = GP_PQ_T_SCALAR;
        e->u.number = v;
        advance(p);
        break;
    }
    case GP_PQ_TK_STRING:
        if (!(e = node_new(p, GP_PQ_STRING, t->pos, tok_end(t))))
            return NULL;
        e->type = GP_PQ_T_STRING;
        if (gp_pq_unquote(p->q + t->pos, t->len, &e->u.string.s, &e->u.string.len)) {
            free(e);
            return oom(p);
        }
        advance(p);
        break;
    case GP_PQ_TK_LPAREN: {
        size_t pos = t->pos;
        advance(p);
        unsigned d = 0;
        struct gp_pq_node *in = parse_expr(p, 0, &d);
        if (!in)
            return NULL;
        if (p->tok.type != GP_PQ_TK_RPAREN) {
            gp_promql_free(in);
            return unexpected(p, NULL, NULL);
        }
        if (deeper(p, depth, d, pos) < 0 || !(e = node_new(p, GP_PQ_PAREN, pos, tok_end(&p->tok)))) {
            gp_promql_free(in);
            return NULL;
        }
        e->type = in->type;
        e->u.paren = in;
        advance(p);
        break;
    }
    case GP_PQ_TK_LBRACE:
        e = selector(p, 0);
        break;
    case GP_PQ_TK_IDENT:
        if (peek2(p)->type == GP_PQ_TK_LPAREN)
            e = call(p, depth);
        else
            e = selector(p, 1);
        break;
    case GP_PQ_TK_AGG: {
        enum gp_pq_tok n = peek2(p)->type;
        if (n == GP_PQ_TK_LPAREN || n == GP_PQ_TK_BY || n == GP_PQ_TK_WITHOUT)
            e = aggregation(p, depth);
        else
            e = selector(p, 1); /* "sum" alone is a metric name */
        break;
    }
    case GP_PQ_TK_METRIC:
    case GP_PQ_TK_BY:
    case GP_PQ_TK_WITHOUT:
    case GP_PQ_TK_OFFSET:
    case GP_PQ_TK_START:
    case GP_PQ_TK_END:
        e = selector(p, 1); /* keywords Prometheus lets name metrics */
        break;
    case GP_PQ_TK_BINOP:
        if (t->binop == GP_PQ_OP_AND || t->binop == GP_PQ_OP_OR || t->binop == GP_PQ_OP_UNLESS) {
            e = selector(p, 1);
            break;
        }
        return unexpected(p, NULL, NULL);
    case GP_PQ_TK_EOF:
        return unexpected(p, NULL, NULL);
    default:
        return unexpected(p, NULL, NULL);
    }
    while (e) {
        if (p->tok.type == GP_PQ_TK_LBRACKET)
            e = bracket(p, e, depth);
        else if (p->tok.type == GP_PQ_TK_OFFSET)
            e = offset(p, e);
        else if (p->tok.type == GP_PQ_TK_AT)
            e = at(p, e);
        else
            break;
    }
    return e;
}

/* A unary expression: -x, +x; -1 is folded into the number, as Prometheus does. */
static struct gp_pq_node *unary(struct parser *p, unsigned *depth)
{
    if (p->tok.type != GP_PQ_TK_BINOP ||
        (p->tok.binop != GP_PQ_OP_ADD && p->tok.binop != GP_PQ_OP_SUB))
        return primary(p, depth);
    size_t pos = p->tok.pos;
    int negate = p->tok.binop == GP_PQ_OP_SUB;
    advance(p);
    unsigned d = 0;
    struct gp_pq_node *x = parse_expr(p, prec_of(GP_PQ_OP_POW), &d);
    if (!x)
        return NULL;
    if (x->kind == GP_PQ_NUMBER) {
        if (negate)
            x->u.number = -x->u.number;
        x->pos = (uint32_t)pos;
        *depth = d;
        return x;
    }
    struct gp_pq_node *n = NULL;
    if (deeper(p, depth, d, pos) < 0 || !(n = node_new(p, GP_PQ_UNARY, pos, x->end))) {
        gp_promql_free(x);
        return NULL;
    }
    n->type = x->type;
    n->u.unary.negate = negate;
    n->u.unary.expr = x;
    return n;
}

static int is_binop(const struct gp_pq_token *t)
{
    return t->type == GP_PQ_TK_BINOP || t->type == GP_PQ_TK_NEQ;
}

/* bool, on/ignoring (...), group_left/group_right [(...)] after an operator. */
static int bin_modifiers(struct parser *p, struct gp_pq_binary *b)
{
    if (p->tok.type == GP_PQ_TK_BOOL) {
        b->return_bool = 1;
        advance(p);
    }
    if (p->tok.type != GP_PQ_TK_ON && p->tok.type != GP_PQ_TK_IGNORING)
        return 0;
    b->on = p->tok.type == GP_PQ_TK_ON;
    advance(p);
    if (grouping_labels(p, &b->matching) < 0)
        return -1;
    if (p->tok.type != GP_PQ_TK_GROUP_LEFT && p->tok.type != GP_PQ_TK_GROUP_RIGHT)
        return 0;
    b->card = p->tok.type == GP_PQ_TK_GROUP_LEFT ? GP_PQ_CARD_MANY_TO_ONE : GP_PQ_CARD_ONE_TO_MANY;
    advance(p);
    if (p->tok.type == GP_PQ_TK_LPAREN)
        return grouping_labels(p, &b->include);
    /* Neither labels nor an operand: Prometheus's "grouping opts" error. */
    if (p->tok.type != GP_PQ_TK_ERROR && !starts_expr(&p->tok))
        return unexpected(p, "grouping opts", "\"(\""), -1;
    return 0;
}

static struct gp_pq_node *parse_expr(struct parser *p, int min_prec, unsigned *depth)
{
    if (++p->rec > GP_PROMQL_MAX_DEPTH)
        return too_deep(p, p->tok.pos);
    unsigned dl = 0;
    struct gp_pq_node *lhs = unary(p, &dl);
    while (lhs && is_binop(&p->tok)) {
        enum gp_pq_binop op = p->tok.binop;
        int prec = prec_of(op);
        if (prec < min_prec)
            break;
        advance(p);
        struct gp_pq_node *n = node_new(p, GP_PQ_BINARY, lhs->pos, lhs->end);
        if (!n) {
            gp_promql_free(lhs);
            lhs = NULL;
            break;
        }
        n->u.bin.op = op;
        n->u.bin.lhs = lhs;
        lhs = n;
        if (bin_modifiers(p, &n->u.bin) < 0) {
            gp_promql_free(n);
            lhs = NULL;
            break;
        }
        unsigned dr = 0;
        /* '^' is right-associative; the others bind left. */
        n->u.bin.rhs = parse_expr(p, op == GP_PQ_OP_POW ? prec : prec + 1, &dr);
        unsigned d = dl > dr ? dl : dr;
        dl = 0;
        if (!n->u.bin.rhs || deeper(p, &dl, d, n->pos) < 0) {
            gp_promql_free(n);
            lhs = NULL;
            break;
        }
        n->end = n->u.bin.rhs->end;
        n->type = n->u.bin.lhs->type == GP_PQ_T_SCALAR && n->u.bin.rhs->type == GP_PQ_T_SCALAR
                      ? GP_PQ_T_SCALAR
                      : GP_PQ_T_VECTOR;
    }
    p->rec--;
    *depth = dl;
    return lhs;
}

/* ---- type checks (Prometheus's checkAST) ----------------------------------- */

static const char *documented(enum gp_pq_type t)
{
    switch (t) {
    case GP_PQ_T_SCALAR: return "scalar";
    case GP_PQ_T_VECTOR: return "instant vector";
    case GP_PQ_T_MATRIX: return "range vector";
    case GP_PQ_T_STRING: return "string";
    }
    return "unknown";
}

static const char *value_type(enum gp_pq_type t)
{
    switch (t) {
    case GP_PQ_T_SCALAR: return "scalar";
    case GP_PQ_T_VECTOR: return "vector";
    case GP_PQ_T_MATRIX: return "matrix";
    case GP_PQ_T_STRING: return "string";
    }
    return "unknown";
}

static int is_comparison(enum gp_pq_binop op)
{
    return op >= GP_PQ_OP_EQL && op <= GP_PQ_OP_LTE;
}

static int is_set_op(enum gp_pq_binop op)
{
    return op == GP_PQ_OP_AND || op == GP_PQ_OP_OR || op == GP_PQ_OP_UNLESS;
}

static enum gp_pq_type check(struct parser *p, struct gp_pq_node *n);

static void expect_type(struct parser *p, struct gp_pq_node *n, enum gp_pq_type want,
                        const char *context)
{
    enum gp_pq_type t = check(p, n);
    if (!p->rc && t != want)
        perr(p, n->pos, "expected type %s in %s, got %s", documented(want), context,
             documented(t));
}

static void check_selector(struct parser *p, struct gp_pq_node *n)
{
    const struct gp_pq_sel *s = &n->u.sel;
    if (s->name)
        for (size_t i = 0; i + 1 < s->nm; i++)
            if (strcmp(s->m[i].name, "__name__") == 0)
                perr(p, n->pos, "metric name must not be set twice: \"%s\" or \"%s\"", s->name,
                     s->m[i].value);
    for (size_t i = 0; i < s->nm; i++)
        if (!gp_matcher_matches(&s->m[i], "", 0))
            return;
    perr(p, n->pos, "vector selector must contain at least one non-empty matcher");
}

/* Where a binary expression's operator starts (its error position). */
static size_t op_pos(const struct parser *p, const struct gp_pq_node *n)
{
    size_t i = n->u.bin.lhs->end;
    while (i < p->len && (p->q[i] == ' ' || p->q[i] == '\t' || p->q[i] == '\n' || p->q[i] == '\r'))
        i++;
    return i;
}

static void check_binary(struct parser *p, struct gp_pq_node *n)
{
    struct gp_pq_binary *b = &n->u.bin;
    enum gp_pq_type lt = check(p, b->lhs);
    enum gp_pq_type rt = check(p, b->rhs);
    if (p->rc)
        return;
    if (b->return_bool && !is_comparison(b->op))
        perr(p, op_pos(p, n), "bool modifier can only be used on comparison operators");
    if (is_comparison(b->op) && !b->return_bool && lt == GP_PQ_T_SCALAR && rt == GP_PQ_T_SCALAR)
        perr(p, op_pos(p, n), "comparisons between scalars must use BOOL modifier");
    if (is_set_op(b->op) && b->card == GP_PQ_CARD_ONE_TO_ONE)
        b->card = GP_PQ_CARD_MANY_TO_MANY;
    if (b->on)
        for (size_t i = 0; i < b->matching.n; i++)
            for (size_t j = 0; j < b->include.n; j++)
                if (strcmp(b->matching.names[i], b->include.names[j]) == 0)
                    perr(p, op_pos(p, n), "label \"%s\" must not occur in ON and GROUP clause at once",
                         b->include.names[j]);
    if (lt != GP_PQ_T_SCALAR && lt != GP_PQ_T_VECTOR)
        perr(p, b->lhs->pos, "binary expression must contain only scalar and instant vector types");
    if (rt != GP_PQ_T_SCALAR && rt != GP_PQ_T_VECTOR)
        perr(p, b->rhs->pos, "binary expression must contain only scalar and instant vector types");
    if (lt != GP_PQ_T_VECTOR || rt != GP_PQ_T_VECTOR) {
        if (b->matching.n > 0)
            perr(p, n->pos, "vector matching only allowed between instant vectors");
        /* No vector matching where a side is not a vector (Prometheus drops it). */
        gp_pq_labels_free(&b->matching);
        gp_pq_labels_free(&b->include);
        b->on = 0;
        b->card = GP_PQ_CARD_ONE_TO_ONE;
    } else if (is_set_op(b->op)) {
        if (b->card == GP_PQ_CARD_ONE_TO_MANY || b->card == GP_PQ_CARD_MANY_TO_ONE)
            perr(p, n->pos, "no grouping allowed for \"%s\" operation", gp_pq_binop_text(b->op));
    }
    if ((lt == GP_PQ_T_SCALAR || rt == GP_PQ_T_SCALAR) && is_set_op(b->op))
        perr(p, n->pos, "set operator \"%s\" not allowed in binary scalar expression",
             gp_pq_binop_text(b->op));
}

static void check_call(struct parser *p, struct gp_pq_node *n)
{
    const struct gp_pq_call *c = &n->u.call;
    const struct gp_pq_func_info *fi = &*gp_pq_func_info(c->func);
    const char *name = gp_pq_func_name(c->func);
    if (fi->min_args == fi->nargs && fi->max_args == (int)fi->nargs) {
        if (c->nargs != fi->nargs)
            perr(p, n->pos, "expected %u argument(s) in call to \"%s\", got %zu", fi->nargs, name,
                 c->nargs);
    } else if (c->nargs < fi->min_args) {
        perr(p, n->pos, "expected at least %u argument(s) in call to \"%s\", got %zu",
             fi->min_args, name, c->nargs);
    } else if (fi->max_args >= 0 && c->nargs > (size_t)fi->max_args) {
        perr(p, n->pos, "expected at most %d argument(s) in call to \"%s\", got %zu",
             fi->max_args, name, c->nargs);
    }
    char ctx[64];
    snprintf(ctx, sizeof ctx, "call to function \"%s\"", name);
    for (size_t i = 0; i < c->nargs && !p->rc; i++) {
        size_t k = i;
        if (k >= fi->nargs) {
            if (fi->max_args == (int)fi->nargs)
                break; /* too many arguments, already reported */
            k = fi->nargs - 1;
        }
        expect_type(p, c->args[i], fi->args[k], ctx);
    }
}

static enum gp_pq_type check(struct parser *p, struct gp_pq_node *n)
{
    if (p->rc)
        return n->type;
    switch (n->kind) {
    case GP_PQ_AGG: {
        struct gp_pq_agg *a = &n->u.agg;
        expect_type(p, a->expr, GP_PQ_T_VECTOR, "aggregation expression");
        if (a->op == GP_PQ_A_COUNT_VALUES)
            expect_type(p, a->param, GP_PQ_T_STRING, "aggregation parameter");
        else if (a->param)
            expect_type(p, a->param, GP_PQ_T_SCALAR, "aggregation parameter");
        break;
    }
    case GP_PQ_BINARY:
        check_binary(p, n);
        break;
    case GP_PQ_CALL:
        check_call(p, n);
        break;
    case GP_PQ_PAREN:
        check(p, n->u.paren);
        break;
    case GP_PQ_UNARY: {
        enum gp_pq_type t = check(p, n->u.unary.expr);
        if (!p->rc && t != GP_PQ_T_SCALAR && t != GP_PQ_T_VECTOR)
            perr(p, n->pos,
                 "unary expression only allowed on expressions of type scalar or instant vector, "
                 "got \"%s\"",
                 documented(t));
        break;
    }
    case GP_PQ_SUBQUERY: {
        enum gp_pq_type t = check(p, n->u.sub.expr);
        if (!p->rc && t != GP_PQ_T_VECTOR)
            perr(p, n->pos, "subquery is only allowed on instant vector, got %s instead",
                 value_type(t));
        break;
    }
    case GP_PQ_VECTOR_SEL:
    case GP_PQ_MATRIX_SEL:
        check_selector(p, n);
        break;
    case GP_PQ_NUMBER:
    case GP_PQ_STRING:
        break;
    }
    return n->type;
}

/* ---- entry ------------------------------------------------------------------ */

int gp_promql_parse(const char *query, size_t len, struct gp_pq_node **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (len > GP_PROMQL_MAX_QUERY_LEN)
        return gp_seterr(err, errlen, GP_ETOOBIG, "promql: query of %zu bytes is longer than %d",
                         len, GP_PROMQL_MAX_QUERY_LEN);
    struct parser p = {.q = query, .len = len, .err = err, .errlen = errlen};
    gp_pq_lex_init(&p.lx, query, len);
    advance(&p);
    if (p.tok.type == GP_PQ_TK_EOF) {
        perr(&p, 0, "no expression found in input");
        return p.rc;
    }
    unsigned depth = 0;
    struct gp_pq_node *e = parse_expr(&p, 0, &depth);
    if (e && p.tok.type != GP_PQ_TK_EOF)
        unexpected(&p, NULL, NULL);
    if (e && !p.rc)
        check(&p, e);
    if (p.rc) {
        gp_promql_free(e);
        return p.rc;
    }
    *out = e;
    return GP_OK;
}
